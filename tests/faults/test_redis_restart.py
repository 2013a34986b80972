"""Redis restarts during a sweep: the run completes (its lost chunks are queued again once it has been
quiet for ANALYSIS_STALL_S with no chunk held by a worker); it is never left 'running' (past its time limit
it fails with a message, tests/analysis). The worker reconnects by itself, and the same sweep started
again completes.

The Redis here is a private redis-server that keeps nothing (--save "", no AOF), so a restart loses every
queued and unacknowledged message, as a Redis without persistence (or a replaced container) would. A worker
killed mid-chunk is covered by tests/integration/test_sweep_workers.py
(test_killing_the_worker_mid_run_loses_no_chunk_and_counts_none_twice).
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.analysis.models import Analysis, AnalysisChunk
from apps.analysis.services import analysis_create, analysis_progress
from apps.catalog.services import catalog_load_seed

from ..conftest import WorkerProcess
from .conftest import RedisServer

pytestmark = pytest.mark.integration

# 5 accelerators × 4 cluster sizes = 20 groups = 5 chunks of 4 groups × 4 pricing models = 80 designs.
SWEEP = {
    "model": {"preset": "llama3-70b"},
    "training": {"tokens": 1e12, "global_batch_tokens": 4194304, "precision": "bf16"},
    "accelerators": ["h100-sxm", "h200", "b200", "a100-80gb", "mi300x"],
    "nodes": [16, 32, 64, 128],
    "pricing_models": ["on_demand", "reserved_1y", "spot", "own"],
}
# Long enough for the first chunk to finish before Redis goes, short enough to keep the test quick.
TIME_LIMIT_S = 45
# Quiet this long with no chunk held by a worker, and the next read queues the unfinished chunks again.
STALL_S = 5
TERMINAL = ("succeeded", "failed")


def _poll(client: APIClient, analysis_id: int, until: Any, timeout: float) -> dict[str, Any]:
    """Read the analysis through the API, as the sweep page does (the read applies the time limit)."""
    deadline = time.monotonic() + timeout
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        response = client.get(f"/api/v1/analyses/{analysis_id}/")
        assert response.status_code == 200, response.content
        body = response.json()
        if until(body):
            return body
        time.sleep(0.5)
    raise AssertionError(
        f"analysis {analysis_id} still {body.get('status')!r} after {timeout:.0f}s: {body.get('progress')}"
    )


def test_redis_restart_mid_sweep_requeues_the_lost_chunks_and_the_run_completes(
    broker_at_private_redis: RedisServer,
    private_worker_env: dict[str, str],
    settings: Any,
    django_user_model: Any,
) -> None:
    redis_server = broker_at_private_redis
    catalog_load_seed()
    user = django_user_model.objects.create_user("redis-fault", password="pw-redis-123")
    client = APIClient()
    client.force_authenticate(user)
    worker = WorkerProcess(private_worker_env, "fr1")
    try:
        worker.wait_ready()
        settings.ANALYSIS_TIME_LIMIT_S = TIME_LIMIT_S
        settings.ANALYSIS_STALL_S = STALL_S
        analysis = analysis_create(owner=user, kind="sweep", params=SWEEP)
        created = time.monotonic()
        total = analysis.progress_total
        assert total == 80
        _poll(client, analysis.pk, lambda a: a["progress"]["done"] > 0, TIME_LIMIT_S)

        redis_server.kill()
        done_at_kill = analysis_progress(analysis=Analysis.objects.get(pk=analysis.pk))[0]
        assert 0 < done_at_kill < total, "the sweep finished before Redis went down; make it longer"
        time.sleep(2)  # the worker notices the lost connection and starts reconnecting
        redis_server.start()

        # Bounded: by the time limit (plus a chunk in flight and the poll) the run has ended either way.
        final = _poll(
            client,
            analysis.pk,
            lambda a: a["status"] in TERMINAL,
            TIME_LIMIT_S + 30 - (time.monotonic() - created),
        )
        # The restart lost the queued chunks; once nothing moved for STALL_S and no worker held a chunk, a
        # read queued the unfinished ones again, and the run completed with every row exactly once.
        assert final["status"] == "succeeded", final.get("error")
        assert Analysis.objects.get(pk=analysis.pk).requeues >= 1
        chunks = AnalysisChunk.objects.filter(analysis_id=analysis.pk)
        assert chunks.exclude(status="done").count() == 0
        assert len(final["result"]["rows"]) == total
        keys = {(r["accelerator"], r["nodes"], r["pricing_model"]) for r in final["result"]["rows"]}
        assert len(keys) == total

        # The worker stays connected to the restarted Redis: a new sweep started now completes too.
        settings.ANALYSIS_TIME_LIMIT_S = 600
        after = {**SWEEP, "nodes": [8, 256]}
        again = client.post("/api/v1/analyses/", {"kind": "sweep", "params": after}, format="json")
        assert again.status_code == 202, again.content
        assert again.json()["id"] != analysis.pk
        rerun = _poll(client, again.json()["id"], lambda a: a["status"] in TERMINAL, 240)
        assert rerun["status"] == "succeeded", rerun.get("error")
        assert rerun["progress"]["done"] == rerun["progress"]["total"] == 40
    finally:
        worker.stop()
