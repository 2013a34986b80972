"""The rent-or-own figures a finance reader checks: each test holds its hand calculation beside it."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cost import BARE, _merge, run

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.cost import SENSITIVE, SENSITIVE_LABELS
from clusterdesigner.engine.cost.rent_own import reservation_break_even


def _codes(out: dict[str, Any]) -> set[str]:
    return {f["code"] for f in out["findings"]}


def test_three_year_term_over_two_years_breaks_even_at_67_5_percent() -> None:
    # Billed 3 years for a 2-year horizon: 3/2 × 0.45 = 0.675 (not the price ratio 0.45).
    assert reservation_break_even(
        reserved_usd_per_hour=45.0, on_demand_usd_per_hour=100.0, billed_years=3, horizon_years=2
    ) == pytest.approx(0.675)


def test_one_year_term_over_a_year_and_a_half_breaks_even_at_86_7_percent() -> None:
    # Two 1-year terms billed for 1.5 years: 2/1.5 × 0.65 = 0.8667 (not 0.65).
    assert reservation_break_even(
        reserved_usd_per_hour=65.0, on_demand_usd_per_hour=100.0, billed_years=2, horizon_years=1.5
    ) == pytest.approx(0.866667, abs=1e-6)


@pytest.mark.parametrize(
    ("horizon", "utilization", "model", "price", "break_even", "reserved_usd", "on_demand_usd"),
    [
        # 3y term over 2 years, ratio 0.45: 3/2 × 0.45 = 67.5 % > 60 %. Reserved bills
        # 8 × 45 × 8,760 × 3 = $9,460,800; on-demand 8 × 100 × 17,520 × 0.6 = $8,409,600.
        (2, 0.6, "reserved_3y", 45.0, 0.675, 9_460_800.0, 8_409_600.0),
        # 1y term over 1.5 years (2 terms billed), ratio 0.65: 2/1.5 × 0.65 = 86.7 % > 80 %. Reserved bills
        # 8 × 65 × 8,760 × 2 = $9,110,400; on-demand 8 × 100 × 13,140 × 0.8 = $8,409,600.
        (1.5, 0.8, "reserved_1y", 65.0, 0.866667, 9_110_400.0, 8_409_600.0),
    ],
)
def test_reserved_break_even_through_the_request_counts_whole_terms(
    horizon: float,
    utilization: float,
    model: str,
    price: float,
    break_even: float,
    reserved_usd: float,
    on_demand_usd: float,
) -> None:
    req = _merge(
        BARE,
        {
            "horizon_years": horizon,
            "utilization": utilization,
            "cloud": {"usd_per_node_hour": {"on_demand": 100.0, model: price}},
        },
    )
    out = run(req)
    assert out["cloud"][model]["total_usd"] == pytest.approx(reserved_usd)
    assert out["cloud"]["on_demand"]["total_usd"] == pytest.approx(on_demand_usd)
    assert out["cloud"][model]["break_even_vs_on_demand_utilization"] == pytest.approx(break_even, abs=1e-6)
    assert f"÷ {horizon:g}-year horizon" in out["cloud"][model]["break_even_vs_on_demand_formula"]
    # The reservation costs more than on-demand at this utilization, and the finding says so.
    assert "reserved_below_break_even" in _codes(out)


def non_finite_paths(value: Any, path: str = "") -> list[str]:
    """Every path in a JSON-ready value that holds NaN or ±Infinity (invalid JSON)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in non_finite_paths(v, f"{path}.{k}")]
    if isinstance(value, (list, tuple)):
        return [p for i, v in enumerate(value) for p in non_finite_paths(v, f"{path}.{i}")]
    return []


def test_spot_that_cannot_finish_is_said_in_words_not_infinity() -> None:
    # 2,048 nodes × 8 GPUs: hardware 16,384 × 419/(54 × 16,384) = 7.76 a day, plus spot 2,048 × 0.05 = 102.4
    # a day: MTBI 13 min, so every checkpoint interval loses more than it saves (goodput floored at 0).
    req = {
        "cluster": {"nodes": 2048},
        "run": {"days": 30},
        "cloud": {
            "usd_per_node_hour": {"on_demand": 50.0, "spot": 20.0},
            "spot_preemptions_per_day": 0.05,
            # Capacity for all 2,048 nodes, so that it is the interruptions that stop spot.
            "spot_capacity_nodes": 2048,
        },
    }
    out = run(req)
    assert non_finite_paths(out) == []
    assert "spot" not in out["cloud"] and "spot" not in out["break_even_utilization"]
    assert out["cloud_unavailable"]["spot"].startswith("spot cannot finish the run")
    assert "option_cannot_finish" in _codes(out)
    assert out["failures"]["spot_hours_factor"] is None
    assert "spot" not in out["per_run"]["usd"] and out["per_run"]["spot_effective_days"] is None


def test_a_run_no_option_can_finish_says_so() -> None:
    # 100 hardware failures per GPU-day on 64 GPUs: one every 13.5 s, goodput 0 for every option.
    out = run({"run": {"days": 10}, "failures": {"failures_per_gpu_day": 100}})
    assert non_finite_paths(out) == []
    assert out["per_run"]["cannot_finish"].startswith("any option cannot finish the run")
    assert "usd" not in out["per_run"]


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.integers(1, 4096),
    days=st.floats(0.5, 400),
    spot_rate=st.floats(0, 50),
    failures=st.floats(0, 50),
    horizon=st.floats(0.25, 10),
    utilization=st.floats(0.01, 1.0),
)
def test_no_output_holds_nan_or_infinity(
    nodes: int, days: float, spot_rate: float, failures: float, horizon: float, utilization: float
) -> None:
    req = {
        "cluster": {"nodes": nodes},
        "horizon_years": horizon,
        "utilization": utilization,
        "run": {"days": days},
        "failures": {"failures_per_gpu_day": failures},
        "cloud": {
            "usd_per_node_hour": {"on_demand": 50.0, "reserved_1y": 30.0, "reserved_3y": 20.0, "spot": 15.0},
            "spot_preemptions_per_day": spot_rate,
        },
    }
    assert non_finite_paths(run(req)) == []


def test_spot_interruption_default_is_the_spot_advisor_monthly_bucket_per_day() -> None:
    # Spot Advisor's lowest bucket, < 5 % per trailing month: 0.05 ÷ (365/12) = 0.0016438 per node-day.
    out = run({"cloud": {"usd_per_node_hour": {"on_demand": 50.0, "spot": 20.0}}})
    rows = {a["name"]: a for a in out["assumptions"]}
    per_day = rows["cloud.spot_preemptions_per_day"]
    assert per_day["value"] == pytest.approx(0.0016438, abs=1e-7)
    assert per_day["unit"] == "per node-day" and "trailing month" in per_day["source"]
    assert rows["cloud.spot_interruptions_per_node_month"]["value"] == pytest.approx(0.05)
    # 8 nodes add 8 × 0.0016438 = 0.01315 interruptions a day to the hardware rate.
    base, spot = out["failures"]["on_prem_and_reserved"], out["failures"]["spot"]
    assert spot["interruptions_per_day"] - base["interruptions_per_day"] == pytest.approx(0.013151, abs=1e-6)


def test_spot_interruptions_can_be_given_per_month() -> None:
    # 0.15 per node-month (the 10-15 % bucket's top) = 0.15 × 12 / 365 = 0.0049315 per node-day.
    out = run(
        {
            "cloud": {
                "usd_per_node_hour": {"on_demand": 50.0, "spot": 20.0},
                "spot_interruptions_per_node_month": 0.15,
            }
        }
    )
    rows = {a["name"]: a for a in out["assumptions"]}
    assert rows["cloud.spot_preemptions_per_day"]["value"] == pytest.approx(0.0049315, abs=1e-7)


def test_staff_scales_with_the_fleet_with_no_floor_of_one_person() -> None:
    # FTE = nodes ÷ 75 nodes per FTE (defaults.NODES_PER_FTE: "1 FTE per 50-100 GPU servers", TensorMesh).
    # 2,048 nodes ÷ 75 = 27.30667 FTE × $180,000 = $4,915,200 a year.
    out = run(_merge(BARE, {"cluster": {"nodes": 2048}}))
    assert out["on_prem"]["annual"]["staff"]["usd"] == pytest.approx(2048 / 75 * 180_000)
    rows = {a["name"]: a for a in out["assumptions"]}
    assert rows["on_prem.staff_fte"]["source"] == "2,048 nodes ÷ 75 nodes per FTE"
    assert "1 FTE per 50-100 GPU servers" in rows["on_prem.nodes_per_fte"]["source"]
    assert "CTWatch" not in str(out["assumptions"])
    # One 8-GPU node: 1/75 FTE × $180,000 = $2,400 a year, not one whole person ($180,000, which is $2.57 per
    # GPU-hour on one node: issue 31 item 11).
    one = run(_merge(BARE, {"cluster": {"nodes": 1}}))
    assert one["on_prem"]["annual"]["staff"]["usd"] == pytest.approx(2_400.0)
    # Given as a count it is used as given.
    fixed = run(_merge(BARE, {"cluster": {"nodes": 1}, "on_prem": {"staff_fte": 0.25}}))
    assert fixed["on_prem"]["annual"]["staff"]["usd"] == pytest.approx(45_000.0)


def test_staff_may_scale_with_the_it_megawatts_instead() -> None:
    # Per MW when given: BARE (no network power, servers at nameplate), 2,048 DGX H100 × 10.2 kW =
    # 20.8896 MW × 2 FTE per MW = 41.7792 FTE × $180,000 = $7,520,256 a year; the FTE used is recorded with
    # its arithmetic.
    out = run(_merge(BARE, {"cluster": {"nodes": 2048}, "on_prem": {"staff_fte_per_mw": 2}}))
    assert out["on_prem"]["annual"]["staff"]["usd"] == pytest.approx(20.8896 * 2 * 180_000)
    assert "20.8896 MW IT × 2 FTE/MW" in out["on_prem"]["annual"]["staff"]["formula"]
    rows = {a["name"]: a for a in out["assumptions"]}
    assert rows["on_prem.staff_fte"]["value"] == pytest.approx(41.7792)
    assert rows["on_prem.staff_fte"]["source"] == "20.8896 MW IT drawn at full load × 2 FTE per MW"


def test_owning_price_is_the_accelerators_own_catalog_server() -> None:
    # H100: the catalog's DGX H100 at $322,500 per node, dated; 8 nodes → $2,580,000 of servers.
    out = run({})
    rows = {a["name"]: a for a in out["assumptions"]}
    assert rows["on_prem.server_usd"]["value"] == 322_500
    assert rows["on_prem.server_usd"]["source"] == "server type dgx-h100 (catalog)"
    assert rows["on_prem.server_usd"]["as_of"] == "2025-03-03"
    assert out["on_prem"]["capex_parts"]["servers"]["usd"] == pytest.approx(8 * 322_500)


def test_a_missing_owning_price_is_an_error_never_another_accelerators() -> None:
    # The fixture H200 has no server type and no list price: no $230,000 (H200 example) stand-in.
    with pytest.raises(InputError) as err:
        run({"cluster": {"accelerator": "h200"}})
    assert err.value.field == "on_prem.server_usd"
    assert "no price for h200 servers of 8 GPUs" in str(err.value)
    # Given per GPU, it is used: 8 × $40,000 = $320,000 per node.
    out = run({"cluster": {"accelerator": "h200"}, "on_prem": {"server_usd_per_gpu": 40_000}})
    assert out["on_prem"]["capex_parts"]["servers"]["usd"] == pytest.approx(8 * 320_000)


def test_energy_is_drawn_at_a_sourced_fraction_of_nameplate() -> None:
    # 8 nodes × 10 kW nameplate × 0.76 at load = 60.8 kW; a year at 100 % utilization, PUE 1, $0.08/kWh:
    # 60.8 × 8,760 × 0.08 = $42,608.64 (nameplate would give $56,064). Colocation bills the contracted kW,
    # by default the draw at full load: 60.8 kW × $150 × 12 = $109,440 (nameplate 80 kW would be $144,000).
    req = _merge(
        BARE,
        {
            "utilization": 1.0,
            "on_prem": {"node_power_kw": 10, "pue": 1.0, "usd_per_kwh": 0.08, "colo_usd_per_kw_month": 150},
        },
    )
    req["on_prem"].pop("load_power_fraction")
    out = run(req)
    assert out["on_prem"]["annual"]["energy"]["usd"] == pytest.approx(42_608.64)
    assert "80 kW servers × 0.76 at load" in out["on_prem"]["annual"]["energy"]["formula"]
    assert out["on_prem"]["annual"]["colocation"]["usd"] == pytest.approx(60.8 * 150 * 12)
    rows = {a["name"]: a for a in out["assumptions"]}
    assert "arXiv:2506.14551" in rows["on_prem.load_power_fraction"]["source"]


def test_all_in_colocation_has_no_separate_energy_bill() -> None:
    # All-in: 80 kW × $150 × 12 = $144,000 a year covers power; energy is 0, not counted twice.
    req = _merge(BARE, {"on_prem": {"node_power_kw": 10}, "colocation": {"pricing": "all_in"}})
    out = run(req)
    assert out["on_prem"]["annual"]["energy"]["usd"] == 0.0
    assert out["on_prem"]["annual"]["colocation"]["usd"] == pytest.approx(144_000)
    assert "all-in" in out["on_prem"]["annual"]["colocation"]["formula"]
    with pytest.raises(InputError) as err:
        run({"colocation": {"pricing": "both"}})
    assert err.value.field == "colocation.pricing"


@pytest.mark.parametrize("rate", [0.0, 0.08])
def test_npv_sign_agrees_with_the_closed_form_break_even(rate: float) -> None:
    # Flat prices, whole years (3), zero spread: owning's NPV saving against on-demand is negative below the
    # closed-form break-even and positive above it. At r = 0 the two frames are the same sums (annualised
    # capital (capex − residual)/life × horizon = capex − book value at the horizon), so the gap is exact.
    # The fixture's RTX 4090 has no catalog offering, so on-demand is the only rent option; it has no resale
    # series either, so resale is the book value (the fallback) as in the closed form; no lead time, as there.
    base = {
        "horizon_years": 3,
        "cluster": {"accelerator": "rtx-4090"},
        "cashflow": {"lead_time_months": 0},
        "on_prem": {"discount_rate": rate, "server_usd": 60_000},
        "cloud": {"usd_per_node_hour": {"on_demand": 20.0}},
        "uncertainty": {"spread": 0.0, "samples": 5},
    }
    u_star = run(base)["break_even_utilization"]["on_demand"]["utilization"]
    assert 0.1 < u_star < 0.9
    for u, sign in ((u_star - 0.1, -1), (u_star + 0.1, 1)):
        out = run({**base, "utilization": u})
        cash = out["cashflow"]
        assert cash["reference"] == "on_demand"
        assert math.copysign(1, cash["npv_difference_usd"]) == sign
        assert cash["uncertainty"]["p50_usd"] == pytest.approx(cash["npv_difference_usd"])
        if rate == 0.0:
            closed = out["cloud"]["on_demand"]["total_usd"] - out["on_prem"]["total_usd"]
            assert cash["npv_difference_usd"] == pytest.approx(closed, rel=1e-9)
    assert run({**base, "utilization": u_star})["cashflow"]["break_even_utilization"]["on_demand"] == (
        pytest.approx(u_star, abs=1e-9) if rate == 0.0 else pytest.approx(u_star, abs=0.05)
    )


def test_a_loan_through_the_request_pays_pmt_on_the_capex() -> None:
    # PMT(8 %/12, 60, −capex): capex = 8 × $322,500 servers + network + storage + installation.
    out = run({"cashflow": {"financing": "loan"}, "cloud": {"usd_per_node_hour": {"on_demand": 60.0}}})
    capex = out["on_prem"]["capex_usd"]
    i = 0.08 / 12
    assert out["cashflow"]["loan_payment_usd"] == pytest.approx(i * capex / (1 - (1 + i) ** -60), abs=0.005)
    with pytest.raises(InputError) as err:
        run({"cashflow": {"financing": "lease"}})
    assert err.value.field == "cashflow.lease_usd_per_month"


def test_the_verdict_is_composed_from_the_numbers() -> None:
    out = run({"cluster": {"nodes": 64}})
    verdict, cash = out["verdict"], out["cashflow"]
    sentence = verdict["sentence"]
    assert sentence.startswith("Over 3 years at 70% utilization, owning 512 × h100-sxm costs ")
    assert verdict["own_npv_usd"] == cash["own"]["npv_usd"]
    assert verdict["saving_usd"] == cash["npv_difference_usd"]
    # One basis: the break-even is where the NPVs of owning and of the rival (here reserved 1-year, the
    # cheapest by NPV) cross. The reservation's bill does not fall with use, but owning's does rise: its
    # energy and, over the default 4-month lead time, the on-demand rent that bridges it (issue #31). With
    # the servers resold at the book value of their age, 32 months (1 − 0.8 × 32/12 ÷ 5 = 0.5733 of capex),
    # owning stays below the reservation even at 100 % (at the horizon's 3 years, 0.52, the NPVs crossed at
    # 95.0 %): no crossing is stated, and the sentence says so. Against on-demand they cross in (0, 1).
    assert cash["reference"] == "reserved_1y"
    assert cash["resale"]["fraction"] == pytest.approx(1 - 0.8 * (32 / 12) / 5, rel=1e-12)
    assert verdict["break_even_utilization"] is None
    assert "owning is cheaper than renting reserved 1-year at every utilization" in sentence
    assert 0 < verdict["break_even_by_option"]["on_demand"] < 0.7
    movers = [SENSITIVE_LABELS[row["name"]] for row in out["sensitivity"]["rows"][:3]]
    assert sentence.endswith("are " + ", ".join(movers) + ".")


def test_the_result_names_its_offering_and_the_date_of_each_price() -> None:
    # H100 default: the fixture's only H100 offering, p5.48xlarge, on-demand dated 2026-09-01 ($55.04, the
    # newer of its two on-demand rows), reserved 1y dated 2026-01-01.
    out = run({})
    assert out["offering"]["slug"] == "aws-p5-48xlarge"
    assert out["offering"]["instance_type"] == "p5.48xlarge"
    assert out["offering"]["price_as_of"] == {"on_demand": "2026-09-01", "reserved_1y": "2026-01-01"}
    rows = {a["name"]: a for a in out["assumptions"]}
    assert "newest price (2026-09-01)" in rows["cloud.offering"]["source"]


def test_per_run_cost_of_a_reservation_shows_the_whole_commitment_and_the_share_used() -> None:
    # A 47-day run on 64 nodes at $34/node-h reserved 1y: the commitment is 64 × 34 × 8,760 = $19,061,760;
    # the run uses 47 × 24 × 64 / (64 × 8,760) = 12.9 % of it. Owning states its assumption and the horizon.
    req = _merge(
        BARE,
        {
            "cluster": {"nodes": 64},
            "horizon_years": 1,
            "run": {"days": 47},
            "failures": {"failures_per_gpu_day": 0},
            "cloud": {"usd_per_node_hour": {"on_demand": 55.04, "reserved_1y": 34.0}},
        },
    )
    out = run(req)
    reserved = out["per_run"]["usd"]["reserved_1y"]
    assert reserved["commitment_usd"] == pytest.approx(19_061_760.0)
    assert reserved["share_of_commitment"] == pytest.approx(47 * 24 / 8760)
    assert "the commitment is $19,061,760" in reserved["formula"] and "uses 12.9%" in reserved["formula"]
    owned = out["per_run"]["usd"]["on_prem"]
    assert owned["horizon_usd"] == out["on_prem"]["total_usd"]
    assert owned["assumption"].startswith("the rest of the 1-year horizon is used at 0.7 utilization")


def test_ranking_is_in_one_frame_the_verdicts_npv() -> None:
    # Issue #31: the ranking, the verdict and the break-even on one basis. Each option's NPV of its monthly
    # cash flows, cheapest first; its first rent option is the verdict's rival and the cash flows' reference.
    out = run({"cluster": {"nodes": 64}})
    ranking = out["ranking"]
    assert ranking["frame"] == "NPV of the monthly cash flows"
    totals = [row["total_usd"] for row in ranking["options"]]
    assert totals == sorted(totals)
    by_option = {row["option"]: row["total_usd"] for row in ranking["options"]}
    assert by_option["on_prem"] == out["cashflow"]["own"]["npv_usd"]
    assert by_option["on_demand"] == next(
        r["npv_usd"] for r in out["cashflow"]["rent"] if r["name"] == "on_demand"
    )
    first_rent = next(row["option"] for row in ranking["options"] if row["option"] != "on_prem")
    assert first_rent == out["cashflow"]["reference"]
    winner = ranking["options"][0]["option"]
    assert (winner == "on_prem") == (out["verdict"]["saving_usd"] >= 0)


def test_owning_alone_is_ranked_over_the_whole_horizon() -> None:
    # No rent option chosen: no cash flows to compare, owning's annualised total in its stated frame.
    out = run({"cluster": {"nodes": 64}, "cloud": {"pricing_models": []}})
    assert out["ranking"] == {
        "frame": "whole horizon",
        "options": [{"option": "on_prem", "total_usd": out["on_prem"]["total_usd"]}],
    }
    assert out["cloud"] == {} and out["verdict"] is None
    assert out["cloud_note"] == "no cloud option chosen: owning is not compared with renting"


def test_storage_throughput_grows_with_the_tib_provisioned() -> None:
    # 405B × 14 bytes = 5,670 GB per checkpoint. 1,000 TB = 909.49 TiB × 125 MB/s/TiB (FSx for Lustre
    # PERSISTENT_2's lowest PerUnitStorageThroughput) = 113.69 GB/s, so a save takes 5,670 / 113.69 = 49.87 s;
    # the tier's flat 12.5 GB/s would have given 453.6 s. To save in 60 s: 5,670,000 / (60 × 125) = 756 TiB.
    req = {
        "run": {"params_b": 405},
        "storage": {"capacity_tb": 1000, "mb_s_per_tib": 125, "target_write_s": 60},
    }
    out = run(req)
    tib = 1000e12 / 2**40
    assert out["storage"]["capacity_tib"] == pytest.approx(tib)
    assert out["storage"]["checkpoint_write_s"] == pytest.approx(5670 / (tib * 0.125))
    assert out["storage"]["capacity_for_target_write_tib"] == pytest.approx(756.0)
    flat = run({"run": {"params_b": 405}, "storage": {"capacity_tb": 1000}})
    assert flat["storage"]["checkpoint_write_s"] == pytest.approx(5670 / 12.5)


def test_optics_power_counts_node_and_switch_side_transceivers() -> None:
    # 8 nodes × 8 NICs = 64 endpoints on one 64-port NDR switch, 32 twin-port switch cages × 15 W. The
    # fixture's server is a DGX H100 (four OSFP cages, a two-port transceiver each, 15 W): 8 × 4 = 32
    # node-side, so (32 + 32) × 15 = 960 W of optics beside the switch's own 1,000 W. With a port per NIC
    # (single-port OSFP, 8 W): 64 × 8 + 32 × 15 = 512 + 480 = 992 W.
    out = run({"network": {"switch_power_w": 1000}})
    net = out["network"]
    assert net["chosen"]["switches"] == 1 and net["endpoints"] == 64
    assert net["chosen"]["transceivers"] == 32 + 32
    assert net["power_kw"] == pytest.approx((1000 + 64 * 15) / 1000)
    assert "32 node-side transceivers × 15 W + 32 switch-side × 15 W" in net["power_formula"]
    single = run({"network": {"switch_power_w": 1000, "node_ports_per_transceiver": 1}})["network"]
    assert single["chosen"]["transceivers"] == 64 + 32
    assert single["power_kw"] == pytest.approx((1000 + 64 * 8 + 32 * 15) / 1000)
    assert "64 node-side transceivers × 8 W + 32 switch-side × 15 W" in single["power_formula"]


def test_an_nvl72_rack_reaches_the_fabric_through_its_trays() -> None:
    # 14 GB200 NVL72 racks = 252 compute trays × 4 NICs = 1,008 endpoints on 64-port switches at 1:1:
    # rail-optimised leaves 4 rails × ⌈252 / 32⌉ = 32, spines ⌈1,008 / 64⌉ = 16: 48 switches. As "nodes" of
    # 72 NICs it was 72 leaves (one per rail, 14 of 64 ports used) + 16 spines = 88.
    from dataclasses import replace as dc_replace

    from test_cost_fixtures import CATALOG, H100

    from clusterdesigner.engine.core.offerings import ServerTypeSpec
    from clusterdesigner.engine.cost.cost import tco

    gb200 = dc_replace(H100, slug="gb200", name="GB200", scaleup_domain_gpus=72)
    rack = ServerTypeSpec("nvl72-rack", "NVL72 rack", "gb200", 72, 72, 400, 120.0, 3_000_000.0)
    tray = ServerTypeSpec("nvl72-tray", "NVL72 tray", "gb200", 4, 4, 400, 5.4, None)
    catalog = {
        **CATALOG,
        "accelerators": {**CATALOG["accelerators"], "gb200": gb200},
        "server_types": {rack.slug: rack, tray.slug: tray},
    }
    out = tco({"cluster": {"server_type": "nvl72-rack", "nodes": 14}}, **catalog)
    net = out["network"]
    assert net["endpoints"] == 1008
    assert net["chosen"]["switches"] == 48
    rows = {a["name"]: a for a in out["assumptions"]}
    assert rows["cluster.nics_per_tray"]["value"] == 4
    assert rows["cluster.nics_per_tray"]["source"].startswith("server type nvl72-tray")
    # Given as its own tray (the old sizing), the same racks need 88 switches.
    flat = tco({"cluster": {"server_type": "nvl72-rack", "nodes": 14, "nics_per_tray": 72}}, **catalog)
    assert flat["network"]["chosen"]["switches"] == 88


def test_every_tornado_input_has_a_label_for_the_verdict() -> None:
    assert set(SENSITIVE) <= set(SENSITIVE_LABELS)
