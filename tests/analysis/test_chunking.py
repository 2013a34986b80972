"""How a sweep is cut into chunks for the workers (apps.analysis.services._chunked), through POST
/api/v1/analyses/: every worker gets work, the chunks are queued together with no wait, and the cut changes no
row. bench/sweep.py measures the 480-design sweep on real workers."""

from __future__ import annotations

import time
from typing import Any

import pytest
from celery import canvas
from django.test import override_settings

from apps.analysis import compute
from apps.analysis.models import Analysis, AnalysisChunk
from apps.catalog.models import Accelerator
from clusterdesigner.engine.cost import defaults
from tests.analysis.test_api import SWEEP


def _bench_sweep() -> dict[str, Any]:
    """The shape of bench/sweep.py's sweep: 10 accelerators × 12 cluster sizes × 4 pricing models = 480
    designs (the cut depends on the counts, not on which accelerators)."""
    accelerators = list(Accelerator.objects.order_by("slug").values_list("slug", flat=True)[:10])
    assert len(accelerators) == 10 and len(defaults.SWEEP_PRICING) == 4
    return {
        "kind": "sweep",
        "params": {
            "model": defaults.model(),
            "training": defaults.training(),
            "accelerators": accelerators,
            "nodes": [4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512],
            "pricing_models": list(defaults.SWEEP_PRICING),
        },
    }


def _chunk_sizes(analysis_id: int) -> list[int]:
    return list(
        AnalysisChunk.objects.filter(analysis_id=analysis_id).order_by("index").values_list("size", flat=True)
    )


@pytest.mark.parametrize(
    ("workers", "sizes"),
    [
        # 120 points: 4 a chunk at most, so 30 chunks of 16 designs for 1 or 2 workers (≥ 4 per worker) ...
        (1, [16] * 30),
        (2, [16] * 30),
        # ... and for 8 workers 120 // 32 = 3 points a chunk: 40 chunks of 12 designs, 5 per worker.
        (8, [12] * 40),
    ],
)
def test_the_480_design_sweep_gives_every_worker_work(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any, workers: int, sizes: list[int]
) -> None:
    with override_settings(ANALYSIS_WORKERS=workers), django_capture_on_commit_callbacks(execute=False):
        response = user_client.post("/api/v1/analyses/", _bench_sweep(), format="json")
    assert response.status_code == 202, response.json()
    got = _chunk_sizes(response.json()["id"])
    assert got == sizes and sum(got) == 480
    assert len(got) >= 2 * workers
    assert Analysis.objects.get(pk=response.json()["id"]).progress_total == 480


def test_a_small_sweep_is_cut_finer_and_its_rows_are_those_of_one_chunk(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SWEEP is 2 accelerators × 3 sizes (6 points) × 2 pricing models. At 4 points a chunk it was 2 chunks
    (8 and 4 designs), one for each of 2 workers and the second half as long; on 2 workers it is now 6 chunks
    of 1 point. No chunk is queued with a delay, and nothing sleeps: all six are published in one group."""
    published: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
    apply_async = canvas.group.apply_async

    def record(self: canvas.group, *args: Any, **options: Any) -> Any:
        published.append(([dict(task.options) for task in self.tasks], options))
        return apply_async(self, *args, **options)

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds} s")

    monkeypatch.setattr(canvas.group, "apply_async", record)
    monkeypatch.setattr(time, "sleep", no_sleep)
    with override_settings(ANALYSIS_WORKERS=2), django_capture_on_commit_callbacks(execute=True):
        response = user_client.post("/api/v1/analyses/", SWEEP, format="json")
    assert response.status_code == 202
    analysis = Analysis.objects.get(pk=response.json()["id"])
    assert _chunk_sizes(analysis.pk) == [2] * 6
    assert len(published) == 1
    task_options, group_options = published[0]
    assert len(task_options) == 6
    for options in [*task_options, group_options]:
        assert not {"countdown", "eta"} & set(options), options
    body = user_client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded" and body["progress"]["done"] == 12
    # The cut changes no row and no order: the rows are those of the six points computed as one chunk.
    points = [item for chunk in analysis.chunks.order_by("index") for item in chunk.items]
    assert [p["nodes"] for p in points] == [1, 2, 4, 1, 2, 4]
    whole = compute.compute_items(kind="sweep", items=points, snapshot=analysis.snapshot)
    assert body["result"]["rows"] == whole and len(whole) == 12
