"""Issue #38 item 4 (its periodic part): a stalled analysis is rescued by a periodic task (Celery beat runs
analysis_rescue_stalled_task every ANALYSIS_RESCUE_EVERY_S), not only when someone reads it; and a chunk's
retries outlast a 60 s database outage. Before: the rescue ran only on a read, and the chunk task's 5
retries were spent in about 9 s.

Nothing here stops a service (the outage is Celery's retry arithmetic, the rescue runs in-process), so these
run in make test's parallel phase (they were in tests/faults, which runs alone after it)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.analysis import services, tasks
from apps.analysis.models import Analysis, AnalysisChunk
from tests.analysis.test_api import SWEEP


def _stalled_sweep(client: Any, monkeypatch: pytest.MonkeyPatch, settings: Any) -> int:
    """A sweep whose queued chunks were lost (never run), with nothing moving for longer than the stall."""
    monkeypatch.setattr(services, "_enqueue", lambda analysis_id: None)
    created = client.post("/api/v1/analyses/", SWEEP, format="json")
    assert created.status_code == 202, created.content[:300]
    monkeypatch.undo()
    analysis_id = int(created.json()["id"])
    long_ago = timezone.now() - dt.timedelta(seconds=settings.ANALYSIS_STALL_S + 1)
    Analysis.objects.filter(pk=analysis_id).update(created_at=long_ago)
    return analysis_id


def test_the_periodic_task_rescues_a_stalled_sweep_with_no_reader(
    user_client: Any,
    catalog: Any,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    stalled = _stalled_sweep(user_client, monkeypatch, settings)
    assert Analysis.objects.get(pk=stalled).status == "pending"
    # What beat runs; no GET of the analysis happens before it. (The requeue is sent on commit: the test's
    # transaction never commits, so the callbacks are run here.)
    with django_capture_on_commit_callbacks(execute=True):
        tasks.analysis_rescue_stalled_task.apply()
    analysis = Analysis.objects.get(pk=stalled)
    assert (analysis.status, analysis.requeues) == ("succeeded", 1)
    assert not AnalysisChunk.objects.filter(analysis=analysis).exclude(status="done").exists()
    body = user_client.get(f"/api/v1/analyses/{stalled}/").json()
    assert len(body["result"]["rows"]) == 12  # each row once
    # Run again: nothing left to rescue.
    assert services.analysis_rescue_stalled() == []


def test_a_recent_analysis_is_left_alone(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    stalled = _stalled_sweep(user_client, monkeypatch, settings)
    Analysis.objects.filter(pk=stalled).update(created_at=timezone.now())
    assert services.analysis_rescue_stalled() == []
    assert Analysis.objects.get(pk=stalled).requeues == 0


def test_beat_runs_the_rescue_every_15_s(settings: Any) -> None:
    entry = settings.CELERY_BEAT_SCHEDULE["analysis-rescue-stalled"]
    assert entry["task"] == tasks.analysis_rescue_stalled_task.name
    assert entry["schedule"] == 15.0


def test_chunk_retries_outlast_a_60_s_outage() -> None:
    task = tasks.analysis_run_chunk_task
    # Celery's backoff for retry n is min(2**n, retry_backoff_max) s, jittered to a random wait up to it.
    waits = [min(2**n, task.retry_backoff_max) for n in range(task.max_retries)]
    assert sum(waits) == 1 + 2 + 4 + 8 + 15 * 16 == 255  # the longest the retries can span
    assert sum(waits) / 2 > 60  # on average, over two minutes: longer than a 60 s outage
