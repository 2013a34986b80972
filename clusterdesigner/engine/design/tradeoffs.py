"""Choosing among evaluated options: the Pareto front of cost against days, the best design per figure, a
design's column in a comparison (``compare_column``) and the recommendation a sweep ends with. Pure
functions over plain rows, used by the pages and the Celery analyses alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.cost.design_verdict import DesignVerdict
from clusterdesigner.engine.design.analysis_result import SweepRow
from clusterdesigner.engine.design.spec import CloudChoice
from clusterdesigner.engine.training.training_result import TrainingEstimate


def pareto_indices(points: Sequence[tuple[float | None, float | None]]) -> list[int]:
    """Indexes of the points no other point beats on both axes (lower is better on each), in increasing
    order of the first axis. A point with a missing or non-finite coordinate is never on the front; of
    identical points only the first is.

    Method: sort by (x, y); a point is on the front when its y is below every y seen before it
    (Kung, Luccio & Preparata 1975, "On finding the maxima of a set of vectors", the two-dimensional case).
    """
    usable = [
        i
        for i, (x, y) in enumerate(points)
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
    ]
    usable.sort(key=lambda i: (points[i][0], points[i][1]))
    front: list[int] = []
    best = math.inf
    for i in usable:
        y = points[i][1]
        assert y is not None  # filtered above
        if y < best:
            front.append(i)
            best = y
    return front


def pareto_front(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows not dominated in (``cost_usd``, ``days``), cheapest first (see ``pareto_indices``)."""
    return [rows[i] for i in pareto_indices([(r.get("cost_usd"), r.get("days")) for r in rows])]


# (figure, whether lower is better) for the best-per-figure summary of a comparison.
COMPARE_FIGURES = (("days", True), ("best_npv_usd", True), ("best_run_cost_usd", True), ("mfu", False))


def best_per_figure(rows: Sequence[Mapping[str, Any]], *, key: str = "design") -> dict[str, Any]:
    """For each of COMPARE_FIGURES, the ``key`` of the row with the best value (the first on a tie); rows
    with an ``error``, and figures no row has, are left out."""
    ok = [r for r in rows if "error" not in r]
    best: dict[str, Any] = {}
    for figure, lower in COMPARE_FIGURES:
        values = [r for r in ok if r.get(figure) is not None]
        if values:
            pick = min if lower else max
            best[figure] = pick(values, key=lambda r: r[figure])[key]
    return best


def default_option_key(
    *,
    options: Sequence[Mapping[str, Any]],
    cloud_choices: Sequence[CloudChoice],
    choice_key: str | None = None,
) -> str:
    """The option a comparison shows for a design unless another is asked for: the option its rent-or-own
    verdict picks (``choice_key``: owning when owning's NPV is lower, else the cheapest chosen rent option by
    the NPV of its monthly cash flows, whatever the order of the offerings: issue #36, each column shows its
    design's best option on the verdict's basis); without a verdict (no rent option, or a result stored
    before it), its first cloud choice's first priced pricing model (``"<offering>:<pricing model>"``), else
    ``"own"`` (owning the cluster)."""
    keys = {o["key"] for o in options}
    if choice_key is not None and choice_key in keys:
        return choice_key
    for choice in cloud_choices:
        for model in choice.pricing_models or ():
            if f"{choice.offering}:{model}" in keys:
                return f"{choice.offering}:{model}"
    return "own"


def expected_days(options: Sequence[Mapping[str, Any]]) -> float | None:
    """Days to train with failures and restarts (not spot interruptions): the days of the first option
    that is not spot (every such option has the same), None when there is none."""
    for option in options:
        if option.get("pricing_model") != "spot" and option.get("days") is not None:
            return float(option["days"])
    return None


@dataclass(frozen=True)
class CompareColumn:
    """One design's figures in a comparison: its layout's (``training.chosen``) and two of its cost
    options: ``shown`` (``option_key``: asked for, else ``default_option_key``) and ``best`` (the option its
    rent-or-own verdict picks by NPV; without a verdict the first option, as the evaluation orders them).
    ``expected_days`` is with failures and restarts, ``days_failure_free`` without."""

    fits: bool
    days_failure_free: float
    expected_days: float | None
    mfu: float
    tokens_per_second: float
    memory_gib: float
    gpus: int
    option_key: str
    shown: Mapping[str, Any]
    best: Mapping[str, Any]
    best_npv_usd: float | None = None  # the NPV of ``best``'s monthly cash flows (its verdict's figure)

    @property
    def best_option(self) -> str | None:
        """The label of the design's cheapest option by NPV (None when it has no option)."""
        label: str | None = self.best.get("label")
        return label

    @property
    def best_run_cost_usd(self) -> float | None:
        """What one run costs on the design's cheapest option by NPV (None without an option or a price)."""
        usd: float | None = self.best.get("run_cost_usd")
        return usd


def compare_column(
    *,
    training: TrainingEstimate,
    options: Sequence[Mapping[str, Any]],
    cloud_choices: Sequence[CloudChoice] = (),
    option_key: str | None = None,
    verdict: DesignVerdict | None = None,
) -> CompareColumn:
    """A design's column in a comparison, the same for the compare page and the compare analysis.

    With the design's rent-or-own ``verdict``, its choice (owning or the rival, by NPV:
    DesignVerdict.choice_key) is shown unless another option is asked for, and is the column's ``best``. An
    ``option_key`` the design has no option for falls back to ``default_option_key``; a missing option is
    an empty mapping (its figures are absent, never another option's).
    """
    keys = {o["key"] for o in options}
    choice_key = verdict.choice_key if verdict else None
    key = default_option_key(options=options, cloud_choices=cloud_choices, choice_key=choice_key)
    if option_key is not None and option_key in keys:
        key = option_key
    chosen = training.chosen
    return CompareColumn(
        fits=chosen.fits,
        days_failure_free=chosen.time_to_train_days,
        expected_days=expected_days(options),
        mfu=chosen.mfu,
        tokens_per_second=chosen.tokens_per_second,
        memory_gib=chosen.memory_per_gpu_gib.total,
        gpus=training.summary.cluster.gpus,
        option_key=key,
        shown=next((o for o in options if o["key"] == key), {}),
        best=next(
            (o for o in options if verdict and o["key"] == verdict.choice_key), options[0] if options else {}
        ),
        best_npv_usd=None
        if verdict is None
        else verdict.own.npv_usd
        if verdict.choice_key == "own"
        else verdict.rival.npv_usd,
    )


# The figure a sweep's Pareto front and its recommendation rank on: the NPV of each option's monthly cash
# flows over the cost horizon (the rent-or-own verdict's basis, issue #31 "one basis"); a sweep whose rows
# have no cash flows (owning alone: no rent option priced) ranks on one run's cost, and says so.
NPV_BASIS = "npv"
PER_RUN_BASIS = "per_run"
BASIS_LABELS = {
    NPV_BASIS: "NPV over the horizon (the option's monthly cash flows, discounted)",
    PER_RUN_BASIS: "cost per run (one run, undiscounted; the rows have no cash flows to discount)",
}


def sweep_basis(rows: Sequence[SweepRow]) -> str:
    """``NPV_BASIS`` when every priced row has the NPV of its cash flows, else ``PER_RUN_BASIS`` (one basis
    for the whole front: NPVs and per-run costs are never ranked together)."""
    priced = [r for r in rows if r.priced]
    return NPV_BASIS if priced and all(r.npv_usd is not None for r in priced) else PER_RUN_BASIS


def ranked_usd(row: SweepRow, basis: str) -> float | None:
    """The row's figure on ``basis``: its NPV over the horizon, or its cost per run."""
    return row.npv_usd if basis == NPV_BASIS else row.cost_usd


def finish_days(row: SweepRow) -> float | None:
    """Days until the run is done: its expected days after owning's procurement lead time, if any."""
    return None if row.days is None else row.days + (row.start_delay_days or 0.0)


def sweep_front(rows: Sequence[SweepRow], basis: str) -> list[int]:
    """Indexes of the rows on the Pareto front of (``basis`` figure, ``finish_days``), cheapest first: an
    owned option waiting out its lead time does not hide a rented one that finishes sooner."""
    return pareto_indices([(ranked_usd(r, basis) if r.priced else None, finish_days(r)) for r in rows])


def _figures(row: SweepRow, basis: str) -> tuple[float, float]:
    """A front row's (days, figure on ``basis``): every row on the front has both (``sweep_front``)."""
    usd = ranked_usd(row, basis)
    if row.days is None or usd is None:
        raise ValueError("a row without days or a figure on the front's basis is never on the Pareto front")
    return row.days, usd


def _choose(
    front: Sequence[SweepRow], deadline: float | None, budget: float | None, basis: str
) -> tuple[SweepRow | None, list[str]]:
    """The cheapest front option on ``basis`` within the deadline and the per-run budget, else the fastest;
    why, in words."""
    meets = [
        r
        for r in front
        if (deadline is None or _figures(r, basis)[0] + (r.start_delay_days or 0.0) <= deadline)
        and (budget is None or (r.cost_usd is not None and r.cost_usd <= budget))
    ]
    if not meets:
        fastest = min(front, key=lambda r: _figures(r, basis)[0]) if front else None
        return fastest, ["no option meets both the deadline and the budget; shown: the fastest option"]
    choice = min(meets, key=lambda r: _figures(r, basis)[1])
    days, usd = _figures(choice, basis)
    by = "by NPV over the horizon" if basis == NPV_BASIS else "by cost per run (no cash flows to discount)"
    reasons = [
        f"cheapest {by} of {len(meets)} Pareto-optimal options that meet "
        + (f"the {deadline:g}-day deadline" if deadline else "no deadline")
        + (f" and the ${budget:,.0f} per-run budget" if budget else "")
    ]
    faster = [r for r in front if _figures(r, basis)[0] < days]
    if faster:
        quick = min(faster, key=lambda r: _figures(r, basis)[0])
        quick_days, quick_usd = _figures(quick, basis)
        reasons.append(
            f"finishing in {quick_days:.1f} days instead of {days:.1f} would cost "
            f"${quick_usd - usd:,.0f} more {'in NPV over the horizon' if basis == NPV_BASIS else 'per run'} "
            f"({quick.accelerator} × {quick.gpus} GPUs, {quick.pricing_model})"
        )
    return choice, reasons


def _delay(row: SweepRow) -> str:
    """Owning's procurement lead time before the run, when it has one."""
    return f" after a {row.start_delay_days:.1f}-day lead time" if row.start_delay_days else ""


def _signed_for(row: SweepRow) -> str:
    """What choosing the row commits beyond the run: owning's capex, or a term's dollars and months."""
    if row.capex_usd is not None:
        return f" (owning: ${row.capex_usd:,.0f} capex up front)"
    if row.commitment_usd is not None and row.commitment_term_months:
        return f" (commits ${row.commitment_usd:,.0f} for {row.commitment_term_months} months)"
    return ""


def recommend(
    *,
    rows: Sequence[SweepRow],
    front: Sequence[SweepRow],
    params: Mapping[str, Any],
    basis: str | None = None,
) -> dict[str, Any]:
    """Pick the cheapest option on the Pareto front, on ``basis`` (default ``sweep_basis(rows)``: the NPV of
    its monthly cash flows over the horizon), that meets ``params``' ``deadline_days`` and ``budget_usd`` (a
    sum for one run, checked on the per-run cost; either may be absent); when none does, the fastest option
    on the front. Returns ``recommendation`` (the row or None), ``reasons`` (sentences saying why, with the
    figures, each labelled with its basis), ``rule_of_thumb_gpus``, ``basis`` and ``basis_label``."""
    basis = basis or sweep_basis(rows)
    choice, reasons = _choose(front, params.get("deadline_days"), params.get("budget_usd"), basis)
    params_b = next((r.params_b for r in rows if r.params_b), None)
    thumb = rule_of_thumb(params_b)
    if choice:
        days, _ = _figures(choice, basis)
        npv = f"NPV over the horizon ${choice.npv_usd:,.0f}; " if choice.npv_usd is not None else ""
        reasons.append(
            f"{choice.accelerator} × {choice.gpus} GPUs ({choice.nodes} nodes), "
            f"{choice.pricing_model}: {days:.1f} days{_delay(choice)}, "
            f"{npv}${choice.cost_usd:,.0f} per run, undiscounted{_signed_for(choice)}, "
            f"MFU {100 * (choice.mfu or 0):.0f} %"
        )
        if params.get("interruption_tolerance") == "none":
            reasons.append("spot excluded: no tolerance for interruptions")
        if thumb:
            reasons.append(
                f"rule of thumb for {params_b:.1f}B parameters: {thumb}; "
                f"the engines' choice: {choice.gpus} GPUs"
            )
    return {
        "recommendation": choice,
        "reasons": reasons,
        "rule_of_thumb_gpus": thumb,
        "basis": basis,
        "basis_label": BASIS_LABELS[basis],
    }


def rule_of_thumb(params_b: float | None) -> str | None:
    """The common starting point (under 7B: 4–8 GPUs, 7–30B: 16–64, 30–100B: 64–256, above: 256+)."""
    if params_b is None:
        return None
    for limit, text in ((7, "4–8 GPUs"), (30, "16–64 GPUs"), (100, "64–256 GPUs")):
        if params_b < limit:
            return text
    return "256+ GPUs"
