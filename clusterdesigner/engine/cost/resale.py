"""Resale value of owned accelerators from a sourced residual-value series (the catalog's ResidualValuePoint
rows of one series and accelerator): the fraction of the price new a server fetches at a given age.

The cost engine's ``on_prem.residual_fraction`` is the value left after the depreciation life (its resale at
the horizon's end is the straight-line book value towards it, docs/cost-engine.md), so the series is read at
the age of the depreciation life. Between two published ages the fraction is read by straight-line
interpolation; outside the series' ages no figure is read (an extrapolated resale value would be unsourced),
and the engine keeps its default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ResaleCurve:
    """One series' points for one accelerator: (age in years, fraction of the price new), ages ascending."""

    series: str
    accelerator: str
    points: tuple[tuple[float, float], ...]
    source: str
    as_of: str

    def fraction_at(self, *, age_years: float) -> float | None:
        """f(a) = f_i + (f_{i+1} − f_i)·(a − a_i)/(a_{i+1} − a_i) for a_i ≤ a ≤ a_{i+1}; None outside
        [a_0, a_n] (no extrapolation)."""
        for (a0, f0), (a1, f1) in zip(self.points, self.points[1:], strict=False):
            if a0 <= age_years <= a1:
                return f0 + (f1 - f0) * (age_years - a0) / (a1 - a0)
        if len(self.points) == 1 and self.points[0][0] == age_years:
            return self.points[0][1]
        return None

    def describe(self, *, age_years: float, at: str = "the depreciation life") -> str:
        """The source sentence for an assumption: series, ages read and how."""
        ages = ", ".join(f"{a:g} y {f:g}" for a, f in self.points)
        return (
            f"{self.series} for {self.accelerator} (catalog; {ages}), read at {at}, age "
            f"{age_years:g} years, by straight-line interpolation; as of {self.as_of}: {self.source}"
        )


def resale_curves(*, points: Iterable[Mapping[str, Any]], accelerator: str) -> tuple[ResaleCurve, ...]:
    """The accelerator's series, one curve each, by series name."""
    by_series: dict[str, list[Mapping[str, Any]]] = {}
    for point in points:
        if point.get("accelerator") == accelerator:
            by_series.setdefault(str(point["series"]), []).append(point)
    curves = []
    for series, rows in sorted(by_series.items()):
        rows = sorted(rows, key=lambda p: float(p["age_years"]))
        curves.append(
            ResaleCurve(
                series=series,
                accelerator=accelerator,
                points=tuple((float(p["age_years"]), float(p["fraction_of_new"])) for p in rows),
                source=str(rows[0].get("source") or ""),
                as_of=str(rows[-1].get("as_of") or ""),
            )
        )
    return tuple(curves)


def curves_from_records(records: Mapping[str, Any], *, accelerator: str) -> tuple[ResaleCurve, ...]:
    """The accelerator's series from a catalog snapshot's ``residual_values`` records (none: no curve, and the
    cost engine keeps the given or default residual value). The design evaluation, sweeps and ``manage.py
    tco`` all read resale this way."""
    return resale_curves(points=records.get("residual_values") or [], accelerator=accelerator)


def covering(curves: Iterable[ResaleCurve], *, age_years: float) -> ResaleCurve | None:
    """The curve that covers ``age_years`` with the most points (ties: the first by series name), or None."""
    best: ResaleCurve | None = None
    for curve in curves:
        if curve.fraction_at(age_years=age_years) is not None and (
            best is None or len(curve.points) > len(best.points)
        ):
            best = curve
    return best
