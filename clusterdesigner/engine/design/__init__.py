"""A design as a whole: its spec (one parser for every section), its stored evaluation (typed), the trade-offs
between evaluated options, the rows an analysis stores and what changed between two designs.

May import: core, training, cost, serving, serving_cost, rl, capacity.

Modules (what each owns, from its docstring; its public functions and classes):
    analysis_result -- The rows an analysis stores: a sweep's (and a recommendation's) row per (accelerator,
        nodes, model, pricing model), and a comparison's row per design.
        public: SweepRow, CompareRow, AnalysisSnapshot, SweepParams
    attribution -- What changed between two designs (or two versions of one) and why the answer moved (issue
        #36).
        public: InputChange, OutputChange, AttributionStep, ShapleyValue, Attribution, DesignDiff,
            design_diff, input_changes, unit_of, attribute, output_changes
    design -- A design's answer, composed: the training estimate, one cost result per cloud offering, the
        options table and its rankings, the assumptions and findings, the rent-or-own verdict, the goals (with
        what it takes to meet a missed deadline), the serving and RL estimates and a mixed fleet's cost, from
        one parsed spec.
        public: evaluate_design, evaluate_design_json, price_assumptions, serving_estimate, rl_estimate,
            by_severity
    evaluation -- A whole design evaluation, typed: what the design service stores for a design version (its
        spec, the training engine's estimate, one cost result per cloud offering, the options table and its
        ranking over the horizon, the assumptions and findings, the goals verdict, the price freshness, the
        serving estimate, and which design and when).
        public: RankedKey, DesignRanking, EvaluationAssumption, price_origin, EvaluationFinding, DesignRef,
            DesignEvaluation
    goals -- A design's goals (``spec.goals``: a deadline in days, a budget in USD per run, a budget in USD of
        NPV over the horizon) against its evaluation, for the option the rent-or-own verdict picks.
        public: goals_verdict
    spec -- A design's inputs, defined once: the field rules of each spec section the engine owns (workload,
        cluster, parallelism, goals), one parser that checks types, known keys and ranges, and frozen
        dataclasses the engines' requests are built from (issue 14, "one design spec").
        public: parse_workload, parse_cluster, parse_parallelism, parse_goals, parse_costs, parse_serving,
            parse_rl_section, Training, Cluster, CloudChoice, Costs, Goals, DesignSpec, parse_design_spec,
            check_usable, with_defaults, training_request, serving_request, rl_request, rollout_pool_spec,
            cost_requests, training_sections, cost_inputs, rollout_cost_inputs
    tradeoffs -- Choosing among evaluated options: the Pareto front of cost against days, the best design per
        figure, a design's column in a comparison (``compare_column``) and the recommendation a sweep ends
        with.
        public: pareto_indices, pareto_front, best_per_figure, default_option_key, expected_days,
            CompareColumn, compare_column, sweep_basis, ranked_usd, finish_days, sweep_front, recommend,
            rule_of_thumb
"""
