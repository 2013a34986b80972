"""Measured-run reads: a user's runs (404 for anyone else), each against the engine's estimate, the summary
of the errors by regime, and the user's calibration state as the design service keys and applies it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from apps.catalog.selectors import engine_catalog_snapshot
from apps.measurements.estimates import RunComparison, compare, run_estimate
from apps.measurements.models import CalibrationSetting, MeasuredRun
from apps.measurements.services import RUN_FIELDS
from clusterdesigner.engine.catalog import CatalogSpecs
from clusterdesigner.engine.user_calibration import CalibrationState, UserCalibration, fit, percentile
from clusterdesigner.errors import InvalidInput


def run_list(*, user: Any) -> QuerySet[MeasuredRun]:
    if not user or not user.is_authenticated:
        return MeasuredRun.objects.none()
    return MeasuredRun.objects.filter(owner=user)


def run_get(*, user: Any, run_id: int) -> MeasuredRun | None:
    """The run if it is this user's, else None (views answer 404)."""
    return run_list(user=user).filter(pk=run_id).first()


@dataclass(frozen=True)
class RunRow:
    """A run with the engine against it; ``problem`` says why the engine no longer estimates it (the catalog
    changed since it was saved), when it does not."""

    run: MeasuredRun
    comparison: RunComparison | None
    problem: str = ""


def run_row(run: MeasuredRun, catalog: CatalogSpecs) -> RunRow:
    data = {f: getattr(run, f) for f in RUN_FIELDS}
    try:
        estimate = run_estimate(data, catalog)
    except InvalidInput as exc:
        return RunRow(run, None, exc.message)
    return RunRow(
        run, compare(estimate, measured_step_s=run.measured_step_s, tokens_per_step=run.tokens_per_step)
    )


def run_rows(*, runs: Any) -> list[RunRow]:
    catalog = engine_catalog_snapshot().specs
    return [run_row(run, catalog) for run in runs]


@dataclass(frozen=True)
class ErrorSummary:
    """|error| statistics of a group of runs: count, median, 90th percentile, share inside the band."""

    group: str
    runs: int
    median_abs_error: float
    p90_abs_error: float
    inside_band: float


def _summary(group: str, items: list[RunComparison]) -> ErrorSummary:
    errors = [abs(c.error) for c in items]
    inside = sum(c.inside_band for c in items) / len(items)
    return ErrorSummary(group, len(items), percentile(errors, 50), percentile(errors, 90), inside)


def error_summary(rows: list[RunRow]) -> list[ErrorSummary]:
    """All runs first, then one line per regime (error_band.regime_key, as the calibration bench groups its
    rows), each with the median and p90 of |estimated / measured − 1| on tokens/s."""
    compared = [r.comparison for r in rows if r.comparison is not None]
    if not compared:
        return []
    by_regime: dict[str, list[RunComparison]] = {}
    for item in compared:
        by_regime.setdefault(item.regime, []).append(item)
    return [_summary("all runs", compared)] + [_summary(k, v) for k, v in sorted(by_regime.items())]


def calibration_fit(*, rows: list[RunRow]) -> UserCalibration:
    return fit([r.comparison.point for r in rows if r.comparison is not None])


def calibration_setting(*, owner_id: int) -> tuple[bool, str]:
    """(enabled, stamp) of the owner's switch; (False, "") when the owner never wrote a run nor toggled."""
    found = CalibrationSetting.objects.filter(owner_id=owner_id).values_list("enabled", "changed_at").first()
    return (False, "") if found is None else (bool(found[0]), found[1].isoformat())


def calibration_setting_of_design(*, design_id: int) -> tuple[int | None, bool, str]:
    """(owner id, enabled, stamp) of the switch of the design's owner, in one query; (None, False, "") when
    the owner has none (never wrote a run nor toggled)."""
    found = (
        CalibrationSetting.objects.filter(owner__designs=design_id)
        .values_list("owner_id", "enabled", "changed_at")
        .first()
    )
    return (None, False, "") if found is None else (found[0], bool(found[1]), found[2].isoformat())


def calibration_setting_sql(*, owner_id: int) -> tuple[str, list[Any]]:
    """SQL for the owner's switch as at most one row (enabled, changed_at), for a caller that reads it in one
    statement with its other per-request reads (apps.designs.selectors.evaluation_owner_state)."""
    table = CalibrationSetting._meta.db_table
    return f'SELECT enabled, changed_at FROM "{table}" WHERE owner_id = %s', [owner_id]


def calibration_state(*, owner_id: int | None, enabled: bool) -> CalibrationState:
    """What the owner's designs are estimated with: off, or on with the factors fitted on the owner's runs."""
    if not enabled or owner_id is None:
        return CalibrationState(enabled=False)
    runs = MeasuredRun.objects.filter(owner_id=owner_id).order_by("pk")
    return CalibrationState(enabled=True, calibration=calibration_fit(rows=run_rows(runs=runs)))


ESTIMATOR = (
    "factor = geometric mean of measured / estimated step time over your runs of the regime (a key needs "
    "3 runs); band = 10th and 90th percentiles of the leave-one-out residuals (estimated / measured "
    "tokens/s − 1, each run predicted with the factor fitted on the others)"
)


def summary_get(*, user: Any, rows: list[RunRow] | None = None) -> dict[str, Any]:
    """The user's switch, the runs' errors (all, then by regime) and the factors fitted on the runs (``rows``:
    the user's runs already against the engine, when the caller has them)."""
    rows = run_rows(runs=run_list(user=user).order_by("pk")) if rows is None else rows
    enabled, _ = calibration_setting(owner_id=user.pk)
    return {
        "enabled": enabled,
        "summary": error_summary(rows),
        "factors": [f.to_json() for f in calibration_fit(rows=rows).factors],
        "estimator": ESTIMATOR,
    }
