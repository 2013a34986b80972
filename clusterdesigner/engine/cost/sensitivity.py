"""One-at-a-time sensitivity (a tornado chart): move each assumption to its low and high, keep the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

# (own − rent USD, break-even utilization), or None when the moved value leaves no option to compare.
Outcome = Callable[[Mapping[str, Any]], "tuple[float, float | None] | None"]


def tornado(
    *,
    values: Mapping[str, Any],
    names: Sequence[str],
    fraction: float,
    outcome: Outcome,
    bounds: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """For each name: low = value · (1 − f), high = value · (1 + f) (clipped to ``bounds``), and the outcome
    (own − rent in USD, break-even utilization) at each. Rows are sorted by swing |Δ(high) − Δ(low)|, the
    widest bar first, as a tornado chart draws them.
    """
    base = outcome(values)
    if base is None:
        return {"base_own_minus_rent_usd": None, "base_break_even": None, "rows": []}
    base_delta, base_break_even = base
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    for name in names:
        value = float(values[name])
        lo_bound, hi_bound = (bounds or {}).get(name, (0.0, float("inf")))
        low = min(max(value * (1.0 - fraction), lo_bound), hi_bound)
        high = min(max(value * (1.0 + fraction), lo_bound), hi_bound)
        at_low, at_high = outcome({**values, name: low}), outcome({**values, name: high})
        if at_low is None or at_high is None:
            skipped.append(name)
            continue
        (delta_low, be_low), (delta_high, be_high) = at_low, at_high
        rows.append(
            {
                "name": name,
                "base": value,
                "low": low,
                "high": high,
                "own_minus_rent_low_usd": delta_low,
                "own_minus_rent_high_usd": delta_high,
                "swing_usd": abs(delta_high - delta_low),
                "break_even_low": be_low,
                "break_even_high": be_high,
                "break_even_swing": None if be_low is None or be_high is None else abs(be_high - be_low),
            }
        )
    rows.sort(key=lambda row: -float(row["swing_usd"]))
    out: dict[str, Any] = {
        "base_own_minus_rent_usd": base_delta,
        "base_break_even": base_break_even,
        "rows": rows,
    }
    if skipped:
        out["not_comparable"] = skipped  # at its low or high the compared option cannot finish the run
    return out
