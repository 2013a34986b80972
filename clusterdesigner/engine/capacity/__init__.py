"""The capacity plan: demand from a workload plan, and the cheapest mix of owned, reserved and burst capacity
over months (a MILP).

May import: core, cost.

Modules (what each owns, from its docstring; its public functions and classes):
    capacity -- Capacity plan: demand from a workload plan, and the cheapest mix of owned, reserved and burst
        capacity.
        public: PlanInputErrors, TrainingRun, InferenceSizing, peak_to_mean_of_day, Inference, Baseline,
            OwnedOption, ReservationOption, BurstOption, spot_goodput_from_failures, Supply, CapacityPlan,
            plan_check, owned_option_from_on_prem, demand_weeks, OwnedPurchase, ReservationStart, RunSchedule,
            MonthRow, Alternative, ProblemSize, PlanResult, NodeTypeResult, cash_basis, monthly_usd_per_node,
            resale_fraction, plan_flows, flows_npv, cash_view, plan_solve
    capacity_fleet -- A capacity plan of several node types (accelerators), solved as one MILP.
        public: NodeType, Coupling, FleetPlan, fleet_check, fleet_solve
"""
