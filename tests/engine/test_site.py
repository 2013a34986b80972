"""Sites (issue #35): a site's fields parsed with errors naming their path, the rack plan by hand, the site's
findings with their figures, and the owning cost taking power, PUE and colocation from the site (hand
calculations beside each figure); without a site nothing moves."""

from __future__ import annotations

from typing import Any

import pytest
from test_cost import BARE, _merge, run

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.site import parse_site, rack_plan
from clusterdesigner.engine.design.spec import SpecError

AIR_40KW: dict[str, Any] = {
    "name": "Ashburn A",
    "region": "us-east",
    "power_usd_per_kwh": 0.12,
    "colocation_usd_per_kw_month": 200,
    "pue": {"air": 1.5},
    "max_kw_per_rack": 40,
    "cooling": ["air"],
    "power_now_mw": 1,
    "power_later": [{"date": "2028-01", "mw": 10}, {"date": "2027-06", "mw": 3}],
}
# One H100 node (8 × 700 W TDP × 10.2/5.6 = 10.2 kW, the DGX H100's), no network, no storage, full load.
ONE_H100 = _merge(BARE, {"cluster": {"accelerator": "h100-sxm", "nodes": 1}, "utilization": 1.0})


def _codes(out: dict[str, Any]) -> dict[str, str]:
    return {f["code"]: f["message"] for f in out["findings"]}


def test_refuses_a_site_naming_each_bad_field_by_its_path() -> None:
    bad = {
        **AIR_40KW,
        "cooling": ["air", "immersion"],
        "max_kw_per_rack": -1,
        "power_later": [{"date": "soon"}],
    }
    with pytest.raises(SpecError) as err:
        parse_site(bad, prefix="spec.site")
    fields = err.value.fields()
    assert fields["spec.site.cooling.1"] == ['"immersion" is not a valid choice.']
    assert fields["spec.site.max_kw_per_rack"] == ["Ensure this value is greater than or equal to 0.1."]
    assert fields["spec.site.power_later.0.mw"] == ["This field is required."]


def test_refuses_a_site_without_the_pue_of_a_cooling_it_offers() -> None:
    with pytest.raises(SpecError) as err:
        parse_site({**AIR_40KW, "cooling": ["air", "direct_liquid"]}, prefix="spec.site")
    assert err.value.fields() == {
        "spec.site.pue.direct_liquid": ["give the PUE of the site's direct_liquid cooling"]
    }


def test_power_later_is_the_total_from_each_date_sorted() -> None:
    site = parse_site(AIR_40KW)
    assert [s.date for s in site.power_later] == ["2027-06", "2028-01"]
    assert site.mw_at(None) == 1
    assert site.mw_at("2027-05-31") == 1
    assert site.mw_at("2027-06") == 3
    assert site.mw_at("2029-01-01") == 10
    assert site.first_date_with(2.5) == "2027-06"


def test_rack_count_of_an_eight_gpu_h100_server_at_40_kw_by_hand() -> None:
    # 10.2 kW per node: ⌊40 / 10.2⌋ = 3 nodes per rack (30.6 kW); 16 nodes → ⌈16 / 3⌉ = 6 racks.
    plan = rack_plan(
        nodes=16, gpus_per_node=8, node_power_kw=10.2, max_kw_per_rack=40, accelerator="h100-sxm"
    )
    assert (plan.racks, plan.nodes_per_rack, plan.fits) == (6, 3, True)
    assert plan.rack_kw == pytest.approx(30.6)


def test_an_nvl72_rack_is_one_unit_that_does_not_split() -> None:
    # A 72-GPU GB200 node is the rack: 120 kW > 40 kW cannot be placed; at 140 kW racks, 3 nodes = 3 racks.
    air = rack_plan(nodes=3, gpus_per_node=72, node_power_kw=120, max_kw_per_rack=40, accelerator="gb200")
    assert (air.racks, air.fits, air.rack_kw, air.unit_gpus) == (0, False, 120, 72)
    liquid = rack_plan(nodes=3, gpus_per_node=72, node_power_kw=120, max_kw_per_rack=140, accelerator="gb200")
    assert (liquid.racks, liquid.nodes_per_rack, liquid.fits) == (3, 1, True)
    # Compute trays of 4 GPUs: 72 / 4 = 18 trays a rack, 18 × 5.4 = 97.2 kW; 36 trays = 2 racks.
    trays = rack_plan(nodes=36, gpus_per_node=4, node_power_kw=5.4, max_kw_per_rack=130, accelerator="gb200")
    assert (trays.racks, trays.nodes_per_rack) == (2, 18)
    assert trays.rack_kw == pytest.approx(97.2)


def test_site_sets_power_pue_and_colocation_of_owning_by_hand() -> None:
    plain = run(ONE_H100)
    sited = run({**ONE_H100, "site": AIR_40KW})
    before, after = plain["on_prem"]["annual"], sited["on_prem"]["annual"]
    # Defaults: 10.2 kW × PUE 1.3 × $0.08 × 8,760 h = $9,292.608; colocation 10.2 kW × $150 × 12 = $18,360.
    assert before["energy"]["usd"] == pytest.approx(9_292.608)
    assert before["colocation"]["usd"] == pytest.approx(18_360)
    # Site: 10.2 × 1.5 × $0.12 × 8,760 = $16,083.36; 10.2 × $200 × 12 = $24,480.
    assert after["energy"]["usd"] == pytest.approx(16_083.36)
    assert after["colocation"]["usd"] == pytest.approx(24_480)
    # A year costs (16,083.36 − 9,292.608) + (24,480 − 18,360) = $12,910.752 more; nothing else moves.
    assert sited["on_prem"]["annual_usd"] - plain["on_prem"]["annual_usd"] == pytest.approx(12_910.752)
    sources = {a["name"]: a["source"] for a in sited["assumptions"]}
    assert sources["on_prem.pue"] == "site Ashburn A, air cooling"
    assert sources["on_prem.usd_per_kwh"] == "site Ashburn A"
    assert sources["on_prem.colo_usd_per_kw_month"] == "site Ashburn A"


def test_an_all_in_drawn_site_bills_colocation_on_the_draw_and_no_energy() -> None:
    site = {**AIR_40KW, "colocation_basis": "drawn_kw", "colocation_all_in": True}
    out = run({**ONE_H100, "utilization": 0.5, "site": site})
    annual = out["on_prem"]["annual"]
    # Drawn at 0.3 + 0.7 × 0.5 = 0.65 of 10.2 kW = 6.63 kW × $200 × 12 = $15,912; power is in the all-in.
    assert annual["colocation"]["usd"] == pytest.approx(15_912)
    assert annual["energy"]["usd"] == 0


def test_the_design_s_own_value_wins_over_the_site() -> None:
    out = run(_merge({**ONE_H100, "site": AIR_40KW}, {"on_prem": {"usd_per_kwh": 0.05}}))
    # 10.2 × 1.5 (the site's PUE) × $0.05 (the design's) × 8,760 = $6,701.4.
    assert out["on_prem"]["annual"]["energy"]["usd"] == pytest.approx(6_701.4)


def test_a_site_with_the_default_figures_gives_bit_identical_owning() -> None:
    same = {**AIR_40KW, "power_usd_per_kwh": 0.08, "colocation_usd_per_kw_month": 150, "pue": {"air": 1.3}}
    plain, sited = run(ONE_H100), run({**ONE_H100, "site": same})
    assert sited["on_prem"] == plain["on_prem"]
    assert sited["cashflow"]["own"] == plain["cashflow"]["own"]
    assert not [f for f in plain["findings"] if f["code"].startswith("site_")]


def test_rack_and_mw_capex_from_the_site() -> None:
    site = {**AIR_40KW, "capex_usd_per_rack": 50_000, "capex_usd_per_mw": 2_000_000}
    out = run(_merge(ONE_H100, {"cluster": {"nodes": 4}, "site": site}))
    # 4 nodes at 3 a rack = 2 racks × $50,000 = $100,000; 40.8 kW = 0.0408 MW × $2M = $81,600 (no network:
    # BARE prices and powers it at zero).
    assert out["on_prem"]["capex_parts"]["facility"]["usd"] == pytest.approx(181_600)


def test_it_load_above_the_site_mw_names_both_figures() -> None:
    # 100 H100 nodes × 10.2 kW = 1,020 kW = 1.020 MW (no network in BARE) > the site's 1 MW now.
    out = run(_merge(ONE_H100, {"cluster": {"nodes": 100}, "site": AIR_40KW}))
    message = _codes(out)["site_power"]
    assert "1.020 MW" in message and "has 1 MW now" in message and "3 MW from 2027-06" in message
    # At a planned date after the 3 MW step the load fits: no power finding; the racks are listed instead.
    later = run(
        _merge(ONE_H100, {"cluster": {"nodes": 100}, "site": {**AIR_40KW, "planned_date": "2027-07"}})
    )
    assert "site_power" not in _codes(later)
    assert "34 racks of 3 nodes" in _codes(later)["site_racks"]  # ⌈100 / 3⌉ = 34


def test_a_bad_site_in_a_cost_request_names_its_field() -> None:
    with pytest.raises(InputError) as err:
        run({**ONE_H100, "site": {**AIR_40KW, "power_now_mw": "lots"}})
    assert err.value.field == "site.power_now_mw"


def test_without_a_site_owning_is_bit_identical_to_before_sites() -> None:
    # Figures printed by the engine at commit e235ab4, the commit before sites, for this request (64 H100
    # nodes, every other input the default): compared exactly, not to a tolerance.
    req = {"cluster": {"accelerator": "h100-sxm", "nodes": 64}, "cloud": {"offering": "aws-p5-48xlarge"}}
    out = run(req, uncertainty=False)
    assert out["on_prem"]["total_usd"] == 23229321.913753435
    assert out["on_prem"]["npv_usd"] == 20648497.48680141
    assert out["on_prem"]["annual"]["energy"]["usd"] == 385402.28014079994
    assert out["on_prem"]["annual"]["colocation"]["usd"] == 963878.3999999999
    # The cash flows' NPV as printed once the book-value resale fallback values the servers at their age
    # (the horizon less the lead time) rather than at the horizon: 26,520,229.70 before, a resale of 0.52
    # of capex, now 0.5733 (sites change neither).
    assert out["cashflow"]["own"]["npv_usd"] == 25528369.653798196
    assert not [f for f in out["findings"] if f["code"].startswith("site_")]
