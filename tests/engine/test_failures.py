"""Interruptions, Young/Daly checkpoint interval and goodput."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterdesigner.engine.cost.failures import (
    INTERRUPTIONS_PER_GPU_DAY,
    failure_model,
    goodput_fraction,
    young_daly_interval_s,
)


def test_young_daly_interval_by_hand() -> None:
    # δ = 60 s, M = 24 h = 86,400 s: τ = √(2 × 60 × 86,400) = √10,368,000 = 3,219.94 s = 53.67 min.
    assert young_daly_interval_s(checkpoint_write_s=60, mtbi_s=86_400) == pytest.approx(3219.94, abs=0.01)


def test_llama3_rate_reproduces_its_interruptions() -> None:
    # Llama 3: 419 unexpected interruptions in 54 days on 16,384 GPUs (arXiv:2407.21783 Sec. 3.3.4).
    # 16,384 GPUs × rate = 419 / 54 = 7.759 per day; MTBI = 24 / 7.759 = 3.093 h.
    f = failure_model(
        gpus=16_384,
        nodes=2048,
        failures_per_gpu_day=INTERRUPTIONS_PER_GPU_DAY,
        preemptions_per_node_day=0.0,
        checkpoint_write_s=60,
        restart_minutes=10,
        run_days=54,
    )
    assert f.interruptions_per_day == pytest.approx(419 / 54)
    assert f.mtbi_hours == pytest.approx(24 * 54 / 419)
    # τ* = √(2 × 60 × 11,135.08 s) = 1,155.9 s = 19.27 min.
    assert f.optimal_interval_minutes == pytest.approx(math.sqrt(2 * 60 * 86_400 * 54 / 419) / 60)


def test_goodput_by_hand() -> None:
    # δ = 60 s, τ = 3,600 s, M = 36,000 s, R = 600 s: 1 − 60/3,600 − (1,800 + 600)/36,000 = 0.91667.
    assert goodput_fraction(
        checkpoint_write_s=60, interval_s=3600, mtbi_s=36_000, restart_s=600
    ) == pytest.approx(1 - 60 / 3600 - 2400 / 36_000)


def test_effective_days_and_expected_interruptions() -> None:
    f = failure_model(
        gpus=64,
        nodes=8,
        failures_per_gpu_day=0.001,
        preemptions_per_node_day=0.1,
        checkpoint_write_s=30,
        restart_minutes=10,
        run_days=10,
        interval_minutes=30,
    )
    # λ = 64 × 0.001 + 8 × 0.1 = 0.864 / day; M = 100,000 s.
    # goodput = 1 − 30/1,800 − (900 + 600)/100,000 = 0.968333; effective = 10 / 0.968333 = 10.327 days.
    assert f.interruptions_per_day == pytest.approx(0.864)
    assert f.goodput == pytest.approx(1 - 30 / 1800 - 1500 / 100_000)
    assert f.effective_days == pytest.approx(10 / f.goodput)
    assert f.expected_interruptions == pytest.approx(0.864 * 10 / f.goodput)


def test_no_interruptions_means_full_goodput_without_checkpoints() -> None:
    f = failure_model(
        gpus=8,
        nodes=1,
        failures_per_gpu_day=0.0,
        preemptions_per_node_day=0.0,
        checkpoint_write_s=30,
        restart_minutes=10,
        run_days=5,
    )
    assert f.goodput == 1.0 and f.effective_days == 5


@given(
    delta=st.floats(min_value=1, max_value=600),
    mtbi=st.floats(min_value=3600, max_value=1e7),
    scale=st.floats(min_value=0.2, max_value=5.0),
)
def test_young_daly_interval_maximises_first_order_goodput(delta: float, mtbi: float, scale: float) -> None:
    tau = young_daly_interval_s(checkpoint_write_s=delta, mtbi_s=mtbi)
    best = goodput_fraction(checkpoint_write_s=delta, interval_s=tau, mtbi_s=mtbi, restart_s=0)
    other = goodput_fraction(checkpoint_write_s=delta, interval_s=tau * scale, mtbi_s=mtbi, restart_s=0)
    assert best >= other - 1e-12
