from __future__ import annotations

from typing import Any

from apps.designs.management.engine_command import EngineCommand
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.training import training


def _estimate(request: dict[str, Any], catalog: CatalogSpecs, records: dict[str, Any]) -> dict[str, Any]:
    return training.estimate(request, **catalog.training_kwargs())


class Command(EngineCommand):
    help = (
        "Training estimate: memory fit, step time, MFU, days to train, or the fastest layout when the "
        "parallelism is omitted. Reads the JSON request (docs/training-engine.md) from FILE or stdin."
    )
    compute = staticmethod(_estimate)
