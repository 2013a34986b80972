"""Interruptions, the optimal checkpoint interval and goodput.

First-order model: interruptions arrive as a Poisson process with mean time between interruptions M.
Each checkpoint blocks training for δ; each interruption loses on average half an interval of work plus a
restart time R. Goodput = 1 − δ/τ − (τ/2 + R)/M.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterdesigner.engine.core.errors import InputError

# Llama 3 405B pre-training: 419 unexpected interruptions in a 54-day snapshot on up to 16,384 H100 GPUs
# (Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.4 and Table 5).
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_SNAPSHOT_DAYS = 54.0
LLAMA3_GPUS = 16_384
INTERRUPTIONS_PER_GPU_DAY = LLAMA3_UNEXPECTED_INTERRUPTIONS / (LLAMA3_SNAPSHOT_DAYS * LLAMA3_GPUS)


def young_daly_interval_s(*, checkpoint_write_s: float, mtbi_s: float) -> float:
    """Optimal checkpoint interval τ = √(2 · δ · M).

    δ = time a checkpoint blocks training, M = mean time between interruptions. Young, "A first order
    approximation to the optimum checkpoint interval", CACM 17(9), 1974, eq. (8); Daly, FGCS 22(3), 2006
    gives the higher-order correction, negligible while δ ≪ M.
    """
    if checkpoint_write_s < 0:
        raise InputError("must be zero or more", field="storage.checkpoint_write_s")
    if mtbi_s <= 0:
        raise InputError("must be more than zero", field="failures.mtbi_hours")
    return math.sqrt(2.0 * checkpoint_write_s * mtbi_s)


def goodput_fraction(
    *, checkpoint_write_s: float, interval_s: float, mtbi_s: float, restart_s: float
) -> float:
    """1 − δ/τ − (τ/2 + R)/M, floored at 0: the fraction of wall-clock time that advances training.

    δ/τ is the time spent blocked on checkpoints; each interruption (rate 1/M) loses half an interval of
    work on average plus the restart time R (first-order, as in Young 1974).
    """
    if interval_s <= 0:
        raise InputError("must be more than zero", field="run.checkpoint_interval_minutes")
    lost = checkpoint_write_s / interval_s + (interval_s / 2.0 + restart_s) / mtbi_s
    return max(0.0, 1.0 - lost)


@dataclass(frozen=True)
class FailureResult:
    interruptions_per_day: float
    mtbi_hours: float
    optimal_interval_minutes: float
    interval_minutes: float
    goodput: float
    run_days: float | None
    effective_days: float | None
    expected_interruptions: float | None
    lost_days: float | None


def _uninterrupted(
    *, checkpoint_write_s: float, run_days: float | None, interval_minutes: float | None
) -> FailureResult:
    """Nothing interrupts the run: any checkpoint is pure overhead and the optimum is never."""
    interval = math.inf if interval_minutes is None else interval_minutes
    goodput = 1.0 - checkpoint_write_s / (interval * 60.0)
    return FailureResult(
        0.0,
        math.inf,
        math.inf,
        interval,
        goodput,
        run_days,
        None if run_days is None else run_days / goodput,
        None if run_days is None else 0.0,
        None if run_days is None else run_days / goodput - run_days,
    )


def failure_model(
    *,
    gpus: int,
    nodes: int,
    failures_per_gpu_day: float,
    preemptions_per_node_day: float,
    checkpoint_write_s: float,
    restart_minutes: float,
    run_days: float | None,
    interval_minutes: float | None = None,
) -> FailureResult:
    """Interruptions, Young/Daly interval, goodput and effective days for one run.

    rate per day λ = GPUs · failures per GPU-day + nodes · preemptions per node-day; M = 24 h / λ.
    τ* = √(2δM); goodput at the chosen interval (τ* when none is given); effective days = days / goodput;
    expected interruptions = λ · effective days.
    """
    rate = gpus * failures_per_gpu_day + nodes * preemptions_per_node_day
    if rate <= 0:
        return _uninterrupted(
            checkpoint_write_s=checkpoint_write_s, run_days=run_days, interval_minutes=interval_minutes
        )
    mtbi_s = 86_400.0 / rate
    tau = young_daly_interval_s(checkpoint_write_s=checkpoint_write_s, mtbi_s=mtbi_s)
    # A zero write time gives τ* = 0; checkpoint at least every minute in that limit.
    chosen_s = interval_minutes * 60.0 if interval_minutes is not None else max(tau, 60.0)
    goodput = goodput_fraction(
        checkpoint_write_s=checkpoint_write_s,
        interval_s=chosen_s,
        mtbi_s=mtbi_s,
        restart_s=restart_minutes * 60.0,
    )
    effective = None
    expected = None
    lost = None
    if run_days is not None:
        effective = run_days / goodput if goodput > 0 else math.inf
        expected = rate * effective
        lost = effective - run_days
    return FailureResult(
        interruptions_per_day=rate,
        mtbi_hours=mtbi_s / 3600.0,
        optimal_interval_minutes=tau / 60.0,
        interval_minutes=chosen_s / 60.0,
        goodput=goodput,
        run_days=run_days,
        effective_days=effective,
        expected_interruptions=expected,
        lost_days=lost,
    )
