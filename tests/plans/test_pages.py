"""Capacity plan pages through the URL: the new-plan form with a run picked from a saved design, the result
page with its charts, errors named on the page, and other people's plans as 404."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from apps.designs.demo import demo_load
from apps.plans.models import CapacityPlan
from apps.plans.views import EXAMPLE_SPEC


def _signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_a_plan_made_from_a_demo_design_in_the_form_shows_its_result_and_charts(
    catalog: Any, alice: Any, bob: Any
) -> None:
    demo = demo_load()[0]
    client = _signed_in(alice)
    form = client.get("/plans/")
    assert form.status_code == 200 and demo.name in form.content.decode()
    response = client.post(
        "/plans/",
        {
            "name": "FY27",
            "spec": json.dumps(EXAMPLE_SPEC),
            "design": [str(demo.pk)],
            f"deadline-{demo.pk}": "2",
        },
    )
    assert response.status_code == 302
    plan = CapacityPlan.objects.get(name="FY27")
    assert plan.versions.get().spec["training"] == [{"design_id": demo.pk, "deadline_month": 2}]
    page = client.get(response["Location"]).content.decode()
    for chart in ("capacity", "cost", "utilization"):
        assert f'id="chart-data-{chart}"' in page
    assert demo.name in page and 'id="plan-total"' in page
    assert _signed_in(bob).get(response["Location"]).status_code == 404


@pytest.mark.django_db
def test_a_bad_spec_in_the_form_is_named_on_the_page(alice: Any) -> None:
    spec = {**EXAMPLE_SPEC, "supply": {"on_demand": {}}}
    response = _signed_in(alice).post("/plans/", {"name": "x", "spec": json.dumps(spec)})
    assert response.status_code == 400
    assert "spec.supply.on_demand.usd_per_node_hour: is required" in response.content.decode()
    response = _signed_in(alice).post("/plans/", {"name": "x", "spec": "{nope"})
    assert response.status_code == 400 and "spec: is not JSON" in response.content.decode()
    assert not CapacityPlan.objects.exists()
