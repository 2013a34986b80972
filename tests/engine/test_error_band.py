"""Error bands by regime (issue 19): the generated table matches the calibration, and every estimate
carries its band."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from calibration_regimes import compute, render  # noqa: E402

from clusterdesigner.engine import error_band_table  # noqa: E402
from clusterdesigner.engine.error_band import band_for, band_keys, regime_key  # noqa: E402


@pytest.fixture(scope="module")
def computed() -> dict[str, object]:
    return compute()


def test_the_generated_table_matches_the_calibration(computed: dict[str, object]) -> None:
    # Fails when the engine's predictions or runs.csv change: run bench/calibration_regimes.py --write.
    text = Path(error_band_table.__file__).read_text()
    assert text == render(computed), "error_band_table.py is stale: bench/calibration_regimes.py --write"


def test_the_memory_headroom_is_minus_the_p10_of_the_memory_error(computed: dict[str, object]) -> None:
    # 24 BLOOM rows with measured memory; sorted signed errors begin −14.95 %, −14.31 %, −14.26 %,
    # −13.86 %: p10 at rank 0.1 × 23 = 2.3 → −14.26 + 0.3 × (−13.86 + 14.26) = −14.14 % → 0.141.
    assert computed["memory_rows"] == 24
    assert computed["memory_headroom"] == pytest.approx(0.141, abs=5e-4)
    assert error_band_table.MEMORY_HEADROOM == computed["memory_headroom"]


def test_out_of_fold_bands_hold_about_eighty_percent_of_held_out_rows(computed: dict[str, object]) -> None:
    checks = computed["checks"]
    assert isinstance(checks, dict)
    # The regimes with many rows: ~80 % of held-out residuals inside the band fitted on the other folds.
    for key in ("*/*/*/*", "ampere/bf16/dense/lt1024", "hopper/bf16/dense/lt1024"):
        assert 0.70 <= checks[key]["coverage"] <= 0.90, key


def test_a_regime_without_rows_falls_back_and_says_so() -> None:
    assert regime_key("hopper", "bf16", False, 2048) == "hopper/bf16/dense/ge1024"
    assert band_keys("hopper/bf16/dense/ge1024")[1:] == (
        "hopper/bf16/dense/*",
        "hopper/*/dense/*",
        "*/*/*/*",
    )
    # 4 Hopper BF16 rows at ≥ 1,024 GPUs (< 5): the Hopper BF16 band of 79 rows.
    band = band_for("hopper/bf16/dense/ge1024")
    assert band.basis == "hopper/bf16/dense/*" and band.rows == 79
    # No MoE or Blackwell row in runs.csv: all rows.
    assert band_for("blackwell/fp8/moe/lt1024").basis == "*/*/*/*"


def test_a_band_divides_the_prediction_by_one_plus_the_residual_percentiles() -> None:
    band = band_for("ampere/bf16/dense/lt1024")
    n, p10, _, p90 = error_band_table.BANDS["ampere/bf16/dense/lt1024"]
    assert band.rows == n
    assert band.low(1000.0) == pytest.approx(1000.0 / (1 + p90))
    assert band.high(1000.0) == pytest.approx(1000.0 / (1 + p10))
    assert band.low(1000.0) < 1000.0 < band.high(1000.0)
