"""A user's own calibration (engine/training/user_calibration.py): the factor from three runs by hand, the
leave-one-out band by hand, out-of-fold coverage on a synthetic set whose true factor is known, and the
estimate calibrated (or left object for object when switched off)."""

from __future__ import annotations

import math
import random

import pytest

from clusterdesigner.engine.training.user_calibration import (
    CalibrationState,
    MeasuredPoint,
    RegimeFactor,
    UserCalibration,
    calibrate,
    fit,
    percentile,
)

REGIME = "hopper/bf16/dense/lt32k/lt512"


def _point(ratio: float, regime: str = REGIME) -> MeasuredPoint:
    return MeasuredPoint(regime=regime, estimated_step_s=10.0, measured_step_s=10.0 * ratio)


def test_the_factor_of_three_runs_is_their_geometric_mean_with_a_leave_one_out_band() -> None:
    # Measured 11.0, 12.1 and 13.31 s against the engine's 10 s: ratios 1.1, 1.1², 1.1³.
    found = fit([_point(1.1), _point(1.21), _point(1.331)]).factor_for(REGIME)
    assert found is not None and found.key == REGIME and found.runs == 3
    # f = (1.1 · 1.1² · 1.1³)^(1/3) = 1.1² = 1.21.
    assert found.factor == pytest.approx(1.21, rel=1e-12)
    # Left out one at a time: f(−1) = (1.1² · 1.1³)^(1/2) = 1.1^2.5, e1 = 1.1 / 1.1^2.5 − 1 = 1.1^−1.5 − 1
    # = −0.133216; f(−2) = 1.1², e2 = 0; f(−3) = 1.1^1.5, e3 = 1.1^1.5 − 1 = 0.153690.
    e1, e3 = 1.1**-1.5 - 1, 1.1**1.5 - 1
    assert e1 == pytest.approx(-0.133216, abs=1e-6) and e3 == pytest.approx(0.153690, abs=1e-6)
    # p10 at position 0.2 between e1 and e2: 0.8 · e1 = −0.106573; p90 at 1.8: 0.8 · e3 = 0.122952.
    assert found.p10 == pytest.approx(0.8 * e1, rel=1e-12)
    assert found.p90 == pytest.approx(0.8 * e3, rel=1e-12)


def test_two_runs_make_no_factor_and_a_coarser_key_stands_in() -> None:
    long_context = "hopper/bf16/dense/ge32k/lt512"
    calibration = fit([_point(1.2), _point(1.2), _point(1.2, long_context)])
    assert calibration.factor_for(REGIME) is not None
    keys = {f.key for f in calibration.factors}
    assert REGIME not in keys and long_context not in keys  # 2 runs and 1 run: never a factor per row
    found = calibration.factor_for(REGIME)
    assert found is not None and found.key == "hopper/bf16/dense/*/*" and found.runs == 3


def test_percentile_interpolates_like_numpy() -> None:
    assert percentile([3.0, 1.0, 2.0, 4.0], 10) == pytest.approx(1.3)  # numpy.percentile(..., 10) = 1.3
    assert percentile([3.0, 1.0, 2.0, 4.0], 90) == pytest.approx(3.7)


def test_out_of_fold_band_holds_about_eighty_percent_when_the_true_factor_is_known() -> None:
    """50 runs whose measured step is 1.3 × the engine's with log-normal noise (σ = 0.08). Five folds: fitted
    on 40 runs, each held-out run's residual is checked against the band of those 40 (nominal 10–90 %)."""
    rng = random.Random(40)
    points = [_point(1.3 * math.exp(rng.gauss(0.0, 0.08))) for _ in range(50)]
    whole = fit(points).factor_for(REGIME)
    assert whole is not None and abs(whole.factor / 1.3 - 1) < 0.03  # σ/√50 = 1.1 % in the log
    # The band from the noise alone would be exp(±1.2816 · 0.08) − 1 = −9.7 % … +10.8 %.
    assert -0.13 < whole.p10 < -0.06 and 0.06 < whole.p90 < 0.14
    inside = 0
    for fold in range(5):
        train = [p for i, p in enumerate(points) if i % 5 != fold]
        found = fit(train).factor_for(REGIME)
        assert found is not None and found.runs == 40
        inside += sum(found.p10 <= p.ratio / found.factor - 1 <= found.p90 for p in points[fold::5])
    assert inside == 39  # 78 % of the held-out runs inside their fold's band (nominal 80 %)


def _estimate() -> dict[str, object]:
    return {
        "mode": "evaluate",
        "step_time_s": {"total": 10.0, "compute": 8.0, "activation_offload": None},
        "tokens_per_second": 100_000.0,
        "model_tflops_per_gpu": 400.0,
        "hardware_tflops_per_gpu": 500.0,
        "mfu": 0.4,
        "hfu": 0.5,
        "time_to_train_days": 1e12 / 100_000.0 / 86400.0,
        "error_band": {"regime": REGIME, "basis": REGIME, "rows": 30, "tokens_per_second_low": 1.0},
        "summary": {"training": {"tokens": 1e12}},
    }


def test_an_applied_factor_scales_step_days_and_rates_and_gives_the_users_band() -> None:
    factor = RegimeFactor(key=REGIME, factor=1.25, runs=4, p10=-0.1, p90=0.2)
    state = CalibrationState(
        enabled=True, calibration=UserCalibration(factors=(factor,)), scope="team", holder="team Infra"
    )
    out, statement = calibrate(_estimate(), state)
    assert out["step_time_s"] == {"total": 12.5, "compute": 10.0, "activation_offload": None}
    assert out["tokens_per_second"] == 80_000.0 and out["mfu"] == pytest.approx(0.32)
    # 1e12 tokens at 100,000 tokens/s = 115.741 days; × 1.25 = 144.676 days.
    assert out["time_to_train_days"] == pytest.approx(144.675926, rel=1e-8)
    band = out["error_band"]
    # 80,000 / (1 + 0.2) = 66,666.7 and 80,000 / (1 − 0.1) = 88,888.9 tokens/s.
    assert band["tokens_per_second_low"] == pytest.approx(66_666.667, rel=1e-8)
    assert band["tokens_per_second_high"] == pytest.approx(88_888.889, rel=1e-8)
    assert band["days_high"] == pytest.approx(1e12 / 66_666.667 / 86400, rel=1e-8)
    assert band["basis"] == f"measured runs of team Infra: {REGIME}" and band["rows"] == 4
    assert statement.applied and statement.factor == 1.25 and statement.runs == 4
    assert statement.scope == "team" and statement.holder == "team Infra"
    assert statement.band_source == f"leave-one-out residuals of 4 measured runs of team Infra under {REGIME}"


def test_switched_off_or_uncovered_the_estimate_is_the_same_object() -> None:
    estimate = _estimate()
    off, statement = calibrate(estimate, CalibrationState(enabled=False))
    assert off is estimate and not statement.applied and "switched off" in statement.reason
    other = RegimeFactor(key="blackwell/fp8/moe/*/*", factor=2.0, runs=5, p10=-0.1, p90=0.1)
    on = CalibrationState(enabled=True, calibration=UserCalibration(factors=(other,)))
    same, why = calibrate(estimate, on)
    assert same is estimate and not why.applied and REGIME in why.reason
