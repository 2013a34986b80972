"""The training engine's calibration residuals by regime, and the memory headroom, with an out-of-fold check.

    .venv/bin/python bench/calibration_regimes.py [--write]

Every measured run the engine predicts, in tests/engine/data/runs.csv (dense A100/H100, the calibration set)
and runs_frontier.csv (MoE, FP8, Blackwell, long context, ≥ 1,024 GPUs), gives a signed residual
e = predicted / measured − 1 (TFLOP/s per GPU, or tokens/s per GPU where a frontier row measured it: one
layout, one step, the same ratio). A row whose regime has a fitted factor (timing.REGIME_EFFICIENCY, by
bench/calibration_fit.py on the declared fit rows) and that the factor was fitted on takes its residual
under the factor fitted on the other half (the check rows): every residual is out of sample. Rows are
grouped by regime, ``family/precision/kind/context/scale``, and by the coarser keys an estimate falls back
to when its own regime has fewer than MIN_ROWS rows (``engine/error_band.py``, ``band_keys``). For each key
the table holds the row count and the 10th, 50th and 90th percentiles of e: an estimate's error band is its
point estimate divided by (1 + p90) … (1 + p10).

Out-of-fold check: the rows of each key are dealt into K folds by run_id order; the percentiles fitted on
K − 1 folds are checked on the held-out fold (how many held-out residuals fall inside [p10, p90], target
about 80 %; and the held-out median |e|).

Memory headroom: on the rows with measured memory (the BLOOM prequel sweeps, read off nvidia-smi), the
engine's signed error e_mem = predicted / measured − 1. A run fits when measured ≤ capacity, i.e. when
predicted ≤ capacity · (1 + e_mem); so keeping the fraction h = −p10(e_mem) of capacity free lets 90 % of
such runs fit. Checked out of fold the same way (held-out rows with e_mem ≥ −h).

``--write`` regenerates clusterdesigner/engine/error_band_table.py; tests/engine/test_error_band.py fails
when that table no longer matches what this script computes (the engine or the CSVs changed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

from calibration_cases import Case, all_cases  # noqa: E402
from calibration_fit import FITTED, Row, all_rows, fit_factor, regime_factor  # noqa: E402

from clusterdesigner.engine.error_band import ANY, MIN_ROWS, band_keys, regime_key  # noqa: E402

TABLE = ROOT / "clusterdesigner" / "engine" / "error_band_table.py"
FOLDS = 5
DIGITS = 4


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


def residuals_by_key(residuals: list[tuple[Row, float]]) -> dict[str, list[tuple[str, float]]]:
    """{key: [(run_id, e)]} for every key a row counts under (its regime and each coarser key)."""
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for row, e in residuals:
        for key in band_keys(row_regime(row)):
            groups[key].append((row.run_id, e))
    return groups


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


def band_check(items: list[tuple[str, float]]) -> dict[str, float]:
    inside = total = 0
    held_out: list[float] = []
    for fit, check in folds(items):
        lo, hi = percentile(fit, 0.1), percentile(fit, 0.9)
        inside += sum(lo <= e <= hi for e in check)
        total += len(check)
        held_out += [abs(e) for e in check]
    return {"coverage": inside / total, "median_abs": statistics.median(held_out)}


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
    bands: dict[str, tuple[int, float, float, float]] = {}
    checks: dict[str, dict[str, float]] = {}
    residuals = out_of_sample_residuals(rows)
    single_precision = single_precision_family_keys(residuals)
    for key, items in sorted(residuals_by_key(residuals).items()):
        if len(items) < MIN_ROWS or key in single_precision:
            continue
        values = [e for _, e in items]
        bands[key] = (
            len(values),
            round(percentile(values, 0.1), DIGITS),
            round(percentile(values, 0.5), DIGITS),
            round(percentile(values, 0.9), DIGITS),
        )
        checks[key] = band_check(items)
    memory = memory_residuals(cases)
    headroom = round(-percentile([e for _, e in memory], 0.1), 3)
    return {
        "bands": bands,
        "checks": checks,
        "memory_rows": len(memory),
        "memory_headroom": headroom,
        "memory_median_abs": statistics.median(abs(e) for _, e in memory),
        "headroom_coverage": headroom_check(memory),
    }


def render(result: dict[str, Any]) -> str:
    lines = [
        '"""Calibration residuals by regime and the memory headroom: GENERATED by',
        "``bench/calibration_regimes.py --write`` from tests/engine/data/runs.csv and runs_frontier.csv (see",
        "that script for the method); tests/engine/test_error_band.py fails when this no longer matches. Do",
        "not edit by hand.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "# key: (rows, p10, median, p90) of e = predicted / measured − 1, TFLOP/s or tokens/s per GPU.",
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
    print(
        f"{'regime':40s} {'rows':>4s} {'p10':>7s} {'median':>7s} {'p90':>7s}   "
        f"{'out-of-fold: in band':>20s} {'median |e|':>10s}"
    )
    for key, (n, p10, p50, p90) in result["bands"].items():
        check = result["checks"][key]
        print(
            f"{key:40s} {n:4d} {100 * p10:+6.1f}% {100 * p50:+6.1f}% {100 * p90:+6.1f}%   "
            f"{100 * check['coverage']:19.0f}% {100 * check['median_abs']:9.1f}%"
        )
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
