from __future__ import annotations

from typing import Any

from apps.designs.management.engine_command import EngineCommand
from clusterdesigner.engine import cost
from clusterdesigner.engine.catalog import CatalogSpecs


def _tco(request: dict[str, Any], catalog: CatalogSpecs) -> dict[str, Any]:
    return cost.tco(request, **catalog.cost_kwargs())


class Command(EngineCommand):
    help = (
        "Rent-vs-own cost: on-prem TCO, cloud pricing models, break-even utilization, network, storage, "
        "failures, sensitivity and findings. Reads the JSON request (docs/cost-engine.md) from FILE or stdin."
    )
    compute = staticmethod(_tco)
