"""The rent-or-own figures a finance reader checks: each test holds its hand calculation beside it."""

from __future__ import annotations

import math
from typing import Any

import pytest
from test_cost import BARE, _merge, run

from clusterdesigner.engine.tco import reservation_break_even


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
