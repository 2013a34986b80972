"""Pure-Python math for ClusterDesigner: no Django, no Celery, no I/O.

Modules:
    errors    -- EngineError, the one error type a user can act on
    hardware  -- AcceleratorSpec, FabricSpec: the hardware inputs every engine takes
"""
