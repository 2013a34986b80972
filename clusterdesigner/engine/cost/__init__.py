"""The cost engine: owning against renting (rent-or-own arithmetic, cash flows, NPV, resale), the request it
reads and the result it returns, the site, storage, network and failure sizing it prices, the defaults of a
design's cost inputs, and the rent-or-own verdict, findings and sensitivity it composes.

May import: core.

Modules (what each owns, from its docstring; its public functions and classes):
    cashflow -- Money over time: monthly cash flows of owning and of each way of renting, their NPV, payback
        and IRR.
        public: pmt, wacc, monthly_rate, discount_factors, RentOption, CashflowInputs, OptionFlows,
            CommitmentTerm, Commitment, commitment_schedule, CashflowResult, rent_flows, depreciation_shares,
            own_flows, irr_per_year, bridge_option, cash_flows, power_usd_per_month, npv_gap, npvs_at,
            break_even_utilization, break_even_meaning, Uncertainty, monte_carlo
    cost -- The cost engine's entry point: a JSON request in, a JSON-ready response out (docs/cost-engine.md).
        public: over_quota, tco
    cost_inputs -- The cost engine's inputs, read once from what the user sent, each part knowing where it
        sits there.
        public: Section, CostInputs
    cost_request -- The cost engine's request, read: every field resolved to a value with its unit and source
        (the request's own value, a catalog figure, or a default from
        :data:`clusterdesigner.engine.cost.defaults.COST_DEFAULTS`), each number checked against its bound
        (clusterdesigner.engine.core.bounds), and the catalog specs the evaluation needs (:class:`Context`).
        public: field_rule, field_max, Resolver, Context, SitePlacement, number_of, fallback_switch,
            switch_slug, read_inputs, resolve, check_request, input_names, check_input
    cost_result -- What the cost engine returns: frozen dataclasses whose ``to_json()`` is the dict
        ``cost.tco()`` has always given (and every stored evaluation holds under ``costs.<offering>``), and
        whose ``from_json()`` reads that JSON back.
        public: Line, LinearCost, CloudOption, YearRow, OnPrem, BreakEven, Curves, RunCost, PerRun, Network,
            TierTiming, Storage, FailureFigures, Failures, Offering, RankedOption, Ranking, OptionFlows,
            ResaleAtHorizon, Cashflow, SensitivityRow, Sensitivity, Finding, CostAssumption, CostResult,
            DesignOption
    defaults -- A design's defaults, each written once with its source: what a new design, a sweep and a
        recommendation start from when the user leaves a field out.
        public: Default, training, model, design_spec, markdown_table, Assumption, cost_assumptions
    design_verdict -- One rent-or-own verdict for a whole design, over every cloud offering and only the
        pricing models ticked.
        public: OptionNpv, Mover, OwningFigure, Committed, DesignVerdict, design_verdict
    failures -- Interruptions, the optimal checkpoint interval and goodput.
        public: young_daly_interval_s, goodput_fraction, FailureResult, failure_model
    findings -- Design findings: rules that flag what a cluster design gets wrong, each with a severity and a
        source.
        public: FindingsInput, design_findings, stale_price_findings, placeholder_price_findings,
            placeholder_storage_findings, site_findings
    network -- Scale-out network sizing: leaf-spine / three-tier fat-tree (folded Clos), Dragonfly+ and rail-
        only.
        public: Topology, leaf_down_ports, max_endpoints, fat_tree, dragonfly_plus, rail_only, NetworkCost,
            network_cost
    npv_basis -- One basis for the rent-or-own answer: the NPV of the monthly cash flows
        (engine/cost/cashflow.py).
        public: NpvPair, npv_pair
    rent_own -- Rent-vs-own arithmetic: capital recovery, owning cost, renting cost per pricing model, break-
        even.
        public: usd, num, Line, LinearCost, capital_recovery_factor, sinking_fund_factor,
            annualized_capex_usd, OnPremInputs, YearRow, OnPremResult, on_prem_cost, CloudResult,
            committed_years, reservation_break_even, cloud_cost, break_even_utilization, break_even_meaning
    resale -- Resale value of owned accelerators from a sourced residual-value series (the catalog's
        ResidualValuePoint rows of one series and accelerator): the fraction of the price new a server fetches
        at a given age.
        public: ResaleCurve, resale_curves, curves_from_records, covering
    sensitivity -- One-at-a-time sensitivity (a tornado chart): move each assumption to its low and high, keep
        the rest.
        public: tornado
    site -- A site a design is placed in (issue #35, Sites): its power and colocation prices, PUE by cooling
        type, rack power limit, cooling, and the MW it has now and later; and the check of an owned cluster
        against it (how many racks, whether a rack-scale system fits a rack at all, liquid cooling, IT load
        against the site's MW).
        public: RackScalePart, parse_site_json, PowerStep, Site, site_from_json, parse_site, cooling_used,
            RackPlan, rack_plan, SiteFit, input_source, cost_inputs
    storage -- Checkpoint size, save time per storage tier, and the dataset read bandwidth a run needs.
        public: checkpoint_gb, TierTiming, save_timings, dataset_read_gbps, capacity_for_write_tib
    verdict -- A design's verdict: does it meet its goals, a deadline in days and a budget in USD per training
        run?
        public: RunEstimate, DeadlineCheck, HorizonBudgetCheck, check_budget_npv, BudgetCheck, Verdict,
            usd_short, explore, check_deadline, check_budget, compose, Flip, format_value, RentOrOwn
"""
