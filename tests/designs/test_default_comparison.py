"""The cost engine's default comparison for an H100 design: a current offering of the same accelerator. The
rule, not a price: the choice rule itself is pinned by
tests/designs/test_cloud_choices.py::test_the_default_offering_is_the_freshest_on_demand_price_of_the_accelerator
(engine.core.offerings.default_offering, used by the editor's prefill and sweeps) and
tests/engine/test_price_freshness.py::test_the_cost_engine_default_offering_skips_stale_prices_while_a_fresh_one_exists
(the cost engine's own default). These tests hold the shipped catalog to it, through the URL."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from django.test import Client

from apps.catalog.selectors import engine_catalog, price_freshness

pytestmark = pytest.mark.django_db


def test_an_h100_design_without_an_offering_is_compared_with_a_current_h100_offering(
    alice_client: Client, demos: list[Any]
) -> None:
    spec = copy.deepcopy(demos[0].current.spec)  # 64 x H100 SXM
    assert spec["cluster"]["accelerator"] == "h100-sxm"
    spec["costs"]["cloud"] = []
    created = alice_client.post(
        "/api/v1/designs/", {"name": "own", "spec": spec}, content_type="application/json"
    )
    assert created.status_code == 201, created.content
    result = alice_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/").json()
    (cost,) = result["costs"].values()
    chosen = {a["name"]: a for a in cost["assumptions"]}["cloud.offering"]
    offering = engine_catalog().offerings[chosen["value"]]
    freshness = price_freshness()
    assert offering.accelerator == "h100-sxm"
    assert not freshness.is_stale(offering.price_as_of["on_demand"]), offering.price_as_of
    # The Lambda H100 rows (2025-01-01 and 2026-05-07) are stale in December 2026: never the default while a
    # fresher H100 price exists.
    if dt.date.fromisoformat(freshness.stale_before) > dt.date(2026, 5, 7):
        assert not chosen["value"].startswith("lambda-")
    assert "priced in the last" in chosen["source"]
