"""Issue #38 item 4: a chunk whose worker stopped beating is queued again by the periodic rescue, within
ANALYSIS_LEASE_S of its last heartbeat (not at the chunk's 300 s time limit), and only that chunk; a chunk
whose worker still beats is left to it. The real-process version (kill -9 of a worker, celery beat) is
tests/faults/test_dead_worker.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.analysis import services, tasks
from apps.analysis.models import Analysis, AnalysisChunk
from tests.analysis.test_api import SWEEP


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, list[int] | None]]:
    """What would be sent to the broker: (analysis id, chunk ids), instead of sending it."""
    sent: list[tuple[int, list[int] | None]] = []
    monkeypatch.setattr(
        services, "_enqueue", lambda analysis_id, chunk_ids=None: sent.append((analysis_id, chunk_ids))
    )
    return sent


def _sweep_with_a_chunk_taken(client: Any, *, beat_s_ago: float) -> tuple[int, AnalysisChunk]:
    """A fresh sweep (queued, nothing lost) whose chunk 0 a worker took and last beat ``beat_s_ago`` s ago."""
    created = client.post("/api/v1/analyses/", SWEEP, format="json")
    assert created.status_code == 202, created.content[:300]
    analysis_id = int(created.json()["id"])
    now = timezone.now()
    Analysis.objects.filter(pk=analysis_id).update(status="running", started_at=now)
    chunk = AnalysisChunk.objects.get(analysis_id=analysis_id, index=0)
    AnalysisChunk.objects.filter(pk=chunk.pk).update(
        attempts=1,
        worker="w1@host",
        started_at=now - dt.timedelta(seconds=60),
        heartbeat_at=now - dt.timedelta(seconds=beat_s_ago),
    )
    return analysis_id, chunk


def test_a_chunk_whose_worker_stopped_beating_is_queued_again_alone(
    user_client: Any, catalog: Any, queued: list[Any], settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    assert settings.ANALYSIS_LEASE_S == 20 and settings.ANALYSIS_HEARTBEAT_S == 5
    analysis_id, chunk = _sweep_with_a_chunk_taken(user_client, beat_s_ago=21)
    queued.clear()  # the sweep's own first enqueue
    with django_capture_on_commit_callbacks(execute=True):
        assert services.analysis_rescue_stalled() == [analysis_id]
    assert queued == [(analysis_id, [chunk.pk])]  # only the orphan; the others are still in the queue
    chunk.refresh_from_db()
    assert chunk.heartbeat_at is None and chunk.status == "pending"
    # Claimed once: the next rescue (or one running at the same time) finds nothing to reclaim.
    with django_capture_on_commit_callbacks(execute=True):
        assert services.analysis_rescue_stalled() == []
    assert len(queued) == 1
    assert Analysis.objects.get(pk=analysis_id).requeues == 0  # the whole-run stall rule did not fire


def test_a_chunk_whose_worker_beat_within_the_lease_is_left_to_it(
    user_client: Any, catalog: Any, queued: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    analysis_id, chunk = _sweep_with_a_chunk_taken(user_client, beat_s_ago=19)
    queued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.analysis_rescue_stalled() == []
    assert queued == []
    chunk.refresh_from_db()
    assert chunk.heartbeat_at is not None


def test_a_reclaimed_chunk_is_recorded_once_when_the_slow_worker_also_finishes(
    user_client: Any, catalog: Any, queued: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    analysis_id, chunk = _sweep_with_a_chunk_taken(user_client, beat_s_ago=30)
    with django_capture_on_commit_callbacks(execute=True):
        services.analysis_rescue_stalled()
    # The "dead" worker was only slow: it and the rescued copy both run the chunk; one records it.
    services.analysis_run_chunk(chunk_id=chunk.pk, worker="w1@host")
    first = AnalysisChunk.objects.get(pk=chunk.pk)
    services.analysis_run_chunk(chunk_id=chunk.pk, worker="w2@host")
    second = AnalysisChunk.objects.get(pk=chunk.pk)
    assert (first.status, second.status) == ("done", "done")
    assert second.result == first.result and second.finished_at == first.finished_at
    assert second.attempts == 2  # the copy that found it done did not take it again
    for other in AnalysisChunk.objects.filter(analysis_id=analysis_id).exclude(pk=chunk.pk):
        services.analysis_run_chunk(chunk_id=other.pk)
    body = user_client.get(f"/api/v1/analyses/{analysis_id}/").json()
    assert body["status"] == "succeeded"
    keys = [(r["accelerator"], r["nodes"], r["pricing_model"]) for r in body["result"]["rows"]]
    assert len(keys) == len(set(keys)) == 12


def test_taking_a_chunk_stamps_its_heartbeat(user_client: Any, catalog: Any, queued: list[Any]) -> None:
    created = user_client.post("/api/v1/analyses/", SWEEP, format="json")
    chunk = AnalysisChunk.objects.filter(analysis_id=created.json()["id"]).first()
    assert chunk is not None and chunk.heartbeat_at is None
    before = timezone.now()
    services.analysis_run_chunk(chunk_id=chunk.pk, worker="w1@host")
    chunk.refresh_from_db()
    assert chunk.heartbeat_at is not None and chunk.heartbeat_at >= before


def test_beat_can_send_the_rescue() -> None:
    # What beat calls; it raised ValueError (the global soft limit, 540 s, above the task's 120 s hard one),
    # so the periodic rescue was never sent.
    task = tasks.analysis_rescue_stalled_task
    assert task.soft_time_limit is not None and task.time_limit is not None
    assert task.soft_time_limit <= task.time_limit
