from __future__ import annotations

from typing import Any

from apps.designs.management.engine_command import EngineCommand
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.cost.resale import curves_from_records


def _tco(request: dict[str, Any], catalog: CatalogSpecs, records: dict[str, Any]) -> dict[str, Any]:
    """The cost engine on the request, with resale read as the design evaluation reads it: the catalog's
    residual-value series of the request's accelerator at the depreciation life (engine/cost/resale.py)."""
    cluster = request.get("cluster")
    given = cluster.get("accelerator") if isinstance(cluster, dict) else None
    accelerator = str(given or cost.DEFAULTS["cluster.accelerator"].value)
    resale = curves_from_records(records, accelerator=accelerator)
    return cost.tco(request, resale=resale, **catalog.cost_kwargs())


class Command(EngineCommand):
    help = (
        "Rent-vs-own cost: on-prem TCO, cloud pricing models, break-even utilization, network, storage, "
        "failures, sensitivity and findings. Reads the JSON request (docs/cost-engine.md) from FILE or stdin."
    )
    compute = staticmethod(_tco)
