"""RL post-training: the workload request, the step time and rollout/trainer split (through the training and
serving engines) and a mixed fleet's cost per run.

May import: core, training, cost, serving.

Modules (what each owns, from its docstring; its public functions and classes):
    rl -- RL post-training step time and the rollout/trainer split (issue 39): the serving engine generates
        the rollouts, the training engine times the updates, and this module joins them per placement.
        public: RolloutTime, TrainTime, RLStep, RLPlacement, SplitPoint, RLResult, serving_input,
            rollout_time, weight_sync_s, train_time, compose_step, training_request, colocated, disaggregated,
            split_candidates, estimate
    rl_fleet -- A mixed RL fleet's cost per run (issue 39): the trainer pool and a rollout pool of its own,
        each priced by the cost engine on its own part, server type and cloud offerings, then combined: own
        both, rent both, or own one and rent the other.
        public: PoolOption, PoolCost, FleetCombination, FleetCost, pool_cost, fleet_cost
    rl_request -- An RL post-training workload (issue 39): what one GRPO/PPO run asks of the cluster, typed
        and checked.
        public: RolloutPool, RLWorkload, parse_rollout, parse_rl
"""
