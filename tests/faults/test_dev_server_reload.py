"""Issue #38 item 10: with no broker (``make run``), analyses run on a thread of the web process; when the
dev server reloads (``make test`` in the same checkout touches its files), that thread dies with the
process. The new server process now resumes every unfinished analysis about a second after it starts, so a
run completes within 10 s of the reload, every row exactly once. Before, it stayed "running" until a reader
came by after ANALYSIS_STALL_S (180 s): 5.5 minutes in the fault pass."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.apps import apps as django_apps

from apps.analysis import apps as analysis_apps
from apps.analysis import services
from apps.analysis.models import Analysis, AnalysisChunk
from tests.analysis.test_api import SWEEP

RECOVERY_S = 10.0


@pytest.mark.parametrize(
    ("argv", "run_main", "serving"),
    [
        (["manage.py", "runserver", "127.0.0.1:8000"], "true", True),  # the autoreloader's serving child
        (["manage.py", "runserver", "127.0.0.1:8000"], None, False),  # the autoreloader's parent
        (["manage.py", "runserver", "--noreload"], None, True),
        (["/venv/bin/gunicorn", "clusterdesigner.wsgi"], None, True),
        (["manage.py", "migrate"], "true", False),
        (["/venv/bin/pytest", "-q"], None, False),
    ],
)
def test_only_a_serving_process_resumes_analyses(
    argv: list[str], run_main: str | None, serving: bool
) -> None:
    environ = {"RUN_MAIN": run_main} if run_main else {}
    assert analysis_apps.serving_process(argv, environ) is serving


def test_a_sweep_stranded_by_a_reload_completes_within_10_s_of_the_restart(
    transactional_db: Any, user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    # The old process: the sweep is created and its chunks handed to a thread that dies with the process
    # before running any (here: never started).
    monkeypatch.setattr(services, "_enqueue", lambda analysis_id: None)
    created = user_client.post("/api/v1/analyses/", SWEEP, format="json")
    assert created.status_code == 202, created.content[:300]
    url = created.json()["url"]
    assert user_client.get(url).json()["status"] in ("pending", "running")
    monkeypatch.undo()

    # The new process starts: runserver's serving child, with analyses on a thread (no broker).
    settings.ANALYSIS_RUN_IN_THREAD = True
    monkeypatch.setattr(analysis_apps.sys, "argv", ["manage.py", "runserver", "127.0.0.1:8000"])
    monkeypatch.setenv("RUN_MAIN", "true")
    started = time.monotonic()
    django_apps.get_app_config("analysis").ready()
    body: dict[str, Any] = {}
    while time.monotonic() - started < RECOVERY_S:
        body = user_client.get(url).json()
        if body["status"] == "succeeded":
            break
        time.sleep(0.2)
    assert body.get("status") == "succeeded", body
    assert time.monotonic() - started < RECOVERY_S
    # Every row exactly once: 2 accelerators × 3 node counts × 2 pricing models, each chunk recorded once.
    assert len(body["result"]["rows"]) == 12
    analysis = Analysis.objects.get(pk=created.json()["id"])
    assert analysis.requeues == 1
    assert not AnalysisChunk.objects.filter(analysis=analysis).exclude(status="done").exists()
