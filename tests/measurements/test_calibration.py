"""The user's calibration applied to the user's designs through POST /api/v1/designs/<id>/evaluate/: off, the
published estimate bit for bit; on, step time, days and cost move by the factor fitted on the user's runs, and
the evaluation states the factor, the runs and the band's source; a toggle or a new run is never served from a
stale kept result."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.selectors import engine_catalog_snapshot, price_freshness
from apps.designs.services import spec_validate
from apps.measurements.services import run_validate
from clusterdesigner.engine.training.error_band import band_for
from tests.designs.fixtures import evaluated_json
from tests.designs.test_api import SPEC

RUNS = "/api/v1/measured-runs/"
# The design (Llama 3 70B on 512 H100) is regime hopper/bf16/dense/lt32k/ge512; the runs (one node) are
# .../lt512: they count under hopper/bf16/dense/lt32k/*, the first key of the design's regime with 3 runs.
KEY = "hopper/bf16/dense/lt32k/*"


def _evaluate(client: Any, design_id: int) -> dict[str, Any]:
    answer = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert answer.status_code == 200, answer.json()
    return dict(answer.json())


def _published() -> dict[str, Any]:
    snapshot = engine_catalog_snapshot()
    return evaluated_json(
        spec=spec_validate(spec=SPEC),
        records=snapshot.records,
        freshness=price_freshness(),
    )


def _add_runs(client: Any, run_data: dict[str, Any], ratios: list[float]) -> None:
    """Runs measured at ``ratio`` × the engine's step time of their layout (1, 2, 3 nodes of 8 GPUs)."""
    for nodes, ratio in enumerate(ratios, start=1):
        data = {**run_data, "nodes": nodes, "dp": 4 * nodes, "global_batch": 128 * nodes}
        estimated = run_validate(data={**data, "measured_on": None})["step_time_s"]["total"]
        answer = client.post(RUNS, {**data, "step_time_s": estimated * ratio}, format="json")
        assert answer.status_code == 201, answer.json()


def test_calibration_off_is_the_published_estimate_bit_for_bit(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    design = user_client.post("/api/v1/designs/", {"name": "70B", "spec": SPEC}, format="json").json()
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])  # runs exist, but the switch is off
    body, published = _evaluate(user_client, design["id"]), _published()
    for key in ("training", "costs", "options", "ranking", "verdict", "design_verdict"):
        assert body[key] == published[key], key  # floats compared exactly
    assert body["calibration"]["applied"] is False and "switched off" in body["calibration"]["reason"]
    assert "published calibration" in body["calibration"]["band_source"]


def test_switching_on_applies_the_fitted_factor_and_off_restores_the_published_figures(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    design = user_client.post("/api/v1/designs/", {"name": "70B", "spec": SPEC}, format="json").json()
    before = _evaluate(user_client, design["id"])
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    summary = user_client.post(f"{RUNS}calibration/", {"enabled": True}, format="json").json()
    assert summary["enabled"] is True
    factors = {f["key"]: f for f in summary["factors"]}
    # Geometric mean of 1.1, 1.1², 1.1³ = 1.1² = 1.21, on every key the three runs count under.
    assert factors[KEY]["factor"] == pytest.approx(1.21, rel=1e-9) and factors[KEY]["runs"] == 3

    on = _evaluate(user_client, design["id"])
    assert on["calibration"]["applied"] is True
    assert on["calibration"]["factor"] == pytest.approx(1.21, rel=1e-9)
    assert on["calibration"]["regime"] == KEY and on["calibration"]["runs"] == 3
    assert (
        on["calibration"]["band_source"] == f"leave-one-out residuals of 3 measured runs of alice under {KEY}"
    )
    assert on["calibration"]["scope"] == "personal" and on["calibration"]["holder"] == "alice"
    train, published = on["training"], before["training"]
    assert train["step_time_s"]["total"] == pytest.approx(published["step_time_s"]["total"] * 1.21, rel=1e-9)
    assert train["time_to_train_days"] == pytest.approx(published["time_to_train_days"] * 1.21, rel=1e-9)
    assert (
        train["error_band"]["basis"] == f"measured runs of alice: {KEY}" and train["error_band"]["rows"] == 3
    )
    # The run's cost follows the days: owning's cost of one run grows with them.
    own_on = next(o for o in on["options"] if o["key"] == "own")
    own_off = next(o for o in before["options"] if o["key"] == "own")
    assert own_on["run_cost_usd"] > own_off["run_cost_usd"] * 1.15
    assert own_on["days"] > own_off["days"] * 1.15

    # A fourth run (1 node, ratio 1.5) moves the factor to (1.1⁶ · 1.5)^(1/4) = 1.3392: the kept result is
    # not served.
    _add_runs(user_client, run_data, [1.5])
    moved = _evaluate(user_client, design["id"])
    assert moved["calibration"]["runs"] == 4
    assert moved["calibration"]["factor"] == pytest.approx((1.1**6 * 1.5) ** 0.25, rel=1e-9)

    user_client.post(f"{RUNS}calibration/", {"enabled": False}, format="json")
    off = _evaluate(user_client, design["id"])
    for key in ("training", "costs", "options"):
        assert off[key] == before[key], key
    assert off["calibration"]["applied"] is False


def test_summary_by_regime_states_median_and_p90_of_the_errors(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    summary = user_client.get(f"{RUNS}summary/").json()
    rows = {row["group"]: row for row in summary["summary"]}
    # error = estimated / measured tokens/s − 1 = measured / estimated step − 1 = ratio − 1: +0.1, +0.21,
    # +0.331 (the engine promises more than was measured); |error| median 0.21, p90 at position 1.8:
    # 0.21 + 0.8 × (0.331 − 0.21) = 0.3068.
    everything = rows["all runs"]
    assert everything["runs"] == 3
    assert everything["median_abs_error"] == pytest.approx(0.21, rel=1e-9)
    assert everything["p90_abs_error"] == pytest.approx(0.3068, rel=1e-9)
    # The published band of the runs' regime reaches error p90 (+25.4 % in the table): 0.1 and 0.21 inside,
    # 0.331 outside.
    band = band_for("hopper/bf16/dense/lt32k/lt512")
    assert 0.21 < band.p90 < 0.331 and band.p10 < 0.1
    assert everything["inside_band"] == pytest.approx(2 / 3)
    assert rows["hopper/bf16/dense/lt32k/lt512"]["runs"] == 3
    assert summary["enabled"] is False and "geometric mean" in summary["estimator"]
