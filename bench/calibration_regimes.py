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
hopper 0.75, were fitted on all of runs.csv once: two numbers over 281 rows, the one exception.)

Bands. Rows are grouped by regime, ``family/precision/kind/context/scale`` (engine/training/error_band.py
``regime_key``: scale ``ge512`` from 512 GPUs), and by the coarser keys an estimate falls back to
(``band_keys``). Rows of one source share its stack, its measurement and the engine's error on them, so the
independent unit is the source, not the row: a key's quantiles are weighted so that each source counts
once (a row weighs 1 / its source's rows in the key), and the 10th-90th percentile half-widths about the
median are widened by the small-sample factor of a normal prediction interval on the number of sources s
in the key, k = t(0.90, s − 1) · √(1 + 1/s) / z(0.90) (s = 1: t on one degree of freedom; k is 3.40 at one
source, 1.31 at five, 1.06 at twenty). A key is written with at least MIN_ROWS rows.

Coverage (what the bench prints and tests/engine/test_error_band.py asserts): leave one source out. For
each source, the table is rebuilt from the other sources' check rows and each held-out check row of that
source is looked up as an estimate would (its regime, then the fallbacks); the share inside its band, per
named regime (dense, MoE, FP8, FP4, Hopper, Blackwell, AMD, ≥ 512 GPUs, long context, FSDP2), target ≥ 80 %.
A regime with no check row says so.

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
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

from calibration_cases import Case, all_cases  # noqa: E402
from calibration_fit import FITTED, Row, all_rows, fit_factor, regime_factor  # noqa: E402

from clusterdesigner.engine.training.error_band import (  # noqa: E402
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


def weighted_percentile(items: list[tuple[str, float]], q: float) -> float:
    """The q-quantile of the residuals with each source weighing one in all (a row 1 / its source's rows):
    the smallest residual whose cumulative weight reaches q of the total."""
    per_source = Counter(source for source, _ in items)
    pairs = sorted((e, 1.0 / per_source[source]) for source, e in items)
    total, seen = float(len(per_source)), 0.0
    for e, w in pairs:
        seen += w
        if seen >= q * total - 1e-9:
            return e
    return pairs[-1][0]


def widening(sources: int) -> float:
    """k = t(0.90, s − 1) · √(1 + 1/s) / z(0.90): a normal prediction interval's width on s sources over
    the width known exactly (one degree of freedom at s = 1)."""
    z = float(stats.norm.ppf(0.5 + COVERAGE / 2))
    t = float(stats.t.ppf(0.5 + COVERAGE / 2, max(sources - 1, 1)))
    return t * math.sqrt(1.0 + 1.0 / sources) / z


def band_of(items: list[tuple[str, float]]) -> tuple[int, float, float, float]:
    """(rows, low, median, high) of one key: the source-weighted median and 10th/90th percentiles, the
    half-widths about the median widened by ``widening`` on the key's sources."""
    median = weighted_percentile(items, 0.5)
    p10 = weighted_percentile(items, 0.5 - COVERAGE / 2)
    p90 = weighted_percentile(items, 0.5 + COVERAGE / 2)
    k = widening(len({source for source, _ in items}))
    return (
        len(items),
        round(median - k * (median - p10), DIGITS),
        round(median, DIGITS),
        round(median + k * (p90 - median), DIGITS),
    )


def bands_from(residuals: list[tuple[Row, float]]) -> dict[str, tuple[int, float, float, float]]:
    """The table: every key with at least MIN_ROWS rows, but a family key whose rows share one precision."""
    single_precision = single_precision_family_keys(residuals)
    return {
        key: band_of(items)
        for key, items in sorted(residuals_by_key(residuals).items())
        if len(items) >= MIN_ROWS and key not in single_precision
    }


def lookup(table: dict[str, tuple[int, float, float, float]], row: Row) -> tuple[str, float, float] | None:
    """(key, low, high) of the band an estimate of ``row``'s regime would take from ``table`` (band_for)."""
    for key in band_keys(row_regime(row)):
        if key in table:
            _, low, _, high = table[key]
            return key, low, high
    return None


def source_out_inside(residuals: list[tuple[Row, float]]) -> list[tuple[Row, bool]]:
    """(row, inside) for each check row that has a band: its residual against the table built from the
    check rows of every other source (leave one source out)."""
    out = []
    for source in sorted({row.source for row, _ in residuals}):
        table = bands_from([(r, e) for r, e in residuals if r.source != source])
        for row, e in residuals:
            if row.source == source and (band := lookup(table, row)) is not None:
                out.append((row, band[1] <= e <= band[2]))
    return out


def coverage_by_regime(
    inside: list[tuple[Row, bool]], regimes: Mapping[str, Callable[[Row], bool]]
) -> dict[str, tuple[int, int]]:
    """{regime: (rows inside their band, rows)} over ``inside`` (a row may count in several regimes)."""
    return {
        name: (sum(flag for row, flag in inside if member(row)), sum(1 for row, _ in inside if member(row)))
        for name, member in regimes.items()
    }


def source_out_coverage(residuals: list[tuple[Row, float]]) -> dict[str, tuple[int, int]]:
    """{regime: (inside, rows)}: each source's check rows against the table built without that source."""
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
        "# key: (check rows, low, median, high) of e = predicted / measured − 1, TFLOP/s or tokens/s per",
        "# GPU: source-weighted median and 10th/90th percentiles, widened on the key's sources (80 % band).",
        "BANDS: dict[str, tuple[int, float, float, float]] = {",
    ]
    for key, (n, p10, p50, p90) in result["bands"].items():
        lines.append(f'    "{key}": ({n}, {p10!r}, {p50!r}, {p90!r}),')
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
    for name, (inside, n) in result["coverage"].items():
        share = f"{100 * inside / n:5.0f} %" if n else "no check row"
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
