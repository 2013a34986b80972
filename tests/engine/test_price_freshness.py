"""Stale prices: never the default while a fresher one exists, and a finding on every result that uses one.

The engine is given today's date and the threshold (engine.core.offerings.Freshness); it never reads the
clock.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

import pytest
from test_cost_fixtures import CATALOG, H100

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.offerings import (
    CloudOfferingSpec,
    Freshness,
    cloud_offering_from_dict,
    default_offering,
)
from clusterdesigner.engine.cost.cost import tco

# 2026-12-03 with 180 days: a price dated before 2026-06-06 is stale.
FRESHNESS = Freshness(today=dt.date(2026, 12, 3), stale_after_days=180)


def offering(slug: str, gpus: int, usd: float, as_of: str, acc: str = "h100-sxm") -> CloudOfferingSpec:
    return CloudOfferingSpec(
        slug=slug,
        provider="x",
        instance_type=slug,
        region="r",
        accelerator=acc,
        gpu_count=gpus,
        usd_per_hour={"on_demand": usd},
        price_as_of={"on_demand": as_of},
    )


def choose(rows: dict[str, CloudOfferingSpec]) -> str | None:
    return default_offering(rows, accelerator="h100-sxm", gpus_per_node=8, freshness=FRESHNESS)


def test_a_price_is_stale_only_when_older_than_the_threshold() -> None:
    assert FRESHNESS.stale_before == "2026-06-06"
    assert FRESHNESS.is_stale("2026-06-05") and not FRESHNESS.is_stale("2026-06-06")
    assert not FRESHNESS.is_stale("") and not FRESHNESS.is_stale(None)  # undated: nothing says it is old
    assert Freshness.from_json(FRESHNESS.to_json()) == FRESHNESS
    with pytest.raises(InputError):
        Freshness(today=dt.date(2026, 12, 3), stale_after_days=-1)


def test_a_stale_row_is_not_the_default_when_a_fresh_one_exists() -> None:
    """Without freshness, a whole node of the design's size wins even on an old price; with it, the fresh
    single-GPU offering wins (priced × 8 per node): a stale price is never chosen silently over a fresher
    one."""
    rows = {
        o.slug: o
        for o in [
            offering("stale-cheap-node", 8, 10.0, "2025-01-01"),
            offering("stale-dear-node", 8, 90.0, "2026-01-01"),
            offering("fresh-single", 1, 4.0, "2026-10-01"),
            offering("fresh-other-gpu", 8, 1.0, "2026-11-01", acc="b200"),
        ]
    }
    assert default_offering(rows, accelerator="h100-sxm", gpus_per_node=8) == "stale-dear-node"
    assert choose(rows) == "fresh-single"
    # Among fresh rows the old rule holds: a whole node, then the newest date, then the lower price.
    rows["fresh-node"] = offering("fresh-node", 8, 70.0, "2026-09-01")
    assert choose(rows) == "fresh-node"


def test_when_every_price_is_stale_one_is_still_chosen() -> None:
    old, older = offering("old", 8, 10.0, "2025-01-01"), offering("older", 8, 5.0, "2024-01-01")
    rows = {o.slug: o for o in (old, older)}
    assert choose(rows) == "old"


def test_prices_of_one_date_in_several_regions_take_the_lowest_whatever_their_order() -> None:
    prices = [
        {"pricing_model": "spot", "usd_per_hour": 53.35, "region": "us-west1", "as_of": "2026-01-01"},
        {"pricing_model": "spot", "usd_per_hour": 21.70, "region": "us-east4", "as_of": "2026-01-01"},
        {"pricing_model": "spot", "usd_per_hour": 99.00, "region": "us-east4", "as_of": "2025-01-01"},
    ]
    for order in (prices, prices[::-1]):
        spec = cloud_offering_from_dict({"slug": "o", "accelerator": "h100", "gpu_count": 8, "prices": order})
        assert spec.usd_per_hour["spot"] == 21.70


REQUEST: dict[str, Any] = {
    "cluster": {
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nodes": 4,
        "fabric": "ib-ndr400",
        "storage": "lustre",
    },
    "on_prem": {"server_usd": 250_000},
    "run": {"gpu_hours": 100_000},
}


def _stale_findings(result: dict[str, Any]) -> list[str]:
    return [f["message"] for f in result["findings"] if f["code"] == "stale_price"]


def test_a_result_that_uses_a_stale_catalog_price_says_so() -> None:
    # aws-p5-48xlarge: on-demand 2026-09-01 (fresh), reserved 1 year 2026-01-01 (stale under FRESHNESS).
    request = {**REQUEST, "cloud": {"offering": "aws-p5-48xlarge"}}
    result = tco(request, **CATALOG, freshness=FRESHNESS)
    messages = _stale_findings(result)
    assert len(messages) == 1 and "reserved 1-year price of aws-p5-48xlarge" in messages[0]
    assert "2026-01-01" in messages[0] and "180 days" in messages[0]
    dated = {a["name"]: a.get("as_of") for a in result["assumptions"]}
    assert dated["cloud.usd_per_node_hour.reserved_1y"] == "2026-01-01"
    assert dated["cloud.usd_per_node_hour.on_demand"] == "2026-09-01"
    # Without freshness (the CLI, older callers) the result is as before: no such finding.
    assert _stale_findings(tco(request, **CATALOG)) == []


def test_a_price_given_in_the_request_is_not_called_stale() -> None:
    given = {"offering": "aws-p5-48xlarge", "usd_per_node_hour": {"reserved_1y": 30.0}}
    request = {**REQUEST, "cloud": given}
    assert _stale_findings(tco(request, **CATALOG, freshness=FRESHNESS)) == []


def test_a_stale_owning_list_price_is_a_finding() -> None:
    dear = replace(H100, list_price_usd=30_000.0, as_of="2024-03-01")
    # No priced server type, so the owning price is this accelerator's own list price × the server factor.
    catalog = {**CATALOG, "server_types": {}, "accelerators": {**CATALOG["accelerators"], "h100-sxm": dear}}
    request = {k: v for k, v in REQUEST.items() if k != "on_prem"}
    messages = [m for m in _stale_findings(tco(request, **catalog, freshness=FRESHNESS)) if "owning" in m]
    assert len(messages) == 1 and "h100-sxm list price $30,000" in messages[0] and "2024-03-01" in messages[0]


def test_the_cost_engine_default_offering_skips_stale_prices_while_a_fresh_one_exists() -> None:
    cheap_stale = offering("cheap-stale", 8, 10.0, "2025-01-01")
    dear_fresh = offering("dear-fresh", 8, 60.0, "2026-10-01")
    catalog = {**CATALOG, "offerings": {o.slug: o for o in (cheap_stale, dear_fresh)}}
    chosen = {a["name"]: a["value"] for a in tco(REQUEST, **catalog, freshness=FRESHNESS)["assumptions"]}
    assert chosen["cloud.offering"] == "dear-fresh"
    chosen = {a["name"]: a["value"] for a in tco(REQUEST, **catalog)["assumptions"]}
    # Without freshness the newest price still wins over a cheaper old one (a 2025-01-01 row at $2.99/GPU-h
    # used to drive the default comparison), the same rule the editor's prefill uses.
    assert chosen["cloud.offering"] == "dear-fresh"
