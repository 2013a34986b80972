"""Golden and property tests for the rent-vs-own arithmetic (clusterdesigner.engine.cost.rent_own)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.rent_own import (
    LinearCost,
    OnPremInputs,
    annualized_capex_usd,
    break_even_utilization,
    capital_recovery_factor,
    cloud_cost,
    committed_years,
    on_prem_cost,
    sinking_fund_factor,
)


def _inputs(**overrides: float) -> OnPremInputs:
    base = dict(
        nodes=8,
        gpus_per_node=8,
        server_usd=230_000.0,
        network_capex_usd=0.0,
        storage_capex_usd=0.0,
        installation_fraction=0.0,
        node_power_kw=10.2,
        network_power_kw=0.0,
        pue=1.3,
        usd_per_kwh=0.08,
        idle_power_fraction=0.3,
        colo_usd_per_kw_month=150.0,
        maintenance_fraction_per_year=0.05,
        staff_fte=1.0,
        staff_usd_per_fte_year=180_000.0,
        depreciation_years=5.0,
        discount_rate=0.08,
        residual_fraction=0.2,
    )
    base.update(overrides)
    return OnPremInputs(**base)  # type: ignore[arg-type]


def test_capital_recovery_factor_at_8_percent_over_5_years() -> None:
    # Hand: 1.08^5 = 1.469328077; CRF = 0.08 × 1.469328077 / 0.469328077 = 0.250456455.
    assert capital_recovery_factor(rate=0.08, years=5) == pytest.approx(0.250456455, abs=1e-9)
    # SFF = 0.08 / 0.469328077 = 0.170456455 = CRF − r.
    assert sinking_fund_factor(rate=0.08, years=5) == pytest.approx(0.170456455, abs=1e-9)


def test_capital_recovery_factor_at_zero_rate_is_straight_line() -> None:
    assert capital_recovery_factor(rate=0.0, years=4) == 0.25


def test_annualized_capex_credits_the_residual_through_the_sinking_fund() -> None:
    # Hand: $1,000,000 × 0.250456455 − $200,000 × 0.170456455 = 250,456.45 − 34,091.29 = $216,365.16.
    assert annualized_capex_usd(capex_usd=1e6, residual_fraction=0.2, rate=0.08, years=5) == pytest.approx(
        216_365.16, abs=0.01
    )


def test_rejects_zero_depreciation_life() -> None:
    with pytest.raises(InputError) as err:
        capital_recovery_factor(rate=0.08, years=0)
    assert err.value.field == "on_prem.depreciation_years"


def test_guide_reserved_scenario_costs_2_733_120() -> None:
    # The 2026 cluster-buying guide: 8 p5.48xlarge reserved at $19.50/h, 24/7 for 2 years.
    # Hand: 8 × $19.50 × 8,760 h × 2 = $2,733,120.
    res = _rent("reserved_1y", 19.50, 0.6)
    assert res.total.usd == pytest.approx(2_733_120.0, abs=0.01)
    assert "8 nodes × $19.50/node-h × 8,760 h × 2 committed years" in res.parts["compute"].formula


def test_guide_energy_scenario_costs_112_128_before_pue() -> None:
    # 8 nodes × 10 kW at $0.08/kWh for 2 years, at full draw and PUE 1:
    # hand: 80 kW × 8,760 h × 2 × $0.08 = $112,128 (the guide's $420K does not follow from these inputs).
    res = on_prem_cost(inputs=_inputs(node_power_kw=10.0, pue=1.0), utilization=1.0, horizon_years=2)
    assert res.annual_parts["energy"].usd * 2 == pytest.approx(112_128.0, abs=0.01)
    # With PUE 1.3: $112,128 × 1.3 = $145,766.40.
    res13 = on_prem_cost(inputs=_inputs(node_power_kw=10.0, pue=1.3), utilization=1.0, horizon_years=2)
    assert res13.annual_parts["energy"].usd * 2 == pytest.approx(145_766.40, abs=0.01)


def test_on_prem_example_request_annual_cost_by_hand() -> None:
    # The example (8 × $230,000 servers, 10.2 kW each) with network, storage and installation zero.
    # capex = 8 × 230,000 = 1,840,000.
    # capital = 1,840,000 × 0.250456455 − 368,000 × 0.170456455 = 460,839.88 − 62,727.98 = 398,111.90
    # energy = 81.6 kW × (0.3 + 0.7 × 0.6) × 1.3 × $0.08 × 8,760 = 53,525.42
    # colo = 81.6 × 150 × 12 = 146,880; maintenance = 0.05 × 1,840,000 = 92,000; staff = 180,000
    # annual = 870,517.32; 2 years = 1,741,034.65; per GPU-hour = 1,741,034.65 / (64 × 17,520 × 0.6) = 2.5879
    res = on_prem_cost(inputs=_inputs(), utilization=0.6, horizon_years=2)
    assert res.capex_usd == 1_840_000.0
    assert res.annual_parts["capital"].usd == pytest.approx(398_111.90, abs=0.01)
    assert res.annual_parts["energy"].usd == pytest.approx(53_525.42, abs=0.01)
    assert res.annual_parts["colocation"].usd == pytest.approx(146_880.0)
    assert res.annual_parts["maintenance"].usd == pytest.approx(92_000.0)
    assert res.total.usd == pytest.approx(1_741_034.65, abs=0.01)
    assert res.usd_per_gpu_hour.usd == pytest.approx(2.5879, abs=1e-4)
    assert res.linear.at(0.6) == pytest.approx(res.total.usd)


def test_cash_and_accounting_views_per_year() -> None:
    # Cash: year 1 carries the whole capex. Accounting: straight line (1,840,000 − 368,000) / 5 = 294,400.
    res = on_prem_cost(inputs=_inputs(), utilization=0.6, horizon_years=2)
    opex = 53_525.42 + 146_880 + 92_000 + 180_000
    assert res.years[0].cash_usd == pytest.approx(1_840_000 + opex, abs=0.01)
    assert res.years[1].cash_usd == pytest.approx(opex, abs=0.01)
    assert res.years[1].accounting_usd == pytest.approx(294_400 + opex, abs=0.01)


def test_npv_discounts_opex_and_credits_book_value() -> None:
    # NPV = capex + opex/1.08 + opex/1.08² − book/1.08², book after 2 of 5 years = 1,840,000 − 294,400 × 2.
    res = on_prem_cost(inputs=_inputs(), utilization=0.6, horizon_years=2)
    opex = 53_525.42208 + 146_880 + 92_000 + 180_000
    book = 1_840_000 - 294_400 * 2
    expected = 1_840_000 + opex / 1.08 + opex / 1.08**2 - book / 1.08**2
    assert res.npv.usd == pytest.approx(expected, rel=1e-9)


def test_reserved_term_bills_whole_terms() -> None:
    assert committed_years(pricing_model="reserved_1y", horizon_years=1.5) == 2.0
    assert committed_years(pricing_model="reserved_3y", horizon_years=2.0) == 3.0
    assert committed_years(pricing_model="on_demand", horizon_years=2.0) is None


def test_break_even_closed_form_by_hand() -> None:
    # Own = 1,678,588.32 + 104,077.21·u (the example's owning line); on-demand = 7,714,406.40·u
    # (8 × $55.04 × 17,520 h). Hand: u* = 1,678,588.32 / (7,714,406.40 − 104,077.21) = 0.220567.
    own = LinearCost(1_678_588.32, 104_077.21)
    rent = LinearCost(0.0, 7_714_406.40)
    u = break_even_utilization(own=own, rent=rent)
    assert u == pytest.approx(0.220567, abs=1e-6)
    assert own.at(u) == pytest.approx(rent.at(u))  # type: ignore[arg-type]


def test_break_even_of_the_example_matches_its_own_lines() -> None:
    own = on_prem_cost(inputs=_inputs(), utilization=0.6, horizon_years=2)
    # fixed per year = capital 398,111.90 + idle energy 0.3 × 74,340.86 + colo + maintenance + staff
    assert own.linear.fixed_usd == pytest.approx(
        2 * (398_111.90 + 0.3 * 74_340.864 + 146_880 + 92_000 + 180_000), abs=0.05
    )
    assert own.linear.per_utilization_usd == pytest.approx(2 * 0.7 * 74_340.864, abs=0.01)


def test_parallel_cost_lines_have_no_break_even() -> None:
    assert break_even_utilization(own=LinearCost(1.0, 5.0), rent=LinearCost(2.0, 5.0)) is None


prices = st.floats(min_value=1.0, max_value=500.0)
utils = st.floats(min_value=0.01, max_value=1.0)


def _rent(model: str, price: float, u: float, **kw: float) -> Any:
    args: dict[str, float] = dict(
        nodes=8,
        gpus_per_node=8,
        horizon_years=2,
        managed_overhead_fraction=0.0,
        storage_usd=0.0,
        egress_usd=0.0,
    )
    args.update(kw)
    return cloud_cost(pricing_model=model, usd_per_node_hour=price, utilization=u, **args)  # type: ignore[arg-type]


@given(price=prices, bump=st.floats(min_value=0.01, max_value=100.0))
def test_break_even_falls_as_the_cloud_price_rises(price: float, bump: float) -> None:
    own = on_prem_cost(inputs=_inputs(), utilization=0.5, horizon_years=2).linear

    def u_star(p: float) -> float:
        value = break_even_utilization(own=own, rent=_rent("on_demand", p, 0.5).linear)
        assert value is not None
        return value

    assert u_star(price + bump) < u_star(price)


@given(price=prices, u1=utils, u2=utils)
def test_reserved_cost_does_not_depend_on_utilization(price: float, u1: float, u2: float) -> None:
    def total(u: float) -> float:
        return float(
            _rent(
                "reserved_1y",
                price,
                u,
                horizon_years=1.5,
                managed_overhead_fraction=0.1,
                storage_usd=100.0,
                egress_usd=10.0,
            ).total.usd
        )

    assert total(u1) == total(u2)


@given(price=prices, u=utils, k=st.floats(min_value=0.01, max_value=1.0))
def test_on_demand_compute_is_linear_in_utilization(price: float, u: float, k: float) -> None:
    def compute(x: float) -> float:
        return float(_rent("on_demand", price, x, storage_usd=500.0).parts["compute"].usd)

    assert compute(u * k) == pytest.approx(k * compute(u), rel=1e-9)
