"""Pure-Python math for ClusterDesigner: no Django, no Celery, no I/O.

Modules:
    errors          -- EngineError, the one error type a user can act on
    hardware        -- AcceleratorSpec, FabricSpec: the hardware inputs every engine takes
    catalog         -- CatalogSpecs: catalog records as engine inputs
    model, presets  -- ModelShape, parameter and FLOP counts, the model presets
    workload        -- Problem, Training, Cluster, layout arrays
    memory, timing  -- memory per GPU and step time per layout, vectorised
    search          -- the layout search
    training        -- the training engine's entry point (estimate, estimate_result, sizing)
    training_result -- TrainingEstimate and its parts: what the training engine returns
    failures        -- failures and restarts: expected days
    network, storage -- fabric and storage sizing and cost
    cost, tco       -- the cost engine: owning against renting
    offerings       -- cloud offerings and price freshness
    version         -- ENGINE_VERSION, the engines' output version stored evaluations are keyed by
    findings, verdict, sensitivity -- what a design evaluation concludes
    tradeoffs       -- Pareto front, best per figure, a design's comparison column and the recommendation
"""
