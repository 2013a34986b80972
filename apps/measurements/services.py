"""Measured-run writes: each run is checked by building the training engine's request as a design would
(estimates.run_estimate) before it is saved; a CSV import saves every row or none; every write moves the
owner's calibration stamp, so no evaluation kept under the old runs is served again, and, while the holder's
calibration is switched on, keeps the calibration fitted on its runs as of that stamp
(CalibrationSetting.fit), which evaluations read instead of fitting the runs on each request."""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from django.db import models, transaction
from django.utils import timezone

from apps.catalog.selectors import engine_catalog_snapshot
from apps.measurements.estimates import run_estimate
from apps.measurements.models import CalibrationSetting, MeasuredRun
from apps.teams.services import owned_move
from clusterdesigner.engine.core.version import ENGINE_VERSION
from clusterdesigner.engine.training.user_calibration import UserCalibration
from clusterdesigner.engine.training.workload import LAYOUT_FIELDS
from clusterdesigner.errors import InvalidInput
from clusterdesigner.spreadsheets import csv_refused_as, csv_text

AGREEMENT = 0.02  # step time and tokens/s given together must agree within 2 %
CSV_MAX_ROWS = 500


def units_check(data: Mapping[str, Any]) -> None:
    """A run gives its step time, its tokens/s or both; both must agree with global batch × sequence length ÷
    step time within AGREEMENT, else both fields are named."""
    step, tps = data.get("step_time_s"), data.get("tokens_per_s")
    if step is None and tps is None:
        message = "give the measured step time (s) or tokens/s"
        raise InvalidInput({"step_time_s": [message], "tokens_per_s": [message]})
    if step is None or tps is None:
        return
    implied = data["global_batch"] * data["seq_len"] / step
    if abs(tps / implied - 1.0) > AGREEMENT:
        message = (
            f"tokens/s {tps:,.0f} and step time {step:g} s disagree: global batch {data['global_batch']} × "
            f"sequence length {data['seq_len']} ÷ {step:g} s = {implied:,.0f} tokens/s (more than 2 % apart)"
        )
        raise InvalidInput({"step_time_s": [message], "tokens_per_s": [message]})


def run_validate(*, data: Mapping[str, Any]) -> dict[str, Any]:
    """The run's units check, then the engine's estimate of it (the run is what the engine can express):
    InvalidInput naming the field otherwise. Returns the estimate."""
    units_check(data)
    return run_estimate(data, engine_catalog_snapshot().specs)


def _holder(owner_id: int | None, team_id: int | None) -> dict[str, Any]:
    """The switch's lookup: the team's (``team_id`` given), else the user ``owner_id``'s."""
    return {"team_id": team_id} if team_id is not None else {"owner_id": owner_id}


def _fitted(owner_id: int | None, team_id: int | None) -> tuple[UserCalibration, str]:
    """The calibration fitted on the holder's runs now, and the digest of the catalog it used."""
    from apps.measurements.selectors import calibration_fitted, holder_runs  # selectors import RUN_FIELDS

    return calibration_fitted(runs=holder_runs(owner_id=owner_id, team_id=team_id))


def _keep_fit(setting: CalibrationSetting) -> UserCalibration | None:
    """Save ``setting`` (its row locked by the caller's transaction) with the calibration fitted on its
    holder's runs as of its stamp, by this engine on this catalog; switched off, with none (switching on
    fits). Under the row's lock, a run written meanwhile moves the stamp after this fit, never under it."""
    fit = None
    if setting.enabled:
        fit, setting.fitted_catalog = _fitted(setting.owner_id, setting.team_id)
        setting.fit, setting.fitted_at = fit.to_json(), setting.changed_at
        setting.fitted_engine = ENGINE_VERSION
    else:
        setting.fit, setting.fitted_at, setting.fitted_engine, setting.fitted_catalog = None, None, None, ""
    setting.save(update_fields=["changed_at", "fit", "fitted_at", "fitted_engine", "fitted_catalog"])
    return fit


def _touch(*, owner_id: int | None, team_id: int | None) -> None:
    """Move the stamp of the holder's switch (the team's for a team's run, else the owner's; created switched
    off on the first write) and keep the fit of its runs as of it (_keep_fit)."""
    setting, created = CalibrationSetting.objects.get_or_create(
        **_holder(owner_id, team_id), defaults={"changed_at": timezone.now()}
    )
    if not created:
        setting = CalibrationSetting.objects.select_for_update().get(pk=setting.pk)
        setting.changed_at = timezone.now()  # taken under the lock: a later writer's stamp is later
    _keep_fit(setting)


def _touch_run(run: MeasuredRun) -> None:
    _touch(owner_id=run.owner_id, team_id=run.team_id)


def _run_save(*, owner: Any, data: Mapping[str, Any], team_id: int | None) -> MeasuredRun:
    run_validate(data=data)
    return MeasuredRun.objects.create(owner=owner, team_id=team_id, **data)


@transaction.atomic
def run_create(*, owner: Any, data: Mapping[str, Any], team_id: int | None = None) -> MeasuredRun:
    """A new run of ``owner``'s, or of team ``team_id`` (one the caller checked they own or edit)."""
    run = _run_save(owner=owner, data=data, team_id=team_id)
    _touch_run(run)
    return run


@transaction.atomic
def run_update(*, run: MeasuredRun, data: Mapping[str, Any]) -> MeasuredRun:
    merged = {f: getattr(run, f) for f in RUN_FIELDS} | dict(data)
    run_validate(data=merged)
    for field, value in data.items():
        setattr(run, field, value)
    run.save()
    _touch_run(run)
    return run


@transaction.atomic
def run_delete(*, run: MeasuredRun) -> None:
    run.delete()
    _touch_run(run)


@transaction.atomic
def run_move(*, user: Any, run: MeasuredRun, team_id: Any) -> MeasuredRun:
    """Move a run this user may edit into a team they own or edit (apps.teams.services.owned_move: 400 naming
    ``team`` otherwise). Both holders' stamps move: the run leaves one calibration and joins the other."""
    before = {"owner_id": run.owner_id, "team_id": run.team_id}
    owned_move(user=user, obj=run, team_id=team_id)
    _touch(**before)
    _touch_run(run)
    return run


@transaction.atomic
def calibration_set(*, owner_id: int | None, team_id: int | None, enabled: bool) -> CalibrationSetting:
    """Switch the holder's calibration (a team's when ``team_id`` is given, else the user ``owner_id``'s) on
    or off; the stamp moves either way. The caller checked the user may change it."""
    setting, _ = CalibrationSetting.objects.update_or_create(
        **_holder(owner_id, team_id), defaults={"enabled": enabled, "changed_at": timezone.now()}
    )
    _keep_fit(setting)
    return setting


@transaction.atomic
def calibration_refit(*, owner_id: int | None, team_id: int | None) -> UserCalibration:
    """The holder's calibration fitted on its runs now, and kept on its switch (if still on) for the
    evaluations after: for an evaluation whose kept fit was made by another engine version or on another
    catalog (the first after an engine release or a catalog write) or was never made (a switch turned on
    before fits were kept). Its stamp does not move: the runs did not change."""
    # By id, not Meta.ordering's holders: FOR UPDATE takes no outer join (PostgreSQL refuses it).
    settings = CalibrationSetting.objects.select_for_update().filter(**_holder(owner_id, team_id))
    setting = settings.order_by("pk").first()
    if setting is None or not setting.enabled:  # switched off meanwhile (the caller read it on): not kept
        return _fitted(owner_id, team_id)[0]
    fitted = (setting.fitted_at, setting.fitted_engine, setting.fitted_catalog)
    current = (setting.changed_at, ENGINE_VERSION, engine_catalog_snapshot().digest)
    if setting.fit is not None and fitted == current:
        return UserCalibration.from_json(setting.fit)  # another request fitted it while this one waited
    fit = _keep_fit(setting)
    assert fit is not None  # switched on
    return fit


# --- CSV import ---------------------------------------------------------------------------------------------

_COLUMNS = {f.name for f in MeasuredRun._meta.concrete_fields}
# The engine's layout fields a run records (workload.LAYOUT_FIELDS; a run has no sequence_parallel column).
RUN_LAYOUT = tuple(k for k in LAYOUT_FIELDS if k in _COLUMNS)
RUN_FIELDS = (
    *("model", "accelerator", "nodes", "gpus_per_node", "fabric"),
    *RUN_LAYOUT,
    *("global_batch", "seq_len", "precision", "framework", "framework_version"),
    *("step_time_s", "tokens_per_s", "peak_memory_gib", "measured_on", "note"),
)
CSV_REQUIRED = ("model", "accelerator", "nodes", "fabric", "dp", "global_batch", "seq_len", "measured_on")
# The whole-number columns: the model's PositiveIntegerFields (nodes, the layout's degrees, batch, length).
INTS = tuple(f.name for f in MeasuredRun._meta.get_fields() if isinstance(f, models.PositiveIntegerField))
FLOATS = ("step_time_s", "tokens_per_s", "peak_memory_gib")


def _csv_model(text: str) -> dict[str, Any]:
    """A CSV model cell: a preset slug (``llama3-8b``) or a JSON object of the shape."""
    if text.startswith("{"):
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("must be a preset name or a JSON object")
        return value
    return {"preset": text}


def _csv_value(field: str, text: str) -> Any:
    if field == "model":
        return _csv_model(text)
    if field in INTS:
        value = int(text)
        if value < 1:
            raise ValueError("must be at least 1")
        return value
    if field in FLOATS:
        number = float(text)
        if not number > 0 or number == float("inf"):
            raise ValueError("must be a positive number")
        return number
    if field == "measured_on":
        return dt.date.fromisoformat(text)
    return text


def csv_row(row: Mapping[str, str | None]) -> dict[str, Any]:
    """One CSV row's run fields (blank cells left out, so the model's defaults apply); InvalidInput naming
    the column."""
    data: dict[str, Any] = {}
    for field in RUN_FIELDS:
        text = (row.get(field) or "").strip()
        if not text:
            if field in CSV_REQUIRED:
                raise InvalidInput({field: ["This field is required."]})
            continue
        try:
            data[field] = _csv_value(field, text)
        except ValueError as exc:
            raise InvalidInput({field: [f"{text!r}: {exc}"]}) from exc
    return data


def runs_import_csv(*, owner: Any, text: str, team_id: int | None = None) -> list[MeasuredRun]:
    """Every row of the CSV saved, or none: the first bad row's error names its row (the header is row 1)
    and column, e.g. ``row 3.tp``."""
    reader = csv.DictReader(csv_text(text))
    with csv_refused_as("file", reader.reader):  # the DictReader's own line_num lags a row behind
        fieldnames = reader.fieldnames
        rows = list(reader)
    unknown = sorted(set(fieldnames or ()) - set(RUN_FIELDS))
    if not fieldnames or unknown:
        detail = f"unknown columns {', '.join(unknown)}" if unknown else "no header row"
        raise InvalidInput({"file": [f"{detail}; the columns are {', '.join(RUN_FIELDS)}"]})
    if not rows or len(rows) > CSV_MAX_ROWS:
        raise InvalidInput({"file": [f"give 1 to {CSV_MAX_ROWS} rows (got {len(rows)})"]})
    with transaction.atomic():
        runs = []
        for number, row in enumerate(rows, start=2):
            try:
                runs.append(_run_save(owner=owner, team_id=team_id, data=csv_row(row)))
            except InvalidInput as exc:
                raise InvalidInput({f"row {number}.{k}": v for k, v in exc.fields.items()}) from exc
        _touch(owner_id=owner.pk, team_id=team_id)  # once for the whole file: one fit of all the runs
        return runs
