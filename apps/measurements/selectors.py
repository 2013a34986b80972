"""Measured-run reads, through the one ownership rule (apps/teams/access.py): a personal run is its owner's, a
team's run its members' (viewers read; owners and editors write); anyone else gets None, and views 404. Each
run against the engine's estimate, the summary of the errors by regime and the factors fitted on a holder's
runs; the calibration a design is estimated with (its owner's switch and the factors the services keep
fitted on its runs) is resolved with the design's other inputs, in apps.designs.pricing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from apps.catalog.selectors import engine_catalog_snapshot
from apps.measurements.estimates import RunComparison, compare, run_estimate
from apps.measurements.models import CalibrationSetting, MeasuredRun
from apps.measurements.services import RUN_FIELDS
from apps.teams import access
from apps.teams.selectors import team_list
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.training.user_calibration import (
    UserCalibration,
    fit,
    holder_label,
    percentile,
)
from clusterdesigner.errors import InvalidInput


def run_list(*, user: Any) -> QuerySet[MeasuredRun]:
    """The runs this user may read: theirs, and their teams'."""
    return access.visible_to(user, MeasuredRun.objects.select_related("team"))


def run_get(*, user: Any, run_id: int) -> MeasuredRun | None:
    """The run if this user may read it, else None (views answer 404)."""
    return run_list(user=user).filter(pk=run_id).first()


def run_get_editable(*, user: Any, run_id: int) -> MeasuredRun | None:
    """The run if this user may change or delete it (its owner; its team's owners and editors), else None: a
    team viewer's change answers 404, as a read-only design's does."""
    return access.editable_by(user, MeasuredRun.objects.select_related("team")).filter(pk=run_id).first()


@dataclass(frozen=True)
class Holder:
    """Whose runs and switch: a user's personal ones (``team_id`` None) or a team's. ``label`` names it as
    an estimate's calibration statement does (“team Training infra”, “alice”)."""

    owner_id: int | None
    team_id: int | None
    label: str
    scope: str  # "personal" or "team", as an estimate's calibration statement says it

    def runs(self) -> QuerySet[MeasuredRun]:
        return holder_runs(owner_id=self.owner_id, team_id=self.team_id)


def holder_runs(*, owner_id: int | None, team_id: int | None) -> QuerySet[MeasuredRun]:
    """The runs that calibrate a holder's designs: the team's (``team_id`` set), else the user's personal
    ones."""
    if team_id is not None:
        return MeasuredRun.objects.filter(team_id=team_id)
    return MeasuredRun.objects.filter(owner_id=owner_id, team__isnull=True)


def holder_get(*, user: Any, team_id: int | None, edit: bool = False) -> Holder | None:
    """The user themselves (``team_id`` None), or the team if they read it (``edit``: own or edit it); None
    for a team they may not read or change (views answer 404) and for anonymous users."""
    if not user or not user.is_authenticated:
        return None
    if team_id is None:
        label = holder_label(scope="personal", name=user.get_username())
        return Holder(owner_id=user.pk, team_id=None, label=label, scope="personal")
    roles = access.EDIT_ROLES if edit else access.READ_ROLES
    team = team_list(user=user, roles=roles).filter(pk=team_id).first()
    if team is None:
        return None
    label = holder_label(scope="team", name=team.name)
    return Holder(owner_id=None, team_id=team.pk, label=label, scope="team")


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


def calibration_fitted(*, runs: QuerySet[MeasuredRun]) -> tuple[UserCalibration, str]:
    """The calibration fitted on ``runs`` (in id order, as every fit reads them) against the current catalog,
    and that catalog's digest: what services keep on the holder's switch (CalibrationSetting.fit)."""
    snapshot = engine_catalog_snapshot()
    rows = [run_row(run, snapshot.specs) for run in runs.order_by("pk")]
    return calibration_fit(rows=rows), snapshot.digest


def calibration_setting(*, holder: Holder) -> tuple[bool, Any] | None:
    """The holder's switch as (enabled, changed_at), or None when it never toggled it."""
    found = (
        CalibrationSetting.objects.filter(team_id=holder.team_id)
        if holder.team_id is not None
        else CalibrationSetting.objects.filter(owner_id=holder.owner_id)
    )
    return found.values_list("enabled", "changed_at").first()


def calibration_enabled(*, holder: Holder) -> bool:
    """Whether the holder's calibration is switched on (off when it never toggled it)."""
    found = calibration_setting(holder=holder)
    return found is not None and found[1] is not None and bool(found[0])


ESTIMATOR = (
    "factor = geometric mean of measured / estimated step time over the runs of the regime (a key needs "
    "3 runs); band = 10th and 90th percentiles of the leave-one-out residuals (estimated / measured "
    "tokens/s − 1, each run predicted with the factor fitted on the others)"
)


def summary_get(*, holder: Holder, rows: list[RunRow] | None = None) -> dict[str, Any]:
    """The holder's switch, the runs' errors (all, then by regime) and the factors fitted on the runs
    (``rows``: the holder's runs already against the engine, when the caller has them)."""
    rows = run_rows(runs=holder.runs().order_by("pk")) if rows is None else rows
    return {
        "scope": holder.scope,
        "team": holder.team_id,
        "holder": holder.label,
        "enabled": calibration_enabled(holder=holder),
        "summary": error_summary(rows),
        "factors": [f.to_json() for f in calibration_fit(rows=rows).factors],
        "estimator": ESTIMATOR,
    }
