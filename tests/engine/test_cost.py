"""The cost engine's request → response contract: golden scenarios, defaults, errors, properties."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cost_fixtures import CATALOG, EXAMPLE

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import InputError, UnknownReferenceError
from clusterdesigner.engine.cost.cost import DEFAULTS, check_request, default_assumptions, tco

# Network, storage and installation zeroed so that owning is servers + power + people, as in the hand sums;
# servers drawing their full nameplate power at load, as the guide's energy scenario states it.
BARE: dict[str, Any] = {
    "network": {
        "switch_usd": 0,
        "cable_usd": 0,
        "transceiver_usd": 0,
        "switch_power_w": 0,
        "node_transceiver_w": 0,
        "switch_transceiver_w": 0,
    },
    "storage": {"capacity_tb": 0},
    "on_prem": {"installation_fraction": 0, "load_power_fraction": 1.0},
}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict):
            out[key] = _merge(out.get(key, {}), value)
        else:
            out[key] = value
    return out


def run(request: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return tco(request, **CATALOG, **kw)


def test_guide_reserved_scenario_through_the_request() -> None:
    # 8 p5.48xlarge reserved at $19.50/h, 24/7 for 2 years: 8 × 19.50 × 8,760 × 2 = $2,733,120.
    req = _merge(
        BARE,
        {
            "cluster": {"accelerator": "h100-sxm", "nodes": 8},
            "horizon_years": 2,
            "utilization": 1.0,
            "cloud": {"offering": "aws-p5-48xlarge"},
        },
    )
    out = run(req)
    assert out["cloud"]["reserved_1y"]["usd_per_node_hour"] == 19.50  # from the seed-style record
    assert out["cloud"]["reserved_1y"]["total_usd"] == pytest.approx(2_733_120.0, abs=0.01)


def test_guide_energy_scenario_through_the_request() -> None:
    # 8 nodes × 10 kW at $0.08/kWh for 2 years before PUE: 80 × 8,760 × 2 × 0.08 = $112,128.
    req = _merge(
        BARE,
        {
            "cluster": {"nodes": 8},
            "horizon_years": 2,
            "utilization": 1.0,
            "on_prem": {"node_power_kw": 10, "pue": 1.0, "usd_per_kwh": 0.08},
        },
    )
    out = run(req)
    assert out["on_prem"]["annual"]["energy"]["usd"] * 2 == pytest.approx(112_128.0, abs=0.01)
    assert "80 kW IT" in out["on_prem"]["annual"]["energy"]["formula"]


def test_example_request_owning_and_renting_by_hand() -> None:
    # Same hand sums as test_tco.test_on_prem_example_request_annual_cost_by_hand: $1,741,034.65 over 2 years.
    out = run(_merge(EXAMPLE, BARE))
    assert out["on_prem"]["capex_usd"] == 1_840_000
    assert out["on_prem"]["total_usd"] == pytest.approx(1_741_034.65, abs=0.01)
    # On-demand: 8 × $55.04 × 17,520 h × 0.6 = $4,628,643.84; reserved 1y: 8 × 34 × 8,760 × 2 = $4,765,440.
    assert out["cloud"]["on_demand"]["total_usd"] == pytest.approx(4_628_643.84, abs=0.01)
    assert out["cloud"]["reserved_1y"]["total_usd"] == pytest.approx(4_765_440.0, abs=0.01)
    # The annualised cost lines cross at 1,678,588.32 / (7,714,406.40 − 104,077.21) = 0.220567 ...
    own, od = out["on_prem"]["cost_vs_utilization"], out["cloud"]["on_demand"]["cost_vs_utilization"]
    closed = (own["fixed_usd"] - od["fixed_usd"]) / (od["per_utilization_usd"] - own["per_utilization_usd"])
    assert closed == pytest.approx(0.220567, abs=1e-6)
    # ... but the break-even stated is where the NPVs of the monthly cash flows cross (issue #31, one basis).
    # By hand: d = 1/1.08^(1/12); months 1–4 (the lead time) both sides rent on-demand; then owning pays the
    # $1,840,000 capex at the end of month 4, opex $34,906.67 + energy $6,195.07 · (0.3 + 0.7 u) a month over
    # months 5–24 and gets back at month 24 the book value of servers 20 months old (delivered at month 4),
    # 1 − 0.8 × 20/12 ÷ 5 = 0.733333 of capex, against on-demand's 8 × 730 h × $55.04 · u a month:
    # u* = [A · (34,906.67 + 0.3 · 6,195.07) + d^4 · 1,840,000 − d^24 · 0.733333 · 1,840,000]
    #      ÷ [A · (321,433.60 − 0.7 · 6,195.07)], A = Σ_{m=5..24} d^m = 18.236433 → u* = 0.226023.
    d = 1.0 / 1.08 ** (1 / 12)
    a = sum(d**m for m in range(5, 25))
    by_hand = (
        a * (34_906.666667 + 0.3 * 6_195.072)
        + d**4 * 1_840_000
        - d**24 * (1 - 0.8 * (20 / 12) / 5) * 1_840_000
    ) / (a * (8 * 730 * 55.04 - 0.7 * 6_195.072))
    assert by_hand == pytest.approx(0.226023, abs=1e-6)
    stated = out["break_even_utilization"]
    assert stated["on_demand"]["utilization"] == pytest.approx(by_hand, abs=1e-9)
    assert stated["on_demand"]["meaning"] == "owning is cheaper above 22.6% utilization"
    assert stated["on_demand"]["utilization"] == out["cashflow"]["break_even_utilization"]["on_demand"]
    # The reservation bills every hour whatever the use: its NPV ($4.40M) is above owning's at every
    # utilization in (0, 1], so no crossing is stated (the annualised lines met far outside it).
    assert stated["reserved_1y"]["utilization"] is None
    assert stated["reserved_1y"]["meaning"] == "owning is cheaper at every utilization in (0, 1]"
    # Reserved 1y vs on-demand: $34 / $55.04 = 0.6177 — above the 0.6 utilization, so a finding says so.
    assert out["cloud"]["reserved_1y"]["break_even_vs_on_demand_utilization"] == pytest.approx(34 / 55.04)
    assert "reserved_below_break_even" in {f["code"] for f in out["findings"]}


def test_spot_pays_extra_hours_for_preemptions() -> None:
    out = run(_merge(EXAMPLE, BARE))
    factor = out["failures"]["spot_hours_factor"]
    # Spot compute = 8 × $20 × 17,520 × 0.6 × (goodput on-demand ÷ goodput spot) and the factor exceeds 1.
    assert factor > 1.0
    assert out["cloud"]["spot"]["parts"]["compute"]["usd"] == pytest.approx(8 * 20 * 17_520 * 0.6 * factor)
    base, spot = out["failures"]["on_prem_and_reserved"], out["failures"]["spot"]
    assert factor == pytest.approx(base["goodput"] / spot["goodput"])
    # P5e offering in the fixture: 0.1 preemptions per node-day, so 8 nodes add 0.8 a day.
    assert spot["interruptions_per_day"] == pytest.approx(base["interruptions_per_day"] + 0.8)


def test_per_run_days_from_gpu_hours() -> None:
    out = run(EXAMPLE)
    # 500,000 GPU-hours / 64 GPUs / 24 = 325.52 days before failures.
    assert out["per_run"]["days"] == pytest.approx(500_000 / 64 / 24)
    assert out["per_run"]["effective_days"] > out["per_run"]["days"]
    eff = out["per_run"]["effective_days"]
    assert out["per_run"]["usd"]["on_demand"]["usd"] == pytest.approx(eff * 24 * 8 * 55.04)


def test_per_run_days_come_from_the_training_engine_when_given() -> None:
    training = {"fits": True, "time_to_train_days": 12.5, "parallelism": {"tp": 8, "pp": 1, "dp": 8}}
    out = run(EXAMPLE, training=training)
    assert out["per_run"]["days"] == 12.5 and out["per_run"]["source"] == "training"


def test_per_run_figures_carry_the_training_estimate_error_band() -> None:
    # A band of 10.0 … 16.0 days around 12.5 (ratios 0.8 and 1.28): every per-run figure, days, effective
    # days and each option's cost, is linear in the failure-free days, so each scales by the same ratios.
    band = {"regime": "hopper/bf16/dense/lt1024", "basis": "hopper/bf16/dense/lt1024", "rows": 75}
    band |= {"tokens_per_second_low": 1.0, "tokens_per_second_high": 1.6, "days_low": 10.0, "days_high": 16.0}
    training = {"fits": True, "time_to_train_days": 12.5, "error_band": band}
    per_run = run(EXAMPLE, training=training)["per_run"]
    assert (per_run["days_low"], per_run["days_high"]) == pytest.approx((10.0, 16.0))
    eff = per_run["effective_days"]
    assert (per_run["effective_days_low"], per_run["effective_days_high"]) == pytest.approx(
        (eff * 0.8, eff * 1.28)
    )
    for option in per_run["usd"].values():
        assert option["usd_low"] == pytest.approx(option["usd"] * 0.8)
        assert option["usd_high"] == pytest.approx(option["usd"] * 1.28)
    # Days given by the user (or GPU-hours) are not the estimate's: no band.
    given = run({**EXAMPLE, "run": {**EXAMPLE.get("run", {}), "days": 20.0}}, training=training)["per_run"]
    assert "days_low" not in given and all("usd_low" not in o for o in given["usd"].values())


def test_every_value_used_is_listed_with_unit_and_source() -> None:
    out = run(EXAMPLE)
    names = {a["name"]: a for a in out["assumptions"]}
    assert names["on_prem.pue"] == {"name": "on_prem.pue", "value": 1.3, "unit": "ratio", "source": "request"}
    assert names["failures.failures_per_gpu_day"]["value"] == pytest.approx(419 / (54 * 16_384))
    assert "arXiv:2407.21783" in names["failures.failures_per_gpu_day"]["source"]
    assert all(a["source"] for a in out["assumptions"])


def test_empty_request_runs_on_defaults() -> None:
    out = run({})
    assert out["on_prem"]["total_usd"] > 0
    names = {a["name"]: a["value"] for a in out["assumptions"]}
    assert names["horizon_years"] == 3.0 and names["on_prem.depreciation_years"] == 5.0
    # H100 default picks the fixture's p5 offering (only H100 offering) at its latest on-demand price.
    assert out["cloud"]["on_demand"]["usd_per_node_hour"] == 55.04


def test_default_assumptions_carry_the_issue_defaults() -> None:
    rows = {a["name"]: a for a in default_assumptions()}
    assert rows["on_prem.discount_rate"]["value"] == 0.08
    assert rows["on_prem.colo_usd_per_kw_month"]["value"] == 150.0
    assert rows["on_prem.staff_usd_per_fte_year"]["value"] == 180_000.0
    assert all(set(r) == {"name", "value", "unit", "source"} and r["source"] for r in rows.values())
    assert len(rows) == len(DEFAULTS)


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"cloud": {"usd_per_node_hour": {"spot": -1}}}, "cloud.usd_per_node_hour.spot"),
        ({"utilization": 0}, "utilization"),
        ({"utilization": 1.2}, "utilization"),
        ({"horizon_years": 0}, "horizon_years"),
        ({"on_prem": {"server_usd": -5}}, "on_prem.server_usd"),
        ({"on_prem": {"pue": 0.9}}, "on_prem.pue"),
        ({"cluster": {"nodes": 2.5}}, "cluster.nodes"),
        ({"on_prem": {"usd_per_kwh": "cheap"}}, "on_prem.usd_per_kwh"),
        # A misspelt owning assumption would otherwise fall back to its default without a word.
        ({"on_prem": {"power_kw": 10.2}}, "on_prem.power_kw"),
    ],
)
def test_bad_numbers_name_their_field(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as err:
        run(_merge(EXAMPLE, patch))
    assert err.value.field == field
    # check_request, which stores can call before saving a request, refuses the same.
    with pytest.raises(InputError) as err:
        check_request(_merge(EXAMPLE, patch), CatalogSpecs(**CATALOG))
    assert err.value.field == field


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"cloud": {"offering": "aws-p9-huge"}}, "cloud.offering"),
        ({"cluster": {"accelerator": "tpu-v9"}}, "cluster.accelerator"),
        ({"cluster": {"fabric": "myrinet"}}, "cluster.fabric"),
        ({"cluster": {"storage": "tape"}}, "cluster.storage"),
        ({"cluster": {"switch": "ib-hdr-40"}}, "cluster.switch"),
    ],
)
def test_unknown_slugs_name_their_field(patch: dict[str, Any], field: str) -> None:
    with pytest.raises(UnknownReferenceError) as err:
        run(_merge(EXAMPLE, patch))
    assert err.value.field == field


def test_sensitivity_ranks_by_swing_and_moves_each_value_25_percent() -> None:
    out = run(EXAMPLE)
    sens = out["sensitivity"]
    rows = sens["rows"]
    swings = [r["swing_usd"] for r in rows]
    assert swings == sorted(swings, reverse=True)
    pue = next(r for r in rows if r["name"] == "on_prem.pue")
    assert (pue["low"], pue["high"]) == pytest.approx((0.975, 1.625))
    # The reference is the cheapest option at 60 % by NPV of the monthly cash flows: spot at $20/h; the
    # tornado measures own − rent on that basis (the verdict's), not the annualised horizon totals.
    assert sens["pricing_model"] == "spot" == out["cashflow"]["reference"]
    assert sens["basis"] == "NPV of the monthly cash flows, own − rent"
    spot = next(r for r in out["cashflow"]["rent"] if r["name"] == "spot")
    ref = out["cashflow"]["own"]["npv_usd"] - spot["npv_usd"]
    assert sens["base_own_minus_rent_usd"] == pytest.approx(ref, abs=1e-6)
    assert ref == pytest.approx(-out["cashflow"]["npv_difference_usd"], abs=1e-6)


def test_money_figures_show_their_arithmetic() -> None:
    out = run(EXAMPLE)
    assert out["on_prem"]["capex_parts"]["servers"]["formula"] == "8 nodes × $230,000 per server"
    assert "CRF(0.08, 5 y)" in out["on_prem"]["annual"]["capital"]["formula"]
    assert (
        "8 nodes × $55.04/node-h × 17,520 h × 0.6 utilization"
        in (out["cloud"]["on_demand"]["parts"]["compute"]["formula"])
    )


# The properties below read on_prem, cloud and break_even_utilization only: without the Monte Carlo and the
# what-ifs (each of which re-runs the evaluation, ~90 % of a call) those are the full answers
# (test_without_what_ifs_the_run_days_cost_and_npvs_are_the_full_answers; tco's docstring for uncertainty).
LEAN: dict[str, bool] = {"uncertainty": False, "what_ifs": False}


@settings(max_examples=15, deadline=None)
@given(price=st.floats(min_value=20, max_value=200), bump=st.floats(min_value=1, max_value=100))
def test_break_even_falls_as_on_demand_price_rises_through_tco(price: float, bump: float) -> None:
    def u_star(p: float) -> float:
        req = _merge(
            EXAMPLE, {"cloud": {"usd_per_node_hour": {"on_demand": p}}, "sensitivity": {"fraction": 0}}
        )
        value = run(req, **LEAN)["break_even_utilization"]["on_demand"]["utilization"]
        assert value is not None
        return float(value)

    assert u_star(price + bump) < u_star(price)


@settings(max_examples=20, deadline=None)
@given(
    nodes=st.integers(min_value=1, max_value=1500),
    extra=st.integers(min_value=1, max_value=600),
    topology=st.sampled_from(["fat_tree", "dragonfly_plus"]),
)
def test_owning_more_nodes_never_lowers_capex(nodes: int, extra: int, topology: str) -> None:
    def capex(n: int) -> float:
        req = _merge(EXAMPLE, {"cluster": {"nodes": n, "topology": topology}, "sensitivity": {"fraction": 0}})
        return float(run(req, **LEAN)["on_prem"]["capex_usd"])

    assert capex(nodes + extra) >= capex(nodes)


@settings(max_examples=15, deadline=None)
@given(u1=st.floats(min_value=0.05, max_value=1.0), u2=st.floats(min_value=0.05, max_value=1.0))
def test_reserved_total_does_not_depend_on_utilization_through_tco(u1: float, u2: float) -> None:
    def total(u: float) -> float:
        req = _merge(EXAMPLE, {"utilization": u, "sensitivity": {"fraction": 0}})
        return float(run(req, **LEAN)["cloud"]["reserved_1y"]["total_usd"])

    assert total(u1) == pytest.approx(total(u2), rel=1e-12)


def test_reads_a_real_training_engine_result() -> None:
    from clusterdesigner.engine.training.training import estimate

    training = estimate(
        {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_tokens": 16 * 1024 * 1024},
            "cluster": {"accelerator": "h100-sxm", "nodes": 64, "gpus_per_node": 8, "fabric": "ib-ndr400"},
        },
        accelerators=CATALOG["accelerators"],
        fabrics=CATALOG["fabrics"],
    )
    req = _merge(
        EXAMPLE, {"cluster": {"accelerator": "h100-sxm", "nodes": 64}, "sensitivity": {"fraction": 0}}
    )
    out = run(req, training=training)
    assert out["per_run"]["days"] == pytest.approx(training["time_to_train_days"])
    assert "warning" not in out["per_run"]
    # Checkpoint from the model's own parameter count: params × 14 B.
    assert out["storage"]["checkpoint_gb"] == pytest.approx(training["summary"]["model"]["params"] * 14 / 1e9)
    # Dataset bandwidth: tokens/s × 4 B.
    assert out["storage"]["dataset_read_needed_gbps"] == pytest.approx(
        training["tokens_per_second"] * 4 / 1e9
    )
    # The same estimate against a 32-node design is flagged.
    half = run(_merge(req, {"cluster": {"nodes": 32}}), training=training)
    assert "512 GPUs" in half["per_run"]["warning"]


def test_a_quota_below_the_nodes_leaves_the_option_out_with_a_finding() -> None:
    """cloud.capacity_nodes.<model>: 8 nodes against a quota of 7 is not feasible (said, not priced); a
    quota of 8 is enough; 0 reads as effectively unavailable. The other options are priced as before."""
    req = _merge(
        BARE,
        {"cluster": {"accelerator": "h100-sxm", "nodes": 8}, "cloud": {"offering": "aws-p5-48xlarge"}},
    )
    base = run(req)
    assert "on_demand" in base["cloud"] and "reserved_1y" in base["cloud"]
    short = run(_merge(req, {"cloud": {"capacity_nodes": {"on_demand": 7}}}))
    assert "on_demand" not in short["cloud"] and short["cloud"]["reserved_1y"] == base["cloud"]["reserved_1y"]
    assert "supplies 7 nodes at most and the design needs 8" in short["cloud_unavailable"]["on_demand"]
    (finding,) = [f for f in short["findings"] if f["code"] == "option_over_quota"]
    assert finding["severity"] == "warning" and "cloud.capacity_nodes.on_demand" in finding["message"]
    assert "on_demand" in run(_merge(req, {"cloud": {"capacity_nodes": {"on_demand": 8}}}))["cloud"]
    none = run(_merge(req, {"cloud": {"capacity_nodes": {"on_demand": 0}}}))
    assert "effectively unavailable (quota 0)" in none["cloud_unavailable"]["on_demand"]
    with pytest.raises(InputError) as bad:
        run(_merge(req, {"cloud": {"capacity_nodes": {"on_demand": 1.5}}}))
    assert bad.value.field == "cloud.capacity_nodes.on_demand"


def test_without_what_ifs_the_run_days_cost_and_npvs_are_the_full_answers() -> None:
    """what_ifs=False (a deadline's larger clusters read only the run's days, cost per run and NPVs) leaves
    out the tornado's rows and the verdict's flips, each of which re-runs the evaluation, and nothing else."""
    req = _merge(EXAMPLE, {"cloud": {"offering": "aws-p5-48xlarge"}, "run": {"days": 30}})
    full = run(req, uncertainty=False)
    lean = run(req, uncertainty=False, what_ifs=False)
    assert full["sensitivity"]["rows"] and full["verdict"]["flips"]
    assert lean["sensitivity"]["rows"] == [] and lean["verdict"]["flips"] == []
    for key in ("per_run", "cashflow", "on_prem", "cloud", "break_even_utilization"):
        assert lean[key] == full[key], key
    # nor does the Monte Carlo move any of them but cashflow (LEAN, the property tests' calls, rests on this)
    whole = run(req)
    assert whole["cashflow"]["uncertainty"] and "uncertainty" not in lean["cashflow"]
    for key in ("per_run", "on_prem", "cloud", "break_even_utilization"):
        assert lean[key] == whole[key], key
