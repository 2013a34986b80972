"""Serving's costs: the serving engine's answer (layouts, replicas, throughput, latency) priced through the
cost engine, owning and per cloud offering, as $ per million tokens. The one part that imports both serving
and cost, so that serving never imports cost (issue 34).

May import: core, cost, serving.

Modules (what each owns, from its docstring; its public functions and classes):
    serving_cost -- Serving's costs: $ per million tokens owning and per cloud offering, the serving engine's
        answer priced through the cost engine (issue 34: serving never imports cost; this part imports both).
        public: BilledCost, serving_costs, owning_cost, estimate
"""
