"""Print the training engine's calibration against measured runs: one line per row, then the summary.

    .venv/bin/python bench/calibration.py [--source SOURCE_ID] [--worst N]

Each row of tests/engine/data/runs.csv is predicted with its stated layout (tests/engine/calibration_cases.py
says what is assumed where a row is silent) and compared on the row's basis: model FLOPs or hardware FLOPs
incl. recompute, TFLOP/s per GPU. Targets (issue 3): median |error| ≤ 10 %, 90th percentile ≤ 25 %, every
BLOOM fit/OOM verdict right, BLOOM measured memory within 15 %.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

from calibration_cases import Case, all_cases, summary  # noqa: E402
from memory_fsdp2_cases import all_memory_cases, memory_medians  # noqa: E402


def _fmt(value: float | None, spec: str) -> str:
    return format(value, spec) if value is not None else "-"


def line(c: Case) -> str:
    r = c.row
    layout = f"tp{r['tp'] or '-'} pp{r['pp'] or '-'} dp{r['dp'] or '-'} mb{r['micro_batch'] or '-'}"
    err = c.tflops_error
    mem_err = c.memory_error
    mem_meas = "OOM" if c.measured_oom else _fmt(c.measured_mem_gib, ".0f")
    fits = "" if c.predicted_fits is None else ("fits" if c.predicted_fits else "OOM")
    return (
        f"{r['run_id'][:44]:44s} {r['model_name'][:18]:18s} {r['num_gpus']:>5s} {layout:24s} "
        f"{r['recompute'][:4]:4s} {c.basis[:5]:5s} {_fmt(c.measured_tflops, '7.1f'):>7s} "
        f"{_fmt(c.predicted_tflops, '7.1f'):>7s} {_fmt(err and 100 * err, '+6.1f'):>6s}%  "
        f"{mem_meas:>4s} {_fmt(c.predicted_mem_gib, '5.1f'):>5s} {fits:4s} "
        f"{_fmt(mem_err and 100 * mem_err, '+5.1f'):>5s}" + (f"  [{c.skip}]" if c.skip else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", help="only rows of this source_id")
    parser.add_argument("--worst", type=int, default=0, help="only the N rows with the largest |error|")
    args = parser.parse_args()
    cases = all_cases()
    shown = [c for c in cases if not args.source or c.row["source_id"] == args.source]
    if args.worst:
        shown = sorted(shown, key=lambda c: -abs(c.tflops_error or 0.0))[: args.worst]
    print(
        f"{'run':44s} {'model':18s} {'gpus':>5s} {'layout':24s} {'rc':4s} {'basis':5s} {'meas':>7s} "
        f"{'pred':>7s} {'err':>7s}  {'mem':>4s} {'pred':>5s} {'':4s} {'err%':>5s}"
    )
    for c in shown:
        print(line(c))
    s = summary(cases)
    print()
    print(f"rows: {s['rows']}; TFLOP/s compared: {s['tflops_compared']}; skipped: {s['skipped']}")
    print(
        f"median |error| {100 * s['median_abs_error']:.1f} % (target ≤ 10 %), "
        f"p90 |error| {100 * s['p90_abs_error']:.1f} % (target ≤ 25 %)"
    )
    print(
        f"BLOOM fit/OOM verdicts: {s['bloom_verdicts'] - len(s['bloom_verdicts_wrong'])}/"
        f"{s['bloom_verdicts']} "
        f"right {s['bloom_verdicts_wrong'] or ''}; BLOOM memory: {s['bloom_memory_compared']} rows, "
        f"max |error| {100 * s['bloom_memory_max_abs_error']:.1f} % (target ≤ 15 %)"
    )
    for source, v in s["by_source"].items():
        print(
            f"  {source:22s} n={v['n']:3d}  median error {100 * v['median_error']:+6.1f} %  "
            f"median |error| {100 * v['median_abs_error']:5.1f} %"
        )
    memory = all_memory_cases()
    medians = memory_medians(memory)
    print(
        f"memory median |error|: BLOOM {100 * medians['bloom']:.1f} %, torchtitan FSDP2 "
        f"{100 * medians['fsdp2']:.1f} % ({len(memory)} rows, {sum(c.fits for c in memory)} predicted to "
        f"fit), "
        f"both {100 * medians['both']:.1f} % (target ≤ 10 %)"
    )


if __name__ == "__main__":
    main()
