"""The training engine's error bands by regime, built from held-out residuals, with their coverage on
unseen sources; and the memory headroom.

    .venv/bin/python bench/calibration_regimes.py [--write]

``--write`` regenerates clusterdesigner/engine/training/error_band_table.py (the one command to rerun after
the engine, its fitted constants or the CSVs change); tests/engine/test_error_band.py fails when that table no
longer matches what this script computes.

Residuals (issue 33 item 3: "bands built from residuals of rows the constants were fitted on do not hold").
Every measured run the engine predicts, in tests/engine/data/runs.csv and runs_frontier.csv, gives a signed
residual e = predicted / measured − 1 (TFLOP/s per GPU, or tokens/s per GPU where a frontier row measured
it). Only the CHECK rows enter a band: the declared split (``calibration_cases.fit_run_ids``, every other
row of a source in file order, fixed before any fit) gives every fitted constant (timing.REGIME_EFFICIENCY,
MOE_ROUTED_PASSES, FUSED_ATTENTION_SPEEDUP["blackwell"], bench/calibration_fit.py) its fit rows, and the
check rows are rows none of them saw. (The two family factors, timing.FAMILY_EFFICIENCY ampere 0.90 and
hopper 0.75, were fitted on all of runs.csv once; hopper was refitted 0.75 -> 0.81 on its 37 BF16 dense
fit rows only, and ampere under the same rule stays 0.90.)

Bands. Rows are grouped by regime, ``family/precision/kind/context/scale`` (engine/training/error_band.py
``regime_key``: scale ``ge512`` from 512 GPUs), and by the coarser keys an estimate falls back to
(``band_keys``). The method, and why (issue 33: "source-level error dominates"):

- The unit. Rows of one source share its stack, its measurement and the engine's error on them: a held-out
  source's rows share one offset, and an unseen published run is a row of a source not yet seen. Pooled
  quantiles of rows (the method before this one, even with each source weighing one) measure mostly the
  scatter within sources, so a source whose offset is outside them has all its rows outside together.
- The model: the one-way random-effects model of meta-analysis, on y = ln(1 + e) = ln(predicted /
  measured): y_ij = μ + u_i + ε_ij, the source's offset u_i ~ N(0, τ²) between sources and the row's
  scatter ε_ij ~ N(0, σ²) within one. On the log the engine's error is a sum of its factors' errors, and
  a factor too fast and one too slow by the same ratio are symmetric; a band on e is then asymmetric.
- The interval: a row of a new source is μ + u_new + ε_new, so its 80 % prediction interval is
  μ̂ ± t(0.90, s − 2) · √(τ² + σ² + SE(μ̂)²) on a key's s sources (Higgins, Thompson & Spiegelhalter 2009,
  J. R. Stat. Soc. A 172:137, the random-effects prediction interval, with σ² added because the unit
  predicted is one row, not a source's mean). The t on s − 2 degrees of freedom is the small-sample
  widening: 3.08 / 1.28 = 2.40 × z at three sources, 1.28 × at five, 1.04 × at twenty.
- The estimators (``random_effects``): σ² pooled within sources; τ² by REML, not DerSimonian–Laird, whose
  moment estimator runs low when studies are few (Veroniki et al. 2016, Res. Synth. Methods 7:55, who
  recommend REML); μ̂ the REML-weighted mean of the source means, the centre (the predictive median).
- Thin keys. A key is written with MIN_ROWS rows from MIN_SOURCES = 3 sources (t needs one degree of
  freedom); with fewer the regime falls back along ``band_keys``. τ² from three or four sources is so
  loose (its estimate is 0 whenever they happen to agree) that a narrow interval there is luck, not
  evidence: a key with fewer than THIN_SOURCES = 5 sources (the project's MIN_ROWS count, applied to the
  independent unit) keeps its own centre but takes the larger of its half-width and its nearest written
  ancestor's (``parent_key``), so a thin regime is never narrower than the broader evidence allows.
- A band is as wide as the sources disagree: wide where the engine is uncertain (MoE), and that is the
  honest answer. The method was fixed on these grounds before its coverage was computed; its coverage is
  reported, not tuned (a regime under 80 % stays an xfail in tests/engine/test_error_band.py).

Coverage (what the bench prints and tests/engine/test_error_band.py asserts): leave one source out. For
each source, the table is rebuilt from the other sources' check rows and each held-out check row of that
source is looked up as an estimate would (its regime, then the fallbacks); the share inside its band, per
named regime (dense, MoE, FP8, FP4, Hopper, Blackwell, AMD, ≥ 512 GPUs, long context, FSDP2), target ≥ 80 %,
with the median half-width (high − low) / 2 of those rows' bands beside it: a band that covers by being
±100 % everywhere is useless. A regime with no check row says so. ``--write`` also writes these figures
(error_band_table.COVERAGE), from which the test marks a regime under 80 % as a strict xfail.

Memory headroom: on the rows with measured memory (the BLOOM prequel sweeps, read off nvidia-smi), the
engine's signed error e_mem = predicted / measured − 1. A run fits when measured ≤ capacity, i.e. when
predicted ≤ capacity · (1 + e_mem); so keeping the fraction h = −p10(e_mem) of capacity free lets 90 % of
such runs fit. Checked out of fold (held-out rows with e_mem ≥ −h, rows dealt into FOLDS folds).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

from calibration_cases import Case, all_cases  # noqa: E402
from calibration_fit import FITTED, Row, all_rows, fit_factor, regime_factor  # noqa: E402

from clusterdesigner.engine.training.error_band import (  # noqa: E402
    ALL_ROWS,
    ANY,
    LONG_CONTEXT_TOKENS,
    MIN_ROWS,
    SCALE_GPUS,
    band_keys,
    regime_key,
)

TABLE = ROOT / "clusterdesigner" / "engine" / "training" / "error_band_table.py"
FOLDS = 5
DIGITS = 4
COVERAGE = 0.80  # the band's nominal coverage: the 10th to the 90th percentile
MIN_SOURCES = 3  # a key's own prediction interval needs t on s − 2 ≥ 1 degrees of freedom
THIN_SOURCES = 5  # below this many sources a key's half-width is never narrower than its parent's
REML_ITERATIONS = 500
VARIANCE_FLOOR = 1e-12  # v_i + τ² when every source agrees exactly and no source has two rows
# The regimes whose coverage is printed and tested (issue 33): a row may count in several.
REGIMES: dict[str, Callable[[Row], bool]] = {
    "dense": lambda r: not r.moe,
    "moe": lambda r: r.moe,
    "fp8": lambda r: "fp8" in r.precision,
    "fp4": lambda r: "fp4" in r.precision,
    "hopper": lambda r: r.family == "hopper",
    "blackwell": lambda r: r.family == "blackwell",
    "amd (cdna)": lambda r: r.family.startswith("cdna"),
    f">= {SCALE_GPUS} gpus": lambda r: r.gpus >= SCALE_GPUS,
    "long context (>= 32k)": lambda r: r.seq_len >= LONG_CONTEXT_TOKENS,
    "fsdp2": lambda r: r.framework == "fsdp2",
    "all": lambda r: True,
}


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def row_regime(row: Row) -> str:
    return regime_key(row.family, row.precision, row.moe, row.gpus, row.seq_len)


def out_of_sample_residuals(rows: list[Row]) -> list[tuple[Row, float]]:
    """(row, e) for every predicted row; a row a regime factor was fitted on is predicted with the factor
    fitted on the check rows of its regime."""
    crossed = {regime: fit_factor(regime, rows, on_fit_rows=False) for regime in FITTED}
    out = []
    for row in rows:
        if row.fit and row.dense_short and row.regime in crossed:
            with regime_factor(row.regime, crossed[row.regime]):
                e = row.error()
        else:
            e = row.error()
        if e is not None:
            out.append((row, e))
    return out


def check_residuals(rows: list[Row]) -> list[tuple[Row, float]]:
    """(row, e) for every predicted check row: rows no fitted constant was fitted on."""
    return [(row, e) for row in rows if not row.fit and (e := row.error()) is not None]


def residuals_by_key(residuals: list[tuple[Row, float]]) -> dict[str, list[tuple[str, float]]]:
    """{key: [(source, e)]} for every key a row counts under (its regime and each coarser key)."""
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for row, e in residuals:
        for key in band_keys(row_regime(row)):
            groups[key].append((row.source, e))
    return groups


def sources_in(items: list[tuple[str, float]]) -> int:
    return len({source for source, _ in items})


@dataclass(frozen=True)
class KeyFit:
    """One key's random-effects fit on y = ln(1 + e): rows, sources s, the centre μ (the weighted mean of
    the source means), τ² (between sources, REML), σ² (within a source, pooled) and SE(μ)², and the
    half-width h of the prediction interval μ ± h for one row of a source not in the key."""

    rows: int
    sources: int
    centre: float
    tau2: float
    sigma2: float
    se2: float
    half: float


def random_effects(items: list[tuple[str, float]]) -> KeyFit:
    """The prediction interval for one row of an unseen source from (source, y) pairs, y = ln(1 + e).

    σ² is the pooled within-source variance (Σ over sources of Σ (y − ȳ_i)², over Σ (n_i − 1); 0 when no
    source has two rows, and then τ² takes all the spread); a source mean ȳ_i has variance v_i = σ² / n_i.
    τ² by REML, the fixed point τ² = Σ w_i² ((ȳ_i − μ)² − v_i) / Σ w_i² + 1 / Σ w_i with w_i = 1 / (v_i + τ²)
    and μ = Σ w_i ȳ_i / Σ w_i (Viechtbauer 2005, J. Educ. Behav. Stat. 30:261), floored at 0.
    h = t(0.90, s − 2) · √(τ² + σ² + 1 / Σ w_i) (Higgins, Thompson & Spiegelhalter 2009, J. R. Stat. Soc.
    A 172:137, with σ² added because the unit predicted is one row, not a source's mean)."""
    by_source: dict[str, list[float]] = defaultdict(list)
    for source, y in items:
        by_source[source].append(y)
    if len(by_source) < MIN_SOURCES:
        raise ValueError(f"{len(by_source)} sources: a prediction interval needs {MIN_SOURCES}")
    means = [statistics.fmean(ys) for ys in by_source.values()]
    counts = [len(ys) for ys in by_source.values()]
    within_df = sum(n - 1 for n in counts)
    within_ss = sum((y - m) ** 2 for ys, m in zip(by_source.values(), means, strict=True) for y in ys)
    sigma2 = within_ss / within_df if within_df else 0.0
    v = [sigma2 / n for n in counts]
    tau2 = max(statistics.variance(means) - statistics.fmean(v), 0.0)
    for _ in range(REML_ITERATIONS):
        w = [1.0 / max(vi + tau2, VARIANCE_FLOOR) for vi in v]
        mu = sum(wi * m for wi, m in zip(w, means, strict=True)) / sum(w)
        step = sum(wi**2 * ((m - mu) ** 2 - vi) for wi, m, vi in zip(w, means, v, strict=True))
        updated = max(step / sum(wi**2 for wi in w) + 1.0 / sum(w), 0.0)
        converged = abs(updated - tau2) < 1e-12
        tau2 = updated
        if converged:
            break
    w = [1.0 / max(vi + tau2, VARIANCE_FLOOR) for vi in v]
    mu = sum(wi * m for wi, m in zip(w, means, strict=True)) / sum(w)
    se2 = 1.0 / sum(w)
    t = float(stats.t.ppf(0.5 + COVERAGE / 2, len(means) - 2))
    return KeyFit(len(items), len(means), mu, tau2, sigma2, se2, t * math.sqrt(tau2 + sigma2 + se2))


def parent_key(key: str) -> str | None:
    """The next coarser key in the tree the thin keys widen along: drop the scale, the context, the
    precision (a family's key), the family (a kind's key), the kind; ``None`` for all rows. It follows
    ``band_keys`` but for ``family/*/kind``, whose parent is the kind's key (its precision is gone)."""
    family, precision, kind, context, scale = key.split("/")
    if scale != ANY:
        return f"{family}/{precision}/{kind}/{context}/{ANY}"
    if context != ANY:
        return f"{family}/{precision}/{kind}/{ANY}/{ANY}"
    if family != ANY and precision != ANY:
        return f"{family}/{ANY}/{kind}/{ANY}/{ANY}"
    if family != ANY or precision != ANY:
        return f"{ANY}/{ANY}/{kind}/{ANY}/{ANY}"
    return None if kind == ANY else ALL_ROWS


def band_of(fit: KeyFit, half: float) -> tuple[int, float, float, float]:
    """(rows, low, centre, high) of e = expm1(y): expm1(μ − half), expm1(μ), expm1(μ + half)."""
    return (
        fit.rows,
        round(math.expm1(fit.centre - half), DIGITS),
        round(math.expm1(fit.centre), DIGITS),
        round(math.expm1(fit.centre + half), DIGITS),
    )


def bands_from(residuals: list[tuple[Row, float]]) -> dict[str, tuple[int, float, float, float]]:
    """The table: every key with at least MIN_ROWS rows from MIN_SOURCES sources (but a family key whose
    rows share one precision), its band the random-effects prediction interval of ``random_effects``; a key
    with fewer than THIN_SOURCES sources keeps its centre and takes the larger of its half-width and its
    nearest written ancestor's (``parent_key``; resolved coarsest first, so the ancestor's is final)."""
    single_precision = single_precision_family_keys(residuals)
    fits = {
        key: random_effects([(source, math.log1p(e)) for source, e in items])
        for key, items in residuals_by_key(residuals).items()
        if len(items) >= MIN_ROWS and sources_in(items) >= MIN_SOURCES and key not in single_precision
    }
    halves: dict[str, float] = {}
    for key in sorted(fits, key=lambda k: (-k.count(ANY), k)):
        half = fits[key].half
        ancestor = parent_key(key)
        while ancestor is not None and ancestor not in fits:
            ancestor = parent_key(ancestor)
        if fits[key].sources < THIN_SOURCES and ancestor is not None:
            half = max(half, halves[ancestor])
        halves[key] = half
    return {key: band_of(fits[key], halves[key]) for key in sorted(fits)}


def lookup(table: dict[str, tuple[int, float, float, float]], row: Row) -> tuple[str, float, float] | None:
    """(key, low, high) of the band an estimate of ``row``'s regime would take from ``table`` (band_for)."""
    for key in band_keys(row_regime(row)):
        if key in table:
            _, low, _, high = table[key]
            return key, low, high
    return None


# (row, inside its band, the band's half-width (high − low) / 2 in e) for one judged row.
Judged = tuple[Row, bool, float]


def judged(row: Row, e: float, band: tuple[str, float, float]) -> Judged:
    _, low, high = band
    return row, low <= e <= high, (high - low) / 2


def source_out_inside(residuals: list[tuple[Row, float]]) -> list[Judged]:
    """(row, inside, half-width) for each check row that has a band: its residual against the table built
    from the check rows of every other source (leave one source out)."""
    out = []
    for source in sorted({row.source for row, _ in residuals}):
        table = bands_from([(r, e) for r, e in residuals if r.source != source])
        for row, e in residuals:
            if row.source == source and (band := lookup(table, row)) is not None:
                out.append(judged(row, e, band))
    return out


def coverage_by_regime(
    inside: list[Judged], regimes: Mapping[str, Callable[[Row], bool]]
) -> dict[str, tuple[int, int, float]]:
    """{regime: (rows inside their band, rows, median half-width of their bands)} over ``inside`` (a row
    may count in several regimes; the half-width is nan without rows). A band that covers by being wide
    everywhere is useless: the width is printed beside the coverage."""
    out = {}
    for name, member in regimes.items():
        mine = [(flag, half) for row, flag, half in inside if member(row)]
        width = statistics.median(half for _, half in mine) if mine else math.nan
        out[name] = (sum(flag for flag, _ in mine), len(mine), width)
    return out


def source_out_coverage(residuals: list[tuple[Row, float]]) -> dict[str, tuple[int, int, float]]:
    """{regime: (inside, rows, median half-width)}: each source's check rows against the table built
    without that source."""
    return coverage_by_regime(source_out_inside(residuals), REGIMES)


def single_precision_family_keys(residuals: list[tuple[Row, float]]) -> set[str]:
    """The ``family/*/kind/*/*`` keys whose rows all share one precision. Such a key would stand for the
    family's other precisions with rows of one (CDNA3's five FP8 MI325X LoRA rows, about ±2 %, for a BF16
    estimate on the mean factor), so it is left out and a regime without rows of its own falls back to every
    family at its precision instead."""
    precisions: dict[str, set[str]] = defaultdict(set)
    for row, _ in residuals:
        family, precision, kind, _, _ = row_regime(row).split("/")
        precisions[f"{family}/{ANY}/{kind}/{ANY}/{ANY}"].add(precision)
    return {key for key, seen in precisions.items() if len(seen) == 1}


def memory_residuals(cases: list[Case]) -> list[tuple[str, float]]:
    return sorted((c.row["run_id"], e) for c in cases if (e := c.memory_error) is not None)


def folds(items: list[tuple[str, float]]) -> list[tuple[list[float], list[float]]]:
    """(fit, check) residual lists, K folds dealt in run_id order."""
    ordered = sorted(items)
    out = []
    for k in range(FOLDS):
        check = [e for i, (_, e) in enumerate(ordered) if i % FOLDS == k]
        fit = [e for i, (_, e) in enumerate(ordered) if i % FOLDS != k]
        if check and fit:
            out.append((fit, check))
    return out


def headroom_check(items: list[tuple[str, float]]) -> float:
    covered = total = 0
    for fit, check in folds(items):
        h = -percentile(fit, 0.1)
        covered += sum(e >= -h for e in check)
        total += len(check)
    return covered / total


def compute(cases: list[Case] | None = None, rows: list[Row] | None = None) -> dict[str, Any]:
    cases = cases if cases is not None else all_cases()
    rows = rows if rows is not None else all_rows()
    residuals = check_residuals(rows)
    memory = memory_residuals(cases)
    headroom = round(-percentile([e for _, e in memory], 0.1), 3)
    return {
        "bands": bands_from(residuals),
        "coverage": source_out_coverage(residuals),
        "sources": len({row.source for row, _ in residuals}),
        "memory_rows": len(memory),
        "memory_headroom": headroom,
        "memory_median_abs": statistics.median(abs(e) for _, e in memory),
        "headroom_coverage": headroom_check(memory),
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        '"""Error bands by regime (check rows only) and the memory headroom: GENERATED by',
        "``bench/calibration_regimes.py --write`` from tests/engine/data/runs.csv and runs_frontier.csv (see",
        "that script for the method); tests/engine/test_error_band.py fails when this no longer matches. Do",
        "not edit by hand.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import math",
        "",
        "# key: (check rows, low, centre, high) of e = predicted / measured − 1, TFLOP/s or tokens/s per",
        "# GPU: the 80 % random-effects prediction interval for a row of a source not in the key (sources",
        "# between and rows within, on ln(1 + e)); a key with few sources at least as wide as its parent.",
        "BANDS: dict[str, tuple[int, float, float, float]] = {",
    ]
    for key, (n, p10, p50, p90) in result["bands"].items():
        lines.append(f'    "{key}": ({n}, {p10!r}, {p50!r}, {p90!r}),')
    lines += [
        "}",
        "# regime: (held-out check rows inside their band, check rows, median half-width of those",
        "# bands), each source left out in turn (the bench's coverage; tests/engine/test_error_band.py",
        "# marks a regime under 80 % as a strict xfail from this line).",
        "COVERAGE: dict[str, tuple[int, int, float]] = {",
    ]
    for name, (inside, n, half) in result["coverage"].items():
        lines.append(f'    "{name}": ({inside}, {n}, {round(half, DIGITS) if n else "math.nan"}),')
    lines += [
        "}",
        f"# −p10 of the engine's memory error on the {result['memory_rows']} rows with measured memory.",
        f"MEMORY_HEADROOM = {result['memory_headroom']!r}",
        f"MEMORY_ROWS = {result['memory_rows']}",
        "",
    ]
    return "\n".join(lines)


def focus_regimes(rows: list[Row] | None = None) -> dict[str, list[tuple[Row, float]]]:
    """Issue 19's two thin regimes, from the out-of-sample residuals: AMD (CDNA families) and ≥ 1,024 GPUs."""
    residuals = out_of_sample_residuals(rows if rows is not None else all_rows())
    return {
        "amd (cdna*)": [(r, e) for r, e in residuals if r.family.startswith("cdna")],
        ">= 1,024 GPUs": [(r, e) for r, e in residuals if r.gpus >= 1024],
    }


def print_focus_regimes() -> None:
    title = "regime (fit rows of a fitted factor: out of sample)"
    print(f"\n{title:60s} rows  median |e|  median e   fit/check")
    for name, items in focus_regimes().items():
        if not items:
            print(f"  {name:58s} {0:5d}           -          -")
            continue
        errors = [e for _, e in items]
        fit = sum(r.fit for r, _ in items)
        print(
            f"  {name:58s} {len(items):5d} {100 * statistics.median(abs(e) for e in errors):9.1f}% "
            f"{100 * statistics.median(errors):+9.1f}%   {fit}/{len(items) - fit}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help=f"write {TABLE.relative_to(ROOT)}")
    args = parser.parse_args()
    result = compute()
    print(f"{'key (check rows only)':40s} {'rows':>4s} {'low':>7s} {'median':>7s} {'high':>7s}")
    for key, (n, low, median, high) in result["bands"].items():
        print(f"{key:40s} {n:4d} {100 * low:+6.1f}% {100 * median:+6.1f}% {100 * high:+6.1f}%")
    print(
        f"\ncoverage of the 80 % band on held-out check rows, leaving out one source at a time "
        f"({result['sources']} sources; target >= 80 % per regime):"
    )
    for name, (inside, n, half) in result["coverage"].items():
        share = f"{100 * inside / n:5.0f} %   median half-width {100 * half:5.1f} %" if n else "no check row"
        print(f"  {name:24s} {inside:4d} / {n:<4d} {share}")
    print_focus_regimes()
    print(
        f"\nmemory: {result['memory_rows']} rows, median |error| {100 * result['memory_median_abs']:.1f} %; "
        f"headroom −p10 = {result['memory_headroom']:.3f} of capacity; out of fold, "
        f"{100 * result['headroom_coverage']:.0f} % of held-out rows fit within it (target 90 %)"
    )
    if args.write:
        TABLE.write_text(render(result))
        print(f"wrote {TABLE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
