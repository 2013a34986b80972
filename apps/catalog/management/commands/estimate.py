from __future__ import annotations

from typing import Any

from apps.catalog import selectors
from apps.catalog.management.engine_command import EngineCommand
from clusterdesigner.engine import training


def _estimate(request: dict[str, Any]) -> dict[str, Any]:
    return training.estimate(request, **selectors.engine_catalog().training_kwargs())


class Command(EngineCommand):
    help = (
        "Training estimate: memory fit, step time, MFU, days to train, or the fastest layout when the "
        "parallelism is omitted. Reads the JSON request (docs/training-engine.md) from FILE or stdin."
    )
    compute = staticmethod(_estimate)
