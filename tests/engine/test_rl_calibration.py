"""The RL engine against published RL runs (tests/engine/data/rl_runs.csv, NeMo RL's performance summary):
its one fitted constant reproduces from the fit rows, and the held-out check rows stay inside the error the
bench reports (bench/rl_calibration.py: median |error| 18 % on 10 check rows, 8 placed, at this commit)."""

from __future__ import annotations

import pytest

from clusterdesigner.engine.rl import rl
from tests.engine import rl_calibration_cases as cal


@pytest.fixture(scope="module")
def kwargs() -> dict[str, object]:
    return cal.catalog()


def test_rows_carry_a_source_and_a_declared_split() -> None:
    rows = cal.rows()
    assert len(rows) == 18
    assert {r["split"] for r in rows} == {"fit", "check"}
    assert all("NeMo RL" in r["source"] for r in rows)


def test_framework_factor_is_the_fit_rows_geometric_mean(kwargs: dict[str, object]) -> None:
    bare = [cal.predict(r, kwargs, factor=1.0) for r in cal.rows() if r["split"] == "fit"]
    # DeepSeek-V3 on 256 H100: no rollout replica of at most 8 GPUs holds it (docs/rl-engine.md).
    assert sum(c.predicted_s is not None for c in bare) == 7
    assert cal.fitted_scale(bare) == pytest.approx(rl.FRAMEWORK_FACTOR, rel=0.005)


def test_check_rows_median_error_stays_under_a_quarter(kwargs: dict[str, object]) -> None:
    check = [cal.predict(r, kwargs) for r in cal.rows() if r["split"] == "check"]
    placed = [c for c in check if c.predicted_s is not None]
    assert len(placed) == 8
    assert cal.median_abs_error(check) < 0.25
