"""What a computation is priced and calibrated with, for every consumer (issues #34, #35): a design's
evaluation, the capacity plan, sweeps, compare, recommend and the serving planner. One module, so that an
evaluation's inputs (beside the catalog snapshot, apps.catalog.selectors) are resolved in one place:

- prices: each consumer asks :func:`prices_resolve` (a design-shaped spec) or :func:`offerings_priced` (an
  accelerator's offerings and owning inputs) with the owner whose book applies: the design's, the plan's or
  the analysis's (its team's when it is a team's, else its user's own), never the user who happens to ask or
  the worker that runs it. The order: the value given on the design (its costs, or its site's power and
  colocation) → the owner's price book, newest unexpired entry → the public catalog (the cost engine's own
  resolution, with its source); every figure says which, with its entry's date. The book's figures are
  written into the spec the cost engine reads, as if typed on the design, and every figure's origin is an
  assumption row (``prices.*``). An expired entry is never used; when it is newer than what is used
  instead, a warning names it. A new price source is added here, and every consumer has it.
- calibration: the switch of a design's owner (its team's, else its maker's) and the factors fitted on the
  holder's measured runs, which the measurements app keeps on the switch's row whenever the runs or the
  switch change (CalibrationSetting.fit), as :func:`calibration_state`: read with the switch, never fitted
  here, except once after a catalog write or an engine release (the kept fit was made on another catalog or
  by another engine: apps.measurements.services.calibration_refit).
- the stamps: :func:`evaluation_stamps`, what a stored evaluation's memo key reads of the owner (the book's
  stamp and the calibration switch, with its kept fit) in one statement;
  :func:`evaluation_stamps_and_catalog`, with the catalog's version in the same statement.

What a design resolves to is part of its evaluation's key (apps.designs.services), so no owner sees a result
priced with another's book or calibrated with another's runs."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Case, F, Q, Value, When, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from apps.catalog.selectors import (
    CatalogSnapshot,
    catalog_version,
    catalog_version_column_sql,
    engine_catalog_snapshot,
    price_freshness,
)
from apps.designs.models import Design, DesignVersion
from apps.designs.selectors import visible_version_values_sql
from apps.measurements.models import CalibrationSetting
from apps.measurements.selectors import Holder, holder_get
from apps.measurements.services import calibration_refit
from apps.pricebook.models import PriceEntry
from apps.pricebook.services import TARGETS
from apps.teams import access
from apps.teams.models import Team
from clusterdesigner import prepared
from clusterdesigner.api_tokens import api_token_sql
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.offerings import COMMITMENT_YEARS, CloudOfferingSpec, Freshness
from clusterdesigner.engine.core.version import ENGINE_VERSION
from clusterdesigner.engine.cost.cost_request import switch_slug
from clusterdesigner.engine.cost.site import cooling_used, cost_inputs, input_source, parse_site
from clusterdesigner.engine.training.user_calibration import CalibrationState, UserCalibration, holder_label
from clusterdesigner.memo import snapshot_hash


@dataclass(frozen=True, slots=True)
class PriceOwner:
    """Whose price book applies: a team's (``team_id`` set) or a user's own (``team_id`` None)."""

    owner_id: int
    team_id: int | None = None

    @classmethod
    def of(cls, row: Any) -> PriceOwner:
        """The book of an owned row (a design, a capacity plan, an analysis): its team's, else its owner's."""
        return cls(owner_id=int(row.owner_id), team_id=row.team_id)

    def to_json(self) -> dict[str, Any]:
        return {"owner": self.owner_id, "team": self.team_id}


def price_owner(*, user: Any, team_id: int | None, field: str = "team") -> PriceOwner | None:
    """The book a request prices with: ``team_id``'s when given (the user must be one of its members; a 400
    naming ``field`` otherwise, without saying whether the team exists), else the user's own; None for an
    anonymous caller (the catalog's prices)."""
    if user is None or not getattr(user, "is_authenticated", False):
        if team_id is not None:
            raise InputError("sign in to price with a team's book", field=field)
        return None
    if team_id is None:
        return PriceOwner(owner_id=int(user.pk))
    if not access.team_ids(user).filter(team_id=team_id).exists():
        raise InputError("no team with this id of which you are a member", field=field)
    return PriceOwner(owner_id=int(user.pk), team_id=int(team_id))


_ENTRIES = connection.ops.quote_name(PriceEntry._meta.db_table)


def evaluation_stamps(owner: PriceOwner) -> tuple[tuple[Any, ...], CalibrationKey]:
    """What a stored evaluation's memo key reads of the owner on every request, in one statement: the stamp
    of the owner's price book and the switch of the calibration that applies to its designs.

    The book's stamp is its entries' count and newest ``updated_at``: any write (an entry added, changed or
    deleted) moves it, so a memo keyed by it (with the day, which decides expiry) never serves a result
    priced with an older book. The switch is calibration_key_of_design's (the
    team's for a team's design, else its maker's). Plain SQL: the ORM built the aggregate, and then the
    switch's query, anew each time (each about a fifth of the request's CPU, bench/load_profile.py
    --profile design-evaluate)."""
    _, stamp, calibration = _stamps(owner, with_catalog=False)
    return stamp, calibration


def evaluation_stamps_and_catalog(owner: PriceOwner) -> tuple[str, tuple[Any, ...], CalibrationKey]:
    """catalog_version()'s text and evaluation_stamps(owner), on PostgreSQL in one statement (the catalog's
    as a column of the stamps' row: apps.catalog.selectors.catalog_version_column_sql), elsewhere in two.
    A stored evaluation's memo key reads the three on every request: one round trip fewer than reading the
    catalog's version apart (bench/load_profile.py, design-evaluate)."""
    if connection.vendor != "postgresql":
        version = catalog_version()
        stamp, calibration = evaluation_stamps(owner)
        return version, stamp, calibration
    column, stamp, calibration = _stamps(owner, with_catalog=True)
    return str(column), stamp, calibration  # never NULL: string_agg over the eight tables' rows


def _book_sql(*, team: bool, holder: str = "%s") -> str:
    """The stamp of a price book (its entries' count and newest ``updated_at``) as SQL: a team's when
    ``team``, else a user's own, whose id is ``holder`` (a parameter, or a column of an embedding
    statement)."""
    where = f"team_id = {holder}" if team else f"owner_id = {holder} AND team_id IS NULL"
    return f"SELECT COUNT(*) AS n, MAX(updated_at) AS latest FROM {_ENTRIES} WHERE {where}"


def _stamps(owner: PriceOwner, *, with_catalog: bool) -> tuple[str | None, tuple[Any, ...], CalibrationKey]:
    team = owner.team_id is not None
    holder_sql = calibration_holder_sql(team=team)
    holder_id = owner.team_id if owner.team_id is not None else owner.owner_id
    catalog = catalog_version_column_sql() if with_catalog else "NULL"
    sql = (
        f"SELECT {catalog}, b.n, b.latest, h.* FROM ({_book_sql(team=team)}) b"
        f" LEFT OUTER JOIN ({holder_sql}) h ON TRUE"
    )
    with connection.cursor() as cursor:
        # Prepared once per connection: planning it was most of the server's work (clusterdesigner.prepared).
        name = (
            "designs_stamps_"
            + ("catalog_" if with_catalog else "")
            + ("team" if owner.team_id else "personal")
        )
        prepared.execute(cursor, name, sql, [holder_id, holder_id])
        version, count, newest, *holder = cursor.fetchone()
    return version, *_stamps_of_row(owner, count, newest, holder)


def _stamps_of_row(
    owner: PriceOwner, count: int, newest: Any, holder: list[Any]
) -> tuple[tuple[Any, ...], CalibrationKey]:
    """The book's stamp and the calibration switch from a statement's columns: the entries' count and newest
    ``updated_at``, and the holder's row (its name and the switch's SETTING_FIELDS; NULLs: no holder)."""
    # No holder row: the LEFT JOIN's NULLs, as the ORM's .first() answered None.
    row = None if holder[0] is None else tuple(holder)
    calibration = calibration_key_of_row(owner_id=owner.owner_id, team_id=owner.team_id, row=row)
    # The book's newest updated_at as the ORM's aggregate reads it (None: no entry).
    latest = None if newest is None else _aware(newest)
    return (owner.owner_id, owner.team_id, count, latest), calibration


def _aware(value: dt.datetime | str) -> dt.datetime:
    """A timestamp read by plain SQL, aware as the ORM reads it: PostgreSQL answers an aware datetime, SQLite
    a naive UTC one for a column and its text (UTC, as stored) for an aggregate such as MAX."""
    moment = dt.datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt.UTC)


# --- The calibration a design's estimates are made with: its owner's switch, the factors fitted on its runs

# The switch's columns a CalibrationKey is read from: on or off, its stamp, and the fit the measurements app
# keeps with what it was fitted at (the stamp, the engine version, the catalog's digest).
SETTING_FIELDS = ("enabled", "changed_at", "fit", "fitted_at", "fitted_engine", "fitted_catalog")


@dataclass(frozen=True)
class CalibrationKey:
    """The switch that applies to a design, as the evaluation memo keys it: whose (the holder), on or off,
    and the stamp that moves with every toggle and every write to the holder's runs ("" when the holder
    never wrote a run nor toggled); with the fit the measurements app keeps on the switch (``kept``: its JSON,
    and the stamp, engine version and catalog digest it was fitted at; None when none is kept)."""

    holder: Holder
    enabled: bool
    stamp: str
    kept: tuple[Any, str, int | None, str] | None = field(default=None, hash=False)

    def memo_key(self) -> tuple[Any, ...]:
        return (self.holder.owner_id, self.holder.team_id, self.holder.label, self.enabled, self.stamp)

    def kept_fit(self, catalog: CatalogSnapshot) -> UserCalibration | None:
        """The kept fit when it is what the holder's runs give now: fitted at this stamp (no run written and
        no toggle since), by this engine, on this catalog (the runs are estimated against it); else None."""
        if self.kept is None:
            return None
        fit, *fitted = self.kept
        if tuple(fitted) != (self.stamp, ENGINE_VERSION, catalog.digest):
            return None
        return UserCalibration.from_json(fit)


def _stamp(moment: Any) -> str:
    """A stamp's text, aware whichever way it was read (_aware)."""
    return _aware(moment).isoformat()


def _key(holder: Holder, found: tuple[Any, ...] | None) -> CalibrationKey:
    """The key from the switch's SETTING_FIELDS (None: no switch)."""
    if found is None or found[1] is None:
        return CalibrationKey(holder, False, "")
    enabled, changed_at, fit, fitted_at, engine, digest = found
    kept = None
    if fit is not None and fitted_at is not None:  # plain SQL reads the JSON column as its text
        kept = (json.loads(fit) if isinstance(fit, str) else fit, _stamp(fitted_at), engine, digest)
    return CalibrationKey(holder, bool(enabled), _stamp(changed_at), kept)


def calibration_key(*, holder: Holder) -> CalibrationKey:
    settings = (
        CalibrationSetting.objects.filter(team_id=holder.team_id)
        if holder.team_id is not None
        else CalibrationSetting.objects.filter(owner_id=holder.owner_id)
    )
    return _key(holder, settings.values_list(*SETTING_FIELDS).first())


def calibration_key_of_design(*, owner_id: int, team_id: int | None) -> CalibrationKey:
    """The switch of the design's owner, in one query: the team's for a team's design, its maker's for a
    personal one; the same whoever looks at the design (a share link included)."""
    fields = tuple(f"calibration_setting__{name}" for name in SETTING_FIELDS)
    if team_id is not None:
        row = Team.objects.filter(pk=team_id).values_list("name", *fields).first()
    else:
        users = get_user_model().objects.filter(pk=owner_id)
        row = users.values_list(get_user_model().USERNAME_FIELD, *fields).first()
    return calibration_key_of_row(owner_id=owner_id, team_id=team_id, row=row)


def calibration_key_of_row(
    *, owner_id: int, team_id: int | None, row: tuple[Any, ...] | None
) -> CalibrationKey:
    """calibration_key_of_design's answer from its row (the holder's name, then the switch's SETTING_FIELDS;
    None: no such holder), read by the ORM or by calibration_holder_sql's statement."""
    scope = "team" if team_id is not None else "personal"
    label = holder_label(scope=scope, name=str(row[0]) if row else "")
    owner = None if team_id is not None else owner_id
    holder = Holder(owner_id=owner, team_id=team_id, label=label, scope=scope)
    return _key(holder, None if row is None else row[1:])


def calibration_holder_sql(*, team: bool, holder: str = "%s") -> str:
    """calibration_key_of_design's query as plain SQL of one parameter (the team's id for a team's design,
    else its maker's), for a caller that reads it in the same statement as other stamps
    (evaluation_stamps): the holder's name and the switch's SETTING_FIELDS, as the ORM's LEFT JOIN reads
    them; no row when there is no such holder. ``holder``: the parameter, or a column of an embedding
    statement."""
    quote = connection.ops.quote_name

    def column(model: Any, field: str) -> str:  # the column's quoted name (a model's meta is untyped here)
        return str(quote(model._meta.get_field(field).column))

    holder_model: Any = Team if team else get_user_model()
    name = column(holder_model, "name" if team else holder_model.USERNAME_FIELD)
    table, pk = quote(holder_model._meta.db_table), quote(holder_model._meta.pk.column)
    setting = quote(CalibrationSetting._meta.db_table)
    holder_id = column(CalibrationSetting, "team" if team else "owner")
    columns = ", ".join(f"s.{column(CalibrationSetting, f)}" for f in SETTING_FIELDS)
    return (
        f"SELECT h.{name}, {columns} FROM {table} h"
        f" LEFT OUTER JOIN {setting} s ON s.{holder_id} = h.{pk} WHERE h.{pk} = {holder}"
    )


def calibration_state(*, key: CalibrationKey, catalog: CatalogSnapshot | None = None) -> CalibrationState:
    """What the holder's designs are estimated with: off, or on with the factors fitted on its runs, as the
    measurements app keeps them (``catalog``: the snapshot the evaluation uses, by default the current one);
    fitted again, once, when the kept fit was made on another catalog or by another engine."""
    scope, label = key.holder.scope, key.holder.label
    if not key.enabled:
        return CalibrationState(enabled=False, scope=scope, holder=label)
    fit = key.kept_fit(catalog or engine_catalog_snapshot())
    if fit is None:
        fit = calibration_refit(owner_id=key.holder.owner_id, team_id=key.holder.team_id)
    return CalibrationState(enabled=True, calibration=fit, scope=scope, holder=label)


def personal_calibration(*, user: Any) -> CalibrationState:
    """The user's own calibration (their personal runs and switch), for estimates that are no one's design
    (a sweep's or a recommendation's points)."""
    holder = holder_get(user=user, team_id=None)
    if holder is None:
        return CalibrationState(enabled=False)
    return calibration_state(key=calibration_key(holder=holder))


# --- An evaluation's inputs: the catalog, the prices, the calibration, their hash and memo key ------------


class EvaluationInputs(NamedTuple):
    """What an evaluation of a version is made with (evaluation_input): the catalog snapshot, the version's
    resolved prices, the owner's calibration, and the hash of them all that the evaluation is stored under."""

    catalog: CatalogSnapshot
    prices: Resolution
    digest: str
    calibration: CalibrationState


def evaluation_memo_key(
    version: tuple[int, dt.datetime],
    catalog_at: str,
    book: tuple[Any, ...],
    setting: CalibrationKey,
) -> tuple[Any, ...]:
    """What a stored evaluation's text depends on, as the memo keys it: the inputs of evaluation_input's
    digest (the version, the catalog, the owner's price book by its stamp (pricing.evaluation_stamps) with
    the day, which decides what has expired, the day's stale threshold, the engines' output version, whose
    calibration applies (the design's team's, else its maker's), its switch and its stamp, which moves with
    every write to the holder's measured runs). ``version``: its id and creation; ``catalog_at``:
    catalog_version()'s text, which labels the snapshot the evaluation uses."""
    fresh = price_freshness()
    day = (fresh.today, fresh.stale_after_days)
    return (
        *version,
        catalog_at,
        book,
        *day,
        ENGINE_VERSION,
        *setting.memo_key(),
    )


def evaluation_memo_key_by_token(*, key_hash: str, design_id: int) -> TokenEvaluationKey | None:
    """PostgreSQL only, one statement: what the fast path (clusterdesigner.fastpath) reads to answer a stored
    evaluation of design ``design_id``'s current version to the API token whose key hashes to ``key_hash``:
    the token's columns and its user's ``is_active`` (api_tokens.api_token_passes_quietly judges them), and
    the memo key design_evaluate_json keeps the text under, when the token's user may read the design
    (selectors.design_version_get_visible's condition, compiled from the same queryset); None when no token
    has this key. The three statements the view makes for it (the token with its user, the version, the
    stamps with the catalog's version), read as the view reads them, as one: the version's reads are the
    user's from the token's row, the stamps the design's owner's (its team's book and switch for a team's
    design, else its maker's) from the version's row."""
    sql, version_params, design_slot = _token_key_sql()
    params = [key_hash, *version_params]
    params[1 + design_slot] = design_id
    with connection.cursor() as cursor:
        prepared.execute(cursor, "designs_evaluation_key_by_token", sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    scope, expires_at, last_used_at, is_active, version_id, created_at, owner_id, team_id, catalog_at = row[
        :9
    ]
    token = (scope, expires_at, last_used_at, is_active)
    if version_id is None:
        return TokenEvaluationKey(*token, None)
    owner = PriceOwner(owner_id=owner_id, team_id=team_id)
    count, newest, *holder = row[9:14] if team_id is None else row[14:19]
    setting = [None] * (len(SETTING_FIELDS) - 2)  # the kept fit is no part of the key
    book, calibration = _stamps_of_row(owner, count, newest, [*holder, *setting])
    key = evaluation_memo_key((version_id, created_at), str(catalog_at), book, calibration)
    return TokenEvaluationKey(*token, key)


class TokenEvaluationKey(NamedTuple):
    """evaluation_memo_key_by_token's answer: the token's columns, and the memo key (None: the token's user
    may not read the design, or it has no such design)."""

    scope: str
    expires_at: dt.datetime | None
    last_used_at: dt.datetime | None
    is_active: bool
    key: tuple[Any, ...] | None


@functools.cache
def _token_key_sql() -> tuple[str, tuple[Any, ...], int]:
    """evaluation_memo_key_by_token's statement, its parameters after the key hash (the version's query's,
    the design id's None) and the design id's position among them."""
    # The version's columns for the token's user (its user_id, a column here); then, from the version's
    # owner, each of the two books and holders, the one that does not apply reading nothing (its id NULL).
    personal = "CASE WHEN v.team_id IS NULL THEN v.owner_id END"
    version, params, slots = visible_version_values_sql(user="tok.user_id")
    ((design_slot, _),) = slots
    sql = (
        "SELECT tok.scope, tok.expires_at, tok.last_used_at, tok.is_active,"
        f" v.id, v.created_at, v.owner_id, v.team_id, {catalog_version_column_sql()},"
        " bp.n, bp.latest, hp.h_name, hp.h_enabled, hp.h_changed_at,"
        " bt.n, bt.latest, ht.h_name, ht.h_enabled, ht.h_changed_at"
        f" FROM ({api_token_sql()}) tok"
        f" LEFT OUTER JOIN LATERAL ({version}) AS v(id, created_at, owner_id, team_id) ON TRUE"
        f" LEFT OUTER JOIN LATERAL ({_book_sql(team=False, holder=personal)}) bp ON TRUE"
        f" LEFT OUTER JOIN LATERAL ({_holder_switch_sql(team=False, holder=personal)}) hp ON TRUE"
        f" LEFT OUTER JOIN LATERAL ({_book_sql(team=True, holder='v.team_id')}) bt ON TRUE"
        f" LEFT OUTER JOIN LATERAL ({_holder_switch_sql(team=True, holder='v.team_id')}) ht ON TRUE"
    )
    return sql, params, design_slot


def _holder_switch_sql(*, team: bool, holder: str) -> str:
    """calibration_holder_sql's holder name, switch and stamp (no kept fit), under names of their own."""
    columns = ", ".join(("h_name", *(f"h_{name}" for name in SETTING_FIELDS)))  # calibration_holder_sql's
    return (
        "SELECT s.h_name, s.h_enabled, s.h_changed_at"
        f" FROM ({calibration_holder_sql(team=team, holder=holder)}) AS s({columns})"
    )


def design_calibration(*, design: Design) -> CalibrationState:
    """The calibration a design's estimates are made with: its owner's (its team's for a team's design, its
    maker's for a personal one), for the analyses and plans built from it."""
    return calibration_state(key=calibration_key_of_design(owner_id=design.owner_id, team_id=design.team_id))


def calibration_key_of_version(version: DesignVersion) -> CalibrationKey:
    """The switch of the design's owner: its team's for a team's design, its maker's for a personal one (the
    same for every reader, share links included)."""
    design = version.design
    return calibration_key_of_design(owner_id=design.owner_id, team_id=design.team_id)


def design_prices(*, version: DesignVersion, catalog: CatalogSnapshot) -> Resolution:
    """The version's prices resolved (apps.designs.pricing): the design's own, else its owner's price book
    (the team's for a team's design), else the catalog's; today decides which entries have expired."""
    return prices_resolve(owner=PriceOwner.of(version.design), spec=version.spec, catalog=catalog.specs)


def evaluation_input(
    version: DesignVersion,
    catalog: CatalogSnapshot | None = None,
    prices: Resolution | None = None,
    setting: CalibrationKey | None = None,
) -> EvaluationInputs:
    """An evaluation's inputs: the catalog (by default the current one), the version's resolved prices, the
    owner's calibration state and the hash that identifies an evaluation of this version against them
    (against which catalog prices are stale today, and against the engines' output version). The resolved
    prices are in the hash, so an evaluation priced with one owner's book is never shown for another's, and
    a changed or expired entry is a new evaluation."""
    catalog = catalog or engine_catalog_snapshot()
    prices = prices or design_prices(version=version, catalog=catalog)
    stale = freshness_key(records=catalog.records, freshness=price_freshness())
    calibration = calibration_state(key=setting or calibration_key_of_version(version), catalog=catalog)
    # The engine version is in the hash, so a result stored before an engine change (lacking the figures it
    # added) is recomputed on the next view rather than shown as it was; the calibration (the switch and the
    # factors fitted on the holder's runs, and whose) is, so a result is never served under another one.
    return EvaluationInputs(
        catalog,
        prices,
        snapshot_hash(
            {
                "spec": version.spec,
                "catalog": catalog.digest,
                "prices": prices.key,
                "stale": stale,
                "engine": ENGINE_VERSION,
                "calibration": calibration.to_json(),
            }
        ),
        calibration,
    )


def freshness_key(*, records: Mapping[str, Any], freshness: Freshness) -> dict[str, Any]:
    """What an evaluation's stale-price findings depend on: the threshold and which of the catalog's price
    dates are stale. It changes when a date crosses the threshold, not every day, so a stored evaluation is
    reused until then."""
    rows = [p for o in records.get("cloud_offerings", []) for p in o.get("prices", [])]
    rows += [r for key in ("accelerators", "server_types") for r in records.get(key, [])]
    dates = {str(row.get("as_of") or "") for row in rows}
    return {"days": freshness.stale_after_days, "stale": sorted(d for d in dates if freshness.is_stale(d))}


def prices_resolve(
    *,
    owner: PriceOwner | None,
    spec: Mapping[str, Any],
    catalog: CatalogSpecs,
    today: dt.date | None = None,
) -> Resolution:
    """A design-shaped ``spec``'s prices resolved through ``owner``'s book (none: the catalog's), on
    ``today`` (default: the site's today, which decides which entries have expired)."""
    today = today or price_freshness().today
    entries = (
        []
        if owner is None
        else book_entries(
            owner_id=owner.owner_id, team_id=owner.team_id, spec=spec, catalog=catalog, today=today
        )
    )
    return resolve_prices(spec=spec, entries=entries, catalog=catalog, today=today)


@dataclass(frozen=True)
class OfferingPrices:
    """An accelerator's prices as one owner pays them: the owning inputs (``on_prem``, the given ones with
    the book's written in), each offering's USD per node-hour of ``gpus_per_node`` GPUs by pricing model
    where the book sets one (``cloud``; the rest are the catalog's), every figure's origin (``rows``) and the
    book's warnings (``findings``)."""

    accelerator: str
    gpus_per_node: int
    on_prem: dict[str, Any]
    cloud: dict[str, dict[str, float]]
    rows: list[dict[str, Any]]
    findings: list[dict[str, Any]]
    # The cost request's sections a book entry's terms set (a network quote, a server quote that includes the
    # network, a colocation contract's basis).
    sections: dict[str, Any] = dataclasses.field(default_factory=dict)
    # The nodes obtainable per offering and pricing model (the book's quota, or a capacity block's size).
    capacity_nodes: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OfferingPrices:
        return cls(**data)

    def usd_per_instance_hour(self, offering: Any) -> dict[str, float]:
        """An offering's prices per instance-hour (as the catalog states them), the book's where it sets one:
        USD per node-hour × the instance's GPUs ÷ GPUs per node."""
        prices = dict(offering.usd_per_hour)
        for model, usd in self.cloud.get(offering.slug, {}).items():
            prices[model] = usd * offering.gpu_count / self.gpus_per_node
        return prices


def offerings_priced(
    *,
    owner: PriceOwner | None,
    catalog: CatalogSpecs,
    accelerator: str,
    gpus_per_node: int,
    slugs: Iterable[str] | None = None,
    on_prem: Mapping[str, Any] | None = None,
    site: Mapping[str, Any] | None = None,
) -> OfferingPrices:
    """The prices of owning ``accelerator`` nodes of ``gpus_per_node`` GPUs and of renting ``slugs`` (by
    default every offering of that accelerator), through ``owner``'s book: one resolution, as a design with
    these offerings would have (prices_resolve). Owning figures given in ``on_prem`` win over the book's;
    at a ``site`` (a saved site's engine object, apps.sites), its power, colocation and PUE win over the
    book's as at a design's site (the cost engine applies them: the caller passes the site on), each row
    saying "site <name>"."""
    chosen = sorted(
        slugs
        if slugs is not None
        else (s for s, o in catalog.offerings.items() if o.accelerator == accelerator)
    )
    spec = {
        "cluster": {"accelerator": accelerator, "gpus_per_node": gpus_per_node},
        "costs": {
            "on_prem": dict(on_prem or {}),
            "cloud": [{"offering": s} for s in chosen if s in catalog.offerings],
        },
        **({"site": dict(site)} if site else {}),
    }
    resolution = prices_resolve(owner=owner, spec=spec, catalog=catalog)
    costs = resolution.spec["costs"]
    return OfferingPrices(
        accelerator=accelerator,
        gpus_per_node=gpus_per_node,
        on_prem=dict(costs["on_prem"]),
        cloud={
            c["offering"]: dict(c["usd_per_node_hour"]) for c in costs["cloud"] if c.get("usd_per_node_hour")
        },
        rows=site_rows(
            catalog_rows(resolution.rows, catalog, gpus_per_node), site, accelerator, on_prem or {}
        ),
        findings=resolution.findings,
        sections={k: costs[k] for k in ("network", "colocation") if k in costs},
        capacity_nodes={
            c["offering"]: dict(c["capacity_nodes"]) for c in costs["cloud"] if c.get("capacity_nodes")
        },
    )


def catalog_rows(
    rows: list[dict[str, Any]], catalog: CatalogSpecs, gpus_per_node: int
) -> list[dict[str, Any]]:
    """The rows with each cloud figure the catalog prices filled in from the catalog itself (its price per
    node-hour of ``gpus_per_node`` GPUs, its date and source), for consumers that run no design evaluation
    (engine.design.design.price_assumptions fills them from the cost engine's answer for a design)."""
    out = []
    for row in rows:
        parts = row["name"].split(".")
        if row["origin"] == "catalog" and parts[1] != "cloud":
            out.append(row)  # an owning figure: the cost engine's resolution says it (a sweep row, a plan)
            continue
        if row["origin"] == "catalog" and parts[1] == "cloud" and len(parts) == 4:
            offering = catalog.offerings.get(parts[2])
            usd = None if offering is None else offering.usd_per_hour.get(parts[3])
            if offering is not None and usd is not None:
                as_of = offering.price_as_of.get(parts[3], "")
                row = {
                    **row,
                    "value": usd * gpus_per_node / offering.gpu_count,
                    "as_of": as_of,
                    "source": f"the public catalog: {offering.slug} {parts[3]} {usd:g} USD/instance-h"
                    + (f" as of {as_of}" if as_of else ""),
                }
        out.append(row)
    return out


def site_rows(
    rows: list[dict[str, Any]], site: Mapping[str, Any] | None, accelerator: str, given: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The rows with each owning figure a ``site`` sets (engine.cost.site.cost_inputs: its power price,
    colocation price, the PUE of the cooling ``accelerator`` uses, its capex per MW) said as the site's,
    "site <name> (saved site N)", as the cost engine applies them; a figure ``given`` (the request's own
    on_prem) stays the request's. Without a site, the rows as they are."""
    if not site:
        return rows
    placed = parse_site(site)
    cooling = cooling_used(placed, accelerator)
    found = {
        f"prices.{path}": {
            "name": f"prices.{path}",
            "value": value,
            "unit": unit,
            "origin": "site",
            "as_of": "",
            "source": input_source(placed, cooling, path),
        }
        for path, value, unit in cost_inputs(placed, cooling)
        if unit and path.split(".", 1)[1] not in given
    }
    out = [found.pop(row["name"], row) for row in rows]
    return out + list(found.values())


# --- The book's resolution: the value given, else the owner's newest unexpired entry, else the catalog ------

Kind = PriceEntry.Kind
# The fields an entry is matched on (_matcher's targets).
MATCHED = (
    "accelerator",
    "gpus_per_node",
    "provider",
    "offering",
    "pricing_model",
    "network_item",
    "switch_model",
    "region",
)
# What resolution reads of an entry (its target, value, dates and source).
FIELDS = ("id", "kind", *TARGETS, "value", "valid_from", "expires_on", "source")  # BookEntry's order


@dataclass
class Resolution:
    """The spec with the book's figures written in, each figure's origin (assumption rows), the warnings."""

    spec: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> dict[str, Any]:
        """What an evaluation of the resolved spec depends on beyond the design and the catalog."""
        return {"prices": self.rows, "findings": self.findings}

    @property
    def digest(self) -> str:
        return snapshot_hash(self.key)


@dataclass(frozen=True, slots=True)
class BookEntry:
    """An entry as resolution reads it (a plain row: a book of hundreds is read in a millisecond or two)."""

    id: int
    kind: str
    accelerator: str
    gpus_per_node: int | None
    provider: str
    offering: str
    pricing_model: str
    network_included: bool | None
    support_years: float | None
    colocation_basis: str
    network_item: str
    switch_model: str
    region: str
    duration_hours: float | None
    block_nodes: int | None
    value: float
    valid_from: dt.date
    expires_on: dt.date | None
    source: str

    def expired(self, today: dt.date) -> bool:
        return self.expires_on is not None and self.expires_on < today


# Kinds that price any design (one figure for the whole book), and kinds that name a cloud offering.
BOOK_WIDE = (
    Kind.POWER,
    Kind.COLOCATION,
    Kind.NETWORK_QUOTE,
    Kind.STORAGE_QUOTE,
    Kind.STAFF_COST,
    Kind.ENTERPRISE_DISCOUNT,
)
PER_OFFERING = (Kind.PRIVATE_RATE, Kind.COMMITTED_RATE, Kind.CAPACITY_BLOCK, Kind.CLOUD_DISCOUNT, Kind.QUOTA)


def book_entries(
    *, owner_id: int, team_id: int | None, spec: Mapping[str, Any], catalog: CatalogSpecs, today: dt.date
) -> list[BookEntry]:
    """The entries of the book a design resolves through (its team's, or its owner's personal ones) that
    can price this spec (power and colocation, server quotes for its accelerator and node size, cloud terms
    for its offerings and their providers), newest first. Of each target only the newest live entry and the
    newest expired one can matter (_Book.pick), so only those are read: a book of years of quotes costs
    what a short one does."""
    rows = (
        PriceEntry.objects.filter(team_id=team_id)
        if team_id
        else PriceEntry.objects.filter(owner_id=owner_id, team__isnull=True)
    )
    cluster = spec.get("cluster") or {}
    slugs = [c.get("offering") for c in (spec.get("costs") or {}).get("cloud") or []]
    offerings = [catalog.offerings[s] for s in slugs if s in catalog.offerings]
    server = {"accelerator": cluster.get("accelerator"), "gpus_per_node": cluster.get("gpus_per_node")}
    relevant = (
        Q(kind__in=BOOK_WIDE)
        | Q(kind=Kind.SERVER_QUOTE, **server)
        | Q(kind__in=PER_OFFERING, offering__in=[o.slug for o in offerings])
        | Q(kind=Kind.CLOUD_DISCOUNT, provider__in=[o.provider for o in offerings])
    )
    status = Case(When(expires_on__lt=today, then=Value(1)), default=Value(0))
    newest = Window(
        RowNumber(),
        partition_by=[F("kind"), *(F(name) for name in MATCHED), status],
        order_by=[F("valid_from").desc(), F("id").desc()],
    )
    found = (
        rows.filter(relevant, valid_from__lte=today)
        .annotate(rank=newest)
        .filter(rank=1)
        .order_by("-valid_from", "-id")
        .values_list(*FIELDS)
    )
    return [BookEntry(*row) for row in found]


def _label(entry: BookEntry) -> str:
    target = " ".join(
        str(x)
        for x in (
            entry.accelerator,
            entry.gpus_per_node and f"× {entry.gpus_per_node}",
            entry.provider,
            entry.offering,
            entry.region,
            entry.pricing_model,
            entry.network_item.replace("_", " "),
            entry.switch_model,
        )
        if x
    )
    kind = Kind(entry.kind).label.lower()
    return f"price book entry {entry.id} ({kind}{' ' + target if target else ''})"


Match = Callable[[BookEntry], bool]


def _matcher(kind: str, **target: Any) -> Match:
    """Entries of ``kind`` whose target fields equal ``target``."""

    def match(entry: BookEntry) -> bool:
        return entry.kind == kind and all(getattr(entry, k) == v for k, v in target.items())

    return match


class _Book:
    """The entries by match, with the day: picks the newest valid entry, and warns of a newer expired one."""

    def __init__(self, entries: Iterable[BookEntry], today: dt.date) -> None:
        entries = list(entries)  # newest first
        self.live = [e for e in entries if e.valid_from <= today and not e.expired(today)]
        self.expired = [e for e in entries if e.expired(today)]
        self.findings: list[dict[str, Any]] = []

    def pick(self, name: str, *matches: Match) -> BookEntry | None:
        """The newest unexpired, started entry of the most specific match that has one; a newer expired
        entry of any of the matches is a warning naming it (never a silent fallback)."""
        chosen = next((e for match in matches for e in self.live if match(e)), None)
        expired = [e for e in self.expired if any(m(e) for m in matches)]
        if expired and (chosen is None or expired[0].valid_from > chosen.valid_from):
            old = expired[0]
            instead = f"{_label(chosen)} is used" if chosen else "the catalog's figure is used"
            self.findings.append(
                {
                    "severity": "warning",
                    "code": "price_entry_expired",
                    "message": (
                        f"{_label(old)}, valid from {old.valid_from}, expired on {old.expires_on}: not used"
                        f" for {name}; {instead}. Enter a current figure to use it."
                    ),
                }
            )
        return chosen


def _row(
    name: str, origin: str, unit: str, value: Any = None, entry: BookEntry | None = None
) -> dict[str, Any]:
    row = {"name": f"prices.{name}", "value": value, "unit": unit, "origin": origin, "as_of": ""}
    if entry is not None:
        row.update(
            entry_id=entry.id,
            as_of=entry.valid_from.isoformat(),
            source=f"{_label(entry)}, valid from {entry.valid_from}"
            + (f" to {entry.expires_on}" if entry.expires_on else "")
            + (f": {entry.source}" if entry.source else ""),
        )
    else:
        row["source"] = "the design" if origin == "design" else "the public catalog (or the engine's default)"
    return row


def _on_prem(spec: dict[str, Any], book: _Book, rows: list[dict[str, Any]]) -> None:
    """The server price, power and colocation: the design's (its costs or its site), else the book's."""
    costs = spec.setdefault("costs", {})
    on_prem = costs.setdefault("on_prem", {})
    site = spec.get("site") or {}
    _server(costs, spec["cluster"], book, rows)
    for key, kind, site_key, unit, what in (
        ("usd_per_kwh", Kind.POWER, "power_usd_per_kwh", "USD/kWh", "the electricity price"),
        (
            "colo_usd_per_kw_month",
            Kind.COLOCATION,
            "colocation_usd_per_kw_month",
            "USD/kW-month",
            "the colocation price",
        ),
        ("storage_usd_per_tb", Kind.STORAGE_QUOTE, "", "USD/TB", "the storage price"),
        ("staff_usd_per_fte_year", Kind.STAFF_COST, "", "USD/FTE-year", "the staff cost"),
    ):
        explicit = key in on_prem or (bool(site_key) and site_key in site)
        entry = None if explicit else book.pick(what, _matcher(kind))
        if entry is not None:
            on_prem[key] = entry.value
            colocation = costs.get("colocation") or {}
            if kind == Kind.COLOCATION and entry.colocation_basis and "basis" not in colocation:
                costs["colocation"] = {**colocation, "basis": entry.colocation_basis}
        row = _figure(f"on_prem.{key}", unit, explicit, on_prem.get(key, site.get(site_key)), entry)
        if explicit and key not in on_prem:
            row["source"] = f"the design's site {site.get('name') or ''}".rstrip()
        rows.append(row)


def _server(
    costs: dict[str, Any], cluster: Mapping[str, Any], book: _Book, rows: list[dict[str, Any]]
) -> None:
    """The server price: the design's, else the book's quote for its accelerator and node size (a quote that
    includes the network marks the network as in the server's price, unless the design says)."""
    on_prem = costs["on_prem"]
    explicit = "server_usd" in on_prem or "server_usd_per_gpu" in on_prem
    quote = (
        None
        if explicit
        else book.pick(
            "the server price",
            _matcher(
                Kind.SERVER_QUOTE, accelerator=cluster["accelerator"], gpus_per_node=cluster["gpus_per_node"]
            ),
        )
    )
    if quote is not None:
        on_prem["server_usd"] = quote.value
        if quote.network_included and "included_in_server" not in (costs.get("network") or {}):
            costs["network"] = {**(costs.get("network") or {}), "included_in_server": True}
    rows.append(_figure("on_prem.server_usd", "USD/server", explicit, on_prem.get("server_usd"), quote))


# A network quote's line: the cost engine's input (spec.costs.network.<name>) and what it prices.
NETWORK_LINES = (
    (PriceEntry.NetworkItem.SWITCH, "switch_usd", "USD/switch", "the switch price"),
    (PriceEntry.NetworkItem.CABLE, "cable_usd", "USD/cable", "the cable price"),
    (PriceEntry.NetworkItem.TRANSCEIVER, "transceiver_usd", "USD/transceiver", "the transceiver price"),
    (PriceEntry.NetworkItem.LUMP_SUM, "capex_usd", "USD (lump sum)", "the network's lump sum"),
)


def _network(spec: dict[str, Any], catalog: CatalogSpecs, book: _Book, rows: list[dict[str, Any]]) -> None:
    """The network's bill of materials: the design's (spec.costs.network), else the book's quote for the
    switch model the design's fabric is priced with, its cables and transceivers, or a lump sum for the whole
    network (which replaces the counted one: the engine's network.capex_usd). A line neither gives is the
    catalog's (or the engine's placeholder, said so by its source)."""
    costs = spec.setdefault("costs", {})
    given = costs.get("network") or {}
    cluster = spec["cluster"]
    fabric = catalog.fabrics.get(cluster.get("fabric") or "")
    switch = switch_slug(cluster, catalog.switches, fabric) if fabric is not None else None
    found: dict[str, Any] = {}
    for item, key, unit, what in NETWORK_LINES:
        target: dict[str, Any] = {"network_item": item}
        if item == PriceEntry.NetworkItem.SWITCH:
            if switch is None:
                continue  # the design's own check names an unknown fabric
            target["switch_model"] = switch
        explicit = key in given
        entry = None if explicit else book.pick(what, _matcher(Kind.NETWORK_QUOTE, **target))
        if entry is not None:
            found[key] = entry.value
        if explicit or entry is not None or item != PriceEntry.NetworkItem.LUMP_SUM:
            rows.append(_figure(f"network.{key}", unit, explicit, given.get(key, found.get(key)), entry))
    if found:
        costs["network"] = {**given, **found}


def _figure(name: str, unit: str, explicit: bool, value: Any, entry: BookEntry | None) -> dict[str, Any]:
    if explicit:
        return _row(name, "design", unit, value)
    if entry is not None:
        return _row(name, "price_book", unit, value, entry)
    return _row(name, "catalog", unit)


def _cloud_matches(offering: CloudOfferingSpec, model: str, catalog_usd: float | None) -> list[Match]:
    """The book's entries that can price ``offering`` on ``model``, most specific first: a private rate, a
    committed-use rate (commitment models only), a capacity block, then, off the catalog's price when it has
    one, the offering's discount, the provider's, the enterprise-wide one (the first found is used; discounts
    never stack)."""
    matches = [_matcher(Kind.PRIVATE_RATE, offering=offering.slug, pricing_model=model)]
    if model in COMMITMENT_YEARS:
        matches.append(_matcher(Kind.COMMITTED_RATE, offering=offering.slug, pricing_model=model))
    matches.append(_matcher(Kind.CAPACITY_BLOCK, offering=offering.slug, pricing_model=model))
    if catalog_usd is not None:
        matches += [
            _matcher(Kind.CLOUD_DISCOUNT, offering=offering.slug, pricing_model=model),
            _matcher(Kind.CLOUD_DISCOUNT, provider=offering.provider, pricing_model=model),
            _matcher(Kind.ENTERPRISE_DISCOUNT),
        ]
    return matches


def _cloud_price(entry: BookEntry, catalog_usd: float | None, nodes_per_instance: float) -> tuple[float, str]:
    """USD per node-hour from ``entry`` (a rate as it is; a block's price ÷ (hours × nodes); a discount off
    the catalog's instance price scaled to a node) and how it was derived, for the row's source."""
    if entry.kind in (Kind.PRIVATE_RATE, Kind.COMMITTED_RATE):
        return entry.value, ""
    if entry.kind == Kind.CAPACITY_BLOCK:
        hours, nodes = entry.duration_hours or 0.0, entry.block_nodes or 0
        return entry.value / (hours * nodes), (
            f" (USD {entry.value:,.2f} ÷ ({hours:g} h × {nodes} nodes); the block supplies {nodes} nodes)"
        )
    assert catalog_usd is not None  # _cloud_matches offers a discount only off a catalog price
    return catalog_usd * nodes_per_instance * (1 - entry.value), (
        f" ({entry.value:.0%} off the catalog's {catalog_usd:g} USD/instance-h)"
    )


def _quota(
    choice: dict[str, Any],
    offering: CloudOfferingSpec,
    book: _Book,
    blocks: Mapping[str, BookEntry],
    rows: list[dict[str, Any]],
) -> None:
    """The nodes obtainable on each priced model of ``offering``: the design's (capacity_nodes), else the
    book's quota (this model in this region, any region, then any model), else a capacity block's size when
    the block prices the model. The cost engine leaves a model whose quota is below the design's nodes out of
    the comparison, with a finding (cloud.capacity_nodes)."""
    given = dict(choice.get("capacity_nodes") or {})
    found: dict[str, int] = {}
    for model in choice.get("pricing_models") or sorted({*offering.usd_per_hour, *given, *blocks}):
        name = f"quota.{offering.slug}.{model}"
        if model in given:
            rows.append(_row(name, "design", "nodes", given[model]))
            continue
        entry = book.pick(
            f"the {offering.slug} {model} quota",
            *(
                _matcher(Kind.QUOTA, offering=offering.slug, region=region, pricing_model=m)
                for m in (model, "")
                for region in (offering.region, "")
            ),
        )
        if entry is not None:
            found[model] = int(entry.value)
            rows.append(_row(name, "price_book", "nodes", found[model], entry))
        elif model in blocks:
            found[model] = int(blocks[model].block_nodes or 0)
            rows.append(_row(name, "price_book", "nodes", found[model], blocks[model]))
    if found:
        choice["capacity_nodes"] = {**given, **found}


def _cloud(spec: dict[str, Any], catalog: CatalogSpecs, book: _Book, rows: list[dict[str, Any]]) -> None:
    """Each chosen offering's price per node-hour for each pricing model compared: the design's negotiated
    price, else the book's private rate, else the book's discount off the catalog price (an offering's
    discount before its provider's), else the catalog's."""
    gpn = spec["cluster"]["gpus_per_node"]
    for choice in (spec.get("costs") or {}).get("cloud") or []:
        offering = catalog.offerings.get(choice.get("offering"))
        if offering is None:
            continue  # the design's own check names an unknown offering
        negotiated = dict(choice.get("usd_per_node_hour") or {})
        blocks: dict[str, BookEntry] = {}
        for model in choice.get("pricing_models") or sorted(offering.usd_per_hour):
            name = f"cloud.{offering.slug}.{model}"
            if model in negotiated:
                rows.append(_row(name, "design", "USD/node-hour", negotiated[model]))
                continue
            catalog_usd = offering.usd_per_hour.get(model)
            entry = book.pick(f"{offering.slug} {model}", *_cloud_matches(offering, model, catalog_usd))
            if entry is None:
                rows.append(_row(name, "catalog", "USD/node-hour"))
                continue
            price, how = _cloud_price(entry, catalog_usd, gpn / offering.gpu_count)
            negotiated[model] = price
            row = _row(name, "price_book", "USD/node-hour", price, entry)
            row["source"] += how
            rows.append(row)
            if entry.kind == Kind.CAPACITY_BLOCK:
                blocks[model] = entry
        if negotiated:
            choice["usd_per_node_hour"] = negotiated
        _quota(choice, offering, book, blocks, rows)


def resolve_prices(
    *, spec: Mapping[str, Any], entries: Iterable[BookEntry], catalog: CatalogSpecs, today: dt.date
) -> Resolution:
    """The design's prices resolved through ``entries`` (book_entries) on ``today``; see the module."""
    resolved = copy.deepcopy(dict(spec))
    book = _Book(entries, today)
    rows: list[dict[str, Any]] = []
    _on_prem(resolved, book, rows)
    _network(resolved, catalog, book, rows)
    _cloud(resolved, catalog, book, rows)
    return Resolution(spec=resolved, rows=rows, findings=book.findings)
