"""The user's calibration applied to the user's designs through POST /api/v1/designs/<id>/evaluate/: off, the
published estimate bit for bit; on, step time, days and cost move by the factor fitted on the user's runs, and
the evaluation states the factor, the runs and the band's source; a toggle or a new run is never served from a
stale kept result."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from django.apps import apps as django_apps

from apps.catalog.selectors import engine_catalog_snapshot, price_freshness
from apps.designs.services import spec_validate
from apps.measurements import services
from apps.measurements.models import CalibrationSetting
from apps.measurements.services import run_validate
from clusterdesigner import memo
from clusterdesigner.engine.core.version import ENGINE_VERSION
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
    _add_runs(user_client, run_data, [1.1, 1.21, 1.6])
    summary = user_client.get(f"{RUNS}summary/").json()
    rows = {row["group"]: row for row in summary["summary"]}
    # error = estimated / measured tokens/s − 1 = measured / estimated step − 1 = ratio − 1: +0.1, +0.21,
    # +0.6 (the engine promises more than was measured); |error| median 0.21, p90 at position 1.8:
    # 0.21 + 0.8 × (0.6 − 0.21) = 0.522.
    everything = rows["all runs"]
    assert everything["runs"] == 3
    assert everything["median_abs_error"] == pytest.approx(0.21, rel=1e-9)
    assert everything["p90_abs_error"] == pytest.approx(0.522, rel=1e-9)
    # The published band of the runs' regime (the Hopper BF16 check rows under 32K tokens, +54.1 % in the
    # table since the bands are random-effects prediction intervals): 0.1 and 0.21 inside, 0.6 outside.
    band = band_for("hopper/bf16/dense/lt32k/lt512")
    assert 0.21 < band.p90 < 0.6 and band.p10 < 0.1
    assert everything["inside_band"] == pytest.approx(2 / 3)
    assert rows["hopper/bf16/dense/lt32k/lt512"]["runs"] == 3
    assert summary["enabled"] is False and "geometric mean" in summary["estimator"]


def _switched_on(client: Any, run_data: dict[str, Any]) -> Any:
    """Three runs at 1.1, 1.21 and 1.331 × the engine, the switch on: the fit kept on alice's switch."""
    _add_runs(client, run_data, [1.1, 1.21, 1.331])
    assert client.post(f"{RUNS}calibration/", {"enabled": True}, format="json").status_code == 200
    return CalibrationSetting.objects.get(owner=client.user)


def _kept_factor(setting: Any) -> dict[str, Any]:
    return next(f for f in setting.fit["factors"] if f["key"] == KEY)


def test_the_switch_keeps_the_fit_of_the_runs_as_of_its_stamp(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    """Every write keeps the fit of the runs with what it was fitted at (the stamp, the engine, the
    catalog), while the switch is on; switched off, none is kept."""
    setting = _switched_on(user_client, run_data)
    assert (setting.fitted_at, setting.fitted_engine) == (setting.changed_at, ENGINE_VERSION)
    assert setting.fitted_catalog == engine_catalog_snapshot().digest
    assert _kept_factor(setting)["factor"] == pytest.approx(1.21, rel=1e-9)  # 1.1² (module's test above)
    assert _kept_factor(setting)["runs"] == 3
    _add_runs(user_client, run_data, [1.5])  # a fourth run: kept at the new stamp, on four runs
    fourth = CalibrationSetting.objects.get(pk=setting.pk)
    assert fourth.changed_at > setting.changed_at and fourth.fitted_at == fourth.changed_at
    assert _kept_factor(fourth)["factor"] == pytest.approx((1.1**6 * 1.5) ** 0.25, rel=1e-9)
    user_client.post(f"{RUNS}calibration/", {"enabled": False}, format="json")
    off = CalibrationSetting.objects.get(pk=setting.pk)
    assert (off.fit, off.fitted_at, off.fitted_engine, off.fitted_catalog) == (None, None, None, "")


def test_the_evaluation_reads_the_kept_fit_and_fits_again_one_made_by_another_engine(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    """The evaluation takes the factor kept on the switch, not one fitted on the runs: a kept factor of 2
    (not what the runs give) is what it applies while the kept fit is current. Kept by another engine
    version (a release since), it is not used: the runs are fitted again (1.21) and the fit kept."""
    design = user_client.post("/api/v1/designs/", {"name": "70B", "spec": SPEC}, format="json").json()
    setting = _switched_on(user_client, run_data)
    factors = [{**f, "factor": 2.0} if f["key"] == KEY else f for f in setting.fit["factors"]]
    CalibrationSetting.objects.filter(pk=setting.pk).update(fit={"factors": factors})
    memo.clear_all()  # the stamp did not move (nothing a user can do keeps a fit without moving it)
    assert _evaluate(user_client, design["id"])["calibration"]["factor"] == 2.0

    CalibrationSetting.objects.filter(pk=setting.pk).update(fitted_engine=ENGINE_VERSION - 1)
    memo.clear_all()
    statement = _evaluate(user_client, design["id"])["calibration"]
    assert statement["factor"] == pytest.approx(1.21, rel=1e-9) and statement["runs"] == 3
    again = CalibrationSetting.objects.get(pk=setting.pk)
    assert again.fitted_engine == ENGINE_VERSION and again.fit == setting.fit
    assert again.changed_at == setting.changed_at  # the runs did not change


def test_a_csv_import_keeps_one_fit_for_the_whole_file(
    user_client: Any, catalog: Any, run_data: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    setting = _switched_on(user_client, run_data)
    fits = []
    fitted = services._fitted
    monkeypatch.setattr(services, "_fitted", lambda *args: fits.append(args) or fitted(*args))
    header = "model,accelerator,nodes,fabric,tp,dp,global_batch,seq_len,recompute,sharding,step_time_s"
    row = "llama3-8b,h100-sxm,{n},ib-ndr400,2,{dp},{batch},8192,selective,zero1,{step}"
    rows = [row.format(n=n, dp=4 * n, batch=128 * n, step=12.0 + n) for n in (1, 2, 3)]
    text = "\n".join([header + ",measured_on", *(r + ",2026-11-02" for r in rows)]) + "\n"
    assert user_client.post(f"{RUNS}import/", {"csv": text}, format="json").status_code == 201
    assert len(fits) == 1  # one fit of the six runs, not one per row
    kept = CalibrationSetting.objects.get(pk=setting.pk)
    assert _kept_factor(kept)["runs"] == 6 and kept.fitted_at == kept.changed_at


def test_the_migration_keeps_the_fit_of_every_switch_that_is_on(
    user_client: Any, bob: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    """measurements 0003 fills the kept fit of a switch turned on before fits were kept, as the services
    keep it; a switch that is off keeps none."""
    setting = _switched_on(user_client, run_data)
    services.calibration_set(owner_id=bob.pk, team_id=None, enabled=False)
    CalibrationSetting.objects.update(fit=None, fitted_at=None, fitted_engine=None, fitted_catalog="")
    migration = importlib.import_module("apps.measurements.migrations.0003_kept_calibration_fit")
    migration.keep_fits(django_apps, None)
    kept = CalibrationSetting.objects.get(pk=setting.pk)
    assert (kept.fit, kept.fitted_at, kept.fitted_engine) == (setting.fit, setting.changed_at, ENGINE_VERSION)
    assert kept.fitted_catalog == setting.fitted_catalog
    assert CalibrationSetting.objects.get(owner=bob).fit is None
