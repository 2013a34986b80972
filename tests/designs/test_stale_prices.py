"""A design priced from a stale catalog price says so in its findings; a fresh price raises none.

Dates are set relative to today (PRICE_STALE_AFTER_DAYS = 180 here), so the tests do not depend on the day.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.catalog.models import CloudPrice

SPEC = {
    "workload": {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 4194304, "precision": "bf16"},
    },
    "cluster": {
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nodes": 4,
        "fabric": "ib-ndr400",
        "storage": "lustre",
    },
    "parallelism": {
        "tp": 1,
        "pp": 1,
        "dp": 32,
        "cp": 1,
        "vpp": 1,
        "micro_batch": 1,
        "recompute": "selective",
        "sharding": "zero1",
        "sequence_parallel": False,
    },
    "costs": {
        "horizon_years": 2,
        "utilization": 0.7,
        "cloud": [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}],
        # A quoted owning price, so that only the cloud price's date is under test (the catalog's DGX H100
        # price is dated 2025-03-03 and would be stale too).
        "on_prem": {"server_usd": 322_500},
    },
}


def _date_p5_on_demand(days_ago: int) -> None:
    """Make the p5's newest on-demand price (the one the engine uses) ``days_ago`` old."""
    latest = (
        CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand")
        .order_by("-as_of")
        .first()
    )
    assert latest is not None
    latest.as_of = timezone.localdate() - dt.timedelta(days=days_ago)
    latest.save()  # a save, so the catalog version (and the evaluation's hash) changes


def _evaluate(client: Any, spec: dict[str, Any] = SPEC) -> dict[str, Any]:
    design = client.post("/api/v1/designs/", {"name": "stale", "spec": spec}, format="json")
    assert design.status_code == 201, design.json()
    response = client.post(f"/api/v1/designs/{design.json()['id']}/evaluate/")
    assert response.status_code == 200
    return response.json()


def _stale(result: dict[str, Any]) -> list[str]:
    return [f["message"] for f in result["findings"] if f["code"] == "stale_price"]


@pytest.fixture
def threshold(settings: Any) -> Any:
    settings.PRICE_STALE_AFTER_DAYS = 180
    return settings


def test_a_design_priced_from_a_stale_price_has_a_finding(
    user_client: Any, catalog: Any, threshold: Any
) -> None:
    _date_p5_on_demand(400)
    result = _evaluate(user_client)
    messages = _stale(result)
    assert len(messages) == 1 and "on-demand price of aws-p5-48xlarge (p5.48xlarge)" in messages[0]
    assert "more than 180 days" in messages[0]
    assert result["price_freshness"]["stale_after_days"] == 180
    assert result["price_freshness"]["today"] == timezone.localdate().isoformat()
    used = next(a for a in result["assumptions"] if a["name"] == "cloud.usd_per_node_hour.on_demand")
    assert used["as_of"] == (timezone.localdate() - dt.timedelta(days=400)).isoformat()


def test_a_fresh_price_raises_no_finding_and_superseded_rows_do_not_count(
    user_client: Any, catalog: Any, threshold: Any
) -> None:
    # The p5 keeps its 2025-05-31 row, superseded by the one dated 10 days ago: only the one used counts.
    _date_p5_on_demand(10)
    assert CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", as_of="2025-05-31").exists()
    assert _stale(_evaluate(user_client)) == []


def test_a_stored_evaluation_is_recomputed_when_the_threshold_changes(
    user_client: Any, catalog: Any, threshold: Any
) -> None:
    _date_p5_on_demand(400)
    design = user_client.post("/api/v1/designs/", {"name": "stale", "spec": SPEC}, format="json").json()
    url = f"/api/v1/designs/{design['id']}/evaluate/"
    assert _stale(user_client.post(url).json())
    threshold.PRICE_STALE_AFTER_DAYS = 1000
    assert _stale(user_client.post(url).json()) == []
    threshold.PRICE_STALE_AFTER_DAYS = 180
    assert _stale(user_client.post(url).json())  # the first stored result again


def test_a_negotiated_price_in_the_spec_is_not_called_stale(
    user_client: Any, catalog: Any, threshold: Any
) -> None:
    _date_p5_on_demand(400)
    spec = copy.deepcopy(SPEC)
    spec["costs"]["cloud"][0]["usd_per_node_hour"] = {"on_demand": 50.0}
    assert _stale(_evaluate(user_client, spec)) == []


def test_the_design_page_shows_the_stale_finding(
    client: Any, catalog: Any, threshold: Any, django_user_model: Any
) -> None:
    from apps.designs.services import design_create

    _date_p5_on_demand(400)
    owner = django_user_model.objects.create_user("carol", password="pw-carol-123")
    design = design_create(owner=owner, name="stale page", spec=copy.deepcopy(SPEC))
    client.force_login(owner)
    html = client.get(f"/designs/{design.pk}/").content.decode()
    assert "on-demand price of aws-p5-48xlarge (p5.48xlarge) is dated" in html


def test_an_evaluation_run_as_an_analysis_has_the_finding_too(
    user_client: Any, catalog: Any, threshold: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """A searched layout is evaluated by an analysis worker: the snapshot carries today's date and the
    threshold, so the worker's result says the same as the request's."""
    _date_p5_on_demand(400)
    design = user_client.post("/api/v1/designs/", {"name": "stale", "spec": SPEC}, format="json").json()
    payload = {"kind": "evaluate", "params": {"design": design["id"], "version": 1}}
    with django_capture_on_commit_callbacks(execute=True):
        response = user_client.post("/api/v1/analyses/", payload, format="json")
    body = user_client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded"
    assert any("on-demand price of aws-p5-48xlarge" in m for m in _stale(body["result"]))
