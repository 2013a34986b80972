from __future__ import annotations

from typing import Any

from apps.designs.management.engine_command import EngineCommand
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.serving_cost import serving_cost


def _serve_estimate(
    request: dict[str, Any], catalog: CatalogSpecs, records: dict[str, Any]
) -> dict[str, Any]:
    return serving_cost.estimate(request, catalog=catalog).to_json()


class Command(EngineCommand):
    help = (
        "Serving estimate: GPUs, layout, TTFT/TPOT against batch, tokens/s and $ per million tokens owning"
        " and per cloud offering. Reads the JSON request (docs/serving-engine.md) from FILE or stdin."
    )
    compute = staticmethod(_serve_estimate)
