"""Design writes and evaluation: a version per save, optimistic concurrency, share links, engine calls."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from apps.catalog.selectors import CatalogSnapshot, engine_catalog_snapshot, price_freshness
from apps.designs import selectors
from apps.designs.models import Design, DesignVersion, Evaluation, ShareLink, ShareLinkOpen, hash_token
from apps.designs.pricing import (
    CalibrationKey,
    PriceOwner,
    Resolution,
    evaluation_input,
    evaluation_memo_key,
    evaluation_stamps_and_catalog,
)
from apps.designs.specs import PRICING_MODELS
from apps.sites.services import site_resolve
from clusterdesigner import memo
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError, InfeasibleError, InputError, UnknownReferenceError
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.cost.cost_inputs import CostInputs
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design.design import (
    OPTION_LABELS,
    evaluate_design,
    rl_estimate,
    serving_estimate,
)
from clusterdesigner.engine.design.evaluation import DesignRef
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.user_calibration import CalibrationState
from clusterdesigner.errors import Conflict, InvalidInput
from clusterdesigner.memo import JSONText, jsonable

cost_requests = design_spec.cost_requests
spec_with_defaults = design_spec.with_defaults
training_request = design_spec.training_request


class VersionConflict(Conflict):
    """The design changed since the version the caller edited (the API answers 409 naming the current)."""

    def __init__(self, current: int, given: int) -> None:
        super().__init__(
            f"design is at version {current}; your edit was based on version {given}. "
            "Reload it, re-apply your change and save again.",
            {"version": [f"current version is {current}"]},
        )
        self.current = current


def spec_validate(*, spec: dict[str, Any] | None, dry_run: bool = True) -> dict[str, Any]:
    """The spec parsed once (clusterdesigner.engine.design.spec: types, known keys, ranges, defaults), then
    checked against the catalog and by the engines, so a design that saves is a design that evaluates. Errors
    name the field as sent, e.g. ``spec.parallelism.tp``.

    ``dry_run``: the engines estimate the spec here (a draft, which is not stored). A save passes False and
    evaluates the stored version instead (design_create, design_update: _evaluate_saved), so the engines run
    once for a save and its first view, not once to validate and again to evaluate."""
    try:
        # The parser's clean spec is its own JSON (nothing shared with what was sent), stored as it is.
        parsed = design_spec.parse_design_spec(spec_with_defaults(spec))
        clean = dict(parsed.json)
    except design_spec.SpecError as exc:
        # Reported with the rest: a catalog row the spec names that does not exist (a partial cluster with an
        # unknown accelerator named only its missing fields).
        raise InvalidInput({**_unknown_slugs(spec), **exc.fields()}) from exc
    catalog = engine_catalog_snapshot().specs
    try:
        check_references(clean, catalog)
        if dry_run:
            # A searched layout is searched here too (well under a second even for 16K GPUs): a design whose
            # model fits in memory at no layout is refused with the memory figures, not saved to fail later.
            problem = training.parse_request(
                training_request(clean), where=design_spec.training_sections(), **catalog.training_kwargs()
            )
            training.estimate_problem(problem)
            serving_estimate(clean, catalog)
            rl_estimate(clean, catalog)
    except EngineError as exc:
        raise _refused(exc, clean) from exc
    for inputs in parsed.cost_inputs:  # each names its fields by the spec's paths (spec.costs.cloud.1...)
        try:
            cost.check_request(inputs, catalog)
        except EngineError as exc:
            raise InvalidInput({exc.field: [exc.message]}) from exc
    try:
        _check_rollout_pool(clean, parsed.rollout_cost_inputs, catalog)
    except EngineError as exc:
        raise InvalidInput({exc.field: [exc.message]}) from exc
    return clean


def _refused(exc: EngineError, spec: dict[str, Any]) -> InvalidInput:
    """The engine's refusal of a spec as the API's 400, naming the field; a model that fits at no layout also
    says from how many nodes one does."""
    message = exc.message
    if isinstance(exc, InfeasibleError) and getattr(exc, "need_gib", None):
        fits_from = min_nodes(spec)
        if fits_from:
            message += f"; a layout fits from {fits_from} nodes"
    return InvalidInput({exc.field: [message]})


def _evaluate_saved(version: DesignVersion) -> None:
    """Evaluate a version being saved and store the evaluation (the one its first view reads): the engines'
    check of the spec and its evaluation in one run. A refusal rolls the save back (the caller's
    transaction) and answers 400 naming the field, as spec_validate's would."""
    try:
        design_evaluate(version=version)
    except EngineError as exc:
        raise _refused(exc, version.spec) from exc


def _check_rollout_pool(
    spec: dict[str, Any], pool_inputs: Sequence[CostInputs], catalog: CatalogSpecs
) -> None:
    """A rollout pool of its own (``rl.rollout``) names catalog rows that exist (its part first), rents only
    its own part, and has a price of its own wherever the design compares one: a design that rents its
    trainers must name the rollout pool's offerings when the pool is another part (a part's price is never
    another's); its owning inputs pass the cost engine's checks, its server priced from its own part
    (EngineError naming ``spec.rl.rollout.<field>`` otherwise)."""
    pool_spec = design_spec.rollout_pool_spec(spec)
    if pool_spec is None:
        return
    pool, part = spec["rl"]["rollout"], pool_spec["cluster"]["accelerator"]
    if part not in catalog.accelerators:
        raise UnknownReferenceError(f"unknown accelerator {part!r}", field="spec.rl.rollout.accelerator")
    if pool.get("server_type") and pool["server_type"] not in catalog.server_types:
        raise UnknownReferenceError(
            f"unknown server type {pool['server_type']!r}", field="spec.rl.rollout.server_type"
        )
    if (
        (spec.get("costs") or {}).get("cloud")
        and "cloud" not in pool
        and part != spec["cluster"]["accelerator"]
    ):
        trainers = spec["cluster"]["accelerator"]
        raise InputError(
            f"the design rents its trainers ({trainers}); name the offerings that rent the rollout pool's "
            f"{part} (an empty list: owned only), as no {trainers} price is taken for {part}",
            field="spec.rl.rollout.cloud",
        )
    for index, choice in enumerate(pool_spec["costs"]["cloud"] if "cloud" in pool else []):
        if choice["offering"] not in catalog.offerings:
            raise UnknownReferenceError(
                f"unknown offering {choice['offering']!r}", field=f"spec.rl.rollout.cloud.{index}.offering"
            )
        _check_offering(
            index, choice, catalog.offerings[choice["offering"]], part, path="spec.rl.rollout.cloud"
        )
    for inputs in pool_inputs:  # named by the pool's paths (spec.rl.rollout.on_prem...)
        cost.check_request(inputs, catalog)


def _unknown_slugs(spec: Any) -> dict[str, list[str]]:
    """The catalog rows a raw spec names (cluster accelerator, fabric, storage; cloud offerings) that the
    catalog lacks, by field path; only string values (a wrong type is the parser's to report)."""
    if not isinstance(spec, Mapping):
        return {}
    cluster: Any = spec.get("cluster")
    cluster = cluster if isinstance(cluster, Mapping) else {}
    costs: Any = spec.get("costs")
    costs = costs if isinstance(costs, Mapping) else {}
    catalog = engine_catalog_snapshot().specs
    named = [
        ("spec.cluster.accelerator", cluster.get("accelerator"), catalog.accelerators, "accelerator"),
        ("spec.cluster.fabric", cluster.get("fabric"), catalog.fabrics, "fabric"),
        ("spec.cluster.storage", cluster.get("storage"), catalog.storage_tiers, "storage"),
    ]
    cloud: Any = costs.get("cloud")
    cloud = cloud if isinstance(cloud, list) else []
    for index, choice in enumerate(cloud):
        if isinstance(choice, Mapping):
            path = f"spec.costs.cloud.{index}.offering"
            named.append((path, choice.get("offering"), catalog.offerings, "offering"))
    return {
        path: [f"unknown {kind} {slug!r}"]
        for path, slug, known, kind in named
        if isinstance(slug, str) and slug and slug not in known
    }


def check_references(spec: dict[str, Any], catalog: Any) -> None:
    """The catalog rows the spec names exist and can be used, and each cloud offering rents the design's
    accelerator with a price for every pricing model ticked (EngineError naming the field otherwise)."""
    cluster = spec["cluster"]
    checks = [
        ("spec.cluster.accelerator", cluster["accelerator"], catalog.accelerators),
        ("spec.cluster.fabric", cluster["fabric"], catalog.fabrics),
    ]
    if cluster.get("storage"):
        checks.append(("spec.cluster.storage", cluster["storage"], catalog.storage_tiers))
    for index, choice in enumerate((spec.get("costs") or {}).get("cloud") or []):
        checks.append((f"spec.costs.cloud.{index}.offering", choice["offering"], catalog.offerings))
    design_spec.check_usable(spec, catalog)
    for field, slug, known in checks:
        if slug not in known:
            raise UnknownReferenceError(f"unknown {field.split('.')[-1]} {slug!r}", field=field)
    for index, choice in enumerate((spec.get("costs") or {}).get("cloud") or []):
        _check_offering(index, choice, catalog.offerings[choice["offering"]], cluster["accelerator"])


def _check_offering(
    index: int, choice: dict[str, Any], offering: Any, accelerator: str, path: str = "spec.costs.cloud"
) -> None:
    """A cloud offering must rent the design's accelerator (B200 speed is not bought at H100 rates), and every
    pricing model ticked must have a price: the catalog's, or a negotiated one in the spec. ``path``: the
    list the choice is in (a rollout pool's: its own part)."""
    if offering.accelerator != accelerator:
        raise InputError(
            f"{offering.instance_type} rents {offering.gpu_count} × {offering.accelerator}, not the "
            f"{'rollout pool' if path != 'spec.costs.cloud' else 'design'}'s "
            f"{accelerator}; choose an offering of {accelerator}",
            field=f"{path}.{index}.offering",
        )
    given = choice.get("usd_per_node_hour") or {}
    if "pricing_models" not in choice:  # omitted: every model with a price
        choice["pricing_models"] = [m for m in PRICING_MODELS if m in offering.usd_per_hour or m in given]
    unpriced = [m for m in choice["pricing_models"] if m not in offering.usd_per_hour and m not in given]
    if not choice["pricing_models"]:
        unpriced = ["on_demand"]
    if unpriced:
        names = ", ".join(OPTION_LABELS.get(m, m) for m in unpriced)
        raise InputError(
            f"{offering.instance_type} has no {names} price in the catalog; enter a negotiated price per "
            f"node-hour or untick it",
            field=f"{path}.{index}.pricing_models",
        )


@transaction.atomic
def design_create(
    *,
    owner: Any,
    name: str,
    description: str = "",
    visibility: str = Design.Visibility.PRIVATE,
    spec: dict[str, Any] | None = None,
    is_demo: bool = False,
    message: str = "",
) -> Design:
    clean = spec_validate(spec=site_resolve(user=owner, spec=spec), dry_run=False)
    design = Design.objects.create(
        owner=owner, name=name, description=description, visibility=visibility, version=1, is_demo=is_demo
    )
    version = DesignVersion.objects.create(
        design=design,
        number=1,
        name=name,
        description=description,
        spec=clean,
        message=message,
        created_by=owner,
    )
    _evaluate_saved(version)
    return design


@transaction.atomic
def design_update(
    *,
    design: Design,
    user: Any,
    base_version: int,
    name: str | None = None,
    description: str | None = None,
    visibility: str | None = None,
    spec: dict[str, Any] | None = None,
    message: str = "",
) -> Design:
    """Save an edit as a new version, with ``message`` saying why. ``base_version`` is the version the editor
    started from: if someone saved since, raise VersionConflict (the API answers 409) and change nothing."""
    locked = Design.objects.select_for_update().get(pk=design.pk)
    if locked.version != base_version:
        raise VersionConflict(locked.version, base_version)
    current = locked.current
    new_spec = (
        spec_validate(spec=site_resolve(user=user, spec=spec), dry_run=False)
        if spec is not None
        else current.spec
    )
    locked.name = name if name is not None else locked.name
    locked.description = description if description is not None else locked.description
    locked.visibility = visibility if visibility is not None else locked.visibility
    locked.version = F("version") + 1
    locked.save()
    locked.refresh_from_db()
    version = DesignVersion.objects.create(
        design=locked,
        number=locked.version,
        name=locked.name,
        description=locked.description,
        spec=new_spec,
        message=message,
        created_by=user,
    )
    if spec is not None:
        _evaluate_saved(version)
    return locked


@transaction.atomic
def clone_name(*, name: str) -> str:
    """The default name of a copy, "Copy of <name>", cut with an ellipsis to fit the name column: a design
    already named with the column's 200 characters must still clone (PostgreSQL refuses a longer value)."""
    limit = Design._meta.get_field("name").max_length or 200
    copy = f"Copy of {name}"
    return copy if len(copy) <= limit else copy[: limit - 1] + "\u2026"


def design_clone(*, design: Design, owner: Any, name: str | None = None) -> Design:
    source = design.current
    return design_create(
        owner=owner,
        name=name or clone_name(name=design.name),
        description=design.description,
        spec=source.spec,
    )


def design_delete(*, design: Design) -> None:
    """Delete the design with its versions, evaluations and share links, revoked or not: deleting is the
    owner's call, and a link to a design that is gone answers 404 like a revoked one."""
    design.delete()


# --- Evaluation ---------------------------------------------------------------------------------------------


def design_evaluate(*, version: DesignVersion) -> Evaluation:
    """Evaluate a design version now (fixed layout, or a search small enough to run in the request) and store
    the input snapshot beside the result. The same snapshot twice returns the stored evaluation."""
    catalog, prices, digest, calibration = evaluation_input(version)
    existing = selectors.evaluation_get(version=version, input_hash=digest)
    return existing or _evaluation_store(
        version=version, catalog=catalog, prices=prices, digest=digest, calibration=calibration
    )


def design_evaluate_or_problem(*, version: DesignVersion) -> tuple[Evaluation | None, dict[str, Any] | None]:
    """design_evaluate for a page: the evaluation, or why the version does not evaluate (the engine's message,
    the spec field it names and, when no layout fits in memory, the fewest nodes at which one does). The
    problem is cached by the same input hash as an evaluation is stored under, so a page view of a design that
    fits nowhere does not search again (the node-count search costs up to eight layout searches)."""
    catalog, prices, digest, calibration = evaluation_input(version)
    existing = selectors.evaluation_get(version=version, input_hash=digest)
    if existing:
        return existing, None
    key = f"designs:problem:v1:{digest}"
    problem = cache.get(key)
    if problem is not None:
        return None, problem
    try:
        return _evaluation_store(
            version=version, catalog=catalog, prices=prices, digest=digest, calibration=calibration
        ), None
    except EngineError as error:
        problem = evaluation_problem(error=error, spec=version.spec)
        cache.set(key, problem, 24 * 3600)
        return None, problem


def evaluation_problem(*, error: EngineError, spec: dict[str, Any]) -> dict[str, Any]:
    """Why a spec does not evaluate, for a page: the engine's message, the field it names and, when no layout
    fits in memory, the fewest nodes at which one does."""
    problem: dict[str, Any] = {"message": error.message, "field": error.field, "min_nodes": None}
    if isinstance(error, InfeasibleError) and error.need_gib:
        problem["min_nodes"] = min_nodes(spec)
    return problem


def min_nodes(spec: dict[str, Any]) -> int | None:
    """The fewest nodes (of the spec's node type) on which some layout fits in memory; None if none up to the
    engine's cap. The layout is searched at each node count whatever the spec fixes, since a fixed layout's
    degrees are tied to the node count it was written for."""
    request = training_request({**spec, "parallelism": "search"})
    catalog = engine_catalog_snapshot().specs
    try:
        return training.min_nodes_to_fit(request, **catalog.training_kwargs())
    except EngineError:
        return None


def design_evaluate_json(*, version: DesignVersion) -> JSONText | dict[str, Any]:
    """design_evaluate's result, for a response body. A stored result (~40 kB) is read as the JSON text the
    database holds and the API sends it as it is, rather than decoding it into objects and encoding them again
    (over a millisecond of CPU a request). Only a new evaluation comes as a dict."""
    # The text is a function of the version (its spec, name, number), the catalog, the owner's price book,
    # which of its prices are stale today and the engines' output version: the inputs of the digest below, so
    # the memo is keyed by them directly and a hit skips the price resolution, the freshness scan and the hash
    # (the book by its stamp: one aggregate query, not the resolver's). A new version, a catalog or price book
    # write, a new day or a new engine is a new key.
    # The catalog's version, the book's stamp and the switch of the calibration that applies, in one
    # statement; then one catalog for the whole evaluation.
    key, catalog_at, setting = _evaluation_key(version)
    text = memo.EVALUATIONS.get(key)
    if text is None:
        snapshot = engine_catalog_snapshot(catalog_at)
        catalog, prices, digest, calibration = evaluation_input(version, snapshot, None, setting)
        text = selectors.evaluation_text_get(version=version, input_hash=digest)
        if text is None:
            result: dict[str, Any] = _evaluation_store(
                version=version, catalog=catalog, prices=prices, digest=digest, calibration=calibration
            ).result
            return result
        memo.EVALUATIONS.put(key, text, len(text))
    kept = JSONText(text)
    kept.kept_as = key
    return kept


def design_evaluation_key(*, version: DesignVersion) -> tuple[Any, ...]:
    """The key design_evaluate_json keeps the version's stored evaluation under, read as it reads it (one
    statement on PostgreSQL): for clusterdesigner.fastpath, which replays the answer kept for that key."""
    return _evaluation_key(version)[0]


def _evaluation_key(version: DesignVersion) -> tuple[tuple[Any, ...], str, CalibrationKey]:
    """The memo key, with the catalog's version and the calibration switch it was made of."""
    catalog_at, stamp, setting = evaluation_stamps_and_catalog(PriceOwner.of(version.design))
    key = evaluation_memo_key((version.pk, version.created_at), catalog_at, stamp, setting)
    return key, catalog_at, setting


def evaluation_result(
    *, version: DesignVersion, catalog: CatalogSnapshot, prices: Resolution, calibration: CalibrationState
) -> dict[str, Any]:
    """The evaluation of ``version`` (stored or not: a draft is evaluated as an unsaved version) against the
    catalog, its resolved prices and its owner's calibration (clusterdesigner.engine.design.design), as
    stored: the typed evaluation's JSON, with the design's own spec shown (the figures the price book set are
    in the prices.* assumptions), which design and when."""
    evaluation = evaluate_design(
        spec=design_spec.parse_design_spec(prices.spec, catalog=catalog.specs),
        catalog=catalog.specs,
        records=catalog.records,
        price_rows=prices.rows,
        price_findings=prices.findings,
        freshness=price_freshness(),
        calibration=calibration,
    )
    design = DesignRef(id=version.design_id, name=version.name, version=version.number)
    return replace(
        evaluation, spec=version.spec, design=design, computed_at=timezone.now().isoformat()
    ).to_json()


def _evaluation_store(
    *,
    version: DesignVersion,
    catalog: CatalogSnapshot,
    prices: Resolution,
    digest: str,
    calibration: CalibrationState,
) -> Evaluation:
    result = evaluation_result(version=version, catalog=catalog, prices=prices, calibration=calibration)
    snapshot = {"spec": version.spec, "catalog": catalog.records, "prices": prices.key}
    evaluation, created = Evaluation.objects.get_or_create(
        version=version, input_hash=digest, defaults={"snapshot": snapshot, "result": jsonable(result)}
    )
    if created:
        # Read the result back as the database holds it (PostgreSQL's jsonb orders object keys its own way),
        # so the first view of an evaluation draws exactly what every later view draws.
        evaluation.refresh_from_db(fields=["result"])
        # The current version's first evaluation is the one whose prices a later one is compared with
        # (apps/designs/prices.py: a changed or expired price book entry then marks the design stale).
        unrecorded = Q(priced_evaluation__isnull=True) | ~Q(priced_evaluation__version_id=version.pk)
        Design.objects.filter(unrecorded, pk=version.design_id, version=version.number).update(
            priced_evaluation=evaluation
        )
    return evaluation


# --- Share links --------------------------------------------------------------------------------------------


def share_link_create(
    *,
    design: Design,
    user: Any,
    label: str = "",
    expires_at: dt.datetime | None = None,
    follow_approved: bool = False,
) -> tuple[ShareLink, str]:
    """Freeze the current version's evaluation behind a new 256-bit token. Returns (link, token): the token is
    shown once; only its hash is stored. A link that follows the approved version serves that version's
    evaluation when the design has one (the share page resolves it), the frozen one until then."""
    evaluation = design_evaluate(version=design.current)
    token = secrets.token_urlsafe(32)
    link = ShareLink.objects.create(
        design=design,
        evaluation=evaluation,
        token_hash=hash_token(token),
        token_hint=token[:6],
        label=label,
        created_by=user,
        expires_at=expires_at,
        follow_approved=follow_approved,
    )
    return link, token


def share_link_evaluation(*, link: ShareLink) -> Evaluation:
    """What the link shows: the evaluation frozen when it was made or, for a link that follows the approved
    version, the design's approved version's (evaluated now if the catalog moved since; the frozen one until a
    version is approved, or when the approved one no longer evaluates; the page says which version it is)."""
    approved = link.design.approved_version if link.follow_approved else None
    if approved is None:
        return link.evaluation
    evaluation, _problem = design_evaluate_or_problem(version=approved)
    return evaluation or link.evaluation


def share_link_revoke(*, link: ShareLink) -> ShareLink:
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
    return link


def share_link_open(*, token: str) -> tuple[Any, ...] | None:
    """Count an open of the active link for ``token`` and return what its page is a function of: the link's
    id, creation and expiry and the evaluation it froze (evaluations are never changed once stored), and
    whether it follows the approved version (then its page is not kept: the approval can move). None when
    no active link has this token (revoked, expired or unknown), and then nothing is counted.

    One statement, so that a share view whose page is kept (clusterdesigner.memo) waits on the database once:
    the check for revocation and expiry, the count and the key. Looked up by the token's SHA-256 (fixed
    length, an index compare, so timing reveals nothing about near-miss tokens). Expiry is compared with this
    process's clock, as ``ShareLink.is_active`` does.

    On PostgreSQL the open is a row inserted into the log (ShareLinkOpen), not an update of the link's row:
    concurrent opens of one link (bench/load.sh's share view) queued on that row's lock and grew its chain of
    row versions. share_link_opens_fold adds the log to the counters; the owner's list adds what is not yet
    folded, so counts stay exact. The commit does not wait for the WAL flush (``set_config(
    'synchronous_commit', 'off', true)``, this statement's transaction only): an anonymous reader should not
    wait on a disk flush for a counter, and a crash loses at most the last few opens counted, never a design.
    SQLite (development) has one writer at a time anyway: there the link's row is counted directly."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    table = connection.ops.quote_name(ShareLink._meta.db_table)
    active = "token_hash = %s AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > %s)"
    key = "id, created_at, expires_at, evaluation_id, follow_approved"
    if connection.vendor == "postgresql":
        log = connection.ops.quote_name(ShareLinkOpen._meta.db_table)
        sql = (
            "WITH no_flush AS (SELECT set_config('synchronous_commit', 'off', true)), "
            f"link AS (SELECT {key} FROM {table} WHERE {active}), "
            f"opened AS (INSERT INTO {log} (link_id, opened_at) SELECT link.id, %s FROM link, no_flush) "
            f"SELECT {key} FROM link"
        )
        params = [hash_token(token), now, now]
    else:
        sql = (
            f"UPDATE {table} SET open_count = open_count + 1, last_opened_at = %s WHERE {active} "
            f"RETURNING {key}"
        )
        params = [now, hash_token(token), now]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else tuple(row)


def share_link_opens_fold() -> int:
    """Add the logged opens (ShareLinkOpen, PostgreSQL) to their links' ``open_count`` and
    ``last_opened_at`` and delete them, in one statement: a reader sees every open either in the log or in
    the counter, never in both or neither, and two folds at once count each open once (the second's DELETE
    skips the rows the first deleted). The opens of a deleted link are deleted with the rest. Returns the
    number of opens folded. Celery beat runs it (share_link_opens_fold_task, CELERY_BEAT_SCHEDULE)."""
    if connection.vendor != "postgresql":
        return 0  # opens are counted on the link's row (share_link_open)
    table = connection.ops.quote_name(ShareLink._meta.db_table)
    log = connection.ops.quote_name(ShareLinkOpen._meta.db_table)
    sql = (
        f"WITH gone AS (DELETE FROM {log} RETURNING link_id, opened_at), "
        "counted AS (SELECT link_id, COUNT(*) AS n, MAX(opened_at) AS latest FROM gone GROUP BY link_id), "
        f"folded AS (UPDATE {table} AS link SET open_count = link.open_count + counted.n, "
        "last_opened_at = GREATEST(link.last_opened_at, counted.latest) "
        "FROM counted WHERE link.id = counted.link_id) "
        "SELECT COALESCE(SUM(n), 0) FROM counted"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return int(cursor.fetchone()[0])
