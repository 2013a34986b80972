"""Pure-Python math for ClusterDesigner: no Django, no Celery, no I/O.

The engine's parts, one folder each (each folder's __init__ docstring says what it owns, its modules and
their public functions):
    core/ -- The small shared core every part may import
    training/ -- The training engine
    cost/ -- The cost engine
    serving/ -- The serving planner
    serving_cost/ -- Serving's costs
    rl/ -- RL post-training
    capacity/ -- The capacity plan
    design/ -- A design as a whole

Import rules (tests/project/test_engine_layout.py enforces them): a part imports only itself and the
parts listed here; nothing in the engine imports apps, django, celery, rest_framework or the rest of
the project; every module lives in a part.
    core      -> (nothing)
    training  -> core
    cost      -> core
    serving   -> core
    serving_cost -> core, cost, serving
    capacity  -> core, cost
    rl        -> core, training, cost, serving
    design    -> core, training, cost, serving, serving_cost, rl, capacity
Training and serving never import cost: serving_cost/ prices the serving engine's answer through the cost
engine (serving_cost.estimate), and design/ composes a design's costs.

The layout is written by a script (engine_layout.py, kept outside the repository by the lead) so that
branches written against the flat engine can be merged and rewritten the same way.
"""
