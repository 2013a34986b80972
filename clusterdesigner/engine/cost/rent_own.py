"""Rent-vs-own arithmetic: capital recovery, owning cost, renting cost per pricing model, break-even.

Every money figure is a :class:`Line`: the amount and the arithmetic that produced it, written out with its
inputs so that finance can redo it by hand. Costs over a horizon are linear in utilization ``u``
(``fixed_usd + per_utilization_usd * u``), which is what makes the break-even a closed form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.offerings import COMMITMENT_YEARS
from clusterdesigner.engine.core.units import HOURS_PER_YEAR

MONTHS_PER_YEAR = 12.0


def usd(x: float) -> str:
    """$1,234,567 (cents shown only below $100, where they matter)."""
    return f"${x:,.2f}" if abs(x) < 100 else f"${x:,.0f}"


def num(x: float) -> str:
    """A number as a person writes it: 8, 0.6, 1.3, 17,520."""
    if float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:,.6g}" if abs(x) < 1000 else f"{x:,.1f}"


def age_text(years: float) -> str:
    """An age or a span as a person writes it: whole years as years ("3 years"), a whole number of months
    that is not whole years as months with the years beside them ("8 months (0.67 years)"), else years."""
    months = years * 12.0
    if not float(years).is_integer() and abs(months - round(months)) < 1e-6:
        return f"{num(round(months))} months ({num(round(years, 2))} years)"
    return f"{num(years)} years"


@dataclass(frozen=True)
class Line:
    """A money amount and the arithmetic behind it."""

    usd: float
    formula: str

    def as_dict(self) -> dict[str, object]:
        return {"usd": self.usd, "formula": self.formula}


@dataclass(frozen=True)
class LinearCost:
    """Cost over the horizon as ``fixed_usd + per_utilization_usd * u`` for utilization u in (0, 1]."""

    fixed_usd: float
    per_utilization_usd: float

    def at(self, utilization: float) -> float:
        return self.fixed_usd + self.per_utilization_usd * utilization


def capital_recovery_factor(*, rate: float, years: float, payments_per_year: int = 1) -> float:
    """CRF = r(1+r)^n / ((1+r)^n − 1): the level annual payment that repays 1 over n years at rate r.

    At r = 0 it is 1/n. Source: standard engineering economics (e.g. Newnan, Engineering Economic Analysis,
    capital recovery factor (A/P, i, n)). With m level payments a year at r/m (``payments_per_year``), the
    year's total m · i(1+i)^(mn) / ((1+i)^(mn) − 1), i = r/m: for m = 12 that is 12 × Excel's
    PMT(r/12, 12n, −1), the lender's monthly annuity (SemiAnalysis's AI Cloud TCO model amortises capex
    so, at its WACC). m = 1 is the yearly CRF above.
    """
    if years <= 0:
        raise InputError("must be more than zero", field="on_prem.depreciation_years")
    if rate < 0:
        raise InputError("must be zero or more", field="on_prem.discount_rate")
    if rate == 0:
        return 1.0 / years
    m = payments_per_year
    i = rate / m
    growth = float((1.0 + i) ** (m * years))
    return m * i * growth / (growth - 1.0)


def sinking_fund_factor(*, rate: float, years: float, payments_per_year: int = 1) -> float:
    """SFF = r / ((1+r)^n − 1): the level annual amount equivalent to 1 received at the end of year n (with m
    payments a year at r/m, m · i / ((1+i)^(mn) − 1), i = r/m)."""
    if rate == 0:
        return 1.0 / years
    m = payments_per_year
    i = rate / m
    return m * i / (float((1.0 + i) ** (m * years)) - 1.0)


def annualized_capex_usd(
    *, capex_usd: float, residual_fraction: float, rate: float, years: float, payments_per_year: int = 1
) -> float:
    """Equivalent annual cost of buying: capex · CRF(r, n) − residual · capex · SFF(r, n).

    The residual (resale) value ``residual_fraction · capex`` arrives at the end of the depreciation life,
    so it is credited through the sinking fund factor. Equivalently (capex − S/(1+r)^n) · CRF. With
    ``payments_per_year`` m, both factors are the m-payments-a-year ones (:func:`capital_recovery_factor`).
    """
    m = payments_per_year
    return capex_usd * capital_recovery_factor(rate=rate, years=years, payments_per_year=m) - (
        residual_fraction * capex_usd * sinking_fund_factor(rate=rate, years=years, payments_per_year=m)
    )


@dataclass(frozen=True)
class OnPremInputs:
    """Everything owning costs depend on. Power is IT power at full load (kW), before PUE."""

    nodes: int
    gpus_per_node: int
    server_usd: float
    network_capex_usd: float
    storage_capex_usd: float
    installation_fraction: float
    node_power_kw: float
    network_power_kw: float
    pue: float
    usd_per_kwh: float
    idle_power_fraction: float
    colo_usd_per_kw_month: float
    maintenance_fraction_per_year: float
    staff_fte: float | None  # None: from the fleet, staff_fte_per_mw
    staff_usd_per_fte_year: float
    depreciation_years: float
    discount_rate: float
    residual_fraction: float
    # Servers draw this fraction of their nameplate maximum at full training load (1.0 = nameplate).
    load_power_fraction: float = 1.0
    # Colocation quoted all-in (power included in $/kW-month): no separate energy bill.
    colo_all_in: bool = False
    # The kW colocation bills: "nameplate_kw" (the servers' rating plus the network), "contracted_kw" (the
    # contract's kW: colo_contracted_kw, else the IT draw at full load) or "drawn_kw" (the average IT draw at
    # the utilization). Nameplate stays the default here for callers that predate the choice; the cost
    # request's default is contracted_kw (COST_DEFAULTS).
    colo_basis: str = "nameplate_kw"
    colo_contracted_kw: float | None = None
    # Staff from the fleet when staff_fte is None: FTE = IT MW at full load × FTE per MW (fractional).
    staff_fte_per_mw: float = 0.0
    # Cost lines published owning breakdowns carry (all zero unless given).
    software_usd_per_gpu_year: float = 0.0
    insurance_fraction_per_year: float = 0.0
    property_tax_fraction_per_year: float = 0.0
    spares_fraction: float = 0.0  # a spares pool, as a fraction of the servers' capex
    facility_capex_usd_per_mw: float = 0.0  # per MW of IT power at full load
    facility_ops_usd_per_year: float = 0.0  # a "facility and ops" lump sum a year
    facility_capex_usd: float = 0.0  # a facility you build, as a lump sum (beside the per-MW figure)
    # Level payments a year that recover capital in the annualised view: 1 = capex × CRF(r, n); 12 = level
    # monthly payments at r/12 (Excel PMT(r/12, 12n, −capex) × 12).
    capital_payments_per_year: int = 1
    # The facility capex's own recovery life in the annualised view (a building outlasts its servers; it is
    # recovered over this life with no resale); None: with the rest of capex over the depreciation life.
    facility_life_years: float | None = None

    @property
    def load_kw(self) -> float:
        """IT kW drawn at full training load: servers × their load fraction + the network."""
        return self.nodes * self.node_power_kw * self.load_power_fraction + self.network_power_kw

    @property
    def fte(self) -> float:
        """Staff FTE: the given count, else the IT MW at full load × FTE per MW (no floor of one person)."""
        if self.staff_fte is not None:
            return self.staff_fte
        return self.load_kw / 1000.0 * self.staff_fte_per_mw


@dataclass(frozen=True)
class YearRow:
    year: int
    fraction: float  # of a full year this row covers (the last year of a fractional horizon is partial)
    cash_usd: float  # capex when paid (year 1) + opex
    accounting_usd: float  # straight-line depreciation (capex − residual) / life + opex
    annualized_usd: float  # CRF-annualised capex + opex: the figure compared with renting
    opex_usd: float


@dataclass(frozen=True)
class OnPremResult:
    capex_parts: Mapping[str, Line]
    capex_usd: float
    annual_parts: Mapping[str, Line]  # per year at the given utilization
    annual_usd: float
    total: Line  # over the horizon, annualised view
    linear: LinearCost  # total over the horizon as a function of utilization
    years: tuple[YearRow, ...]
    npv: Line
    usd_per_gpu_hour: Line
    it_power_kw: float


def on_prem_cost(*, inputs: OnPremInputs, utilization: float, horizon_years: float) -> OnPremResult:
    """Cost of owning the cluster for ``horizon_years`` at ``utilization``.

    capex = nodes · server + network + storage, plus installation = fraction · that hardware.
    Per year: capex · CRF(r, life) − residual · capex · SFF(r, life)  (capital recovery, see above)
      + energy = IT kW · (idle + (1 − idle) · u) · PUE · $/kWh · 8,760 h  (linear server power model,
        Fan, Weber & Barroso, "Power provisioning for a warehouse-sized computer", ISCA 2007, Sec. 4)
      + colocation = billed kW · $/kW-month · 12, billed kW by ``colo_basis``: the contract's kW (used
        or not), the average drawn IT kW, or nameplate
      + maintenance = fraction · capex,  + staff = FTEs · loaded $/FTE-year (FTEs given, or IT MW · FTE/MW)
      + software = GPUs · $/GPU-year, + insurance and property tax = fractions · capex, + facility and
        ops, a lump sum a year.
    capex also carries a spares pool (fraction · servers) and facility capex (IT MW at full load · $/MW).
    total = per-year cost · horizon. NPV discounts the cash flows (capex at t=0, opex at each year end) and
    credits the straight-line book value at the end of the horizon (or the residual if the life ends first).
    $/GPU-hour delivered = total / (GPUs · 8,760 · horizon · u).
    """
    i = inputs
    n = i.nodes
    capex_parts = _capex_parts(i)
    capex = sum(p.usd for p in capex_parts.values())
    annual_parts, energy_full, it_kw = _annual_parts(i, capex=capex, utilization=utilization)
    annual = sum(p.usd for p in annual_parts.values())
    total = Line(annual * horizon_years, f"{usd(annual)} per year × {num(horizon_years)} years")
    # Energy, and colocation billed on drawn kW, follow the draw idle + (1 − idle) · u; every other line is
    # fixed in u.
    colo_full = _colo_usd_per_year(i, draw=1.0)
    drawn = i.colo_basis == "drawn_kw"
    variable = energy_full + (colo_full if drawn else 0.0)
    fixed_per_year = (
        sum(p.usd for k, p in annual_parts.items() if k not in ("energy", "colocation"))
        + (0.0 if drawn else annual_parts["colocation"].usd)
        + variable * i.idle_power_fraction
    )
    slope_per_year = variable * (1.0 - i.idle_power_fraction)
    linear = LinearCost(fixed_per_year * horizon_years, slope_per_year * horizon_years)
    opex = sum(p.usd for k, p in annual_parts.items() if k != "capital")
    rows = _year_rows(i, capex=capex, opex=opex, annual=annual, horizon_years=horizon_years)
    gpu_hours = n * i.gpus_per_node * HOURS_PER_YEAR * horizon_years * utilization
    per_gpu_hour = Line(
        total.usd / gpu_hours,
        f"{usd(total.usd)} / ({num(n * i.gpus_per_node)} GPUs × {num(HOURS_PER_YEAR)} h ×"
        f" {num(horizon_years)} y × {num(utilization)} utilization)",
    )
    return OnPremResult(
        capex_parts=capex_parts,
        capex_usd=capex,
        annual_parts=annual_parts,
        annual_usd=annual,
        total=total,
        linear=linear,
        years=rows,
        npv=_npv(i, capex=capex, rows=rows, horizon_years=horizon_years),
        usd_per_gpu_hour=per_gpu_hour,
        it_power_kw=it_kw,
    )


def _capex_parts(i: OnPremInputs) -> dict[str, Line]:
    """Servers, network, storage and installation (a fraction of that hardware)."""
    n = i.nodes
    servers = Line(n * i.server_usd, f"{num(n)} nodes × {usd(i.server_usd)} per server")
    network = Line(i.network_capex_usd, "switches + cables + transceivers (see network)")
    storage = Line(i.storage_capex_usd, "storage capacity × $/TB (see storage)")
    hardware = servers.usd + network.usd + storage.usd
    install = Line(
        i.installation_fraction * hardware, f"{num(i.installation_fraction)} × {usd(hardware)} hardware"
    )
    parts = {"servers": servers, "network": network, "storage": storage, "installation": install}
    if i.spares_fraction:
        parts["spares"] = Line(
            i.spares_fraction * servers.usd,
            f"{num(i.spares_fraction)} × {usd(servers.usd)} servers (spares pool)",
        )
    if i.facility_capex_usd_per_mw or i.facility_capex_usd:
        mw = i.load_kw / 1000.0
        texts = [f"{num(mw)} MW IT at full load × {usd(i.facility_capex_usd_per_mw)}/MW"] * bool(
            i.facility_capex_usd_per_mw
        ) + [f"{usd(i.facility_capex_usd)} lump sum"] * bool(i.facility_capex_usd)
        parts["facility"] = Line(mw * i.facility_capex_usd_per_mw + i.facility_capex_usd, " + ".join(texts))
    return parts


def _annual_parts(
    i: OnPremInputs, *, capex: float, utilization: float
) -> tuple[dict[str, Line], float, float]:
    """A year's capital recovery, energy, colocation, maintenance and staff; returns (parts, the energy of a
    year at full load, the nameplate IT kW)."""
    energy, energy_full, it_kw = _energy(i, utilization=utilization)
    capital = _capital_line(i, capex=capex)
    draw = i.idle_power_fraction + (1.0 - i.idle_power_fraction) * utilization
    colo = Line(
        _colo_usd_per_year(i, draw=draw),
        f"{_colo_kw_text(i, draw=draw)} × {usd(i.colo_usd_per_kw_month)}/kW-month × 12"
        + (" (all-in: power included)" if i.colo_all_in else " (space and cooling; power billed apart)"),
    )
    maintenance = Line(
        i.maintenance_fraction_per_year * capex,
        f"{num(i.maintenance_fraction_per_year)} × {usd(capex)} capex",
    )
    staff_text = (
        f"{num(i.fte)} FTE"
        if i.staff_fte is not None
        else f"({num(i.load_kw / 1000.0)} MW IT × {num(i.staff_fte_per_mw)} FTE/MW = {num(i.fte)} FTE)"
    )
    staff = Line(i.fte * i.staff_usd_per_fte_year, f"{staff_text} × {usd(i.staff_usd_per_fte_year)}/FTE-year")
    parts = {
        "capital": capital,
        "energy": energy,
        "colocation": colo,
        "maintenance": maintenance,
        "staff": staff,
        **_finance_lines(i, capex=capex),
    }
    return parts, energy_full, it_kw


def _capital_line(i: OnPremInputs, *, capex: float) -> Line:
    """A year's capital recovery: capex × CRF(r, life) − residual × capex × SFF(r, life), the factors for
    ``capital_payments_per_year`` level payments a year; with ``facility_life_years``, the facility capex is
    recovered apart, over its own life and with no resale: + facility × CRF(r, facility life)."""
    m = i.capital_payments_per_year
    r, life = i.discount_rate, i.depreciation_years
    parts = _capex_parts(i)
    facility_life = i.facility_life_years if "facility" in parts else None
    facility = parts["facility"].usd if facility_life is not None else 0.0
    hardware = capex - facility
    crf = capital_recovery_factor(rate=r, years=life, payments_per_year=m)
    sff = sinking_fund_factor(rate=r, years=life, payments_per_year=m)
    paid = "" if m == 1 else f", {num(m)} payments a year"
    text = (
        f"{usd(hardware)} × CRF({num(r)}, {num(life)} y{paid}) {crf:.6f}"
        f" − {num(i.residual_fraction)} × {usd(hardware)} × SFF {sff:.6f}"
    )
    amount = annualized_capex_usd(
        capex_usd=hardware, residual_fraction=i.residual_fraction, rate=r, years=life, payments_per_year=m
    )
    if facility_life is not None:
        f_crf = capital_recovery_factor(rate=r, years=facility_life, payments_per_year=m)
        amount += facility * f_crf
        text += f" + {usd(facility)} facility × CRF({num(r)}, {num(facility_life)} y{paid}) {f_crf:.6f}"
    return Line(amount, text)


def _colo_kw(i: OnPremInputs, *, draw: float) -> float:
    """The kW colocation bills (see OnPremInputs.colo_basis) at the power draw ``draw`` of full load."""
    if i.colo_basis == "drawn_kw":
        return i.load_kw * draw
    if i.colo_basis == "contracted_kw":
        return i.load_kw if i.colo_contracted_kw is None else i.colo_contracted_kw
    return i.nodes * i.node_power_kw + i.network_power_kw


def _colo_usd_per_year(i: OnPremInputs, *, draw: float) -> float:
    return _colo_kw(i, draw=draw) * i.colo_usd_per_kw_month * MONTHS_PER_YEAR


def _colo_kw_text(i: OnPremInputs, *, draw: float) -> str:
    kw = num(_colo_kw(i, draw=draw))
    if i.colo_basis == "drawn_kw":
        return f"{kw} kW drawn ({num(i.load_kw)} kW at full load × {num(draw)} average draw)"
    if i.colo_basis == "contracted_kw":
        return f"{kw} kW contracted" + (" (IT draw at full load)" if i.colo_contracted_kw is None else "")
    return f"{kw} kW nameplate"


def _finance_lines(i: OnPremInputs, *, capex: float) -> dict[str, Line]:
    """The yearly lines finance models carry beyond power, space, maintenance and staff, each only when set:
    software licences per GPU-year, insurance and property tax as fractions of capex, a facility-and-ops
    lump sum."""
    gpus = i.nodes * i.gpus_per_node
    lines = {
        "software": Line(
            gpus * i.software_usd_per_gpu_year,
            f"{num(gpus)} GPUs × {usd(i.software_usd_per_gpu_year)}/GPU-year",
        ),
        "insurance": Line(
            i.insurance_fraction_per_year * capex,
            f"{num(i.insurance_fraction_per_year)} × {usd(capex)} capex",
        ),
        "property_tax": Line(
            i.property_tax_fraction_per_year * capex,
            f"{num(i.property_tax_fraction_per_year)} × {usd(capex)} capex",
        ),
        "facility_ops": Line(i.facility_ops_usd_per_year, "facility and ops, a lump sum a year"),
    }
    return {k: line for k, line in lines.items() if line.usd}


def _energy(i: OnPremInputs, *, utilization: float) -> tuple[Line, float, float]:
    """A year's energy at ``utilization`` (linear server power model), the energy of a year at full load and
    the nameplate IT kW (the servers' rating plus the network)."""
    n = i.nodes
    it_kw = n * i.node_power_kw + i.network_power_kw  # nameplate
    load_kw = i.load_kw  # drawn at full load
    draw = i.idle_power_fraction + (1.0 - i.idle_power_fraction) * utilization
    # A year at full load; nothing when colocation is quoted all-in (its $/kW-month includes the power).
    energy_full = 0.0 if i.colo_all_in else load_kw * i.pue * i.usd_per_kwh * HOURS_PER_YEAR
    load_text = (
        f"{num(it_kw)} kW IT"
        if i.load_power_fraction == 1.0
        else f"({num(n * i.node_power_kw)} kW servers × {num(i.load_power_fraction)} at load"
        f" + {num(i.network_power_kw)} kW network)"
    )
    energy = Line(
        energy_full * draw,
        "included in the all-in colocation price"
        if i.colo_all_in
        else f"{load_text} × ({num(i.idle_power_fraction)} + (1 − {num(i.idle_power_fraction)})"
        f" × {num(utilization)} utilization) × PUE {num(i.pue)} × {usd(i.usd_per_kwh)}/kWh"
        f" × {num(HOURS_PER_YEAR)} h",
    )
    return energy, energy_full, it_kw


def _year_rows(
    i: OnPremInputs, *, capex: float, opex: float, annual: float, horizon_years: float
) -> tuple[YearRow, ...]:
    """One row per year of the horizon (the last one partial): cash (capex in year 1), accounting
    (straight-line depreciation while the life lasts) and annualised cost."""
    straight_line = capex * (1.0 - i.residual_fraction) / i.depreciation_years
    rows: list[YearRow] = []
    year = 1
    remaining = horizon_years
    while remaining > 1e-9:
        frac = min(1.0, remaining)
        dep_years = max(0.0, min(frac, i.depreciation_years - (year - 1)))
        rows.append(
            YearRow(
                year=year,
                fraction=frac,
                cash_usd=(capex if year == 1 else 0.0) + opex * frac,
                accounting_usd=straight_line * dep_years + opex * frac,
                annualized_usd=annual * frac,
                opex_usd=opex * frac,
            )
        )
        remaining -= frac
        year += 1
    return tuple(rows)


def _npv(i: OnPremInputs, *, capex: float, rows: tuple[YearRow, ...], horizon_years: float) -> Line:
    """Capex at t=0 plus each year's opex discounted at its end, less the book value at the horizon
    (straight-line, or the residual once the life has ended) discounted."""
    r = i.discount_rate
    pv_opex = 0.0
    elapsed = 0.0
    for row in rows:
        elapsed += row.fraction
        pv_opex += row.opex_usd / (1.0 + r) ** elapsed
    used = min(horizon_years, i.depreciation_years)
    book = capex - (capex - i.residual_fraction * capex) * used / i.depreciation_years
    pv_book = book / (1.0 + r) ** used
    return Line(
        capex + pv_opex - pv_book,
        f"{usd(capex)} capex + {usd(pv_opex)} opex discounted at {num(r)}"
        f" − {usd(book)} book value after {num(used)} y discounted ({usd(pv_book)})",
    )


@dataclass(frozen=True)
class CloudResult:
    pricing_model: str
    usd_per_node_hour: float
    parts: Mapping[str, Line]
    total: Line
    linear: LinearCost
    usd_per_gpu_hour: Line
    billed_node_hours: float


def committed_years(*, pricing_model: str, horizon_years: float) -> float | None:
    """Years a reservation bills over a horizon: whole terms (a 1-year term over 1.5 years bills 2)."""
    term = COMMITMENT_YEARS.get(pricing_model)
    if term is None:
        return None
    return math.ceil(horizon_years / term - 1e-9) * term


def reservation_break_even(
    *, reserved_usd_per_hour: float, on_demand_usd_per_hour: float, billed_years: float, horizon_years: float
) -> float:
    """Utilization at which a reservation costs what on-demand costs over the horizon.

    A reservation bills every hour of its whole terms (``billed_years`` ≥ horizon); on-demand bills the
    hours used. reserved · 8,760 · billed = on-demand · 8,760 · horizon · u, so
    u* = (billed ÷ horizon) · (reserved ÷ on-demand). A 3-year term over 2 years at a price ratio 0.45 breaks
    even at 1.5 × 0.45 = 67.5 %; a 1-year term over 1.5 years (2 terms billed) at 0.65 at 2/1.5 × 0.65 =
    86.7 %. Managed overhead, storage and egress
    are the same for both and cancel. Above 1 the reservation never pays.
    """
    return billed_years / horizon_years * reserved_usd_per_hour / on_demand_usd_per_hour


def cloud_cost(
    *,
    pricing_model: str,
    usd_per_node_hour: float,
    nodes: int,
    gpus_per_node: int,
    utilization: float,
    horizon_years: float,
    managed_overhead_fraction: float,
    storage_usd: float,
    egress_usd: float,
    spot_hours_factor: float = 1.0,
) -> CloudResult:
    """Cost of renting ``nodes`` instances for the horizon under one pricing model.

    on_demand: nodes · $/h · 8,760 · horizon · u                  (pay the hours used)
    reserved_*: nodes · $/h · 8,760 · whole terms covering horizon (pay every hour of the term)
    spot:      nodes · $/h · 8,760 · horizon · u · spot_hours_factor  (hours used ÷ spot goodput relative
               to on-demand, from the failures model)
    Compute is raised by the managed-service overhead fraction; storage and egress are added as given.
    """
    hours = HOURS_PER_YEAR * horizon_years
    compute, fixed, slope, billed = _compute_cost(
        pricing_model=pricing_model,
        usd_per_node_hour=usd_per_node_hour,
        nodes=nodes,
        utilization=utilization,
        horizon_years=horizon_years,
        managed_overhead_fraction=managed_overhead_fraction,
        spot_hours_factor=spot_hours_factor,
    )
    parts = {
        "compute": compute,
        "storage": Line(storage_usd, "see storage"),
        "egress": Line(egress_usd, "egress TB × 1,000 × $/GB"),
    }
    total_usd = compute.usd + storage_usd + egress_usd
    total = Line(
        total_usd, f"{usd(compute.usd)} compute + {usd(storage_usd)} storage + {usd(egress_usd)} egress"
    )
    gpu_hours = nodes * gpus_per_node * hours * utilization
    per_gpu = Line(total_usd / gpu_hours, f"{usd(total_usd)} / {num(gpu_hours)} GPU-hours used")
    return CloudResult(
        pricing_model=pricing_model,
        usd_per_node_hour=usd_per_node_hour,
        parts=parts,
        total=total,
        linear=LinearCost(fixed + storage_usd + egress_usd, slope),
        usd_per_gpu_hour=per_gpu,
        billed_node_hours=billed,
    )


def _compute_cost(
    *,
    pricing_model: str,
    usd_per_node_hour: float,
    nodes: int,
    utilization: float,
    horizon_years: float,
    managed_overhead_fraction: float,
    spot_hours_factor: float,
) -> tuple[Line, float, float, float]:
    """Renting's compute over the horizon (see :func:`cloud_cost`): (its line, the part fixed in utilization,
    USD per unit of utilization, node-hours billed)."""
    hours = HOURS_PER_YEAR * horizon_years
    over = 1.0 + managed_overhead_fraction
    rate = f"{num(nodes)} nodes × {usd(usd_per_node_hour)}/node-h"
    term_years = committed_years(pricing_model=pricing_model, horizon_years=horizon_years)
    if term_years is not None:
        billed = nodes * HOURS_PER_YEAR * term_years
        fixed = billed * usd_per_node_hour * over
        compute = Line(
            fixed,
            f"{rate} × {num(HOURS_PER_YEAR)} h × {num(term_years)} committed years"
            f" × (1 + {num(managed_overhead_fraction)} overhead)",
        )
        return compute, fixed, 0.0, billed
    factor = spot_hours_factor if pricing_model == "spot" else 1.0
    billed = nodes * hours * utilization * factor
    slope = nodes * hours * factor * usd_per_node_hour * over
    spot_text = f" ÷ {num(1.0 / factor)} spot goodput ratio" if factor != 1.0 else ""
    compute = Line(
        slope * utilization,
        f"{rate} × {num(hours)} h × {num(utilization)} utilization{spot_text}"
        f" × (1 + {num(managed_overhead_fraction)} overhead)",
    )
    return compute, 0.0, slope, billed


def break_even_utilization(*, own: LinearCost, rent: LinearCost) -> float | None:
    """Utilization u* where owning costs the same as renting: A + B·u = C + c·u ⇒ u* = (A − C) / (c − B).

    A, B: owning's fixed cost and cost per unit utilization over the horizon; C, c: renting's. None when
    the two lines are parallel (never equal, or always). The value may fall outside (0, 1]: then one option
    is cheaper at every utilization.
    """
    slope = rent.per_utilization_usd - own.per_utilization_usd
    if abs(slope) < 1e-9 * max(1.0, abs(rent.per_utilization_usd), abs(own.per_utilization_usd)):
        return None
    return (own.fixed_usd - rent.fixed_usd) / slope


def break_even_meaning(*, own: LinearCost, rent: LinearCost, u_star: float | None) -> str:
    """Which option wins where, in words."""
    own_low, rent_low = own.at(0.0), rent.at(0.0)
    own_high, rent_high = own.at(1.0), rent.at(1.0)
    if u_star is None or u_star <= 0 or u_star > 1:
        if own_high <= rent_high and own_low <= rent_low:
            return "owning is cheaper at every utilization in (0, 1]"
        if own_high >= rent_high and own_low >= rent_low:
            return "renting is cheaper at every utilization in (0, 1]"
    if rent.per_utilization_usd > own.per_utilization_usd:
        return f"owning is cheaper above {u_star:.1%} utilization" if u_star is not None else ""
    return f"owning is cheaper below {u_star:.1%} utilization" if u_star is not None else ""
