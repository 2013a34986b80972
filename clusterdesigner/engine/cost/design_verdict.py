"""One rent-or-own verdict for a whole design, over every cloud offering and only the pricing models ticked.

The cost engine answers per offering (cost.tco, ``verdict``); a design compares owning with every option the
user chose, across offerings. This module composes those answers into one (issue #31 items 1, 2, 5):

- **The options**: each offering's chosen pricing models that the cost engine priced, by the NPV of their
  monthly cash flows (engine/cost/cashflow.py, end of month, discounted monthly at (1 + r)^(1/12) − 1).
- **The rival**: the chosen rent option of lowest NPV over all offerings, ties broken by (offering slug,
  pricing model), so that the order in which offerings are listed changes nothing.
- **Owning**: the NPV of owning's cash flows in the rival's offering result (owning is the same in every
  offering; only the rent paid during a procurement lead time follows the offering).
- **One basis**: the saving (NPV(rival) − NPV(own)), the payback, the tornado, the break-even utilization
  and the thresholds that flip the verdict all come from the rival offering's result, which the cost engine
  computed on the same NPV basis against that same option (its cheapest chosen option is the design's
  rival, since the rival is cheapest of all).
- **Three figures for owning**, reconciled: the annualised cost over the horizon (capital recovery over the
  depreciation life plus a year's opex, × years), the undiscounted cash out (capex + opex − resale) and the
  NPV. Only the NPV decides.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from clusterdesigner.engine.core.json_object import JsonObject, omit
from clusterdesigner.engine.cost.cashflow import CashflowInputs
from clusterdesigner.engine.cost.cost_result import CostResult, SensitivityRow
from clusterdesigner.engine.cost.verdict import Flip, usd_short

BASIS = "NPV of the monthly cash flows"

# The tornado's inputs as the verdict names them (cost.SENSITIVE_LABELS holds the same words; kept apart so
# that this module does not import the cost engine's entry point).
TOP_MOVERS = 3


@dataclass(frozen=True, kw_only=True)
class OptionNpv(JsonObject):
    """One option of the design (owning, or an offering's chosen pricing model) on the verdict's basis:
    the NPV of its monthly cash flows, their undiscounted sum, and the utilization at which owning costs
    the same NPV (None for owning, and when one side is cheaper at every utilization)."""

    key: str  # "own" or "<offering>:<pricing model>"
    label: str
    offering: str | None
    pricing_model: str | None
    npv_usd: float
    cash_usd: float
    break_even_utilization: float | None


@dataclass(frozen=True, kw_only=True)
class Mover(JsonObject):
    """An input that moves the answer most (the tornado of the rival's offering, on NPV): its swing in USD
    of NPV for ± the tornado's fraction, and the source of its value."""

    name: str
    label: str
    base: float
    unit: str = ""
    swing_usd: float
    source: str = ""
    as_of: str | None = omit()


@dataclass(frozen=True, kw_only=True)
class OwningFigure(JsonObject):
    """One of the three figures shown for owning, with its basis and how it differs from the NPV."""

    name: str  # npv | cash_out | annualised
    label: str
    usd: float
    basis: str
    minus_npv_usd: float


@dataclass(frozen=True, kw_only=True)
class Committed(JsonObject):
    """What one option commits before it is used (issue #31 item 7), for the one-page summary: owning's
    capex at delivery (month L, the end of the procurement lead time), or a chosen reservation's contract
    dollars over all its terms (engine/cost/cashflow.py commitment_schedule, before tax, every hour of each
    term on every node), with the month the last term ends and what falls due after the horizon."""

    key: str  # "own" or "<offering>:<pricing model>"
    label: str
    kind: str  # capex | term
    usd: float
    end_month: int  # owning: the delivery month; a reservation: the month its last term ends
    term_months: int = 0
    terms: int = 0
    beyond_horizon_usd: float = 0.0


@dataclass(frozen=True, kw_only=True)
class DesignVerdict(JsonObject):
    """The design's rent-or-own answer on one basis (module docstring). ``saving_usd`` = NPV(rival) −
    NPV(own): > 0 when owning costs less. ``options`` are the chosen rent options cheapest NPV first."""

    basis: str
    horizon_years: float
    utilization: float
    discount_rate: float
    gpus: int
    accelerator: str
    own: OptionNpv
    options: tuple[OptionNpv, ...]
    rival: OptionNpv
    saving_usd: float
    winner: str  # own | rent
    payback_month: int | None
    break_even_utilization: float | None
    flips: tuple[Flip, ...]
    movers: tuple[Mover, ...]
    owning_figures: tuple[OwningFigure, ...]
    sentence: str
    # Owning's capex and each chosen reservation's commitment, across offerings (empty in a result stored
    # before they were added).
    commitments: tuple[Committed, ...] = ()

    @property
    def choice_key(self) -> str:
        """The key of the option the verdict picks: "own" when owning saves, else the rival's: the option the
        goals, the compare page and the compare analysis name (one basis, issue #31)."""
        return "own" if self.winner == "own" else self.rival.key


def design_verdict(
    *,
    costs: Mapping[str, CostResult],
    chosen: Mapping[str, Sequence[str] | None],
    names: Mapping[str, str],
    model_labels: Mapping[str, str],
) -> DesignVerdict | None:
    """The design-level verdict from the cost results by offering slug (cost.tco, each priced with only the
    chosen models), ``chosen`` the pricing models ticked per offering (None: every one priced), ``names``
    each offering's display name and ``model_labels`` each pricing model's. None when no chosen rent option
    has cash flows (a design without a cloud offering)."""
    options: list[OptionNpv] = []
    for slug in sorted(costs):
        result = costs[slug]
        flows, answer = result.cashflow, result.verdict
        if flows is None or flows.rent is None or answer is None:
            continue
        wanted = chosen.get(slug)
        for row in flows.rent:
            if wanted and row.name not in wanted:
                continue  # never compared: the user did not tick it
            label = model_labels.get(row.name, row.name)
            options.append(
                OptionNpv(
                    key=f"{slug}:{row.name}",
                    label=f"{names.get(slug, slug)} {label}",
                    offering=slug,
                    pricing_model=row.name,
                    npv_usd=row.npv_usd,
                    cash_usd=row.total_usd,
                    break_even_utilization=answer.break_even_by_option.get(row.name),
                )
            )
    if not options:
        return None
    options.sort(key=lambda o: (o.npv_usd, o.offering or "", o.pricing_model or ""))
    rival = options[0]
    result = costs[str(rival.offering)]
    assert result.cashflow is not None and result.cashflow.own is not None and result.verdict is not None
    answer = result.verdict
    own_flows = result.cashflow.own
    own = OptionNpv(
        key="own",
        label="Own (on-prem)",
        offering=None,
        pricing_model=None,
        npv_usd=own_flows.npv_usd,
        cash_usd=own_flows.total_usd,
        break_even_utilization=None,
    )
    saving = rival.npv_usd - own.npv_usd
    verdict = DesignVerdict(
        basis=_basis(answer.discount_rate, result.cashflow.inputs),
        horizon_years=answer.horizon_years,
        utilization=answer.utilization,
        discount_rate=answer.discount_rate,
        gpus=answer.gpus,
        accelerator=answer.accelerator,
        own=own,
        options=tuple(options),
        rival=rival,
        saving_usd=saving,
        winner="own" if saving >= 0 else "rent",
        payback_month=result.cashflow.payback_month,
        break_even_utilization=rival.break_even_utilization,
        flips=answer.flips,
        movers=_movers(result),
        owning_figures=_owning_figures(result),
        sentence="",
        commitments=_commitments(result, costs, options),
    )
    return _with_sentence(verdict)


def _commitments(
    rival: CostResult, costs: Mapping[str, CostResult], options: Sequence[OptionNpv]
) -> tuple[Committed, ...]:
    """Owning's capex at delivery (from the rival's offering, whose cash flows the verdict reads), then every
    chosen option's commitment in the order of ``options`` (cheapest NPV first)."""
    out: list[Committed] = []
    inputs = rival.cashflow.inputs if rival.cashflow else None
    if inputs is not None and inputs.financing != "lease":
        out.append(
            Committed(
                key="own",
                label="Own (on-prem): capex at delivery",
                kind="capex",
                usd=inputs.capex_usd,
                end_month=inputs.lead_time_months,
            )
        )
    for option in options:
        flows = costs[str(option.offering)].cashflow
        held = (flows.commitments or ()) if flows else ()
        found = next((c for c in held if c.model == option.pricing_model), None)
        if found is None:
            continue
        out.append(
            Committed(
                key=option.key,
                label=option.label,
                kind="term",
                usd=found.total_usd,
                end_month=found.term_end_month,
                term_months=found.term_months,
                terms=len(found.terms),
                beyond_horizon_usd=found.beyond_horizon_usd,
            )
        )
    return tuple(out)


def _movers(result: CostResult) -> tuple[Mover, ...]:
    """The widest bars of the rival offering's tornado (on NPV against the rival), with their sources."""
    labels = {f.name: f.label for f in (result.verdict.flips if result.verdict else ())}
    sources = {a.name: a for a in result.assumptions}
    rows: Sequence[SensitivityRow] = result.sensitivity.rows[:TOP_MOVERS]
    out = []
    for row in rows:
        used = sources.get(row.name)
        out.append(
            Mover(
                name=row.name,
                label=labels.get(row.name, _label(row.name)),
                base=row.base,
                unit=used.unit if used else "",
                swing_usd=row.swing_usd,
                source=used.source if used else "",
                as_of=(used.as_of or None) if used else None,
            )
        )
    return tuple(out)


def _label(name: str) -> str:
    return name.rsplit(".", 1)[-1].replace("_", " ")


def _owning_figures(result: CostResult) -> tuple[OwningFigure, ...]:
    """Owning's NPV, undiscounted cash out and annualised cost over the horizon, each with its basis. With a
    tax rate the first two are after tax (the cash flows carry it) and the annualised cost is not: its label
    and basis say so, so a pre-tax figure is never read beside an after-tax one unlabelled."""
    assert result.cashflow is not None and result.cashflow.own is not None
    npv = result.cashflow.own.npv_usd
    inputs = result.cashflow.inputs
    taxed = inputs is not None and inputs.tax_rate > 0
    after = f", after the {inputs.tax_rate * 100:g}% tax" if taxed and inputs is not None else ""
    rows = (
        (
            "npv",
            f"NPV of owning (decides the verdict{after})",
            npv,
            "monthly cash flows (capex at delivery, opex monthly, resale at the horizon"
            + ("; tax paid or shielded each month" if taxed else "")
            + ") discounted at the discount rate",
        ),
        (
            "cash_out",
            f"Cash out over the horizon{after}",
            result.cashflow.own.total_usd,
            "the same monthly cash flows, undiscounted: differs from the NPV by discounting alone",
        ),
        (
            "annualised",
            "Annualised cost over the horizon" + (", before tax" if taxed else ""),
            result.on_prem.total_usd,
            "capital recovery over the depreciation life (capex × CRF − residual × SFF) plus a year's opex, "
            "× the horizon in years: spreads the capex over the life rather than paying it at delivery"
            + (
                "; before tax (no deduction, shield or tax on the sale), unlike the two above"
                if taxed
                else ""
            ),
        ),
    )
    return tuple(
        OwningFigure(name=name, label=label, usd=usd, basis=basis, minus_npv_usd=usd - npv)
        for name, label, usd, basis in rows
    )


def _basis(rate: float, inputs: CashflowInputs | None) -> str:
    """ "NPV of the monthly cash flows at 8.0% a year", and with a tax rate ", after a 21% tax on both sides:
    …": the figures are then after tax (engine/cost/cashflow.py), and the verdict says so."""
    basis = f"{BASIS} at {rate:.1%} a year"
    if inputs is None or inputs.tax_rate <= 0:
        return basis
    schedule = "MACRS 5-year" if inputs.depreciation_schedule == "macrs_5" else "straight-line"
    return (
        f"{basis}, after a {inputs.tax_rate * 100:g}% tax on both sides: rent bills and owning's opex"
        f" deducted, {schedule} depreciation, the sale taxed on its gain over book value"
    )


def _with_sentence(v: DesignVerdict) -> DesignVerdict:
    """“Over 3 years at 70% utilization, owning 256 × b200 costs $X (NPV of the monthly cash flows at 8.0% a
    year); of the options you chose the cheapest to rent is <rival> at $Y: owning saves $Z, paying back in
    month M; below U renting it is cheaper; the answer flips at …”."""
    head = (
        f"Over {v.horizon_years:g} year{'' if v.horizon_years == 1 else 's'} at {v.utilization:.0%}"
        f" utilization, owning {v.gpus} × {v.accelerator} costs {usd_short(v.own.npv_usd)} ({v.basis});"
        f" of the options you chose, the cheapest to rent is {v.rival.label} at {usd_short(v.rival.npv_usd)}"
    )
    parts: list[str] = []
    if v.winner == "own":
        back = (
            f"paying back in month {v.payback_month}"
            if v.payback_month is not None
            else "not paying back within the horizon before resale"
        )
        parts.append(f"owning saves {usd_short(v.saving_usd)}, {back}")
    else:
        parts.append(f"renting {v.rival.label} saves {usd_short(-v.saving_usd)}")
    be = v.break_even_utilization
    if be is not None:
        # The other side wins beyond the crossing, on the side away from the design's utilization.
        side = "renting it" if v.winner == "own" else "owning"
        parts.append(f"{'below' if be < v.utilization else 'above'} {be:.1%} utilization {side} is cheaper")
    else:
        parts.append(f"{'owning' if v.winner == 'own' else 'renting it'} is cheaper at every utilization")
    flips = [f.phrase() for f in v.flips if f.threshold is not None and f.name != "utilization"]
    if flips:
        parts.append("the verdict flips at " + ", or ".join(flips) + " (each alone)")
    return DesignVerdict(**{**v.__dict__, "sentence": head + ": " + "; ".join(parts) + "."})
