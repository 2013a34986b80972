"""Money over time: monthly cash flows of owning and of each way of renting, their NPV, payback and IRR.

Conventions (docs/cost-engine.md, "Cash flows"):

- Months m = 1..N of the horizon; a monthly bill is paid at the end of its month and discounted by
  (1 + i)^m with the monthly rate i = (1 + r)^(1/12) − 1 for the yearly rate r. Payments due at the start of
  a month (capex at delivery, upfront reservation fees) sit at the end of the month before.
- Owning: capex at delivery (the end of the lead time, month L), opex from month L + 1, resale at the end of
  month N. During the lead time a bridging rent option is paid instead (``bridge_option``: the cheapest
  chosen on-demand option, whatever the options' order). Financing: cash (capex at delivery), loan (Excel
  PMT monthly from month L + 1, the balance left at the horizon repaid then) or an operating lease (a
  monthly payment instead of capex; nothing to resell).
- Renting: on-demand and spot pay the hours used, nodes × $/h × 730 h × u (× spot hours factor); a
  reservation bills every hour of each whole term, monthly (no upfront), half upfront (partial) or all at the
  start of the term (all upfront). Prices move by the yearly change: the price in month m is
  p · (1 + g)^((m − 1)/12); a reservation keeps the price of the month its term starts.
- Resale at the horizon is the market value of the hardware at its age (``resale_fraction`` of capex, read
  from the catalog's residual-value series by the caller); book value drives depreciation and tax only.
- Tax (off at rate 0): every cost is after tax. Rent bills, owning's opex, lease payments and loan interest
  are deductible in the month paid (a bill of B costs B · (1 − t)); capex is depreciated by the chosen
  schedule (MACRS 5-year, IRS Publication 946 Table A-1, half-year convention, or straight-line over
  ``depreciation_years``), one tax year from delivery each, its shield t · share · capex at the year's end; a
  tax year cut by the horizon takes its share pro rata by months; at the horizon the sale is taxed on the
  gain over book value, t · (resale − book), a loss credited alike (recapture). At t = 0 every flow is the
  pre-tax one, bit for bit.
- A facility with its own life (``facility_capex_usd`` with ``facility_life_years``, the part of capex that
  is the building): paid at delivery with the rest of capex (unchanged), but depreciated for tax apart,
  straight-line over its own life whatever the servers' schedule (a shield of t · F / (life × 12) a month,
  credited at each tax year's end, a year the horizon cuts pro rata); at the horizon it is sold with the
  cluster at the market fraction the pre-tax flows already credit, and the gain or loss is taxed against its
  own book value F · (1 − months owned / (12 · life)). Without its own life the facility is depreciated with
  the servers (as the annualised figures then recover it).
- The difference is rent − own: positive when owning costs less.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.json_object import JsonObject
from clusterdesigner.engine.core.roots import root

HOURS_PER_MONTH = 8760.0 / 12.0  # 730: the 365-day year the rest of the cost engine uses
# IRS Publication 946, Table A-1: 5-year property, half-year convention (200 % declining balance).
MACRS_5_YEAR = (0.20, 0.32, 0.192, 0.1152, 0.1152, 0.0576)
FINANCING = ("cash", "loan", "lease")
DEPRECIATION = ("macrs_5", "straight_line")
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


def wacc(*, debt_share: float, cost_of_debt: float, cost_of_equity: float, tax_rate: float) -> float:
    """Weighted average cost of capital, r = (1 − D/V) · r_e + D/V · r_d · (1 − t): the interest tax shield
    taken in the rate (Brealey, Myers & Allen, Principles of Corporate Finance, ch. 19, after-tax WACC)."""
    return (1.0 - debt_share) * cost_of_equity + debt_share * cost_of_debt * (1.0 - tax_rate)


def monthly_rate(yearly: float) -> float:
    """i = (1 + r)^(1/12) − 1: the monthly rate that compounds to the yearly rate r."""
    return float((1.0 + yearly) ** (1.0 / 12.0) - 1.0)


def discount_factors(*, yearly_rate: float, periods: int) -> np.ndarray:
    """1 / (1 + i)^k for k = 0 … ``periods``, i = monthly_rate(r): the factor of a payment at index k of the
    monthly flows (index 0 the start, index m the end of month m), as _npv discounts them. At r = 0 every
    factor is exactly 1.0, so a sum weighted by them is the undiscounted sum."""
    i = monthly_rate(yearly_rate)
    return np.asarray(1.0 / (1.0 + i) ** np.arange(periods + 1, dtype=float), dtype=np.float64)


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
    tax_rate: float = 0.0  # tax on both sides (see the module docstring), off at 0
    depreciation_schedule: str = "macrs_5"  # macrs_5 | straight_line (tax depreciation only)
    depreciation_years: float = 5.0  # the straight-line tax life
    facility_capex_usd: float = 0.0  # the part of capex_usd that is a facility with its own life (tax only)
    facility_life_years: float | None = None  # its straight-line tax life; None: with the servers

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
class CommitmentTerm(JsonObject):
    """One term of a commitment: its first and last month and the dollars it commits."""

    start_month: int
    end_month: int
    usd: float


@dataclass(frozen=True)
class Commitment(JsonObject):
    """What a reservation or savings plan commits to: each term's dollars (the price of the month it starts,
    every hour of the term on every node, managed overhead included) and the dollars falling due by month,
    index 0 the start, through the end of the last term, which may pass the horizon. Contract dollars, before
    tax; storage and egress are not committed."""

    model: str
    term_months: int
    upfront: str
    terms: tuple[CommitmentTerm, ...]
    monthly_usd: tuple[
        float, ...
    ]  # committed dollars due at the end of each month (upfront: the month before)
    total_usd: float
    term_end_month: int  # the month the last term ends
    beyond_horizon_usd: float  # committed dollars due after the horizon's last month
    label: str = ""  # the option's name for people (the cost engine's MODEL_LABELS)


def commitment_schedule(*, inputs: CashflowInputs, option: RentOption) -> Commitment | None:
    """A term option's commitment (None for pay-as-you-go): terms start at months 1, 1 + T, ... while they
    start within the horizon N; term k's dollars nodes × 730 h × p(start_k) × (1 + overhead) × T, billed as
    rent_flows bills them (upfront share at the end of month start − 1, the rest monthly), but each month in
    its own place, also past N (rent_flows puts those at N: owed all the same)."""
    if option.term_months <= 0:
        return None
    n, g, term = inputs.months, inputs.cloud_price_change_per_year, option.term_months
    over = 1.0 + inputs.managed_overhead_fraction
    upfront = {"no_upfront": 0.0, "partial_upfront": 0.5, "all_upfront": 1.0}[option.upfront]
    starts = list(range(1, n + 1, term))
    end = starts[-1] + term - 1
    monthly = [0.0] * (end + 1)
    totals = []
    for start in starts:
        bill = (
            inputs.nodes
            * HOURS_PER_MONTH
            * option.usd_per_node_hour
            * float((1.0 + g) ** ((start - 1) / 12.0))
        )
        bill *= over
        totals.append(bill * term)
        monthly[start - 1] += upfront * bill * term
        for k in range(term):
            monthly[start + k] += (1.0 - upfront) * bill
    return Commitment(
        model=option.model,
        term_months=term,
        upfront=option.upfront,
        terms=tuple(CommitmentTerm(a, a + term - 1, usd) for a, usd in zip(starts, totals, strict=True)),
        monthly_usd=tuple(monthly),
        total_usd=float(sum(totals)),
        term_end_month=end,
        beyond_horizon_usd=float(sum(monthly[n + 1 :])),
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
    commitments: tuple[Commitment, ...] = ()

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
            "commitments": [c.to_json() for c in self.commitments],
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
            commitments=tuple(Commitment.from_json(c) for c in data.get("commitments") or ()),
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
        return _after_tax(out, inputs.tax_rate)
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
    return _after_tax(out, inputs.tax_rate)


def _after_tax(flows: list[float], tax_rate: float) -> list[float]:
    """A deductible bill B costs B · (1 − t) in the month it is paid; at t = 0 the flows themselves."""
    if tax_rate <= 0:
        return flows
    return [x * (1.0 - tax_rate) for x in flows]


def depreciation_shares(*, schedule: str, life_years: float) -> tuple[float, ...]:
    """Tax depreciation of each tax year as a fraction of capex: MACRS 5-year (IRS Publication 946, Table
    A-1, half-year convention: 20, 32, 19.2, 11.52, 11.52, 5.76 %), or straight-line to zero over
    ``life_years`` (1/life a year, the last year the remainder)."""
    if schedule == "macrs_5":
        return MACRS_5_YEAR
    if schedule != "straight_line":
        raise InputError(f"must be one of {', '.join(DEPRECIATION)}", field="cashflow.depreciation_schedule")
    if life_years <= 0:
        raise InputError("must be more than zero", field="on_prem.depreciation_years")
    whole = int(math.floor(life_years))
    shares = [1.0 / life_years] * whole
    rest = 1.0 - whole / life_years
    if rest > 1e-12:
        shares.append(rest)
    return tuple(shares)


def _facility_usd(inputs: CashflowInputs) -> float:
    """The part of capex depreciated over the facility's own life (0 without one)."""
    if inputs.facility_life_years is None or inputs.facility_capex_usd <= 0:
        return 0.0
    if inputs.facility_life_years <= 0:
        raise InputError("must be more than zero", field="on_prem.facility_life_years")
    if inputs.facility_capex_usd > inputs.capex_usd:
        raise InputError(
            f"the facility's {inputs.facility_capex_usd:,.0f} USD is more than the capex of"
            f" {inputs.capex_usd:,.0f} USD it is part of",
            field="on_prem.facility_capex_usd",
        )
    return inputs.facility_capex_usd


def _depreciate(inputs: CashflowInputs, out: list[float], *, usd: float, shares: Sequence[float]) -> float:
    """Year y's shield t · share_y · usd at month L + 12y, a year the horizon cuts pro rata at month N, in
    place; returns the book value left at the horizon, usd · (1 − Σ shares taken)."""
    n, lead, t = inputs.months, inputs.lead_time_months, inputs.tax_rate
    taken = 0.0
    for year, share in enumerate(shares, start=1):
        first = lead + 12 * (year - 1)  # the month before the tax year starts
        if first >= n:
            break
        part = share * min(1.0, (n - first) / 12.0)
        out[min(lead + 12 * year, n)] -= t * part * usd
        taken += part
    return usd * max(0.0, 1.0 - taken)


def _tax_on_capex(inputs: CashflowInputs, out: list[float]) -> None:
    """Depreciation shields and the tax on the sale at the horizon (module docstring), in place: the servers
    (capex less a facility with its own life) by the chosen schedule, the facility straight-line over its own
    life; at N the tax t · (resale − book) on the sale of both, book = each part · (1 − Σ its shares
    taken)."""
    t, capex = inputs.tax_rate, inputs.capex_usd
    facility = _facility_usd(inputs)
    servers = depreciation_shares(schedule=inputs.depreciation_schedule, life_years=inputs.depreciation_years)
    book = _depreciate(inputs, out, usd=capex - facility, shares=servers)
    if facility and inputs.facility_life_years is not None:
        own_life = depreciation_shares(schedule="straight_line", life_years=inputs.facility_life_years)
        book += _depreciate(inputs, out, usd=facility, shares=own_life)
    out[inputs.months] += t * (inputs.resale_fraction * capex - book)


def own_flows(*, inputs: CashflowInputs, lead_rent: Sequence[float]) -> tuple[list[float], float | None]:
    """Monthly cost of owning: lead-time rent, capex or its financing, opex, market resale, and with a tax
    rate the deductions, depreciation shields and the tax on the sale (module docstring)."""
    n, lead, t = inputs.months, inputs.lead_time_months, inputs.tax_rate
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
            if t > 0:
                out[m] -= t * balance * i  # the month's interest is deductible, the principal is not
            balance = balance * (1.0 + i) - payment
    elif inputs.financing == "lease":
        if inputs.lease_usd_per_month is None:
            raise InputError(
                "an operating lease needs its monthly payment", field="cashflow.lease_usd_per_month"
            )
        for m in range(lead + 1, n + 1):
            out[m] += inputs.lease_usd_per_month * (1.0 - t)
    else:
        raise InputError(f"must be one of {', '.join(FINANCING)}", field="cashflow.financing")
    e = inputs.power_escalation_per_year
    keep = 1.0 - t if t > 0 else 1.0  # multiplying by 1.0 is exact: at t = 0 the pre-tax sums, bit for bit
    for m in range(lead + 1, n + 1):
        out[m] += inputs.other_opex_usd_per_month * keep
        out[m] += power_usd_per_month(inputs) * float((1.0 + e) ** ((m - 1) / 12.0)) * keep
    if inputs.financing != "lease":
        out[n] -= inputs.resale_fraction * capex
        if t > 0:
            _tax_on_capex(inputs, out)
    return out, payment


def irr_per_year(flows: Sequence[float]) -> float | None:
    """Yearly IRR of monthly flows, (1 + i)^12 − 1 with i the monthly rate where Σ_m x_m / (1 + i)^m = 0
    (bisection on i in (−0.99, 10), as Excel's IRR solves the same equation); None without a sign change or
    a root."""
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


def bridge_option(rent: Sequence[RentOption]) -> RentOption:
    """The rent option that bridges owning's procurement lead time (months 1..L), chosen by a rule in which
    the order of the options plays no part: the chosen on-demand (pay-as-you-go, not spot) option of lowest
    $/node-hour; without one, spot; without either, the reservation of lowest $/node-hour billed monthly
    (no upfront), so that each bridged month pays one month's bill and no upfront fee falls outside the
    window. Ties go to the pricing model's name. Hardware on order is bridged by capacity that can be had
    at once and given back on delivery, hence on-demand first (docs/cost-engine.md, "Lead time")."""
    if not rent:
        raise InputError("no rent option to compare owning with", field="cloud.usd_per_node_hour")
    for pool in (
        [o for o in rent if o.term_months <= 0 and o.model != "spot"],
        [o for o in rent if o.term_months <= 0],
    ):
        if pool:
            return min(pool, key=lambda o: (o.usd_per_node_hour, o.model))
    cheapest = min(rent, key=lambda o: (o.usd_per_node_hour, o.model))
    return replace(cheapest, upfront="no_upfront")


def cash_flows(*, inputs: CashflowInputs, break_even: bool = True, irr: bool = True) -> CashflowResult:
    """Owning and every rent option month by month, NPV of each at the discount rate, and owning against the
    rent option of lowest NPV: the NPV difference (rent − own), the payback month (cumulative undiscounted
    saving back to ≥ 0) and the IRR of the saving flows. Break-even utilization per rent option (pay-as-you-go
    and term alike): the u in (0, 1] where both NPVs are equal (break_even_utilization, the one solver), None
    where one side is cheaper throughout."""
    if not inputs.rent:
        raise InputError("no rent option to compare owning with", field="cloud.usd_per_node_hour")
    rate = inputs.discount_rate
    rents = {o.model: _flows(o.model, rent_flows(inputs=inputs, option=o), rate) for o in inputs.rent}
    reference = min(rents, key=lambda k: rents[k].npv_usd)
    lead_rent = rent_flows(inputs=inputs, option=bridge_option(inputs.rent))
    own_monthly, payment = own_flows(inputs=inputs, lead_rent=lead_rent)
    own = _flows("own", own_monthly, rate)
    saving = [r - o for r, o in zip(rents[reference].monthly_usd, own_monthly, strict=True)]
    return CashflowResult(
        own=own,
        rent=tuple(rents.values()),
        reference=reference,
        npv_difference_usd=rents[reference].npv_usd - own.npv_usd,
        payback_month=_payback(saving),
        irr_per_year=irr_per_year(saving) if irr else None,  # irr=False: NPVs only (root finding, npv_basis)
        loan_payment_usd=payment,
        break_even_utilization={
            o.model: break_even_utilization(inputs=inputs, option=o.model) for o in inputs.rent
        }
        if break_even
        else {},
        commitments=tuple(
            c for c in (commitment_schedule(inputs=inputs, option=o) for o in inputs.rent) if c is not None
        ),
    )


def power_usd_per_month(inputs: CashflowInputs) -> float:
    """Energy bill of a month at the inputs' utilization: full · (idle + (1 − idle) · u) (linear power
    model, Fan, Weber & Barroso, ISCA 2007)."""
    idle = inputs.idle_power_fraction
    return inputs.power_full_usd_per_month * (idle + (1.0 - idle) * inputs.utilization)


# The lower end of the utilization bracket the break-even is solved in: (0, 1], 0 excluded (no run at all).
BREAK_EVEN_LOW = 1e-9


def npv_gap(*, inputs: CashflowInputs, option: str, utilization: float | None = None) -> float:
    """NPV(``option``) − NPV(own) of the monthly cash flows (> 0: owning costs less), at ``utilization`` when
    given, else the inputs' own; the same NPVs cash_flows reports (owning's lead-time rent included)."""
    at = inputs if utilization is None else replace(inputs, utilization=utilization)
    chosen = next((o for o in at.rent if o.model == option), None)
    if chosen is None:
        raise InputError(f"no rent option {option!r} to compare owning with", field="cloud.pricing_models")
    rent = _npv(rent_flows(inputs=at, option=chosen), at.discount_rate)
    own, _ = own_flows(inputs=at, lead_rent=rent_flows(inputs=at, option=bridge_option(at.rent)))
    return rent - _npv(own, at.discount_rate)


def npvs_at(*, inputs: CashflowInputs, utilization: float) -> tuple[float, dict[str, float]]:
    """(NPV of owning, NPV of each rent option by model) at ``utilization``, everything else as given: the
    figures cash_flows reports there (the cost-against-utilization curves on the verdict's basis)."""
    at = replace(inputs, utilization=utilization)
    rate = at.discount_rate
    rents = {o.model: _npv(rent_flows(inputs=at, option=o), rate) for o in at.rent}
    own, _ = own_flows(inputs=at, lead_rent=rent_flows(inputs=at, option=bridge_option(at.rent)))
    return _npv(own, rate), rents


def break_even_utilization(*, inputs: CashflowInputs, option: str) -> float | None:
    """The utilization u in (0, 1] at which NPV(own) = NPV(``option``), solved on the monthly cash flows (the
    one solver: engine/core/roots.py); None when one side is cheaper at every utilization in (0, 1] — never a
    crossing outside it, which no cluster can run at.

    Both NPVs are affine in u (energy = full · (idle + (1 − idle) · u); a pay-as-you-go bill = nodes · 730 h ·
    u · price; a reservation's bill does not depend on u), so the root is unique when it exists."""
    return root(
        gap=lambda u: npv_gap(inputs=inputs, option=option, utilization=u), low=BREAK_EVEN_LOW, high=1.0
    )


def break_even_meaning(*, inputs: CashflowInputs, option: str, utilization: float | None) -> str:
    """Which side is cheaper where, in words, on the NPV of the monthly cash flows: "owning is cheaper above
    26.9% utilization", or "owning is cheaper at every utilization in (0, 1]" when there is no crossing."""
    low = npv_gap(inputs=inputs, option=option, utilization=BREAK_EVEN_LOW)
    high = npv_gap(inputs=inputs, option=option, utilization=1.0)
    if utilization is None:
        own_wins = low + high > 0  # the same sign at both ends
        return f"{'owning' if own_wins else 'renting'} is cheaper at every utilization in (0, 1]"
    return f"owning is cheaper {'above' if high > low else 'below'} {utilization:.1%} utilization"


@dataclass(frozen=True)
class Uncertainty:
    """Seeded Monte Carlo of the NPV difference against one rent option chosen before the draws: P10/P50/P90,
    the probability that owning wins, and each figure's standard error by batch means."""

    samples: int
    seed: int
    spread: float
    p10_usd: float
    p50_usd: float
    p90_usd: float
    p_own_wins: float
    varied: tuple[str, ...]
    option: str = ""  # the rent option compared in every draw (the deterministic verdict's)
    p10_se_usd: float | None = None
    p50_se_usd: float | None = None
    p90_se_usd: float | None = None
    p_own_wins_se: float | None = None
    batches: int = 0

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["varied"] = list(self.varied)
        return out


# Draws by default: enough that P10/P50/P90 move by well under 1 % of the P10–P90 spread from one seed to
# another (standard error of a percentile ≈ 1.7 σ/√n for the P10 of a normal; at 100,000 draws ≈ 0.005 σ,
# 0.2 % of the spread of 2.56 σ), and some 30 ms vectorised (bench/cashflow_monte_carlo.py).
DEFAULT_SAMPLES = 100_000
BATCHES = 20  # batch means: the standard error of a figure is the spread of its value over 20 equal batches


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
    # A facility with its own life is a share of capex, so a draw of capex moves it in proportion.
    facility_share = inputs.facility_capex_usd / inputs.capex_usd if inputs.capex_usd else 0.0
    base = replace(
        inputs,
        capex_usd=0.0,
        facility_capex_usd=0.0,
        power_full_usd_per_month=0.0,
        other_opex_usd_per_month=0.0,
    )

    def pv(**changes: Any) -> float:
        flows, _ = own_flows(inputs=replace(base, **changes), lead_rent=zero)
        return _pv(flows, r)

    fixed = pv()
    return {
        "fixed": fixed,
        "capex": pv(capex_usd=1.0, facility_capex_usd=facility_share) - fixed,
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


def _percentiles(ordered: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Percentiles of each row of ``ordered`` (sorted along its last axis) by linear interpolation between
    the closest ranks, h = (n − 1) · q/100: numpy's default ("linear", Hyndman & Fan type 7)."""
    n = ordered.shape[-1]
    pos = (n - 1) * np.asarray(qs, dtype=float) / 100.0
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    return np.asarray(ordered[..., lo] + (ordered[..., hi] - ordered[..., lo]) * frac)


def _batch_se(per_batch: np.ndarray) -> np.ndarray | None:
    """Standard error of a figure by batch means: the standard deviation (ddof 1) of its value over the B
    equal batches ÷ √B (Law & Kelton, Simulation Modeling and Analysis, batch means); ``per_batch`` holds one
    row per batch. None with fewer than 2 batches."""
    batches = per_batch.shape[0]
    if batches < 2:
        return None
    return np.asarray(np.std(per_batch, axis=0, ddof=1) / math.sqrt(batches))


def monte_carlo(
    *,
    inputs: CashflowInputs,
    spread: float,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    option: str | None = None,
) -> Uncertainty:
    """Decide first, then draw: the rent option is fixed before any draw (``option``, else the one of lowest
    deterministic NPV, which the verdict compares owning with), as a reservation is signed before the
    utilization is known. Each varied input is drawn from U[value · (1 − s), value · (1 + s)] (utilization
    clipped to (0, 1], every rent price moved by one common factor); the NPV difference rent − own of each
    draw; its 10th, 50th and 90th percentiles and the share of draws where owning costs less, each with its
    standard error by batch means (BATCHES batches). With s = 0 every draw is the deterministic case.
    Vectorised: both NPVs are linear in each varied input (see _own_parts, _rent_parts)."""
    if samples < 1:
        raise InputError("must be 1 or more", field="uncertainty.samples")
    if not inputs.rent:
        raise InputError("no rent option to compare owning with", field="cloud.usd_per_node_hour")
    by_model = {o.model: o for o in inputs.rent}
    if option is None:
        rate = inputs.discount_rate
        option = min(by_model, key=lambda k: _npv(rent_flows(inputs=inputs, option=by_model[k]), rate))
    if option not in by_model:
        raise InputError(f"no rent option {option!r} to compare owning with", field="uncertainty.option")
    rng = np.random.default_rng(seed)
    draws = rng.uniform(1.0 - spread, 1.0 + spread, size=(samples, len(VARIED)))
    capex_f, power_f, other_f, util_f, price_f = draws.T
    u = np.clip(inputs.utilization * util_f, 1e-6, 1.0)
    a, e, paygo_rent = _rent_parts(inputs, by_model[option])
    rent_pv = price_f * a * (u if paygo_rent else 1.0) + e
    own = _own_parts(inputs)
    paygo = bridge_option(inputs.rent)
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
    out = rent_pv - own_pv
    qs = (10.0, 50.0, 90.0)
    p10, p50, p90 = (float(x) for x in _percentiles(np.sort(out), qs))
    size = samples // BATCHES
    se: list[float | None] = [None, None, None]
    wins_se = None
    if size >= 2:
        batched = out[: size * BATCHES].reshape(BATCHES, size)
        by_batch = _batch_se(_percentiles(np.sort(batched, axis=1), qs))
        wins = _batch_se(np.mean(batched > 0, axis=1)[:, None])
        if by_batch is not None and wins is not None:
            se = [float(x) for x in by_batch]
            wins_se = float(wins[0])
    return Uncertainty(
        samples,
        seed,
        spread,
        p10,
        p50,
        p90,
        float(np.mean(out > 0)),
        VARIED,
        option=option,
        p10_se_usd=se[0],
        p50_se_usd=se[1],
        p90_se_usd=se[2],
        p_own_wins_se=wins_se,
        batches=BATCHES if wins_se is not None else 0,
    )
