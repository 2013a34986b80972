"""Check-row error overall, per regime, and its trend with scale (issue 33 items 1-2).

    .venv/bin/python bench/calibration_scale.py [--fit] [--rows] [--fit-scale]

Every predicted row of tests/engine/data/runs.csv and runs_frontier.csv (bench/calibration_fit.all_rows),
split as declared (calibration_cases.fit_run_ids: every other row of a source, in file order). Prints, for
the FIT rows and then the CHECK rows, the median and p90 of |error| overall and per regime (dense, MoE, FP8,
BF16, Ampere, Hopper, Blackwell, AMD, by scale, long context), the slope of the signed error against
log2(GPUs) by least squares, in percentage points per doubling, and the error band's coverage out of fold:
a check row against the band table rebuilt from the other sources' check rows (leave one source out,
bench/calibration_regimes.source_out_inside); a fit row, which no band was built from, against the table of
all check rows (error_band_table.py as --write makes it), with the median half-width of those bands beside
it (a band that covers by being wide everywhere is useless). error = predicted / measured − 1 (tokens/s or
TFLOP/s per GPU). Targets (issue 33), on check rows: median ≤ 5 %, p90 ≤ 12 % overall, ≤ 8 % median per
regime with ≥ 5 rows, coverage ≥ 80 % per regime, slope within ±1 pp per doubling. ``--fit``: the fit rows
only (as before), ``--rows``: every check row's error.

``--fit-scale`` fits the two losses of scale that have no published figure to copy,
timing.PP_CHUNK_FIXED_S (the fixed cost of one pipeline chunk pass) and timing.STRAGGLER_CV (the relative
spread of one rank's step time), on the FIT rows only: the pair on a grid that minimises the fit rows'
median |error|, with the fit rows' slope against log2(GPUs) printed beside it. The check rows never enter.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "engine")]

from calibration_fit import Row, all_rows  # noqa: E402
from calibration_regimes import (  # noqa: E402
    Judged,
    bands_from,
    check_residuals,
    coverage_by_regime,
    judged,
    lookup,
    source_out_inside,
)

from clusterdesigner.engine.training import timing  # noqa: E402
from clusterdesigner.engine.training.error_band import LONG_CONTEXT_TOKENS  # noqa: E402

CHUNK_GRID_S = (0.0, 0.25e-3, 0.5e-3, 1e-3, 1.5e-3, 2e-3, 3e-3)
CV_GRID = tuple(i * 0.001 for i in range(11)) + (0.015,)

REGIMES: dict[str, Callable[[Row], bool]] = {
    "dense": lambda r: not r.moe,
    "moe": lambda r: r.moe,
    "fp8": lambda r: r.precision.startswith("fp8") or r.precision.startswith("mxfp8"),
    "bf16/fp16": lambda r: r.precision in ("bf16", "fp16"),
    "ampere": lambda r: r.family == "ampere",
    "hopper": lambda r: r.family == "hopper",
    "blackwell": lambda r: r.family == "blackwell",
    "amd": lambda r: r.family.startswith("cdna"),
    "<= 64 gpus": lambda r: r.gpus <= 64,
    "65-512 gpus": lambda r: 64 < r.gpus <= 512,
    ">= 513 gpus": lambda r: r.gpus > 512,
    "long context": lambda r: r.seq_len >= LONG_CONTEXT_TOKENS,
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def slope_per_doubling(items: list[tuple[Row, float]]) -> float:
    """Least-squares slope of the signed error against log2(GPUs), as a fraction per doubling."""
    xs = [math.log2(r.gpus) for r, _ in items]
    ys = [e for _, e in items]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0


def residuals(rows: list[Row], *, fit: bool) -> list[tuple[Row, float]]:
    return [(r, e) for r in rows if r.fit == fit and (e := r.error()) is not None]


def summary(items: list[tuple[Row, float]]) -> str:
    if not items:
        return f"{0:4d}"
    mags = [abs(e) for _, e in items]
    signed = statistics.median(e for _, e in items)
    return (
        f"{len(items):4d} {100 * statistics.median(mags):7.1f}% {100 * percentile(mags, 0.9):7.1f}% "
        f"{100 * signed:+7.1f}% {100 * slope_per_doubling(items):+8.2f}"
    )


def band_inside(rows: list[Row], *, fit: bool) -> list[Judged]:
    """(row, inside its 80 % band, the band's half-width) out of fold: check rows leaving their source out
    of the table, fit rows (never in a band) against the table of all check rows."""
    checks = check_residuals(rows)
    if not fit:
        return source_out_inside(checks)
    table = bands_from(checks)
    return [judged(r, e, band) for r, e in residuals(rows, fit=True) if (band := lookup(table, r))]


def print_table(rows: list[Row], *, fit: bool) -> None:
    """One role's rows: n, median and p90 |error|, median signed error, slope and band coverage by regime."""
    items = residuals(rows, fit=fit)
    cover = coverage_by_regime(band_inside(rows, fit=fit), {"all": lambda r: True, **REGIMES})
    print(f"{'fit' if fit else 'check'} rows (calibration_cases.fit_run_ids split)")
    print(
        f"{'regime':14s} {'rows':>4s} {'|e| med':>8s} {'|e| p90':>8s} {'signed':>8s} {'pp/doubl':>8s}"
        f" {'in band':>12s} {'half-w':>7s}"
    )
    for name, test in {"all": lambda r: True, **REGIMES}.items():
        inside, n, half = cover[name]
        share = f"{inside:3d}/{n:<3d} {100 * inside / n:3.0f}% {100 * half:6.1f}%" if n else "-"
        print(f"{name:14s} {summary([(r, e) for r, e in items if test(r)])} {share:>20s}")


def fit_scale(rows: list[Row]) -> tuple[float, float]:
    """(PP_CHUNK_FIXED_S, STRAGGLER_CV) on the grid minimising the fit rows' median |error|."""
    saved = timing.PP_CHUNK_FIXED_S, timing.STRAGGLER_CV
    best: tuple[float, float, float] | None = None
    try:
        for chunk in CHUNK_GRID_S:
            for cv in CV_GRID:
                timing.PP_CHUNK_FIXED_S, timing.STRAGGLER_CV = chunk, cv
                items = residuals(rows, fit=True)
                med = statistics.median(abs(e) for _, e in items)
                print(f"chunk {1e3 * chunk:4.2f} ms  cv {100 * cv:4.2f} %   {summary(items)}")
                if best is None or med < best[0]:
                    best = (med, chunk, cv)
    finally:
        timing.PP_CHUNK_FIXED_S, timing.STRAGGLER_CV = saved
    assert best is not None
    return best[1], best[2]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fit", action="store_true", help="report the fit rows only")
    parser.add_argument("--rows", action="store_true", help="print every row's error")
    parser.add_argument("--fit-scale", action="store_true", help="fit the chunk cost and straggler spread")
    args = parser.parse_args()
    if args.fit_scale:
        chunk, cv = fit_scale(all_rows())
        print(f"fitted: PP_CHUNK_FIXED_S = {chunk:g} s, STRAGGLER_CV = {cv:g}")
        return
    rows = all_rows()
    print_table(rows, fit=True)
    if args.fit:
        return
    print()
    print_table(rows, fit=False)
    items = residuals(rows, fit=False)
    if args.rows:
        for r, e in sorted(items, key=lambda t: t[0].gpus):
            print(
                f"  {r.run_id:28s} {r.family:9s} {r.precision:6s} {'moe' if r.moe else '   '} "
                f"{r.gpus:6d} {100 * e:+7.1f}%"
            )


if __name__ == "__main__":
    main()
