"""Choosing among evaluated options: the Pareto front of cost against days, the best design per figure, and
the recommendation a sweep ends with. Pure functions over plain rows, used by the pages and the Celery
analyses alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


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
COMPARE_FIGURES = (("days", True), ("best_run_cost_usd", True), ("mfu", False))


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


def _choose(
    front: Sequence[Mapping[str, Any]], deadline: float | None, budget: float | None
) -> tuple[Mapping[str, Any] | None, list[str]]:
    """The cheapest front option within the deadline and the budget, else the fastest; why, in words."""
    meets = [
        r
        for r in front
        if (deadline is None or r["days"] <= deadline) and (budget is None or r["cost_usd"] <= budget)
    ]
    if not meets:
        fastest = min(front, key=lambda r: r["days"]) if front else None
        return fastest, ["no option meets both the deadline and the budget; shown: the fastest option"]
    choice = min(meets, key=lambda r: r["cost_usd"])
    reasons = [
        f"cheapest of {len(meets)} Pareto-optimal options that meet "
        + (f"the {deadline:g}-day deadline" if deadline else "no deadline")
        + (f" and the ${budget:,.0f} budget" if budget else "")
    ]
    faster = [r for r in front if r["days"] < choice["days"]]
    if faster:
        quick = min(faster, key=lambda r: r["days"])
        reasons.append(
            f"finishing in {quick['days']:.1f} days instead of {choice['days']:.1f} would cost "
            f"${quick['cost_usd'] - choice['cost_usd']:,.0f} more "
            f"({quick['accelerator']} × {quick['gpus']} GPUs, {quick['pricing_model']})"
        )
    return choice, reasons


def recommend(
    *, rows: Sequence[Mapping[str, Any]], front: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Pick the cheapest option on the Pareto front that meets ``params``' ``deadline_days`` and
    ``budget_usd`` (either may be absent); when none does, the fastest option on the front. Returns
    ``recommendation`` (the row or None), ``reasons`` (sentences saying why, with the figures) and
    ``rule_of_thumb_gpus``."""
    choice, reasons = _choose(front, params.get("deadline_days"), params.get("budget_usd"))
    params_b = next((r["params_b"] for r in rows if r.get("params_b")), None)
    thumb = rule_of_thumb(params_b)
    if choice:
        reasons.append(
            f"{choice['accelerator']} × {choice['gpus']} GPUs ({choice['nodes']} nodes), "
            f"{choice['pricing_model']}: {choice['days']:.1f} days, ${choice['cost_usd']:,.0f}, "
            f"MFU {100 * (choice.get('mfu') or 0):.0f} %"
        )
        if params.get("interruption_tolerance") == "none":
            reasons.append("spot excluded: no tolerance for interruptions")
        if thumb:
            reasons.append(
                f"rule of thumb for {params_b:.1f}B parameters: {thumb}; "
                f"the engines' choice: {choice['gpus']} GPUs"
            )
    return {"recommendation": choice, "reasons": reasons, "rule_of_thumb_gpus": thumb}


def rule_of_thumb(params_b: float | None) -> str | None:
    """The common starting point (under 7B: 4–8 GPUs, 7–30B: 16–64, 30–100B: 64–256, above: 256+)."""
    if params_b is None:
        return None
    for limit, text in ((7, "4–8 GPUs"), (30, "16–64 GPUs"), (100, "64–256 GPUs")):
        if params_b < limit:
            return text
    return "256+ GPUs"
