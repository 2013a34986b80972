"""Owning's cost lines as finance models carry them (issue 31, "honest owning defaults"): staff from
the fleet, the lines published breakdowns carry, a network the server quote includes or a rail-only one,
colocation on the basis the user states, and a spot option capped at the nodes obtainable. Each figure's hand
calculation sits beside it."""

from __future__ import annotations

from typing import Any

import pytest
from test_cost import BARE, _merge, run

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.cost.network import fat_tree, rail_only

# One DGX H100 (catalog: $322,500, 10.2 kW), no network (one node), no storage, servers at nameplate (BARE).
FINANCE = {
    "software_usd_per_gpu_year": 4_500,
    "insurance_fraction_per_year": 0.01,
    "property_tax_fraction_per_year": 0.015,
    "spares_fraction": 0.05,
    "facility_capex_usd_per_mw": 10_000_000,
    "facility_ops_usd_per_year": 20_000,
}


def _one_node(on_prem: dict[str, Any]) -> dict[str, Any]:
    return run(_merge(BARE, {"cluster": {"nodes": 1}, "on_prem": on_prem}))


def test_finance_lines_are_capex_and_yearly_lines_with_their_formulas() -> None:
    out = _one_node(FINANCE)
    capex, annual = out["on_prem"]["capex_parts"], out["on_prem"]["annual"]
    # Spares: 0.05 × $322,500 = $16,125. Facility: 10.2 kW = 0.0102 MW × $10M/MW = $102,000.
    assert capex["spares"]["usd"] == pytest.approx(16_125)
    assert capex["facility"]["usd"] == pytest.approx(102_000)
    # capex = 322,500 + 16,125 + 102,000 = $440,625.
    assert out["on_prem"]["capex_usd"] == pytest.approx(440_625)
    # Software 8 GPUs × $4,500 = $36,000; insurance 0.01 × 440,625 = $4,406.25; property tax 0.015 × 440,625 =
    # $6,609.375; the facility-and-ops lump sum $20,000 a year.
    assert annual["software"]["usd"] == pytest.approx(36_000)
    assert annual["insurance"]["usd"] == pytest.approx(4_406.25)
    assert annual["property_tax"]["usd"] == pytest.approx(6_609.375)
    assert annual["facility_ops"]["usd"] == pytest.approx(20_000)
    assert annual["software"]["formula"] == "8 GPUs × $4,500/GPU-year"


def test_finance_lines_reach_the_monthly_cash_flows() -> None:
    out = _one_node(FINANCE)
    annual = out["on_prem"]["annual"]
    # The cash flows' other opex is every yearly line but capital and energy: colocation 10.2 kW × $150 × 12 =
    # $18,360, maintenance 0.05 × 440,625 = $22,031.25, staff 1 node ÷ 75 nodes per FTE × $180,000 = $2,400,
    # and the four lines above: 18,360 + 22,031.25 + 2,400 + 36,000 + 4,406.25 + 6,609.375 + 20,000 =
    # $109,806.875 a year.
    assert annual["colocation"]["usd"] == pytest.approx(18_360)
    assert annual["maintenance"]["usd"] == pytest.approx(22_031.25)
    inputs = out["cashflow"]["inputs"]
    assert inputs["other_opex_usd_per_month"] * 12 == pytest.approx(109_806.875)
    assert inputs["capex_usd"] == pytest.approx(440_625)


def test_finance_lines_default_to_nothing_and_show_no_line() -> None:
    out = _one_node({})
    assert set(out["on_prem"]["annual"]) == {"capital", "energy", "colocation", "maintenance", "staff"}
    assert set(out["on_prem"]["capex_parts"]) == {"servers", "network", "storage", "installation"}


@pytest.mark.parametrize("name", sorted(FINANCE))
def test_a_negative_finance_line_is_refused_naming_its_field(name: str) -> None:
    with pytest.raises(InputError) as err:
        _one_node({name: -1})
    assert err.value.field == f"on_prem.{name}"


def test_a_network_in_the_server_quote_adds_no_network_capex_but_keeps_its_power() -> None:
    counted = run({"cluster": {"nodes": 16}})
    included = run({"cluster": {"nodes": 16}, "network": {"included_in_server": True}})
    assert counted["network"]["capex_usd"] > 0
    assert included["network"]["capex_usd"] == 0.0
    assert included["on_prem"]["capex_parts"]["network"]["usd"] == 0.0
    assert included["network"]["counted_capex_usd"] == pytest.approx(counted["network"]["capex_usd"])
    assert included["network"]["power_kw"] == pytest.approx(counted["network"]["power_kw"])
    # Capex falls by exactly the counted network plus its installation share (3 %).
    drop = counted["on_prem"]["capex_usd"] - included["on_prem"]["capex_usd"]
    assert drop == pytest.approx(counted["network"]["capex_usd"] * 1.03)
    with pytest.raises(InputError) as err:
        run({"network": {"included_in_server": "yes"}})
    assert err.value.field == "network.included_in_server"


def test_a_network_quote_as_a_lump_sum_replaces_the_counted_parts() -> None:
    out = run({"cluster": {"nodes": 16}, "network": {"capex_usd": 250_000}})
    assert out["network"]["capex_usd"] == 250_000
    assert out["on_prem"]["capex_parts"]["network"]["usd"] == 250_000
    assert list(out["network"]["capex_parts"]) == ["quote"]
    assert "placeholder_prices" not in {f["code"] for f in out["findings"]}


def test_placeholder_network_prices_are_named_in_a_finding_until_replaced() -> None:
    out = run({"cluster": {"nodes": 16}})
    found = [f for f in out["findings"] if f["code"] == "placeholder_prices"]
    assert len(found) == 1 and found[0]["severity"] == "warning"
    for name in ("network.switch_usd (30,000)", "network.cable_usd (150)", "network.transceiver_usd (1,200)"):
        assert name in found[0]["message"]
    # Give the switch price: it is no longer named; the other two still are.
    quoted = run({"cluster": {"nodes": 16}, "network": {"switch_usd": 24_000}})
    message = next(f["message"] for f in quoted["findings"] if f["code"] == "placeholder_prices")
    assert "network.switch_usd (" not in message and "network.cable_usd (150)" in message
    # One node has no network to price: no finding.
    assert "placeholder_prices" not in {f["code"] for f in run({"cluster": {"nodes": 1}})["findings"]}


def test_rail_only_is_one_switch_per_rail_below_the_radix() -> None:
    # 16 nodes × 8 NICs on 64-port NDR switches (32 twin-port cages): each rail is 16 endpoints on one
    # switch: 8 switches, 8 × 16 = 128 cables; switch side ⌈16 / 2⌉ = 8 transceivers a rail (64), node
    # side 16 × 8 = 128 single-port. A rail-optimised two-tier fat-tree of the same 128 endpoints needs 8
    # leaves + ⌈128 / 64⌉ = 2 spines = 10 switches and 128 + 128 = 256 cables (Wang et al.,
    # arXiv:2307.12169, Sec. 4: the rails keep their switches and drop the spine).
    rails = rail_only(nodes=16, nics_per_node=8, port_gbps=400, radix=64, ports_per_transceiver=2)
    assert rails is not None
    assert (rails.switches, rails.cables, rails.tiers) == (8, 128, 1)
    assert (rails.node_transceivers, rails.switch_transceivers) == (128, 64)
    assert rails.bisection_gbps == pytest.approx(8 * 16 / 2 * 400)
    tree = fat_tree(nodes=16, nics_per_node=8, port_gbps=400, radix=64, ports_per_transceiver=2)
    assert tree is not None and (tree.switches, tree.cables) == (10, 256)


def test_rail_only_above_the_radix_is_a_leaf_spine_per_rail() -> None:
    # 128 nodes per rail on radix 64 (32 down-ports a leaf at 1:1): ⌈128 / 32⌉ = 4 leaves + ⌈128 / 64⌉ = 2
    # spines = 6 switches a rail, 48 for 8 rails; cables 128 + 128 = 256 a rail, 2,048 in all.
    rails = rail_only(nodes=128, nics_per_node=8, port_gbps=400, radix=64)
    assert rails is not None and (rails.switches, rails.cables, rails.tiers) == (48, 2048, 2)


def test_rail_only_through_the_request() -> None:
    out = run({"cluster": {"nodes": 16, "topology": "rail_only"}})
    assert out["network"]["topology"] == "rail-only"
    assert out["network"]["rail_only"]["switches"] == 8
    assert out["network"]["capex_parts"]["switches"]["formula"] == "8 switches × $30,000"
    with pytest.raises(InputError) as err:
        run({"cluster": {"topology": "torus"}})
    assert err.value.field == "cluster.topology"


def _colo(extra: dict[str, Any]) -> dict[str, Any]:
    # 8 nodes × 10 kW nameplate × 0.76 at load = 60.8 kW drawn at full load; $150/kW-month.
    req = _merge(BARE, {"utilization": 0.5, "on_prem": {"node_power_kw": 10, "load_power_fraction": 0.76}})
    return run(_merge(req, extra))["on_prem"]["annual"]


def test_colocation_bills_the_basis_the_user_states() -> None:
    # Contracted (default): the draw at full load, 60.8 kW × 150 × 12 = $109,440, used or not.
    assert _colo({})["colocation"]["usd"] == pytest.approx(109_440)
    # A contract of 100 kW: 100 × 150 × 12 = $180,000.
    assert _colo({"on_prem": {"colo_contracted_kw": 100}})["colocation"]["usd"] == pytest.approx(180_000)
    # Drawn: 60.8 kW × (0.3 + 0.7 × 0.5) = 39.52 kW average × 150 × 12 = $71,136.
    drawn = _colo({"colocation": {"basis": "drawn_kw"}})["colocation"]
    assert drawn["usd"] == pytest.approx(71_136)
    assert "39.52 kW drawn" in drawn["formula"]
    # Nameplate, when the contract is on the servers' rating: 80 × 150 × 12 = $144,000.
    assert _colo({"colocation": {"basis": "nameplate_kw"}})["colocation"]["usd"] == pytest.approx(144_000)
    with pytest.raises(InputError) as err:
        _colo({"colocation": {"basis": "racks"}})
    assert err.value.field == "colocation.basis"


def test_energy_is_billed_once_whatever_the_colocation_basis() -> None:
    # The energy line is the IT draw × PUE × $/kWh on every basis, and nothing when all-in:
    # 60.8 kW × 0.65 draw × 1.3 × $0.08 × 8,760 = $36,004.30 a year.
    for basis in ("contracted_kw", "drawn_kw", "nameplate_kw"):
        assert _colo({"colocation": {"basis": basis}})["energy"]["usd"] == pytest.approx(36_004.3008)
    all_in = _colo({"colocation": {"pricing": "all_in", "basis": "drawn_kw"}})
    assert all_in["energy"]["usd"] == 0.0


def test_drawn_colocation_moves_with_utilization_in_the_cost_line() -> None:
    req = _merge(BARE, {"on_prem": {"node_power_kw": 10}, "colocation": {"basis": "drawn_kw"}})
    low, high = run(_merge(req, {"utilization": 0.2})), run(_merge(req, {"utilization": 0.9}))
    # The cost over the horizon is linear in u: the line through u = 0.2 and 0.9 gives both totals.
    line = low["on_prem"]["cost_vs_utilization"]
    for out, u in ((low, 0.2), (high, 0.9)):
        assert line["fixed_usd"] + line["per_utilization_usd"] * u == pytest.approx(
            out["on_prem"]["total_usd"]
        )


def test_spot_is_capped_at_the_nodes_obtainable() -> None:
    prices = {"usd_per_node_hour": {"on_demand": 50.0, "spot": 20.0}}
    # Default cap: 8 nodes (defaults.SPOT_CAPACITY_NODES). 16 nodes: spot is not offered, and says why.
    out = run({"cluster": {"nodes": 16}, "cloud": prices})
    assert defaults.SPOT_CAPACITY_NODES == 8
    assert "spot" not in out["cloud"]
    assert out["cloud_unavailable"]["spot"].startswith("spot cannot supply 16 nodes: 8 obtainable")
    # Eight nodes fit the default cap; a stated cap of 16 admits 16.
    assert "spot" in run({"cluster": {"nodes": 8}, "cloud": prices})["cloud"]
    capped = run({"cluster": {"nodes": 16}, "cloud": {**prices, "spot_capacity_nodes": 16}})
    assert "spot" in capped["cloud"]
    rows = {a["name"]: a for a in capped["assumptions"]}
    assert rows["cloud.spot_capacity_nodes"]["source"] == "request"


def test_one_spot_interruption_default_shared_by_code_and_docs() -> None:
    # AWS Spot Advisor's lowest bucket, < 5 % per trailing month: 0.05 ÷ (365 / 12) = 0.0016438 per node-day.
    assert defaults.SPOT_INTERRUPTIONS_PER_NODE_DAY == pytest.approx(0.05 / (365 / 12))
    out = run({"cloud": {"usd_per_node_hour": {"on_demand": 50.0, "spot": 20.0}}})
    rows = {a["name"]: a for a in out["assumptions"]}
    assert rows["cloud.spot_preemptions_per_day"]["value"] == defaults.SPOT_INTERRUPTIONS_PER_NODE_DAY
    with open("docs/cost-engine.md", encoding="utf-8") as docs:
        text = docs.read()
    assert "| `cloud.spot_preemptions_per_day` | 0.001644 |" in text
    assert "| `cloud.spot_preemptions_per_day` | 0.05 |" not in text
