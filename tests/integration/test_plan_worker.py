"""A large capacity plan is solved by a real Celery worker process (Redis broker, PostgreSQL rows)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.plans.test_api import SPEC, URL

pytestmark = pytest.mark.integration


def test_a_worker_solves_a_large_plan_and_the_run_reports_it(
    celery_worker_process: Any, settings: Any, django_user_model: Any
) -> None:
    from clusterdesigner.engine.capacity.capacity import CapacityPlan, plan_solve

    settings.PLAN_SYNC_MAX_SIZE = 1  # every plan goes to the worker
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_user("planner", password="pw-planner-123"))
    plan = client.post(URL, {"name": "Worker plan", "spec": SPEC}, format="json").json()
    queued = client.post(f"{URL}{plan['id']}/solve/")
    assert queued.status_code == 202
    url = queued.json()["url"]
    deadline = time.monotonic() + 120
    run = client.get(url).json()
    while run["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.5)
        run = client.get(url).json()
    assert run["status"] == "done", run
    expected = plan_solve(plan=CapacityPlan.from_json(SPEC)).total_usd
    assert run["solution"]["result"]["total_usd"] == pytest.approx(expected, rel=1e-9)
