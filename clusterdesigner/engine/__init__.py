"""Pure-Python math for ClusterDesigner: no Django, no Celery, no I/O.

Modules:
    errors          -- EngineError, the one error type a user can act on
    hardware        -- AcceleratorSpec, FabricSpec: the hardware inputs every engine takes
    catalog         -- CatalogSpecs: catalog records as engine inputs
    model, presets  -- ModelShape, parameter and FLOP counts, the model presets
    spec, defaults  -- a design's inputs defined once (rules, parser, engine requests) and their defaults
    workload        -- Problem, Training, Cluster, layout arrays
    memory, timing  -- memory per GPU and step time per layout, vectorised
    search          -- the layout search
    training        -- the training engine's entry point (estimate, estimate_result, sizing)
    training_result -- TrainingEstimate and its parts: what the training engine returns
    error_band, error_band_table -- the range a training estimate may take, from calibration residuals
    failures        -- failures and restarts: expected days
    network, storage -- fabric and storage sizing and cost
    cost, tco       -- the cost engine: owning against renting
    cost_result     -- CostResult, DesignOption: what the cost engine returns
    cashflow, resale -- money over time (cash flows, NPV, payback) and the resale value of owned hardware
    offerings       -- cloud offerings and price freshness
    findings, verdict, sensitivity -- what a design evaluation concludes
    evaluation      -- DesignEvaluation: a whole stored design evaluation, typed
    tradeoffs       -- Pareto front, best per figure, a design's comparison column and the recommendation
    analysis_result -- the rows a sweep, recommendation or comparison stores
    serving         -- the serving planner: layouts, latency, GPUs and $ per million tokens for inference
    capacity        -- the capacity plan: the cheapest mix of owned, reserved and burst capacity over months
    capacity_fleet  -- a capacity plan of several node types (accelerators) solved as one MILP
    json_object     -- JsonObject: to_json()/from_json() for the typed results
    version         -- ENGINE_VERSION, the engines' output version stored evaluations are keyed by
"""
