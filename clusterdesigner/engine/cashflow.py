"""Money over time: monthly cash flows of owning and of each way of renting, their NPV, payback and IRR.

Conventions (docs/cost-engine.md, "Cash flows"):

- Months m = 1..N of the horizon; a monthly bill is paid at the end of its month and discounted by
  (1 + i)^m with the monthly rate i = (1 + r)^(1/12) − 1 for the yearly rate r. Payments due at the start of
  a month (capex at delivery, upfront reservation fees) sit at the end of the month before.
- Owning: capex at delivery (the end of the lead time, month L), opex from month L + 1, resale at the end of
  month N. During the lead time the reference rent option is paid instead. Financing: cash (capex at
  delivery), loan (Excel PMT monthly from month L + 1, the balance left at the horizon repaid then) or an
  operating lease (a monthly payment instead of capex; nothing to resell).
- Renting: on-demand and spot pay the hours used, nodes × $/h × 730 h × u (× spot hours factor); a
  reservation bills every hour of each whole term, monthly (no upfront), half upfront (partial) or all at the
  start of the term (all upfront). Prices move by the yearly change: the price in month m is
  p · (1 + g)^((m − 1)/12); a reservation keeps the price of the month its term starts.
- The difference is rent − own: positive when owning costs less.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clusterdesigner.engine.errors import InputError

HOURS_PER_MONTH = 8760.0 / 12.0  # 730: the 365-day year the rest of the cost engine uses
# IRS Publication 946, Table A-1: 5-year property, half-year convention (200 % declining balance).
MACRS_5_YEAR = (0.20, 0.32, 0.192, 0.1152, 0.1152, 0.0576)
FINANCING = ("cash", "loan", "lease")
UPFRONT = ("no_upfront", "partial_upfront", "all_upfront")


def pmt(*, rate: float, periods: int, present_value: float) -> float:
    """Level payment that repays ``present_value`` over ``periods`` at ``rate`` per period, as Excel's
    PMT(rate, nper, −pv) returns it: rate · pv / (1 − (1 + rate)^−n), or pv / n at rate 0.

    Microsoft's PMT example: PMT(8 %/12, 10, 10000) = −$1,037.03 (the sign is Excel's: money paid out).
    """
    if periods < 1:
        raise InputError("must be 1 or more", field="cashflow.loan_months")
    if rate == 0:
        return present_value / periods
    return rate * present_value / (1.0 - (1.0 + rate) ** -periods)


def monthly_rate(yearly: float) -> float:
    """i = (1 + r)^(1/12) − 1: the monthly rate that compounds to the yearly rate r."""
    return float((1.0 + yearly) ** (1.0 / 12.0) - 1.0)


@dataclass(frozen=True)
class RentOption:
    """One way of renting: its $/node-hour, and for a reservation its term and payment option."""

    model: str  # on_demand | reserved_1y | reserved_3y | spot
    usd_per_node_hour: float
    term_months: int = 0  # 0: pay as you go
    upfront: str = "no_upfront"
    hours_factor: float = 1.0  # spot: hours bought per hour of progress (÷ relative goodput)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RentOption:
        return cls(**dict(data))


@dataclass(frozen=True)
class CashflowInputs:
    """Everything the monthly cash flows depend on. Money in USD, rates per year."""

    months: int
    discount_rate: float
    nodes: int
    utilization: float
    capex_usd: float
    power_full_usd_per_month: float  # owning's energy bill a month at 100 % utilization, month 1 prices
    idle_power_fraction: float  # energy bill at utilization u = full · (idle + (1 − idle) · u)
    other_opex_usd_per_month: float  # colocation, maintenance, staff
    resale_fraction: float  # of capex, received at the end of the horizon
    rent: tuple[RentOption, ...]
    managed_overhead_fraction: float = 0.0
    rent_extra_usd_per_month: float = 0.0  # cloud storage and egress spread over the horizon
    cloud_price_change_per_year: float = 0.0
    power_escalation_per_year: float = 0.0
    lead_time_months: int = 0
    financing: str = "cash"
    loan_rate: float = 0.08
    loan_months: int = 60
    lease_usd_per_month: float | None = None
    tax_rate: float = 0.0  # MACRS 5-year shield, off at 0

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["rent"] = [o.to_json() for o in self.rent]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CashflowInputs:
        values = dict(data)
        values["rent"] = tuple(RentOption.from_json(o) for o in values["rent"])
        return cls(**values)


@dataclass(frozen=True)
class OptionFlows:
    """One option's monthly costs (index 0 = the end of month 0, i.e. the start; 1..N the months), NPV."""

    name: str
    monthly_usd: tuple[float, ...]
    npv_usd: float
    total_usd: float
    yearly_usd: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "monthly_usd": list(self.monthly_usd),
            "npv_usd": self.npv_usd,
            "total_usd": self.total_usd,
            "yearly_usd": list(self.yearly_usd),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OptionFlows:
        return cls(
            name=str(data["name"]),
            monthly_usd=tuple(data["monthly_usd"]),
            npv_usd=float(data["npv_usd"]),
            total_usd=float(data["total_usd"]),
            yearly_usd=tuple(data["yearly_usd"]),
        )


@dataclass(frozen=True)
class CashflowResult:
    """Cash flows of owning and every rent option; the difference against the cheapest rent option by NPV."""

    own: OptionFlows
    rent: tuple[OptionFlows, ...]
    reference: str  # the rent option owning is compared with (lowest NPV)
    npv_difference_usd: float  # NPV(reference rent) − NPV(own): > 0 when owning costs less
    payback_month: int | None  # first month whose cumulative saving of owning is ≥ 0
    irr_per_year: float | None  # of the saving flows rent − own, when they change sign
    loan_payment_usd: float | None = None
    break_even_utilization: Mapping[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "own": self.own.to_json(),
            "rent": [r.to_json() for r in self.rent],
            "reference": self.reference,
            "npv_difference_usd": self.npv_difference_usd,
            "payback_month": self.payback_month,
            "irr_per_year": self.irr_per_year,
            "loan_payment_usd": self.loan_payment_usd,
            "break_even_utilization": dict(self.break_even_utilization),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CashflowResult:
        return cls(
            own=OptionFlows.from_json(data["own"]),
            rent=tuple(OptionFlows.from_json(r) for r in data["rent"]),
            reference=str(data["reference"]),
            npv_difference_usd=float(data["npv_difference_usd"]),
            payback_month=data.get("payback_month"),
            irr_per_year=data.get("irr_per_year"),
            loan_payment_usd=data.get("loan_payment_usd"),
            break_even_utilization=dict(data.get("break_even_utilization") or {}),
        )


def _npv(flows: Sequence[float], rate_per_year: float) -> float:
    i = monthly_rate(rate_per_year)
    return float(sum(x / (1.0 + i) ** m for m, x in enumerate(flows)))


def _yearly(flows: Sequence[float]) -> tuple[float, ...]:
    """Year y sums months 12(y−1)+1 .. 12y; the start (index 0) counts in year 1."""
    years = max(1, math.ceil((len(flows) - 1) / 12))
    out = [0.0] * years
    for m, x in enumerate(flows):
        out[max(0, (m - 1) // 12)] += x
    return tuple(out)


def _flows(name: str, monthly: list[float], rate: float) -> OptionFlows:
    return OptionFlows(name, tuple(monthly), _npv(monthly, rate), float(sum(monthly)), _yearly(monthly))


def rent_flows(*, inputs: CashflowInputs, option: RentOption) -> list[float]:
    """Monthly cost of one rent option (index 0 = the start, 1..N the months); see the module docstring."""
    n, g = inputs.months, inputs.cloud_price_change_per_year
    over = 1.0 + inputs.managed_overhead_fraction
    out = [0.0] * (n + 1)

    def price(month: int) -> float:
        return option.usd_per_node_hour * float((1.0 + g) ** ((month - 1) / 12.0))

    for m in range(1, n + 1):
        out[m] += inputs.rent_extra_usd_per_month
    if option.term_months <= 0:
        for m in range(1, n + 1):
            hours = inputs.nodes * HOURS_PER_MONTH * inputs.utilization * option.hours_factor
            out[m] += hours * price(m) * over
        return out
    start = 1
    while start <= n:
        term_price = price(start)
        month_bill = inputs.nodes * HOURS_PER_MONTH * term_price * over
        term_total = month_bill * option.term_months
        upfront = {"no_upfront": 0.0, "partial_upfront": 0.5, "all_upfront": 1.0}[option.upfront]
        out[start - 1] += upfront * term_total
        # Every month of the term is billed, also those past the horizon: they are owed all the same.
        for k in range(option.term_months):
            m = min(start + k, n)
            out[m] += (1.0 - upfront) * month_bill
        start += option.term_months
    return out


def own_flows(*, inputs: CashflowInputs, lead_rent: Sequence[float]) -> tuple[list[float], float | None]:
    """Monthly cost of owning: lead-time rent, capex or its financing, opex, MACRS shield, resale."""
    n, lead = inputs.months, inputs.lead_time_months
    if lead >= n:
        raise InputError(
            f"the lead time of {lead} months leaves no owned month in the {n}-month horizon",
            field="cashflow.lead_time_months",
        )
    out = [0.0] * (n + 1)
    for m in range(1, lead + 1):
        out[m] += lead_rent[m]
    capex = inputs.capex_usd
    payment: float | None = None
    if inputs.financing == "cash":
        out[lead] += capex
    elif inputs.financing == "loan":
        i = inputs.loan_rate / 12.0
        payment = pmt(rate=i, periods=inputs.loan_months, present_value=capex)
        balance = capex
        for k in range(1, inputs.loan_months + 1):
            m = lead + k
            if m > n:
                out[n] += balance  # repaid when the horizon ends
                break
            out[m] += payment
            balance = balance * (1.0 + i) - payment
    elif inputs.financing == "lease":
        if inputs.lease_usd_per_month is None:
            raise InputError(
                "an operating lease needs its monthly payment", field="cashflow.lease_usd_per_month"
            )
        for m in range(lead + 1, n + 1):
            out[m] += inputs.lease_usd_per_month
    else:
        raise InputError(f"must be one of {', '.join(FINANCING)}", field="cashflow.financing")
    e = inputs.power_escalation_per_year
    for m in range(lead + 1, n + 1):
        out[m] += inputs.other_opex_usd_per_month
        out[m] += power_usd_per_month(inputs) * float((1.0 + e) ** ((m - 1) / 12.0))
    if inputs.financing != "lease":
        out[n] -= inputs.resale_fraction * capex
        if inputs.tax_rate > 0:
            for year, share in enumerate(MACRS_5_YEAR, start=1):
                m = lead + 12 * year
                if m > n:
                    break
                out[m] -= inputs.tax_rate * share * capex
    return out, payment


def _irr(flows: Sequence[float]) -> float | None:
    """Yearly IRR of monthly flows (bisection on the monthly rate in (−0.99, 10)); None without a sign
    change or a root."""
    values = np.asarray(flows, dtype=float)
    if not (values.min() < 0 < values.max()):
        return None
    months = np.arange(len(values))

    def npv(rate: float) -> float:
        return float(np.sum(values / (1.0 + rate) ** months))

    lo, hi = -0.99, 10.0
    f_lo, f_hi = npv(lo), npv(hi)
    if f_lo * f_hi > 0:
        return None
    for _ in range(200):
        mid = (lo + hi) / 2.0
        f_mid = npv(mid)
        if f_lo * f_mid <= 0:
            hi = mid
        else:
            lo, f_lo = mid, f_mid
    return float((1.0 + (lo + hi) / 2.0) ** 12 - 1.0)


def _payback(saving: Sequence[float]) -> int | None:
    total = 0.0
    went_negative = False
    for m, x in enumerate(saving):
        total += x
        went_negative = went_negative or total < 0
        if went_negative and total >= 0:
            return m
    return None


def cash_flows(*, inputs: CashflowInputs, break_even: bool = True, irr: bool = True) -> CashflowResult:
    """Owning and every rent option month by month, NPV of each at the discount rate, and owning against the
    rent option of lowest NPV: the NPV difference (rent − own), the payback month (cumulative undiscounted
    saving back to ≥ 0) and the IRR of the saving flows. Break-even utilization per pay-as-you-go option:
    the u where both NPVs are equal (both are linear in u)."""
    if not inputs.rent:
        raise InputError("no rent option to compare owning with", field="cloud.usd_per_node_hour")
    rate = inputs.discount_rate
    rents = {o.model: _flows(o.model, rent_flows(inputs=inputs, option=o), rate) for o in inputs.rent}
    reference = min(rents, key=lambda k: rents[k].npv_usd)
    paygo = next((o for o in inputs.rent if o.term_months <= 0 and o.model != "spot"), inputs.rent[0])
    lead_rent = rent_flows(inputs=inputs, option=paygo)
    own_monthly, payment = own_flows(inputs=inputs, lead_rent=lead_rent)
    own = _flows("own", own_monthly, rate)
    saving = [r - o for r, o in zip(rents[reference].monthly_usd, own_monthly, strict=True)]
    return CashflowResult(
        own=own,
        rent=tuple(rents.values()),
        reference=reference,
        npv_difference_usd=rents[reference].npv_usd - own.npv_usd,
        payback_month=_payback(saving),
        irr_per_year=_irr(saving) if irr else None,  # irr=False: NPVs only (root finding, npv_basis)
        loan_payment_usd=payment,
        break_even_utilization={o.model: _break_even(inputs, o) for o in inputs.rent if o.term_months <= 0}
        if break_even
        else {},
    )


def power_usd_per_month(inputs: CashflowInputs) -> float:
    """Energy bill of a month at the inputs' utilization: full · (idle + (1 − idle) · u) (linear power
    model, Fan, Weber & Barroso, ISCA 2007)."""
    idle = inputs.idle_power_fraction
    return inputs.power_full_usd_per_month * (idle + (1.0 - idle) * inputs.utilization)


def _npv_gap(inputs: CashflowInputs, option: RentOption, utilization: float) -> float:
    at = replace(inputs, utilization=utilization)
    rent = _npv(rent_flows(inputs=at, option=option), at.discount_rate)
    paygo = next((o for o in at.rent if o.term_months <= 0 and o.model != "spot"), option)
    own, _ = own_flows(inputs=at, lead_rent=rent_flows(inputs=at, option=paygo))
    return rent - _npv(own, at.discount_rate)


def _break_even(inputs: CashflowInputs, option: RentOption) -> float | None:
    """u* where NPV(rent) = NPV(own): the gap rent − own is linear in u, so two points fix it."""
    g0, g1 = _npv_gap(inputs, option, 0.0), _npv_gap(inputs, option, 1.0)
    if abs(g1 - g0) < 1e-9:
        return None
    return -g0 / (g1 - g0)


@dataclass(frozen=True)
class Uncertainty:
    """Seeded Monte Carlo of the NPV difference: P10/P50/P90 and the probability that owning wins."""

    samples: int
    seed: int
    spread: float
    p10_usd: float
    p50_usd: float
    p90_usd: float
    p_own_wins: float
    varied: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["varied"] = list(self.varied)
        return out


# The inputs the Monte Carlo varies, each uniformly within ± spread of its value (the tornado's fraction).
VARIED = ("capex_usd", "power_full_usd_per_month", "other_opex_usd_per_month", "utilization", "rent_price")


def _pv(flows: Sequence[float], rate: float) -> float:
    return _npv(flows, rate)


def _own_parts(inputs: CashflowInputs) -> dict[str, float]:
    """Owning's NPV split into parts it is linear in (own_flows is linear in each input): per $ of capex, per
    $ of the full-load power bill at u = 0 and at u = 1, per $ of other opex, the fixed rest (a lease), and
    the lead-time window's share of the pay-as-you-go rent flows."""
    r, n = inputs.discount_rate, inputs.months
    zero = [0.0] * (n + 1)
    base = replace(inputs, capex_usd=0.0, power_full_usd_per_month=0.0, other_opex_usd_per_month=0.0)

    def pv(**changes: Any) -> float:
        flows, _ = own_flows(inputs=replace(base, **changes), lead_rent=zero)
        return _pv(flows, r)

    fixed = pv()
    return {
        "fixed": fixed,
        "capex": pv(capex_usd=1.0) - fixed,
        "power_u0": pv(power_full_usd_per_month=1.0, utilization=0.0) - fixed,
        "power_u1": pv(power_full_usd_per_month=1.0, utilization=1.0) - fixed,
        "other": pv(other_opex_usd_per_month=1.0) - fixed,
    }


def _lead_parts(inputs: CashflowInputs, option: RentOption) -> tuple[float, float]:
    """The lead window's rent (months 1..L of the pay-as-you-go option) as f · A · u + E."""
    i, lead = monthly_rate(inputs.discount_rate), inputs.lead_time_months

    def window(flows: Sequence[float]) -> float:
        return sum(flows[m] / (1.0 + i) ** m for m in range(1, lead + 1))

    extra = window(rent_flows(inputs=replace(inputs, nodes=0), option=option))
    at_one = window(rent_flows(inputs=replace(inputs, utilization=1.0), option=option))
    return at_one - extra, extra


def _rent_parts(inputs: CashflowInputs, option: RentOption) -> tuple[float, float, bool]:
    """(NPV per unit price factor at u = 1, NPV of the extras, pay-as-you-go?): rent NPV = f · A · (u if
    pay-as-you-go else 1) + E."""
    extra = _pv(rent_flows(inputs=replace(inputs, nodes=0), option=option), inputs.discount_rate)
    at_one = _pv(rent_flows(inputs=replace(inputs, utilization=1.0), option=option), inputs.discount_rate)
    return at_one - extra, extra, option.term_months <= 0


def monte_carlo(*, inputs: CashflowInputs, spread: float, samples: int = 1000, seed: int = 0) -> Uncertainty:
    """Draw each varied input from U[value · (1 − s), value · (1 + s)] (utilization clipped to (0, 1],
    every rent price moved by one common factor), recompute the NPV difference against the cheapest rent
    option of each draw, and report its 10th, 50th and 90th percentiles and the share of draws where owning
    costs less. With s = 0 every draw is the deterministic case, so P10 = P50 = P90 = the deterministic
    difference. Vectorised: both NPVs are linear in each varied input (see _own_parts, _rent_parts)."""
    if samples < 1:
        raise InputError("must be 1 or more", field="uncertainty.samples")
    rng = np.random.default_rng(seed)
    draws = rng.uniform(1.0 - spread, 1.0 + spread, size=(samples, len(VARIED)))
    capex_f, power_f, other_f, util_f, price_f = draws.T
    u = np.clip(inputs.utilization * util_f, 1e-6, 1.0)
    rents = [_rent_parts(inputs, o) for o in inputs.rent]
    rent_pv = np.array([price_f * a * (u if paygo else 1.0) + e for a, e, paygo in rents])
    best = rent_pv.min(axis=0)
    own = _own_parts(inputs)
    paygo = next((o for o in inputs.rent if o.term_months <= 0 and o.model != "spot"), inputs.rent[0])
    lead_a, lead_e = _lead_parts(inputs, paygo)
    lead = price_f * lead_a * (u if paygo.term_months <= 0 else 1.0) + lead_e
    power = own["power_u0"] + (own["power_u1"] - own["power_u0"]) * u
    own_pv = (
        own["fixed"]
        + capex_f * inputs.capex_usd * own["capex"]
        + power_f * inputs.power_full_usd_per_month * power
        + other_f * inputs.other_opex_usd_per_month * own["other"]
        + lead
    )
    out = best - own_pv
    p10, p50, p90 = (float(x) for x in np.percentile(out, [10, 50, 90]))
    return Uncertainty(samples, seed, spread, p10, p50, p90, float(np.mean(out > 0)), VARIED)
