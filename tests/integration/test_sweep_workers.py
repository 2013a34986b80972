"""Sweeps in real Celery worker processes through Redis, writing to PostgreSQL."""

from __future__ import annotations

import time
from typing import Any

import pytest

from apps.analysis.models import Analysis, AnalysisChunk
from apps.analysis.services import analysis_create, analysis_progress
from apps.catalog.services import catalog_load_seed

from ..conftest import WorkerProcess

pytestmark = pytest.mark.integration

# 5 accelerators × 5 cluster sizes × 4 pricing models = 100 designs, each with a full layout search.
SWEEP = {
    "model": {"preset": "llama3-70b"},
    "training": {"tokens": 1e12, "global_batch_tokens": 4194304, "precision": "bf16"},
    "accelerators": ["h100-sxm", "h200", "b200", "a100-80gb", "mi300x"],
    "nodes": [16, 32, 64, 128, 256],
    "pricing_models": ["on_demand", "reserved_1y", "spot", "own"],
}


def _wait(analysis_id: int, until: Any, timeout: float) -> Analysis:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        analysis = Analysis.objects.get(pk=analysis_id)
        if until(analysis):
            return analysis
        time.sleep(0.2)
    raise AssertionError(
        f"timed out; status {analysis.status}, progress {analysis_progress(analysis=analysis)}"
    )


def test_sweep_of_100_designs_completes_with_progress(
    celery_worker_process: Any, django_user_model: Any
) -> None:
    catalog_load_seed()
    user = django_user_model.objects.create_user("sweeper", password="pw-sweep-123")
    analysis = analysis_create(owner=user, kind="sweep", params=SWEEP)
    assert analysis.progress_total == 100
    seen: list[int] = []
    final = _wait(
        analysis.pk,
        lambda a: seen.append(analysis_progress(analysis=a)[0]) or a.status in ("succeeded", "failed"),
        240,
    )
    assert final.status == "succeeded", final.error
    assert analysis_progress(analysis=final) == (100, 100)
    assert seen == sorted(seen)  # progress only moves forward
    assert len(final.result["rows"]) == 100
    workers = set(AnalysisChunk.objects.filter(analysis=final).values_list("worker", flat=True))
    assert workers and all(w.startswith("w1@") for w in workers)


def test_killing_the_worker_mid_run_loses_no_chunk_and_counts_none_twice(
    worker_env: dict[str, str], django_user_model: Any
) -> None:
    catalog_load_seed()
    # A short visibility timeout, so the messages the killed worker held come back to the next worker quickly.
    env = {**worker_env, "CELERY_VISIBILITY_TIMEOUT": "8", "CELERY_RESTORE_INTERVAL": "2"}
    first = WorkerProcess(env, "w1")
    first.wait_ready()
    user = django_user_model.objects.create_user("sweeper2", password="pw-sweep-123")
    analysis = analysis_create(
        owner=user, kind="sweep", params={**SWEEP, "nodes": [16, 32, 64, 128, 256, 512]}
    )
    total = analysis.progress_total
    try:
        _wait(analysis.pk, lambda a: analysis_progress(analysis=a)[0] >= 12, 120)
        first.kill()
        done_at_kill = analysis_progress(analysis=Analysis.objects.get(pk=analysis.pk))[0]
        assert 0 < done_at_kill < total, "the run finished before the worker was killed; make it longer"
    finally:
        first.stop()
    second = WorkerProcess(env, "w2")
    try:
        second.wait_ready()
        final = _wait(analysis.pk, lambda a: a.status in ("succeeded", "failed"), 300)
    finally:
        second.stop()
    assert final.status == "succeeded", final.error
    chunks = AnalysisChunk.objects.filter(analysis=final)
    assert chunks.filter(status="done").count() == chunks.count()
    assert analysis_progress(analysis=final) == (total, total)
    rows = final.result["rows"]
    keys = [(r["accelerator"], r["nodes"], r["pricing_model"]) for r in rows]
    assert len(keys) == len(set(keys)) == total  # nothing lost, nothing twice
    assert {w.split("@")[0] for w in chunks.values_list("worker", flat=True)} == {"w1", "w2"}
