"""Fit the training engine's per-regime calibration factors on the declared fit rows; report the check rows.

    .venv/bin/python bench/calibration_fit.py

Issue 19 item 7 (calibration by regime). A regime factor replaces the accelerator family's calibration factor
for one (family, precision) (clusterdesigner/engine/training/timing.py, REGIME_EFFICIENCY). Its rows are the
dense models under 32K tokens of that family and precision in tests/engine/data/runs.csv and runs_frontier.csv
(MoE rows carry the all-to-all and gather errors of issue 19 items 1-2, long-context rows their own; neither
is a matmul-rate question). The split is declared, not chosen: ``calibration_cases.fit_run_ids``, every
other row of a source in file order. The factor is the one that makes the median signed error of the FIT
rows zero (bisection, rounded to 0.01); the error is then reported on the CHECK rows, which never enter the
fit. tests/engine/test_calibration_fit.py fails when timing.REGIME_EFFICIENCY no longer equals the fit.

Regimes without rows (AMD CDNA BF16, Blackwell BF16) are not fitted: they keep the mean of the fitted
families and their error bands say how few rows stand behind them.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

import calibration_cases  # noqa: E402
import frontier_cases  # noqa: E402

from clusterdesigner.engine.training import timing  # noqa: E402
from clusterdesigner.engine.training.error_band import LONG_CONTEXT_TOKENS  # noqa: E402
from clusterdesigner.engine.training.precision import recipe_for  # noqa: E402

# The regimes fitted: (family, precision). Hopper FP8: NeMo 24.07/25.02/25.09, llm-foundry, MLPerf GPT-3 and
# llama2_70b_lora H100/H200 FP8 rows; Blackwell FP8: NeMo 25.02/25.04/25.09 B200 and GB200 rows and MLPerf
# llama2_70b_lora B200; AMD CDNA 3 FP8 (MI325X) and CDNA 4 FP8 (MI355X): MLPerf Training v5.0/v5.1
# llama2_70b_lora and llama31_8b rows (every AMD submission in these rounds is FP8).
FITTED: tuple[tuple[str, str], ...] = (
    ("hopper", "fp8"),
    ("blackwell", "fp8"),
    ("cdna3", "fp8"),
    ("cdna4", "fp8"),
)


@dataclass(frozen=True)
class Row:
    """One measured run of either CSV, with what decides its regime and its split."""

    csv: str
    run_id: str
    source: str
    family: str
    precision: str
    moe: bool
    seq_len: int
    gpus: int
    fit: bool
    error: Callable[[], float | None]
    framework: str = "megatron-core"

    @property
    def regime(self) -> tuple[str, str]:
        return (self.family, self.precision)

    @property
    def dense_short(self) -> bool:
        return not self.moe and self.seq_len < LONG_CONTEXT_TOKENS


def _runs_rows() -> Iterator[Row]:
    rows = calibration_cases.load_runs()
    fit = calibration_cases.fit_run_ids(rows)
    for r in rows:
        request, _ = calibration_cases.request_for(r)
        if request is None:
            continue
        acc = calibration_cases.ACCELERATORS[request["cluster"]["accelerator"]]

        def error(r: dict[str, str] = r) -> float | None:
            return calibration_cases.predict(r).tflops_error

        yield Row(
            "runs.csv",
            r["run_id"],
            r["source_id"],
            acc.family,
            request["training"]["precision"],
            False,
            int(r["seq_len"]),
            int(r["num_gpus"]),
            r["run_id"] in fit,
            error,
            request["training"].get("framework", "megatron-core"),
        )


def _frontier_rows() -> Iterator[Row]:
    rows = frontier_cases.load_rows()
    fit = calibration_cases.fit_run_ids(rows)
    specs = frontier_cases.catalog_specs()
    for r in rows:
        slug = frontier_cases.accelerator_slug(r["gpu_type"])
        if slug is None:
            continue
        request = frontier_cases.request_for(r)

        def error(r: dict[str, str] = r) -> float | None:
            return frontier_cases.predict(r, specs).error

        yield Row(
            "runs_frontier.csv",
            r["run_id"],
            r["source_id"],
            specs["accelerators"][slug].family,
            # The recipe's calibration regime: fp8_current and mxfp8 rows are FP8 rows of their family.
            recipe_for(request["training"]["precision"]).calibration_precision,
            bool(request["model"].get("experts")),
            int(r["seq_len"]),
            frontier_cases.run_gpus(r),
            r["run_id"] in fit,
            error,
            request["training"].get("framework", "megatron-core"),
        )


def all_rows() -> list[Row]:
    return [*_runs_rows(), *_frontier_rows()]


@contextmanager
def regime_factor(regime: tuple[str, str], value: float | None) -> Iterator[None]:
    """timing.REGIME_EFFICIENCY with ``regime`` set to ``value`` (None: removed) for the block."""
    saved = dict(timing.REGIME_EFFICIENCY)
    if value is None:
        timing.REGIME_EFFICIENCY.pop(regime, None)
    else:
        timing.REGIME_EFFICIENCY[regime] = value
    try:
        yield
    finally:
        timing.REGIME_EFFICIENCY.clear()
        timing.REGIME_EFFICIENCY.update(saved)


def errors(rows: list[Row]) -> list[float]:
    return [e for r in rows if (e := r.error()) is not None]


def fit_factor(regime: tuple[str, str], rows: list[Row], *, on_fit_rows: bool = True) -> float:
    """The factor (0.01 steps) whose median signed error on the fit rows of ``regime`` is closest to zero.

    The error rises with the factor (a faster matmul, a faster step), so bisection finds the root.
    ``on_fit_rows=False`` fits on the check rows instead: bench/calibration_regimes.py uses it to give the
    fit rows a residual out of fold (the engine's factor is always the one fitted on the fit rows)."""
    fit_rows = [r for r in rows if r.fit == on_fit_rows and r.regime == regime and r.dense_short]

    def median_error(value: float) -> float:
        with regime_factor(regime, value):
            return statistics.median(errors(fit_rows))

    lo, hi = 0.40, 1.20
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if median_error(mid) < 0 else (lo, mid)
    candidates = (round(lo, 2) - 0.01, round(lo, 2), round(lo, 2) + 0.01)
    return round(min(candidates, key=lambda v: abs(median_error(v))), 2)


def _stats(values: list[float]) -> str:
    if not values:
        return f"{'n=  0':>6s} {'-':>7s} {'-':>7s}"
    med = statistics.median(abs(e) for e in values)
    signed = statistics.median(values)
    return f"n={len(values):3d} {100 * med:6.1f}% {100 * signed:+6.1f}%"


def main() -> None:
    rows = all_rows()
    print("split: every other row of a source, in file order (calibration_cases.fit_run_ids)")
    print(
        f"{'regime':16s} {'engine':>7s} {'fitted':>7s}   {'fit rows: |e| med, signed':>28s}   "
        f"{'check rows before':>26s}   {'check rows after':>26s}"
    )
    for regime in FITTED:
        group = [r for r in rows if r.regime == regime and r.dense_short]
        fit_rows = [r for r in group if r.fit]
        check_rows = [r for r in group if not r.fit]
        value = fit_factor(regime, rows)
        with regime_factor(regime, None):
            before = errors(check_rows)
        with regime_factor(regime, value):
            after_fit, after_check = errors(fit_rows), errors(check_rows)
        current = timing.REGIME_EFFICIENCY.get(regime)
        print(
            f"{'/'.join(regime):16s} {current if current is not None else '-'!s:>7s} {value:7.2f}   "
            f"{_stats(after_fit):>28s}   {_stats(before):>26s}   {_stats(after_check):>26s}"
        )
        print(f"  fit rows: {', '.join(sorted({r.source for r in fit_rows}))}")


if __name__ == "__main__":
    main()
