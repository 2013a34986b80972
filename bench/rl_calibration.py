"""Print the RL engine's step time against published RL runs, then the error per split.

    .venv/bin/python bench/rl_calibration.py

Rows: tests/engine/data/rl_runs.csv (NVIDIA NeMo RL's performance summary, GRPO, H100 and GB200);
tests/engine/rl_calibration_cases.py says how each row becomes a request. One engine constant is fitted
on the fit rows, rl.FRAMEWORK_FACTOR (geometric mean of measured / predicted with the factor 1): printed
refitted here, then the engine's error as it runs, on the fit rows (not a test) and the check rows.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

import rl_calibration_cases as cal  # noqa: E402


def main() -> None:
    kwargs = cal.catalog()
    started = time.perf_counter()
    bare = [cal.predict(row, kwargs, factor=1.0) for row in cal.rows() if row["split"] == "fit"]
    refit = cal.fitted_scale(bare)
    print(f"framework factor refitted on the fit rows: {refit:.3f} (engine: {cal.rl.FRAMEWORK_FACTOR})")
    print(f"fit rows with the factor 1: median |error| {cal.median_abs_error(bare):.0%}")
    cases = [cal.predict(row, kwargs) for row in cal.rows()]
    print(f"{'row':34} {'split':5} {'placement':13} {'measured s':>10} {'engine s':>9} {'error':>7}")
    for c in cases:
        shown = "   none" if c.predicted_s is None else f"{c.predicted_s:9.1f} {c.error:+7.0%}"
        print(f"{c.row['id']:34} {c.row['split']:5} {c.placement:13} {c.measured_s:10.1f} {shown}")
    for name, label in (("fit", "FIT rows (the factor was fitted on these: not a test)"), ("check", "CHECK")):
        chosen = [c for c in cases if c.row["split"] == name]
        errors = [c.error for c in chosen if c.error is not None]
        print(
            f"{label}: {len(chosen)} rows, {len(chosen) - len(errors)} without a placement; median |error| "
            f"{cal.median_abs_error(chosen):.0%}, worst {max(errors, key=abs):+.0%}"
        )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
