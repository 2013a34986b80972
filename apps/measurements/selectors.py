"""Measured-run reads, through the one ownership rule (apps/teams/access.py): a personal run is its owner's, a
team's run its members' (viewers read; owners and editors write); anyone else gets None, and views 404. Each
run against the engine's estimate, the summary of the errors by regime, and a holder's calibration state as
the design service keys and applies it (a team design takes its team's, a personal one its maker's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import QuerySet

from apps.catalog.selectors import engine_catalog_snapshot
from apps.measurements.estimates import RunComparison, compare, run_estimate
from apps.measurements.models import CalibrationSetting, MeasuredRun
from apps.measurements.services import RUN_FIELDS
from apps.teams import access
from apps.teams.models import Team
from apps.teams.selectors import team_list
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.training.user_calibration import (
    CalibrationState,
    UserCalibration,
    fit,
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

    @property
    def scope(self) -> str:
        return "personal" if self.team_id is None else "team"

    def runs(self) -> QuerySet[MeasuredRun]:
        if self.team_id is not None:
            return MeasuredRun.objects.filter(team_id=self.team_id)
        return MeasuredRun.objects.filter(owner_id=self.owner_id, team__isnull=True)


def team_label(name: str) -> str:
    return f"team {name}"


def holder_get(*, user: Any, team_id: int | None, edit: bool = False) -> Holder | None:
    """The user themselves (``team_id`` None), or the team if they read it (``edit``: own or edit it); None
    for a team they may not read or change (views answer 404) and for anonymous users."""
    if not user or not user.is_authenticated:
        return None
    if team_id is None:
        return Holder(owner_id=user.pk, team_id=None, label=user.get_username())
    roles = access.EDIT_ROLES if edit else access.READ_ROLES
    team = team_list(user=user, roles=roles).filter(pk=team_id).first()
    return None if team is None else Holder(owner_id=None, team_id=team.pk, label=team_label(team.name))


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


@dataclass(frozen=True)
class CalibrationKey:
    """The switch that applies to a design, as the evaluation memo keys it: whose (the holder), on or off,
    and the stamp that moves with every toggle and every write to the holder's runs ("" when the holder
    never wrote a run nor toggled)."""

    holder: Holder
    enabled: bool
    stamp: str

    def memo_key(self) -> tuple[Any, ...]:
        return (self.holder.owner_id, self.holder.team_id, self.holder.label, self.enabled, self.stamp)


def _key(holder: Holder, found: tuple[Any, Any] | None) -> CalibrationKey:
    if found is None or found[1] is None:
        return CalibrationKey(holder, False, "")
    return CalibrationKey(holder, bool(found[0]), found[1].isoformat())


def calibration_key(*, holder: Holder) -> CalibrationKey:
    found = (
        CalibrationSetting.objects.filter(team_id=holder.team_id)
        if holder.team_id is not None
        else CalibrationSetting.objects.filter(owner_id=holder.owner_id)
    )
    return _key(holder, found.values_list("enabled", "changed_at").first())


def calibration_key_of_design(*, owner_id: int, team_id: int | None) -> CalibrationKey:
    """The switch of the design's owner, in one query: the team's for a team's design, its maker's for a
    personal one; the same whoever looks at the design (a share link included)."""
    fields = ("calibration_setting__enabled", "calibration_setting__changed_at")
    if team_id is not None:
        row = Team.objects.filter(pk=team_id).values_list("name", *fields).first()
    else:
        users = get_user_model().objects.filter(pk=owner_id)
        row = users.values_list(get_user_model().USERNAME_FIELD, *fields).first()
    return calibration_key_of_row(owner_id=owner_id, team_id=team_id, row=row)


def calibration_key_of_row(
    *, owner_id: int, team_id: int | None, row: tuple[Any, ...] | None
) -> CalibrationKey:
    """calibration_key_of_design's answer from its row (the holder's name, the switch, its stamp; None: no
    such holder), read by the ORM or by calibration_holder_sql's statement."""
    if team_id is not None:
        holder = Holder(owner_id=None, team_id=team_id, label=team_label(row[0] if row else ""))
    else:
        holder = Holder(owner_id=owner_id, team_id=None, label=str(row[0]) if row else "")
    return _key(holder, None if row is None else (row[1], row[2]))


def calibration_holder_sql(*, team: bool) -> str:
    """calibration_key_of_design's query as plain SQL of one parameter (the team's id for a team's design,
    else its maker's), for a caller that reads it in the same statement as other stamps
    (apps.designs.pricing.evaluation_stamps): the holder's name, the switch and its stamp, as the ORM's LEFT
    JOIN reads them; no row when there is no such holder."""
    quote = connection.ops.quote_name

    def column(model: Any, field: str) -> str:  # the column's quoted name (a model's meta is untyped here)
        return str(quote(model._meta.get_field(field).column))

    holder_model: Any = Team if team else get_user_model()
    name = column(holder_model, "name" if team else holder_model.USERNAME_FIELD)
    holder, pk = quote(holder_model._meta.db_table), quote(holder_model._meta.pk.column)
    setting = quote(CalibrationSetting._meta.db_table)
    holder_id = column(CalibrationSetting, "team" if team else "owner")
    enabled, changed_at = column(CalibrationSetting, "enabled"), column(CalibrationSetting, "changed_at")
    return (
        f"SELECT h.{name}, s.{enabled}, s.{changed_at} FROM {holder} h"
        f" LEFT OUTER JOIN {setting} s ON s.{holder_id} = h.{pk} WHERE h.{pk} = %s"
    )


def calibration_state(*, key: CalibrationKey) -> CalibrationState:
    """What the holder's designs are estimated with: off, or on with the factors fitted on its runs."""
    scope, label = key.holder.scope, key.holder.label
    if not key.enabled:
        return CalibrationState(enabled=False, scope=scope, holder=label)
    rows = run_rows(runs=key.holder.runs().order_by("pk"))
    return CalibrationState(enabled=True, calibration=calibration_fit(rows=rows), scope=scope, holder=label)


def personal_calibration(*, user: Any) -> CalibrationState:
    """The user's own calibration (their personal runs and switch), for estimates that are no one's design
    (a sweep's or a recommendation's points)."""
    holder = holder_get(user=user, team_id=None)
    if holder is None:
        return CalibrationState(enabled=False)
    return calibration_state(key=calibration_key(holder=holder))


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
        "enabled": calibration_key(holder=holder).enabled,
        "summary": error_summary(rows),
        "factors": [f.to_json() for f in calibration_fit(rows=rows).factors],
        "estimator": ESTIMATOR,
    }
