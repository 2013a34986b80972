"""Issue #38 item 3: `POST /api/v1/serving/estimate/` and a design's evaluate read one consistent catalog
snapshot, so catalog rows created, renamed and deleted while they run never give a 5xx. Before, the catalog's
tables were read one query after another outside a transaction, and the estimate and its deploy texts each
took their own snapshot: 7 of the estimates the fault pass sent during such churn answered 500.

PostgreSQL, real threads (each its own connection): writers churn an accelerator, a server type and a cloud
offering with its prices while readers post estimates and evaluate a design.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from apps.catalog.models import Accelerator, CloudOffering, CloudPrice, ServerType
from apps.catalog.services import catalog_load_seed
from clusterdesigner.engine.serving import serving
from tests.designs.test_api import SPEC

pytestmark = pytest.mark.integration

ESTIMATE = "/api/v1/serving/estimate/"
CHURN_S = 8.0


def _clone(row: Any, **changes: Any) -> Any:
    row.pk = None
    for name, value in changes.items():
        setattr(row, name, value)
    row.save()
    return row


def _churn(i: int) -> None:
    """Create, rename and delete a whole family of rows: accelerator, server type, offering, prices."""
    n = f"{threading.get_ident() % 100_000}-{i}"  # two writers, distinct slugs
    accel = _clone(Accelerator.objects.get(slug="h100-sxm"), slug=f"churn-{n}", name=f"Churn {n}")
    server = _clone(
        ServerType.objects.filter(accelerator__slug="h100-sxm").first(),
        slug=f"churn-srv-{n}",
        accelerator=accel,
    )
    source = CloudOffering.objects.get(slug="aws-p5-48xlarge")
    prices = list(source.prices.all())
    offering = _clone(source, slug=f"churn-off-{n}", accelerator=accel, instance_type=f"churn.{n}")
    for price in prices:
        _clone(price, offering=offering)
    accel.slug, accel.name = f"churn-{n}-renamed", f"Churn {n} renamed"
    accel.save()
    offering.slug = f"churn-off-{n}-renamed"
    offering.save()
    CloudPrice.objects.filter(offering=offering).delete()
    offering.delete()
    server.delete()
    accel.delete()


def _run(stop: threading.Event, work: Any, errors: list[str]) -> None:
    try:
        n = 0
        while not stop.is_set():
            work(n)
            n += 1
    except Exception as exc:  # a writer's or reader's own failure fails the test below
        errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        connection.close()


def test_estimates_and_evaluations_during_catalog_churn_never_answer_5xx(
    transactional_db: Any, postgres_required: None, django_user_model: Any
) -> None:
    catalog_load_seed()
    user = django_user_model.objects.create_user("churn", password="pw-churn-123")
    owner = APIClient()
    owner.force_authenticate(user)
    spec = SPEC
    design = owner.post("/api/v1/designs/", {"name": "churn", "spec": spec}, format="json")
    assert design.status_code == 201, design.content[:500]
    evaluate = f"/api/v1/designs/{design.json()['id']}/evaluate/"

    statuses: Counter[int] = Counter()
    five_xx: list[str] = []
    errors: list[str] = []
    lock = threading.Lock()

    def estimate(n: int) -> None:
        body = dict(serving.EXAMPLE_REQUEST) if n % 2 else {**serving.EXAMPLE_REQUEST, "accelerator": "h200"}
        answer = APIClient().post(ESTIMATE, data=json.dumps(body), content_type="application/json")
        record(answer, "estimate")

    def evaluated(n: int) -> None:
        client = APIClient()
        client.force_authenticate(user)
        record(client.post(evaluate, {}, format="json"), "evaluate")

    def record(answer: Any, what: str) -> None:
        with lock:
            statuses[answer.status_code] += 1
            if answer.status_code >= 500:
                five_xx.append(f"{what} {answer.status_code}: {answer.content[:300]!r}")

    stop = threading.Event()
    threads = [
        threading.Thread(target=_run, args=(stop, work, errors))
        for work in (_churn, _churn, estimate, estimate, evaluated)
    ]
    for thread in threads:
        thread.start()
    time.sleep(CHURN_S)  # the churn's length, not a wait for a state: every thread loops until stopped
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert not five_xx, (five_xx[:5], statuses)
    assert statuses[200] >= 4, statuses  # the readers did run beside the churn
    assert set(statuses) <= {200, 400}, statuses
