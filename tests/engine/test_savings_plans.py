"""Savings plans (1- and 3-year): a spend in $/hour committed for every hour of the term, with no, partial or
all upfront payment, priced by the plan's rate per node-hour and billed like a reservation of the same term.

The catalog holds no sourced savings-plan rate (AWS publishes p5's 1-year commitment only as a Compute Savings
Plan percentage; see apps/catalog/data/README), so every rate below is a TEST INPUT written here, not a
published price: on-demand $100/node-h, savings plans $65 (1 year) and $45 (3 years). Nodes: 8 (the default).
"""

from __future__ import annotations

from typing import Any

import pytest
from test_cost import BARE, _merge, run

PRICES = {"on_demand": 100.0, "savings_1y": 65.0, "savings_3y": 45.0}  # test inputs, USD per node-hour


def _run(horizon: float, utilization: float, **extra: Any) -> dict[str, Any]:
    return run(
        _merge(
            BARE,
            {
                "horizon_years": horizon,
                "utilization": utilization,
                "cloud": {"usd_per_node_hour": PRICES},
                **extra,
            },
        )
    )


@pytest.mark.parametrize(
    ("horizon", "utilization", "model", "break_even", "plan_usd"),
    [
        # 3-year plan over 2 years: 3 years billed; 3/2 × 45/100 = 67.5 % break-even against on-demand.
        # 8 × $45 × 8,760 × 3 = $9,460,800 whatever the utilization.
        (2, 0.6, "savings_3y", 0.675, 9_460_800.0),
        # 1-year plan over 1.5 years: 2 terms billed; 2/1.5 × 65/100 = 86.7 %.
        # 8 × $65 × 8,760 × 2 = $9,110,400.
        (1.5, 0.8, "savings_1y", 0.866667, 9_110_400.0),
    ],
)
def test_a_savings_plan_bills_every_hour_of_its_whole_terms(
    horizon: float, utilization: float, model: str, break_even: float, plan_usd: float
) -> None:
    out = _run(horizon, utilization)
    plan = out["cloud"][model]
    assert plan["total_usd"] == pytest.approx(plan_usd)
    assert plan["break_even_vs_on_demand_utilization"] == pytest.approx(break_even, abs=1e-6)
    assert "committed ÷" in plan["break_even_vs_on_demand_formula"]
    # The commitment that covers the cluster: 8 nodes × the rate, $/hour.
    assert plan["commitment_usd_per_hour"] == 8 * PRICES[model]
    assert "reserved_below_break_even" in {f["code"] for f in out["findings"]}


@pytest.mark.parametrize(
    ("payment", "start", "monthly"),
    [
        # A month's bill: 8 nodes × 730 h × $65 = $379,600; a 1-year term $4,555,200.
        ("no_upfront", 0.0, 379_600.0),
        ("partial_upfront", 2_277_600.0, 189_800.0),  # half the term at its start, half monthly
        ("all_upfront", 4_555_200.0, 0.0),
    ],
)
def test_a_savings_plan_pays_by_its_payment_option_in_the_cash_flows(
    payment: str, start: float, monthly: float
) -> None:
    out = _run(2, 0.6, cashflow={"reserved_payment": payment})
    flows = next(r for r in out["cashflow"]["rent"] if r["name"] == "savings_1y")["monthly_usd"]
    # Two 1-year terms over 2 years: each term's upfront part at its start (index 0 and the end of month 12).
    assert flows[0] == pytest.approx(start)
    assert flows[12] == pytest.approx(start + monthly)
    assert flows[1] == pytest.approx(monthly) and flows[24] == pytest.approx(monthly)
    assert sum(flows) == pytest.approx(2 * 4_555_200.0)


def test_savings_plans_are_ranked_and_named_in_the_verdict() -> None:
    out = _run(2, 0.6)
    # Ranked on the verdict's basis, the NPV of the monthly cash flows (issue #31): the 1-year plan's
    # $379,600 a month over 24 months at 8 %/year, Σ_{m=1..24} 379,600 / 1.08^(m/12), not the $9,110,400 sum.
    assert out["ranking"]["frame"] == "NPV of the monthly cash flows"
    ranked = {o["option"]: o["total_usd"] for o in out["ranking"]["options"]}
    assert ranked["savings_1y"] == pytest.approx(sum(379_600.0 / 1.08 ** (m / 12) for m in range(1, 25)))
    npv = {r["name"]: r["npv_usd"] for r in out["cashflow"]["rent"]}
    assert (
        ranked["savings_3y"] == npv["savings_3y"] and ranked["on_prem"] == out["cashflow"]["own"]["npv_usd"]
    )
    assert "savings plan 1-year" in out["verdict"]["sentence"]
    assert "savings plan 3-year" in out["verdict"]["rent_npv_usd"]
    # A 3-year plan all upfront over 2 years: the whole $9,460,800 at the start, undiscounted.
    upfront = _run(2, 0.6, cashflow={"reserved_payment": "all_upfront"})["verdict"]["rent_npv_usd"]
    assert upfront["savings plan 3-year"] == pytest.approx(9_460_800.0)
