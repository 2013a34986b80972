"""The capacity plan (clusterdesigner.engine.capacity.capacity): break-even, exhaustive optimum, worked
example."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from clusterdesigner.engine.capacity.capacity import (
    HOURS_PER_MONTH,
    CapacityPlan,
    PlanResult,
    owned_option_from_on_prem,
    plan_solve,
)
from clusterdesigner.engine.core.errors import InfeasibleError, InputError
from clusterdesigner.engine.cost.cost import DEFAULTS
from clusterdesigner.engine.cost.rent_own import LinearCost, OnPremInputs, break_even_utilization
from tests.engine.specs import (
    own_or_reserve,
    own_or_reserve_by_hand,
    two_runs_tie_break_plan,
    unsplit_run_on_capped_spot,
)

W = HOURS_PER_MONTH / 168  # hours of a month one slot of the representative week stands for


def _grid(value_at: Any) -> list[list[float]]:
    """7 × 24 GPUs by (day, hour)."""
    return [[float(value_at(d, h)) for h in range(24)] for d in range(7)]


# ------------------------------------------------------------------ 1. flat demand: own exactly above u*


@settings(max_examples=40, deadline=None)
@given(
    nodes=st.integers(min_value=1, max_value=4),
    busy_hours=st.integers(min_value=1, max_value=24),
    on_demand=st.floats(min_value=5.0, max_value=120.0),
    fixed_month=st.floats(min_value=200.0, max_value=60_000.0),
    energy=st.floats(min_value=0.0, max_value=3.0),
)
def test_owns_exactly_when_utilization_is_above_the_closed_form_break_even(
    nodes: int, busy_hours: int, on_demand: float, fixed_month: float, energy: float
) -> None:
    # Flat demand: `nodes` nodes busy the first `busy_hours` hours of every day, so a node bought for it is
    # used u = busy_hours / 24 of the time. One pricing option (on-demand), no deadlines.
    u = busy_hours / 24
    year = 8760.0
    u_star = break_even_utilization(
        own=LinearCost(fixed_usd=12 * fixed_month, per_utilization_usd=energy * year),
        rent=LinearCost(fixed_usd=0.0, per_utilization_usd=on_demand * year),
    )
    assert u_star is not None
    assume(abs(u - u_star) > 0.01)
    plan = CapacityPlan.from_json(
        {
            "horizon_months": 6,
            "gpus_per_node": 8,
            "baseline": [{"gpus_by_day_hour": _grid(lambda d, h: 8 * nodes if h < busy_hours else 0)}],
            "supply": {
                "owned": {
                    "lead_time_months": 0,
                    "capex_usd_per_node": 1.0,
                    "fixed_usd_per_node_month": fixed_month,
                    "usd_per_node_hour_used": energy,
                },
                "on_demand": {"usd_per_node_hour": on_demand},
            },
        }
    )
    result = plan_solve(plan=plan, compare=False)
    expected = nodes if u > u_star else 0
    assert [m.owned_nodes for m in result.months] == [expected] * 6


# ------------------------------------------------------------------ 2. a 12-month plan, enumerated

PRICES = {"fixed": 9_000.0, "energy": 0.8, "reserved": 30.0, "on_demand": 55.04, "spot": 20.78}
SPOT_GOODPUT, SPOT_CAP = 0.85, 1.0


def _small_plan() -> CapacityPlan:
    return CapacityPlan.from_json(
        {
            "horizon_months": 12,
            "gpus_per_node": 8,
            "growth_pct_per_month": 5.0,
            "baseline": [
                {
                    "name": "research",
                    "gpus_by_day_hour": _grid(lambda d, h: (20 if d < 5 else 8) if 9 <= h < 18 else 4),
                }
            ],
            "supply": {
                "owned": {
                    "lead_time_months": 1,
                    "capex_usd_per_node": 300_000.0,
                    "fixed_usd_per_node_month": PRICES["fixed"],
                    "usd_per_node_hour_used": PRICES["energy"],
                },
                "reservations": [{"term_months": 12, "usd_per_node_hour": PRICES["reserved"]}],
                "on_demand": {"usd_per_node_hour": PRICES["on_demand"]},
                "spot": {"usd_per_node_hour": PRICES["spot"], "goodput": SPOT_GOODPUT, "cap_nodes": SPOT_CAP},
            },
        }
    )


def _month_cost(demand_nodes: np.ndarray, owned: int, reserved: int) -> float:
    """One month of a fixed fleet: each slot's demand is served greedily from the cheapest layer up
    (reserved $0, owned energy, spot price ÷ goodput up to its cap, then on-demand), which is optimal slot
    by slot because the layers' costs are constant per node-hour."""
    layers = [
        (0.0, float(reserved)),
        (PRICES["energy"], float(owned)),
        (PRICES["spot"] / SPOT_GOODPUT, SPOT_CAP * SPOT_GOODPUT),
        (PRICES["on_demand"], np.inf),
    ]
    left = demand_nodes.copy()
    cost = 0.0
    for rate, cap in sorted(layers):
        served = np.minimum(left, cap)
        cost += rate * W * float(served.sum())
        left = left - served
    return cost + PRICES["fixed"] * owned


def test_solver_cost_equals_the_exhaustive_optimum_of_a_12_month_plan() -> None:
    plan = _small_plan()
    g = 1.05 ** np.arange(12)
    week = np.array(_grid(lambda d, h: (20 if d < 5 else 8) if 9 <= h < 18 else 4)).reshape(168)
    demand = np.outer(g, week) / 8  # nodes, [month, slot]
    top = int(np.ceil(demand.max()))  # more nodes of a kind than the peak can use are never cheaper
    # Owned nodes never leave, so the fleet is a non-decreasing sequence; lead time 1 keeps month 0 at zero.
    # A 12-month reservation bills 12 months wherever it starts, so starting in month 0 (covering every
    # month) is never worse: enumerating month-0 reservations covers every optimum.
    table = np.array(
        [[[_month_cost(demand[m], o, r) for r in range(top + 1)] for o in range(top + 1)] for m in range(12)]
    )
    best = np.inf
    for fleet in itertools.combinations_with_replacement(range(top + 1), 11):
        owned = (0, *fleet)
        for r in range(top + 1):
            cost = (
                sum(table[m, owned[m], r] for m in range(12)) + r * PRICES["reserved"] * HOURS_PER_MONTH * 12
            )
            best = min(best, cost)
    result = plan_solve(plan=plan, compare=False, mip_gap=1e-9)
    assert result.total_usd == pytest.approx(best, rel=1e-8)
    assert result.owned_purchases or result.reservations  # the plan is not trivially all-burst


# ------------------------------------------------------------------ 3. the docs' worked example

# Owning inputs of demo design 1 (64 × 8 H100 SXM), as the cost engine resolves them with its defaults:
# server $275,000 (GPU list $27,500 × 8 × 1.25), network capex $3,331,200 and 24 kW, storage $1,392.65; the
# rest are cost.DEFAULTS (installation 3 %, PUE 1.3, $0.08/kWh, idle 0.3, colo $150/kW-month, maintenance
# 5 %/year, 1 FTE at $180,000, 5-year life, 8 % cost of capital, 20 % residual).
_DEFAULTED = (
    "installation_fraction pue usd_per_kwh idle_power_fraction colo_usd_per_kw_month"
    " maintenance_fraction_per_year staff_usd_per_fte_year depreciation_years discount_rate"
    " residual_fraction"
).split()
DEMO1_OWNING = OnPremInputs(
    # One FTE, as these figures were pinned; the cost engine now scales staff with the IT MW (6 FTE per MW).
    staff_fte=1.0,
    nodes=64,
    gpus_per_node=8,
    server_usd=275_000.0,
    network_capex_usd=3_331_200.0,
    storage_capex_usd=1_392.6511345664,
    node_power_kw=10.2,
    network_power_kw=24.0,
    **{key: DEFAULTS[f"on_prem.{key}"].value for key in _DEFAULTED},
)
P5_ON_DEMAND = 55.04  # aws-p5-48xlarge on-demand, us-east-1, as of 2026-09-01 (seed catalog, secondary)
P5_RESERVED_3Y = 23.776  # aws-p5-48xlarge 3-year RI, as of 2026-09-19 (seed catalog, secondary)
# GPU-hours of the two H100 demo designs: GPUs × 24 × expected days (with failures and restarts) from the
# training engine on this commit: demo 1, 512 GPUs × 28.3565 days; demo 3 (32 nodes), 256 GPUs × 53.7797 days.
RUN_A_GPU_HOURS = 512 * 24 * 28.3565
RUN_B_GPU_HOURS = 256 * 24 * 53.7797


def worked_example() -> dict[str, Any]:
    owned = owned_option_from_on_prem(inputs=DEMO1_OWNING, lead_time_months=2)
    return {
        "horizon_months": 12,
        "gpus_per_node": 8,
        "growth_pct_per_month": 10.0,
        "discount_rate": 0.08,
        "training": [
            {"name": "70B on 64 nodes", "gpu_hours": RUN_A_GPU_HOURS, "gpus": 512, "deadline_month": 2},
            {"name": "70B on 32 nodes", "gpu_hours": RUN_B_GPU_HOURS, "gpus": 256, "deadline_month": 4},
        ],
        "inference": [{"name": "chat", "peak_gpus": 16, "offpeak_fraction": 0.5}],
        "baseline": [
            {
                "name": "research",
                "gpus_by_day_hour": _grid(lambda d, h: (32 if d < 5 else 8) if 9 <= h < 18 else 8),
            }
        ],
        "supply": {
            "owned": {
                "lead_time_months": owned.lead_time_months,
                "capex_usd_per_node": owned.capex_usd_per_node,
                "fixed_usd_per_node_month": owned.fixed_usd_per_node_month,
                "usd_per_node_hour_used": owned.usd_per_node_hour_used,
                "capital_usd_per_node_month": owned.capital_usd_per_node_month,
                "depreciation_years": owned.depreciation_years,
                "residual_fraction": owned.residual_fraction,
            },
            "reservations": [{"term_months": 36, "usd_per_node_hour": P5_RESERVED_3Y}],
            "on_demand": {"usd_per_node_hour": P5_ON_DEMAND},
        },
    }


def test_owning_costs_per_node_come_from_the_cost_engine_by_hand() -> None:
    # capex = 1.03 × (64 × 275,000 + 3,331,200 + 1,392.65) = 21,560,570.43
    # per year fixed = capital 21,560,570.43 × (CRF(8 %, 5) 0.250456 − 0.2 × SFF 0.170456) = 4,664,956.35
    #   + colocation 676.8 kW × 150 × 12 = 1,218,240 + maintenance 0.05 × capex = 1,078,028.52 + staff 180,000
    #   + idle power 676.8 × 0.3 × 1.3 × 0.08 × 8,760 = 184,974.74  → 7,326,199.61 / (64 × 12) = 9,539.32
    # energy above idle per node-hour used: 676.8 × 0.7 × 1.3 × 0.08 / 64 = 49.27104 / 64 = 0.769860
    owned = owned_option_from_on_prem(inputs=DEMO1_OWNING, lead_time_months=2)
    assert owned.capex_usd_per_node == pytest.approx(21_560_570.43 / 64, rel=1e-8)
    assert owned.fixed_usd_per_node_month == pytest.approx(9_539.32, abs=0.01)
    assert owned.usd_per_node_hour_used == pytest.approx(0.769860, rel=1e-6)


def test_worked_example_matches_the_hand_calculation() -> None:
    """The docs' worked example, chosen on the NPV of its monthly cash flows at 8 % a year (issue #31, one
    basis). Re-pinned when the objective moved from undiscounted owning-annualised costs to that NPV: the
    fleet is the same (0, 0, 7, 8, 8, 9, 10, 11, 12, 14, 15, 17), the runs now finish at their deadlines
    (months 2 and 4, not 0 and 1: an on-demand bill paid later is worth less today), and the figures are
    NPV $5,971,604 and cash out undiscounted $5,918,458 (was the objective $6,094,102, owning annualised)."""
    plan = CapacityPlan.from_json(worked_example())
    result = plan_solve(plan=plan, mip_gap=1e-9)
    owned = plan.supply.owned
    assert owned is not None and owned.capital_usd_per_node_month is not None
    F, v, p = owned.fixed_usd_per_node_month, owned.usd_per_node_hour_used, P5_ON_DEMAND
    capex, opex = owned.capex_usd_per_node, F - owned.capital_usd_per_node_month
    # A payment at index k (index m + 1: the end of month m, index a: the start of month a) is worth
    # d_k = 1.08^(−k/12) today (engine/cost/cashflow.py's monthly discounting).
    d = 1.08 ** (-np.arange(14) / 12)

    # Hand calculation. Both runs must finish before owned nodes can arrive (month 2) and a run that may not
    # be split needs its whole node count on one layer, so both run on-demand, as late as their windows
    # allow: run A (43,555.6 node-hours, at most 64 × 730 = 46,720 a month) in month 2; run B (41,302.8
    # node-hours, at most 32 × 730 = 23,360 a month) 23,360 in month 4 and the rest in month 3.
    node_hours_a, node_hours_b = RUN_A_GPU_HOURS / 8, RUN_B_GPU_HOURS / 8
    training_npv = p * (node_hours_a * d[3] + (node_hours_b - 23_360) * d[4] + 23_360 * d[5])
    training_usd = p * (node_hours_a + node_hours_b)
    # A 3-year reservation bills 36 months of 730 × 23.776 wherever it starts: its NPV a node (≥ 23.776 ×
    # 730 × Σ_{k=12}^{47} d_k) is more than a node on-demand every hour of the 12 months (55.04 × 730 ×
    # Σ_{k=1}^{12} d_k), so it is never bought.
    d48 = 1.08 ** (-np.arange(48) / 12)
    assert P5_RESERVED_3Y * 730 * d48[12:48].sum() > P5_ON_DEMAND * 730 * d[1:13].sum()
    # The steady demand splits into node layers: node j is busy h_j(m) = Σ_slots W · clip(d − (j−1), 0, 1)
    # hours in month m. Owning it from month a (a ≥ 2, the lead time) costs capex at index a, less its resale
    # at the book value (no series given) capex · (1 − 0.8 · (12 − a)/12 / 5) at index 12, plus opex (F less
    # the capital share) and v · h_j(m) at the end of every month from a; renting costs p · h_j(m) each month.
    # Each layer takes its cheapest arrival month (or none); they come out in order (lower layers first), so
    # the fleet in month m is the number of layers that have arrived by then.
    hours = np.arange(168) % 24
    chat = 16 * np.where((hours >= 8) & (hours < 20), 1.0, 0.5)
    day = np.arange(168) // 24
    research = np.where((hours >= 9) & (hours < 18), np.where(day < 5, 32.0, 8.0), 8.0)
    demand = np.outer(1.1 ** np.arange(12), chat + research) / 8  # nodes, [month, slot]
    hand_npv, hand_usd, fleet, arrivals = training_npv, training_usd, np.zeros(12, dtype=int), []
    for j in range(1, int(np.ceil(demand.max())) + 1):
        busy = W * np.clip(demand - (j - 1), 0.0, 1.0).sum(axis=1)
        options = {12: (float((p * busy * d[1:13]).sum()), float((p * busy).sum()))}  # 12: never bought
        for a in range(2, 12):
            resale = capex * (1 - 0.8 * (12 - a) / 12 / 5)
            own, rent = np.arange(12) >= a, np.arange(12) < a
            monthly = np.where(own, opex + v * busy, 0.0) + np.where(rent, p * busy, 0.0)
            options[a] = (
                capex * d[a] - resale * d[12] + float((monthly * d[1:13]).sum()),
                capex - resale + float(monthly.sum()),
            )
        a_j = min(options, key=lambda a: options[a][0])
        arrivals.append(a_j)
        fleet += np.arange(12) >= a_j
        hand_npv += options[a_j][0]
        hand_usd += options[a_j][1]
    assert arrivals == sorted(arrivals)  # lower layers arrive first: the layers' choices are the fleet's

    assert (
        [m.owned_nodes for m in result.months] == fleet.tolist() == [0, 0, 7, 8, 8, 9, 10, 11, 12, 14, 15, 17]
    )
    assert result.npv_usd == pytest.approx(hand_npv, rel=1e-7)
    assert result.npv_usd == pytest.approx(5_971_604.46, abs=1.0)
    assert result.total_usd == pytest.approx(hand_usd, rel=1e-7)
    assert result.total_usd == pytest.approx(5_918_458.10, abs=1.0)
    # One basis: the objective is the NPV of the cash view's flows.
    assert result.cash_npv_usd == pytest.approx(result.npv_usd, rel=1e-12)
    assert result.cash_flows_usd is not None and sum(result.cash_flows_usd) == pytest.approx(result.total_usd)
    assert result.reservations == ()
    assert {run.name: (set(run.node_hours_by_layer), run.finish_month) for run in result.runs} == {
        "70B on 64 nodes": ({"on_demand"}, 2),
        "70B on 32 nodes": ({"on_demand"}, 4),
    }
    # All rent is on-demand for everything (the reservation never pays): p × every node-hour of demand, the
    # runs in the same months.
    all_rent = {a.name: a for a in result.alternatives}["all rent"]
    steady_npv = p * W * float((demand.sum(axis=1) * d[1:13]).sum())
    assert all_rent.npv_usd == pytest.approx(training_npv + steady_npv, rel=1e-7)
    assert all_rent.total_usd == pytest.approx(training_usd + p * W * demand.sum(), rel=1e-7)
    # All own cannot serve months 0–1 (nothing owned arrives before month 2), and says so.
    all_own = {a.name: a for a in result.alternatives}["all own"]
    assert all_own.total_usd is None and all_own.npv_usd is None and "month 2" in all_own.reason
    assert result.owned_utilization is not None and 0.5 < result.owned_utilization <= 1.0
    assert all(type(m.owned_utilization) in (float, type(None)) for m in result.months)


# ------------------------------------------------------------------ errors and round trips


def test_result_survives_a_json_round_trip() -> None:
    result = plan_solve(plan=CapacityPlan.from_json(worked_example()))
    assert PlanResult.from_json(result.to_json()) == result
    assert CapacityPlan.from_json(
        CapacityPlan.from_json(worked_example()).to_json()
    ) == CapacityPlan.from_json(worked_example())


def test_a_missing_price_is_an_error_naming_the_field() -> None:
    spec = worked_example()
    del spec["supply"]["on_demand"]["usd_per_node_hour"]
    with pytest.raises(InputError) as err:
        CapacityPlan.from_json(spec)
    assert err.value.field == "supply.on_demand.usd_per_node_hour"


def test_a_run_that_cannot_fit_before_its_deadline_is_refused_on_the_deadline() -> None:
    spec = worked_example()
    spec["training"][0]["gpu_hours"] = 512 * 730 * 3 + 1  # one GPU-hour more than 512 GPUs give in 3 months
    with pytest.raises(InfeasibleError) as err:
        CapacityPlan.from_json(spec)
    assert err.value.field == "training.0.deadline_month"


def test_owned_only_before_its_lead_time_is_infeasible_on_supply() -> None:
    spec = worked_example()
    spec["supply"] = {"owned": spec["supply"]["owned"]}
    with pytest.raises(InfeasibleError) as err:
        plan_solve(plan=CapacityPlan.from_json(spec))
    assert err.value.field == "supply" and "month 2" in err.value.message


# ------------------------------------------------------------------ the cash view


# One node owned from month 0: $300,000 capex, $10,000 a node-month of which $6,000 capital, $1 a node-hour.
ONE_NODE_OWNED = {
    "lead_time_months": 0,
    "capex_usd_per_node": 300_000.0,
    "fixed_usd_per_node_month": 10_000.0,
    "capital_usd_per_node_month": 6_000.0,
    "depreciation_years": 5.0,
    "residual_fraction": 0.2,
    "usd_per_node_hour_used": 1.0,
}


def test_cash_view_pays_capex_at_delivery_opex_monthly_and_takes_resale_back_by_hand() -> None:
    """One node of flat demand, owned from month 0 (owning $10,730 a month against $43,800 renting)."""
    spec = {
        "horizon_months": 12,
        "gpus_per_node": 8,
        "discount_rate": 0.08,
        "baseline": [{"name": "flat", "gpus_by_day_hour": [[8.0] * 24] * 7}],
        "supply": {
            "owned": ONE_NODE_OWNED,
            "on_demand": {"usd_per_node_hour": 60.0},
        },
    }
    result = plan_solve(plan=CapacityPlan.from_json(spec))
    assert [m.owned_nodes for m in result.months] == [1] * 12
    # By hand: capex $300,000 at delivery (index 0); each month opex (10,000 − 6,000) + 730 h × $1 = $4,730;
    # at month 12 the book value 300,000 × (1 − 0.8 × 1 y / 5 y) = $252,000 comes back as resale.
    flows = result.cash_flows_usd
    assert flows is not None and len(flows) == 13
    assert flows[0] == pytest.approx(300_000.0)
    assert flows[1:12] == pytest.approx([4_730.0] * 11)
    assert flows[12] == pytest.approx(4_730.0 - 252_000.0)
    # NPV at 8 % a year, monthly rate i = 1.08^(1/12) − 1 = 0.00643403:
    # 300,000 + 4,730 × (1 − 1.08^−1) / i − 252,000 / 1.08 = 300,000 + 54,455.8 − 233,333.3 = 121,122.5
    i = 1.08 ** (1 / 12) - 1
    hand = 300_000 + 4_730 * (1 - 1.08**-1) / i - 252_000 / 1.08
    assert hand == pytest.approx(121_122.5, abs=0.05)
    assert result.cash_npv_usd == pytest.approx(hand, rel=1e-9)
    assert result.capex_usd == pytest.approx(300_000.0)
    assert any(note.startswith("Cash view:") for note in result.notes)


def test_cash_view_sells_at_the_market_series_at_the_purchase_age_and_falls_back_to_book_value() -> None:
    """The same one-node plan over 18 months with the catalog's H100 SXM series (GLRI residual value guide:
    1 y 0.625, 2 y 0.425, 3 y 0.30) given as resale_points. By hand: the node is 1.5 years old at the end,
    f(1.5) = 0.625 + (0.425 − 0.625) × 0.5 = 0.525, so $157,500 comes back, not the book value 300,000 ×
    (1 − 0.8 × 1.5 / 5) = $228,000. Over 6 months (age 0.5, before the series' first point) the stated
    fallback: book value 300,000 × (1 − 0.8 × 0.5 / 5) = $276,000; the note says which."""
    owned = {
        **ONE_NODE_OWNED,
        "resale_points": [[1, 0.625], [2, 0.425], [3, 0.30]],
        "resale_source": "GLRI residual value guide for h100-sxm",
    }
    resale = {}
    for months in (18, 6):
        spec = {
            "horizon_months": months,
            "gpus_per_node": 8,
            "discount_rate": 0.08,
            "baseline": [{"name": "flat", "gpus_by_day_hour": [[8.0] * 24] * 7}],
            "supply": {"owned": owned, "on_demand": {"usd_per_node_hour": 60.0}},
        }
        result = plan_solve(plan=CapacityPlan.from_json(spec))
        assert [m.owned_nodes for m in result.months] == [1] * months
        flows = result.cash_flows_usd
        assert flows is not None
        resale[months] = 4_730.0 - flows[months]  # the month's opex less what the sale brings back
        note = next(n for n in result.notes if n.startswith("Cash view:"))
        assert ("market value of GLRI residual value guide" in note) is True
    assert resale[18] == pytest.approx(157_500.0)
    assert resale[6] == pytest.approx(276_000.0)


def test_resale_points_out_of_order_are_refused_naming_the_point() -> None:
    spec = worked_example()
    spec["supply"]["owned"]["resale_points"] = [[2, 0.4], [1, 0.6]]
    with pytest.raises(InputError) as err:
        CapacityPlan.from_json(spec)
    assert err.value.field == "supply.owned.resale_points.1"


def test_owning_costs_without_a_capital_share_give_no_cash_view_and_say_why() -> None:
    spec = worked_example()
    result = plan_solve(plan=CapacityPlan.from_json(spec))  # priced from the cost engine: has one
    assert result.cash_flows_usd is not None and result.cash_npv_usd is not None
    del spec["supply"]["owned"]["capital_usd_per_node_month"]
    result = plan_solve(plan=CapacityPlan.from_json(spec))
    assert result.cash_flows_usd is None and result.cash_npv_usd is None
    assert any("No cash view" in note for note in result.notes)


def test_a_runs_finish_month_does_not_depend_on_the_mip_gap() -> None:
    """Issue 31, item 12. Run "a" needs 20,000 node-hours on at most 8 nodes, 8 × 730 = 5,840 node-hours a
    month, so it cannot finish before month ceil(20,000 / 5,840) − 1 = 3. With the tie-break a 1e-7
    $/node-hour term in the cost, smaller than the gap, HiGHS stopped at a 1 % or 5 % gap on a mix of the
    same cost that finished it in month 4; the lexicographic second solve (least lateness at no more cost)
    finishes it in month 3 at every gap, at the same total."""
    plan = CapacityPlan.from_json(two_runs_tie_break_plan())
    results = [plan_solve(plan=plan, mip_gap=gap, compare=False) for gap in (1e-4, 1e-2, 5e-2)]
    assert [r.runs[0].finish_month for r in results] == [3, 3, 3]
    assert len({r.runs[1].finish_month for r in results}) == 1
    assert [r.total_usd for r in results] == pytest.approx([results[0].total_usd] * 3, rel=1e-9)


def test_a_run_that_may_not_be_split_is_never_put_on_spot_capped_below_its_nodes() -> None:
    """Issue 31, item 12: a 4-node run (32 GPUs, 8,000 GPU-hours = 1,000 node-hours in month 0) with spot
    capped at 2 nodes. Spot's 2 × 730 × 0.9 = 1,314 useful node-hours would hold its work, but not its 4 nodes
    at once: before, all of it went on spot at 1,000 × 20.784 / 0.9 = $23,093.33; it must run on on-demand,
    1,000 × 55.04 = $55,040. Split allowed, spot takes it (the cap bounds nodes, not the run)."""
    spec: Any = unsplit_run_on_capped_spot()
    whole = plan_solve(plan=CapacityPlan.from_json(spec), compare=False)
    assert whole.total_usd == pytest.approx(55_040.0, abs=1e-6)
    assert whole.runs[0].node_hours_by_layer == pytest.approx({"on_demand": 1_000.0})
    spec["training"][0]["splittable"] = True
    split = plan_solve(plan=CapacityPlan.from_json(spec), compare=False)
    assert split.total_usd == pytest.approx(1_000 * 20.784 / 0.9, rel=1e-9)
    spec["training"][0]["splittable"] = False
    spec["supply"]["spot"]["cap_nodes"] = 4  # a cap that holds the run's nodes: spot again
    assert plan_solve(plan=CapacityPlan.from_json(spec), compare=False).total_usd == pytest.approx(
        23_093.33, abs=0.01
    )


# ------------------------------------------------------------------ the objective: NPV of the cash flows


def test_discounting_turns_own_into_reserve_by_hand() -> None:
    at_zero, at_eight = own_or_reserve_by_hand(0.0), own_or_reserve_by_hand(0.08)
    assert at_zero == pytest.approx({"own": 96_000.0, "reserve": 100_740.0})
    assert at_eight == pytest.approx({"own": 112_718.10, "reserve": 96_650.44}, abs=0.01)

    undiscounted = plan_solve(plan=CapacityPlan.from_json(own_or_reserve()), mip_gap=1e-9)
    assert [(p.arrival_month, p.nodes) for p in undiscounted.owned_purchases] == [(0, 1)]
    assert undiscounted.reservations == ()
    assert undiscounted.npv_usd == pytest.approx(at_zero["own"], rel=1e-9)
    assert undiscounted.total_usd == pytest.approx(at_zero["own"], rel=1e-9)

    discounted = plan_solve(
        plan=CapacityPlan.from_json({**own_or_reserve(), "discount_rate": 0.08}), mip_gap=1e-9
    )
    assert discounted.owned_purchases == ()
    assert [(r.term_months, r.start_month, r.nodes) for r in discounted.reservations] == [(12, 0, 1)]
    assert discounted.npv_usd == pytest.approx(at_eight["reserve"], rel=1e-9)
    assert discounted.total_usd == pytest.approx(100_740.0, rel=1e-9)  # cash out, undiscounted
    assert discounted.cash_npv_usd == pytest.approx(discounted.npv_usd, rel=1e-12)
    assert any(
        n.startswith("Objective: the NPV of the plan's monthly cash flows at 8.00% a year")
        for n in discounted.notes
    )
    # The all-own comparison is priced on the same basis: owning's NPV by hand.
    all_own = {a.name: a for a in discounted.alternatives}["all own"]
    assert all_own.npv_usd == pytest.approx(at_eight["own"], rel=1e-9)


# A plan with every layer and both kinds of run, owning costs given without their capital share (so owning
# is paid as its fixed cost per node-month): its solution as main solved it before the objective was the NPV
# (commit e235ab4, discount rate 0), pinned to compare: at a zero rate the NPV objective is the same sums.
TODAYS_PLAN: dict[str, Any] = {
    "horizon_months": 12,
    "gpus_per_node": 8,
    "growth_pct_per_month": 5.0,
    "training": [
        {"name": "a", "gpu_hours": 160_000, "gpus": 64, "deadline_month": 8},
        {
            "name": "b",
            "gpu_hours": 80_000,
            "gpus": 32,
            "earliest_start_month": 2,
            "deadline_month": 10,
            "splittable": True,
        },
    ],
    "inference": [{"name": "chat", "peak_gpus": 24, "offpeak_fraction": 0.5}],
    "baseline": [{"name": "research", "gpus_by_day_hour": [[8.0] * 24] * 7}],
    "supply": {
        "owned": {
            "lead_time_months": 1,
            "capex_usd_per_node": 300_000,
            "fixed_usd_per_node_month": 7_000,
            "usd_per_node_hour_used": 0.7,
        },
        "reservations": [{"term_months": 12, "usd_per_node_hour": 14.0}],
        "on_demand": {"usd_per_node_hour": 55.04},
        "spot": {"usd_per_node_hour": 20.78, "goodput": 0.85, "cap_nodes": 3},
    },
}


def test_at_a_zero_rate_the_plan_is_todays_plan_exactly() -> None:
    result = plan_solve(plan=CapacityPlan.from_json(TODAYS_PLAN))
    assert [(p.arrival_month, p.order_month, p.nodes) for p in result.owned_purchases] == [(1, 0, 1)]
    assert [(r.term_months, r.start_month, r.nodes) for r in result.reservations] == [(12, 0, 8)]
    assert [(r.name, r.finish_month, dict(r.node_hours_by_layer)) for r in result.runs] == [
        ("a", 8, {"reserved": 20_000.0}),
        ("b", 10, {"reserved": 10_000.0}),
    ]
    # main's figure before the NPV basis; equal to the last bit on the scipy/numpy of that day, and 1 ulp
    # apart (…297 against …304) on scipy 1.17.1 / numpy 2.4.6, whose HiGHS and sums round differently.
    assert result.total_usd == pytest.approx(1_060_655.3375417304, rel=1e-14)
    assert result.npv_usd == pytest.approx(result.total_usd, rel=1e-12)
    all_rent = {a.name: a for a in result.alternatives}["all rent"]
    assert all_rent.total_usd == pytest.approx(1_069_665.029736141, rel=1e-12)
    assert all_rent.npv_usd == pytest.approx(all_rent.total_usd, rel=1e-12)


def test_at_a_zero_rate_the_cash_basis_equals_owning_annualised_when_resale_is_the_book_value() -> None:
    """Owned nodes priced by the cost engine at a zero cost of capital recover capital straight-line,
    capex · (1 − residual) / life a year, which is capex less the book value at any age within the life: so
    at a zero rate the cash basis (capex at delivery, resale at book value) and owning annualised (F a
    node-month) give the same plan and the same figure."""
    owning = OnPremInputs(**{**DEMO1_OWNING.__dict__, "discount_rate": 0.0})
    owned = owned_option_from_on_prem(inputs=owning, lead_time_months=2)
    spec = worked_example()
    spec["discount_rate"] = 0.0
    spec["supply"]["owned"] = {
        key: getattr(owned, key)
        for key in (
            "lead_time_months",
            "capex_usd_per_node",
            "fixed_usd_per_node_month",
            "usd_per_node_hour_used",
            "capital_usd_per_node_month",
            "depreciation_years",
            "residual_fraction",
        )
    }
    cash = plan_solve(plan=CapacityPlan.from_json(spec), mip_gap=1e-9, compare=False)
    del spec["supply"]["owned"]["capital_usd_per_node_month"]
    annualised = plan_solve(plan=CapacityPlan.from_json(spec), mip_gap=1e-9, compare=False)
    assert cash.cash_npv_usd is not None and annualised.cash_npv_usd is None
    assert [m.owned_nodes for m in cash.months] == [m.owned_nodes for m in annualised.months]
    assert cash.npv_usd == pytest.approx(annualised.npv_usd, rel=1e-9)
    assert cash.total_usd == pytest.approx(annualised.total_usd, rel=1e-9)


def test_the_objective_discounts_with_the_cash_flow_engines_monthly_factors() -> None:
    """One convention: the plan's NPV is Σ flows_k · cashflow.discount_factors(r)_k, the factors the design's
    cash flows use (1 / (1 + i)^k, i = (1 + r)^(1/12) − 1)."""
    from clusterdesigner.engine.cost.cashflow import _npv, discount_factors

    result = plan_solve(plan=CapacityPlan.from_json(worked_example()), compare=False)
    flows = result.cash_flows_usd
    assert flows is not None
    assert result.npv_usd == pytest.approx(_npv(flows, 0.08), rel=1e-12)
    factors = discount_factors(yearly_rate=0.08, periods=12)
    assert factors[12] == pytest.approx(1 / 1.08, rel=1e-14) and factors[0] == 1.0
    assert discount_factors(yearly_rate=0.0, periods=5).tolist() == [1.0] * 6
