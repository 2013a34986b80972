"""Each design-finding rule fires on the design it is about, and stays quiet on a sound one."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from test_cost import EXAMPLE, _merge, run


def codes(request: dict[str, Any], **kw: Any) -> set[str]:
    out = run(_merge(request, {"sensitivity": {"fraction": 0}}), **kw)
    return {f["code"] for f in out["findings"]}


# A sound design prices its network from a quote, sizes its storage and gives a resale quote: no placeholder
# remains (placeholder_prices, placeholder_storage) and, with no catalog series in these engine-level runs,
# resale does not fall back to book value (resale_book_value_fallback, tested below).
SOUND = _merge(
    EXAMPLE,
    {
        "utilization": 0.9,
        "network": {"transceiver_usd": 2_000, "switch_usd": 25_000, "cable_usd": 120},
        "storage": {"capacity_tb": 20},
        "cashflow": {"resale_fraction": 0.5},
    },
)


def test_sound_design_has_no_warnings() -> None:
    # 8 H200 nodes, NDR 1:1, Lustre, 90 % busy (above the 62 % reserved break-even).
    out = run(SOUND)
    assert [f for f in out["findings"] if f["severity"] != "info"] == []


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        ({"cluster": {"fabric": "eth-25g"}}, "slow_ethernet"),
        ({"cluster": {"fabric": "roce-400g", "nodes": 32}}, "roce_at_scale"),
        ({"cluster": {"oversubscription": 2.0}}, "oversubscribed"),
        ({"cluster": {"storage": "nfs"}}, "checkpoint_to_nfs"),
        ({"cluster": {"accelerator": "rtx-4090"}, "on_prem": {"server_usd": 40_000}}, "no_nvlink"),
        ({"cluster": {"accelerators": ["a100-80gb"]}}, "mixed_generations"),
        ({"cluster": {"nodes": 6}}, "nodes_not_power_of_two"),
        ({"utilization": 0.5}, "reserved_below_break_even"),
        ({"run": {"checkpoint_interval_minutes": 600}}, "spot_checkpoint_interval"),
        ({"network": {"switch_usd": 0, "transceiver_usd": 0}}, "network_under_budgeted"),
    ],
)
def test_rule_fires_on_its_design(patch: dict[str, Any], code: str) -> None:
    assert code not in codes(SOUND)
    assert code in codes(_merge(SOUND, patch))


def test_resale_without_a_series_or_a_quote_is_book_value_and_a_warning() -> None:
    # No residual-value series reaches the engine here and SOUND's quote is removed: the fallback is stated.
    request = copy.deepcopy(SOUND)
    del request["cashflow"]["resale_fraction"]
    fallback = next(f for f in run(request)["findings"] if f["code"] == "resale_book_value_fallback")
    assert fallback["severity"] == "warning" and "FALLBACK" in fallback["source"]
    # The age (horizon less the lead time) reads as a person writes it: whole years as years, whole months
    # as months with the years beside them, not "1.66667 years".
    request["horizon_years"] = 2
    request["cashflow"]["lead_time_months"] = 4
    fallback = next(f for f in run(request)["findings"] if f["code"] == "resale_book_value_fallback")
    assert "covers age 20 months (1.67 years):" in fallback["message"]
    request["cashflow"]["lead_time_months"] = 0
    fallback = next(f for f in run(request)["findings"] if f["code"] == "resale_book_value_fallback")
    assert "covers age 2 years:" in fallback["message"]
    request["horizon_years"] = 8 / 12
    fallback = next(f for f in run(request)["findings"] if f["code"] == "resale_book_value_fallback")
    assert "covers age 8 months (0.67 years):" in fallback["message"]
    assert "covers age 8 months (0.67 years);" in fallback["source"]


def test_the_book_value_fallback_sells_at_the_tax_book_so_the_sale_books_no_gain_or_loss() -> None:
    """A CFO's check of the fallback: servers delivered at the lead time and sold at the horizon at their
    straight-line book value sell at the tax book, so the sale carries no tax. 2-year horizon, 4-month lead
    time: the servers are 20 months old. Residual 0, 5-year life, straight-line tax depreciation at 21 %.
    Book value 1 − 20/12 ÷ 5 = 2/3 of capex (at the horizon's 2 years it would be 0.6, a loss of 1/15 of
    capex booked on a sale at book). Month 24 by hand: opex and power after tax, less the second tax year's
    shield (months 17-24: 8/12 of 1/5 of capex, at 21 %), less the sale, and no tax on it:
    (33,479.285 + 4,859.48736 × (0.3 + 0.7 × 0.9)) × 0.79 − 0.21 × 2/15 × capex − 2/3 × capex."""
    request = copy.deepcopy(SOUND)
    del request["cashflow"]["resale_fraction"]
    request["horizon_years"] = 2
    request["cashflow"].update(
        {"lead_time_months": 4, "tax_rate": 0.21, "depreciation_schedule": "straight_line"}
    )
    request["on_prem"] = {**request.get("on_prem", {}), "residual_fraction": 0.0, "depreciation_years": 5}
    cashflow = run(request)["cashflow"]
    assert cashflow["resale"]["basis"] == "book_value"
    assert cashflow["resale"]["fraction"] == pytest.approx(2.0 / 3.0, rel=1e-12)
    capex = cashflow["inputs"]["capex_usd"]
    assert capex == pytest.approx(2_130_740.4, rel=1e-12)
    assert cashflow["inputs"]["other_opex_usd_per_month"] == pytest.approx(33_479.285, rel=1e-12)
    assert cashflow["inputs"]["power_full_usd_per_month"] == pytest.approx(4_859.48736, rel=1e-12)
    by_hand = (33_479.285 + 4_859.48736 * 0.93) * 0.79 - 0.21 * 2.0 / 15.0 * capex - 2.0 / 3.0 * capex
    assert cashflow["own"]["monthly_usd"][24] == pytest.approx(by_hand, rel=1e-12)


def test_slow_ethernet_is_fine_up_to_four_nodes() -> None:
    assert "slow_ethernet" not in codes(_merge(SOUND, {"cluster": {"fabric": "eth-25g", "nodes": 4}}))


def test_roce_below_256_gpus_is_not_flagged() -> None:
    # 31 nodes × 8 = 248 GPUs.
    assert "roce_at_scale" not in codes(_merge(SOUND, {"cluster": {"fabric": "roce-400g", "nodes": 31}}))


def test_tp_spanning_nodes_is_critical() -> None:
    training = {"fits": True, "time_to_train_days": 10, "parallelism": {"tp": 16, "pp": 1, "dp": 4}}
    out = run(SOUND, training=training)
    first = out["findings"][0]
    assert first["code"] == "tp_spans_nodes" and first["severity"] == "critical"
    assert "16" in first["message"] and first["source"]
    within = {"fits": True, "time_to_train_days": 10, "parallelism": {"tp": 8, "pp": 2, "dp": 4}}
    assert "tp_spans_nodes" not in codes(SOUND, training=within)


def test_model_that_fits_nowhere_is_critical() -> None:
    assert "model_does_not_fit" in codes(SOUND, training={"fits": False})


def test_spot_interval_near_the_optimum_is_not_flagged() -> None:
    out = run(SOUND)
    optimum = out["failures"]["spot"]["optimal_interval_minutes"]
    assert "spot_checkpoint_interval" not in codes(
        _merge(SOUND, {"run": {"checkpoint_interval_minutes": optimum}})
    )


def test_every_finding_has_severity_message_and_source() -> None:
    out = run(_merge(SOUND, {"cluster": {"fabric": "eth-25g", "storage": "nfs", "nodes": 6}}))
    assert out["findings"]
    for f in out["findings"]:
        assert f["severity"] in {"critical", "warning", "info"} and f["message"] and f["source"]
    severities = [f["severity"] for f in out["findings"]]
    assert severities == sorted(severities, key=["critical", "warning", "info"].index)
