"""Measured-run writes: each run is checked by building the training engine's request as a design would
(estimates.run_estimate) before it is saved; a CSV import saves every row or none; every write moves the
owner's calibration stamp, so no evaluation kept under the old runs is served again."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.catalog.selectors import engine_catalog_snapshot
from apps.measurements.estimates import run_estimate
from apps.measurements.models import CalibrationSetting, MeasuredRun
from clusterdesigner.errors import InvalidInput

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


def _touch(owner: Any) -> None:
    """Move the owner's calibration stamp (created switched off on the first write)."""
    now = timezone.now()
    setting, created = CalibrationSetting.objects.get_or_create(owner=owner, defaults={"changed_at": now})
    if not created:
        CalibrationSetting.objects.filter(pk=setting.pk).update(changed_at=now)


@transaction.atomic
def run_create(*, owner: Any, data: Mapping[str, Any]) -> MeasuredRun:
    run_validate(data=data)
    run = MeasuredRun.objects.create(owner=owner, **data)
    _touch(owner)
    return run


@transaction.atomic
def run_update(*, run: MeasuredRun, data: Mapping[str, Any]) -> MeasuredRun:
    merged = {f: getattr(run, f) for f in RUN_FIELDS} | dict(data)
    run_validate(data=merged)
    for field, value in data.items():
        setattr(run, field, value)
    run.save()
    _touch(run.owner)
    return run


@transaction.atomic
def run_delete(*, run: MeasuredRun) -> None:
    owner = run.owner
    run.delete()
    _touch(owner)


@transaction.atomic
def calibration_set(*, owner: Any, enabled: bool) -> CalibrationSetting:
    """Switch the owner's calibration on or off (the stamp moves either way)."""
    now = timezone.now()
    setting, _ = CalibrationSetting.objects.update_or_create(
        owner=owner, defaults={"enabled": enabled, "changed_at": now}
    )
    return setting


# --- CSV import ---------------------------------------------------------------------------------------------

RUN_FIELDS = (
    "model",
    "accelerator",
    "nodes",
    "gpus_per_node",
    "fabric",
    *("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "global_batch", "seq_len"),
    *("recompute", "sharding", "precision", "framework", "framework_version"),
    *("step_time_s", "tokens_per_s", "peak_memory_gib", "measured_on", "note"),
)
CSV_REQUIRED = ("model", "accelerator", "nodes", "fabric", "dp", "global_batch", "seq_len", "measured_on")
INTS = (
    "nodes",
    "gpus_per_node",
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "vpp",
    "micro_batch",
    "global_batch",
    "seq_len",
)
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


def runs_import_csv(*, owner: Any, text: str) -> list[MeasuredRun]:
    """Every row of the CSV saved, or none: the first bad row's error names its row (the header is row 1)
    and column, e.g. ``row 3.tp``."""
    reader = csv.DictReader(io.StringIO(text))
    unknown = sorted(set(reader.fieldnames or ()) - set(RUN_FIELDS))
    if not reader.fieldnames or unknown:
        detail = f"unknown columns {', '.join(unknown)}" if unknown else "no header row"
        raise InvalidInput({"file": [f"{detail}; the columns are {', '.join(RUN_FIELDS)}"]})
    rows = list(reader)
    if not rows or len(rows) > CSV_MAX_ROWS:
        raise InvalidInput({"file": [f"give 1 to {CSV_MAX_ROWS} rows (got {len(rows)})"]})
    with transaction.atomic():
        runs = []
        for number, row in enumerate(rows, start=2):
            try:
                runs.append(run_create(owner=owner, data=csv_row(row)))
            except InvalidInput as exc:
                raise InvalidInput({f"row {number}.{k}": v for k, v in exc.fields.items()}) from exc
        return runs
