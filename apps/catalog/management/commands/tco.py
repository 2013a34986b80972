from __future__ import annotations

from typing import Any

from apps.catalog import selectors
from apps.catalog.management.engine_command import EngineCommand
from clusterdesigner.engine import cost


def _tco(request: dict[str, Any]) -> dict[str, Any]:
    return cost.tco(request, **selectors.engine_catalog().cost_kwargs())


class Command(EngineCommand):
    help = (
        "Rent-vs-own cost: on-prem TCO, cloud pricing models, break-even utilization, network, storage, "
        "failures, sensitivity and findings. Reads the JSON request (docs/cost-engine.md) from FILE or stdin."
    )
    compute = staticmethod(_tco)
