"""The price book's other kinds (issue #35): a network bill of materials, a storage quote, staff cost per FTE,
a committed-use rate, a capacity block, an enterprise-wide discount and a quota, each checked through the
evaluate API against a hand calculation, with the origin every figure states.

The design is tests.designs.test_api.SPEC: 64 nodes × 8 H100 SXM on ib-ndr400, whose leaf-spine network the
engine counts as 24 ib-ndr-64 switches, 1,024 cables and 1,024 transceivers (256 node-side + 768 switch-side);
the catalog's placeholders ($30,000 a switch, $150 a cable, $1,200 a transceiver) give $2,102,400. AWS
p5.48xlarge (us-east-1) on-demand is $55.04 a node-hour, reserved 3-year $23.776."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from tests.designs.test_api import SPEC
from tests.pricebook.test_resolution import NODES, _client, _design, _entry, _evaluate, _p5, _price

P5 = "aws-p5-48xlarge"


def _refused(client: Any, **fields: Any) -> dict[str, Any]:
    body = {"valid_from": "2026-01-01", **fields}
    response = client.post("/api/v1/price-entries/", body, format="json")
    assert response.status_code == 400, response.json()
    return dict(response.json()["error"]["fields"])


def test_a_network_bill_of_materials_replaces_the_placeholder_prices(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    before = _p5(_evaluate(client, design))["network"]
    assert before["capex_usd"] == 2_102_400  # 24 × 30,000 + 1,024 × 150 + 1,024 × 1,200
    switch = _entry(
        client, kind="network_quote", network_item="switch", switch_model="ib-ndr-64", value=25_000
    )
    _entry(client, kind="network_quote", network_item="cable", value=100)
    _entry(client, kind="network_quote", network_item="transceiver", value=900)
    # A quote for a switch this design does not use is never used for it.
    _entry(client, kind="network_quote", network_item="switch", switch_model="eth-400g-64", value=1_000)
    result = _evaluate(client, design)
    # 24 × $25,000 + 1,024 × $100 + 1,024 × $900 = $600,000 + $102,400 + $921,600 = $1,624,000
    assert _p5(result)["network"]["capex_usd"] == 1_624_000
    row = _price(result, "network.switch_usd")
    assert (row["origin"], row["value"], row["entry_id"]) == ("price_book", 25_000, switch["id"])
    assert _price(result, "network.cable_usd")["origin"] == "price_book"


def test_a_network_lump_sum_is_the_networks_capex(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    _entry(client, kind="network_quote", network_item="lump_sum", value=1_500_000, source="Q-77 fabric")
    result = _evaluate(client, design)
    assert _p5(result)["network"]["capex_usd"] == 1_500_000
    assert _p5(result)["on_prem"]["capex_parts"]["network"]["usd"] == 1_500_000
    row = _price(result, "network.capex_usd")
    assert row["origin"] == "price_book" and "Q-77 fabric" in row["source"]


def test_storage_and_staff_quotes_set_their_lines(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    before = _p5(_evaluate(client, design))["on_prem"]
    _entry(client, kind="storage_quote", value=150)
    _entry(client, kind="staff_cost", value=240_000)
    result = _evaluate(client, design)
    after = _p5(result)["on_prem"]
    # Both lines are linear in their price: storage capex 150 / 200 (the placeholder) of before, staff
    # 240,000 / 180,000 (the default) of before.
    assert after["capex_parts"]["storage"]["usd"] == pytest.approx(
        before["capex_parts"]["storage"]["usd"] * 150 / 200, rel=1e-12
    )
    assert after["annual"]["staff"]["usd"] == pytest.approx(
        before["annual"]["staff"]["usd"] * 4 / 3, rel=1e-12
    )
    assert _price(result, "on_prem.storage_usd_per_tb")["origin"] == "price_book"
    assert _price(result, "on_prem.staff_usd_per_fte_year")["value"] == 240_000


def test_a_committed_use_rate_prices_its_commitment_only(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    spec = copy.deepcopy(SPEC)
    spec["costs"]["cloud"][0]["pricing_models"] = ["on_demand", "reserved_3y"]
    design = _design(client, spec)
    rate = _entry(client, kind="committed_rate", offering=P5, pricing_model="reserved_3y", value=20)
    cloud = _p5(result := _evaluate(client, design))["cloud"]
    assert cloud["reserved_3y"]["usd_per_node_hour"] == 20
    assert cloud["on_demand"]["usd_per_node_hour"] == 55.04  # the catalog's: the rate is not on-demand's
    assert _price(result, f"cloud.{P5}.reserved_3y")["entry_id"] == rate["id"]
    fields = _refused(client, kind="committed_rate", offering=P5, pricing_model="on_demand", value=20)
    assert "pricing_model" in fields


def test_a_capacity_block_prices_per_node_hour_and_caps_the_nodes(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    block = _entry(
        client, kind="capacity_block", offering=P5, duration_hours=100, block_nodes=64, value=280_000
    )
    result = _evaluate(client, design)
    # $280,000 ÷ (100 h × 64 nodes) = $43.75 a node-hour; the block's 64 nodes are the design's 64.
    assert _p5(result)["cloud"]["on_demand"]["usd_per_node_hour"] == 43.75
    quota = _price(result, f"quota.{P5}.on_demand")
    assert (quota["value"], quota["entry_id"]) == (64, block["id"])
    smaller = client.patch(f"/api/v1/price-entries/{block['id']}/", {"block_nodes": 32}, format="json")
    assert smaller.status_code == 200, smaller.json()
    result = _evaluate(client, design)
    assert "on_demand" in _p5(result)["cloud_unavailable"] and _p5(result)["cloud"] == {}
    (finding,) = [f for f in result["findings"] if f["code"] == "option_over_quota"]
    assert "supplies 32 nodes at most and the design needs 64" in finding["message"]


def test_an_enterprise_discount_applies_where_no_other_discount_does(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    _entry(client, kind="enterprise_discount", value=0.05)
    result = _evaluate(client, design)
    assert _p5(result)["cloud"]["on_demand"]["usd_per_node_hour"] == pytest.approx(52.288)  # 55.04 × 0.95
    _entry(client, kind="cloud_discount", offering=P5, value=0.2)
    result = _evaluate(client, design)  # the offering's discount, not both (discounts never stack)
    assert _p5(result)["cloud"]["on_demand"]["usd_per_node_hour"] == pytest.approx(44.032)  # 55.04 × 0.8


def test_a_quota_below_the_designs_nodes_makes_the_option_infeasible(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = 0.05  # renting wins at 5 % use
    design = _design(client, spec)
    assert _evaluate(client, design)["verdict"]["option"] == "AWS p5.48xlarge on-demand"
    entry = _entry(client, kind="quota", offering=P5, region="us-east-1", pricing_model="on_demand", value=0)
    result = _evaluate(client, design)
    assert result["verdict"]["option"] != "AWS p5.48xlarge on-demand"
    (finding,) = [f for f in result["findings"] if f["code"] == "option_over_quota"]
    assert "effectively unavailable (quota 0) and the design needs 64" in finding["message"]
    assert _price(result, f"quota.{P5}.on_demand")["origin"] == "price_book"
    # The design page marks the option, with why.
    page = Client()
    page.force_login(alice)
    html = page.get(f"/designs/{design}/").content.decode()
    card = html[html.index(f'class="card infeasible" data-option="{P5}:on_demand"') :]
    assert "not feasible" in card[:400] and "effectively unavailable (quota 0)" in card[:800]
    # A quota of the design's 64 nodes is enough.
    client.patch(f"/api/v1/price-entries/{entry['id']}/", {"value": NODES}, format="json")
    assert _evaluate(client, design)["verdict"]["option"] == "AWS p5.48xlarge on-demand"


def test_the_designs_own_quota_wins_over_the_book(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    spec = copy.deepcopy(SPEC)
    spec["costs"]["cloud"][0]["capacity_nodes"] = {"on_demand": 100}
    design = _design(client, spec)
    _entry(client, kind="quota", offering=P5, value=0)
    result = _evaluate(client, design)
    assert "on_demand" in _p5(result)["cloud"]
    assert _price(result, f"quota.{P5}.on_demand")["origin"] == "design"


def test_bad_entries_of_the_new_kinds_are_refused_by_field(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    assert "switch_model" in _refused(client, kind="network_quote", network_item="switch", value=1)
    for item, model in (("cable", "ib-ndr-64"), ("switch", "nope")):
        fields = _refused(client, kind="network_quote", network_item=item, switch_model=model, value=1)
        assert "switch_model" in fields
    assert "network_item" in _refused(client, kind="network_quote", value=1)
    assert "value" in _refused(client, kind="quota", offering=P5, value=1.5)
    assert "value" in _refused(client, kind="quota", offering=P5, value=-1)
    assert "region" in _refused(client, kind="quota", offering=P5, region="eu-west-1", value=4)
    assert "duration_hours" in _refused(client, kind="capacity_block", offering=P5, block_nodes=8, value=1e5)
    assert "value" in _refused(client, kind="enterprise_discount", value=1.2)
    assert "offering" in _refused(client, kind="staff_cost", offering=P5, value=1e5)
    from apps.pricebook.models import PriceEntry

    assert not PriceEntry.objects.exists()
