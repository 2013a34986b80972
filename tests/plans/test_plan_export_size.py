"""Issue #38 item 4 (its export part): the plan XLSX export never solves a large plan in the request (it
did, synchronously, with no size check, under gunicorn's 30 s timeout). A plan above PLAN_SYNC_MAX_SIZE
with no stored solution answers 409 naming the worker's run, which it queues; once that run has solved it,
the same URL answers the workbook."""

from __future__ import annotations

import io
from typing import Any

import openpyxl
import pytest

from apps.plans.models import PlanRun, PlanSolution
from tests.plans.test_api import URL, _client, _create


@pytest.mark.django_db
def test_a_large_unsolved_plan_is_not_solved_by_its_export(
    alice: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLAN_SYNC_MAX_SIZE = 10  # the test plan is 12 months × (1 run + 1) = 24
    client = _client(alice)
    plan = _create(client)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = client.get(f"{URL}{plan['id']}/xlsx/")
    assert response.status_code == 409, response.content[:300]
    run = PlanRun.objects.get(version__plan_id=plan["id"])
    message = response.json()["error"]["message"]
    assert f"run {run.pk}" in message and f"/runs/{run.pk}/" in message
    assert not PlanSolution.objects.exists()  # nothing was solved in the request
    assert len(queued) == 1  # the worker's task, sent on commit
    # The worker solves it (tasks run in-process in tests); the export then answers the workbook.
    queued[0]()
    assert PlanRun.objects.get(pk=run.pk).status == "done"
    done = client.get(f"{URL}{plan['id']}/xlsx/")
    assert done.status_code == 200
    assert openpyxl.load_workbook(io.BytesIO(done.content)).sheetnames


@pytest.mark.django_db
def test_a_small_plan_is_still_exported_at_once(alice: Any, settings: Any) -> None:
    settings.PLAN_SYNC_MAX_SIZE = 100
    client = _client(alice)
    plan = _create(client)
    assert client.get(f"{URL}{plan['id']}/xlsx/").status_code == 200
    assert PlanSolution.objects.count() == 1
