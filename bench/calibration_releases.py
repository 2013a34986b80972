"""The training engine's error on the Megatron-Bridge performance summaries 25.11-26.08 (never fitted on).

    .venv/bin/python bench/calibration_releases.py [--rows]

tests/engine/data/runs_megatron_bridge.csv holds every pre-training row of NVIDIA-NeMo/Megatron-Bridge's
performance summaries for the NeMo containers 25.11, 26.02, 26.02.01, 26.04, 26.04.01, 26.06, 26.06.01 and
26.08 (docs/performance-summary.md and docs/performance-summary-archive.md at 4ab94dfad3, 2026-08-11): GB300,
GB200, B300, B200 and H100; Llama 3 and 3.1, DeepSeek-V3, GPT-OSS 120B, Qwen3, Kimi K2, Nemotron 3; BF16,
FP8, MXFP8, NVFP4. The engine's calibration rows stop at 25.09 (runs_frontier.csv); nothing is fitted here.

Each row is estimated with the printed layout (dp = GPUs / (tp · pp · cp)), batch, sequence and precision
recipe on the system's accelerator, and the engine inputs its Megatron-Bridge performance recipe sets
(dispatcher, overlaps, recompute, offload, pipeline layout: tests/engine/release_cases.py says what is read
and what the engine has no input for), MoE tokens force-balanced as the tables' note says. error =
predicted / measured − 1 on tokens/s per GPU. Prints the median signed and |error| and the p90 |error| of the
declared fit and check rows (release_cases.fit_run_ids: every other row of a release, in file order), then
by release, system, precision and model, with how many measured figures lie inside the 80 % error band the
engine reports beside each estimate (error_band_table.py, built from the 25.09-and-older check rows), and the
rows the engine cannot express with the reason.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

from frontier_cases import percentile  # noqa: E402
from release_cases import ReleaseCase, all_cases  # noqa: E402


def line(name: str, cases: list[ReleaseCase]) -> str:
    errors = [c.error for c in cases if c.error is not None]
    if not errors:
        return f"{name:22s} {0:4d}"
    mags = [abs(e) for e in errors]
    banded = [c.inside_band for c in cases if c.inside_band is not None]
    return (
        f"{name:22s} {len(errors):4d} {100 * statistics.median(errors):+8.1f}% "
        f"{100 * statistics.median(mags):7.1f}% {100 * percentile(mags, 0.9):7.1f}%"
        f" {sum(banded):4d}/{len(banded):<4d} {100 * sum(banded) / len(banded) if banded else 0:3.0f}%"
    )


def table(title: str, cases: list[ReleaseCase], key: Callable[[ReleaseCase], str]) -> None:
    print(f"\nby {title:18s} rows   signed  |e| med  |e| p90   in the 80 % band")
    for name in sorted({key(c) for c in cases}):
        print(line(name, [c for c in cases if key(c) == name]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", action="store_true", help="print every row's error")
    args = parser.parse_args()
    cases = all_cases()
    predicted = [c for c in cases if c.error is not None]
    print(f"{len(cases)} rows, {len(predicted)} predicted, {len(cases) - len(predicted)} not expressible")
    for role, fit in (("fit", True), ("check", False)):
        rows = [c for c in predicted if c.fit == fit]
        print(f"\n{role + ' rows':22s} rows   signed  |e| med  |e| p90   in the 80 % band")
        print(line("all", rows))
        print(line("dense", [c for c in rows if not c.moe]))
        print(line("moe", [c for c in rows if c.moe]))
    print("\nfit and check rows together:")
    table("release", predicted, lambda c: c.row["release"])
    table("system", predicted, lambda c: c.row["system"])
    table("precision", predicted, lambda c: c.recipe)
    table("model", predicted, lambda c: c.row["model"])
    print("\nnot expressible:")
    for why in sorted({c.skip for c in cases if c.skip}):
        n = sum(1 for c in cases if c.skip == why)
        print(f"  {n:3d} rows: {why}")
    if args.rows:
        print()
        for c in sorted(predicted, key=lambda c: c.error or 0.0):
            r = c.row
            print(
                f"  {'fit' if c.fit else 'chk'} {r['run_id']:44s} {r['num_gpus']:>5s} "
                f"tp{r['tp']} pp{r['pp']} cp{r['cp']} vp{r['vpp']} "
                f"ep{r['ep']} mb{r['micro_batch']} {c.recipe:12s} measured {r['tokens_per_s_per_gpu']:>6s} "
                f"predicted {c.predicted:8.0f} {100 * (c.error or 0.0):+6.1f}%"
                f"{'' if c.fits else '  (no fit)'}"
            )


if __name__ == "__main__":
    main()
