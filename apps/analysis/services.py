"""Analysis writes: build the snapshot and its chunks, enqueue them, record each chunk once, finish
the run."""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.urls import reverse
from django.utils import timezone
from kombu.exceptions import OperationalError as KombuOperationalError

from apps.analysis import compute
from apps.analysis.models import Analysis, AnalysisChunk
from apps.analysis.selectors import analysis_progress
from apps.analysis.serializers import (
    CompareParamsSerializer,
    EvaluateParamsSerializer,
    ParamsSerializer,
    RecommendParamsSerializer,
    SweepParamsSerializer,
)
from apps.catalog.selectors import (
    engine_catalog,
    engine_catalog_records,
    engine_catalog_snapshot,
    price_freshness,
)
from apps.designs import selectors as design_selectors
from apps.designs.models import DesignVersion
from apps.designs.pricing import (
    OfferingPrices,
    PriceOwner,
    calibration_key_of_design,
    calibration_state,
    design_calibration,
    design_prices,
    freshness_key,
    offerings_priced,
    personal_calibration,
    price_owner,
)
from apps.designs.runners import StartedRun
from apps.sites.selectors import site_get
from apps.teams import access
from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.offerings import Freshness, owner_offering
from clusterdesigner.engine.core.version import ENGINE_VERSION
from clusterdesigner.engine.cost import cost, defaults
from clusterdesigner.engine.cost.cost_inputs import CostInputs, Section
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.workload import Sections
from clusterdesigner.errors import InvalidInput, NotFound, ServiceUnavailable
from clusterdesigner.memo import jsonable, snapshot_hash

MAX_SWEEP_ITEMS = 5000
# A sweep's chunks: at most GROUPS_PER_CHUNK points each (progress moves, and a lost chunk costs little), and
# where the sweep has enough points, at least CHUNKS_PER_WORKER chunks for each of settings.ANALYSIS_WORKERS
# worker processes, so that every worker gets work and the last chunks to finish are short (_chunked).
GROUPS_PER_CHUNK = 4
CHUNKS_PER_WORKER = 4
CHUNK_TIME_LIMIT_S = 300  # apps.analysis.tasks.analysis_run_chunk_task's hard time limit

logger = logging.getLogger(__name__)
# What publishing to an unreachable broker raises (kombu wraps the connection error once its retries end).
BROKER_ERRORS = (KombuOperationalError, ConnectionError, TimeoutError)


def _offerings_per_model(
    records: dict[str, Any],
    wanted: dict[str, str],
    gpus_per_node: int,
    pricing_models: list[str],
    books: Mapping[str, OfferingPrices] | None = None,
) -> dict[str, dict[str, str]]:
    """Per accelerator and cloud pricing model, the offering its rows are priced on: the one the sweep names
    for that accelerator, else engine.core.offerings.owner_offering for that model, chosen after the owner's
    price book (``books``: per accelerator, every offering priced through it) is applied: default_offering's
    pick (a price that is not stale, a whole node, its freshest price of the model, then the lower price)
    among the offerings whose quota is not 0, unless an offering the book prices is cheaper per GPU-hour. So a
    spot row is priced on an offering that has a spot price, and a discount or private rate on another
    offering than the catalog's pick moves the row to it when it makes that one cheaper."""
    offerings = specs_from_records(records).offerings
    freshness = price_freshness()
    chosen: dict[str, dict[str, str]] = {}
    for accelerator in sorted({o.accelerator for o in offerings.values()}):
        book = (books or {}).get(accelerator)
        per_model = {}
        for model in (m for m in pricing_models if m != "own"):
            slug = wanted.get(accelerator) or owner_offering(
                offerings,
                accelerator=accelerator,
                gpus_per_node=gpus_per_node,
                pricing_model=model,
                freshness=freshness,
                usd_per_hour=None if book is None else _book_usd(book, offerings, model),
                unavailable=()
                if book is None
                else {s for s, quota in book.capacity_nodes.items() if quota.get(model) == 0},
            )
            if slug:
                per_model[model] = slug
        chosen[accelerator] = per_model
    return chosen


def _book_usd(book: OfferingPrices, offerings: Mapping[str, Any], model: str) -> dict[str, float]:
    """The USD per instance-hour of ``model`` the owner's book sets, per offering it prices."""
    return {
        slug: book.usd_per_instance_hour(offerings[slug])[model]
        for slug, prices in book.cloud.items()
        if model in prices and slug in offerings
    }


def _sweep_plan(
    params: dict[str, Any],
    records: dict[str, Any],
    owner: PriceOwner | None = None,
    site: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    known = {a["slug"] for a in records["accelerators"]}
    unknown = [a for a in params["accelerators"] if a not in known]
    if unknown:
        raise InvalidInput({"params.accelerators": [f"unknown accelerator(s): {', '.join(unknown)}"]})
    models = params.get("models") or [params["model"]]
    model_map = {f"m{i}": m for i, m in enumerate(models)}
    _sweep_check(params, models)
    groups = [
        {"accelerator": a, "nodes": n, "model": key, "pricing_models": params["pricing_models"]}
        for key in model_map
        for a in params["accelerators"]
        for n in params["nodes"]
    ]
    if len(groups) * len(params["pricing_models"]) > MAX_SWEEP_ITEMS:
        raise InvalidInput({"params": [f"a sweep is limited to {MAX_SWEEP_ITEMS} designs"]})
    gpus_per_node = int(params.get("gpus_per_node", defaults.GPUS_PER_NODE.value))
    # The offerings are chosen after the owner's book: each swept accelerator's every offering priced
    # through it first (no book: the catalog's prices, nothing to resolve).
    books = (
        None
        if owner is None
        else {
            accelerator: offerings_priced(
                owner=owner,
                catalog=engine_catalog(),
                accelerator=accelerator,
                gpus_per_node=gpus_per_node,
                on_prem=params.get("on_prem"),
                site=site,
            )
            for accelerator in params["accelerators"]
        }
    )
    by_model = _offerings_per_model(
        records, params.get("offerings") or {}, gpus_per_node, params["pricing_models"], books
    )
    snapshot = {
        "params": params,
        "models": model_map,
        "catalog": records,
        "offerings_by_model": by_model,
        "prices": _sweep_prices(params, by_model, gpus_per_node, owner, site),
        **({"site": site} if site else {}),
    }
    return snapshot, _chunked(groups, workers=settings.ANALYSIS_WORKERS)


def _sweep_prices(
    params: dict[str, Any],
    by_model: dict[str, dict[str, str]],
    gpus_per_node: int,
    owner: PriceOwner | None,
    site: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Each swept accelerator's prices through the owner's price book (apps.designs.pricing, the one
    composition every consumer shares): the owning inputs (the sweep's own ``on_prem`` first) and the
    offerings its rows are priced on; stored in the snapshot, so the workers read them without the database
    and the analysis's key holds them (no owner is ever shown a sweep priced with another's book)."""
    catalog = engine_catalog()
    return {
        accelerator: offerings_priced(
            owner=owner,
            catalog=catalog,
            accelerator=accelerator,
            gpus_per_node=gpus_per_node,
            slugs=set(by_model.get(accelerator, {}).values()),
            on_prem=params.get("on_prem"),
            site=site,
        ).to_json()
        for accelerator in params["accelerators"]
    }


def _chunked(groups: list[dict[str, Any]], *, workers: int) -> list[list[dict[str, Any]]]:
    """Consecutive groups in chunks of equal size (the last may be smaller): GROUPS_PER_CHUNK points at most,
    fewer when that would leave fewer than CHUNKS_PER_WORKER chunks per worker (a sweep of 12 points on 2
    workers was 3 chunks of 4, one worker idle for a third of the run; now 12 of 1), never fewer than one.
    Workers take the chunks one at a time (prefetch 1, late acknowledgement), so chunks of a few points
    spread evenly, and nothing waits: the chunks are queued together as the analysis is committed."""
    size = max(1, min(GROUPS_PER_CHUNK, len(groups) // (max(1, workers) * CHUNKS_PER_WORKER)))
    return [groups[i : i + size] for i in range(0, len(groups), size)]


def _sweep_check(params: dict[str, Any], models: list[dict[str, Any]]) -> None:
    """Refuse a sweep every row of which would fail (a bad model, training or owning field, an unknown
    fabric, storage tier or offering) before anything is queued, with the engines' own checks, each error
    named by its sweep parameter. What fails on some accelerators only (fp8 on an A100) stays an error on
    their rows."""
    catalog = engine_catalog()
    for accelerator, slug in (params.get("offerings") or {}).items():
        if slug not in catalog.offerings:
            field = f"params.offerings.{accelerator}"
            raise InvalidInput({field: [f"unknown offering {slug!r}"]})
    owning: dict[str, Any] = {
        k: params[k] for k in ("horizon_years", "utilization", "on_prem") if k in params
    }
    first_error: EngineError | None = None
    for accelerator in params["accelerators"]:
        cluster = {
            "accelerator": accelerator,
            "gpus_per_node": params["gpus_per_node"],
            "nodes": params["nodes"][0],
            "fabric": params["fabric"],
        }
        try:
            for index, model in enumerate(models):
                training.check_request(
                    {"model": model, "training": params["training"], "cluster": cluster},
                    where=_sweep_sections(params, index),
                    **catalog.training_kwargs(),
                )
            cost.check_request(_sweep_cost_inputs(cluster, params, owning), catalog)
            return
        except EngineError as exc:
            first_error = first_error or exc
    assert first_error is not None
    raise InvalidInput({first_error.field: [first_error.message]}) from first_error


def _sweep_cost_inputs(
    cluster: Mapping[str, Any], params: Mapping[str, Any], owning: Mapping[str, Any]
) -> CostInputs:
    """A sweep row's cost inputs, each part at its parameter: the cluster's fields at ``params.<field>``
    but the accelerator and node count, which are the swept lists ``params.accelerators`` and
    ``params.nodes``; each owning input at ``params.<key>``."""
    swept = {"accelerator": "params.accelerators", "nodes": "params.nodes"}
    sections = {"cluster": Section({**cluster, "storage": params["storage"]}, "params", fields=swept)}
    sections.update({key: Section(value, f"params.{key}") for key, value in owning.items()})
    return CostInputs(sections, at="params")


def _sweep_sections(params: Mapping[str, Any], model_index: int) -> Sections:
    """Where the sections of a sweep row's training request sit in the sweep's parameters, as the training
    engine's parser is told (it names every error there as it raises): the model is ``params.models.<i>``
    (or ``params.model``), the training ``params.training``, the cluster's fields the parameters of their
    names (the node count ``params.nodes``), its accelerator the swept list ``params.accelerators``."""
    model = f"params.models.{model_index}" if params.get("models") else "params.model"
    return Sections(
        model=model,
        training="params.training",
        cluster="params",
        parallelism="params.parallelism",
        search="params.search",
        accelerator="params.accelerators",
    )


def _valid_params(serializer_class: type[ParamsSerializer], params: dict[str, Any]) -> dict[str, Any]:
    """``params`` checked by ``serializer_class``; its errors named under ``params.`` (``params.design``)."""
    form = serializer_class(data=params)
    if not form.is_valid():
        raise InvalidInput({"params": form.errors})
    return dict(form.validated_data)


def _site(owner: Any, site_id: int | None) -> dict[str, Any] | None:
    """The saved site a sweep or recommendation is priced at, as a design's spec holds it (its fields and
    id), when ``owner`` can read it (theirs, or a team's they belong to: apps.sites); a 400 naming
    params.site otherwise, whether the site exists or not. The snapshot holds its fields, so a changed site
    is a new analysis."""
    if site_id is None:
        return None
    site = site_get(user=owner, site_id=site_id)
    if site is None:
        raise InvalidInput({"params.site": [f"you have no site {site_id}"]})
    return site.to_engine()


def _design(owner: Any, design_id: int) -> Any:
    design = design_selectors.design_get(user=owner, design_id=design_id)
    if design is None:
        raise NotFound("no design with this id is visible to you")
    return design


def _priced_item(version: Any) -> dict[str, Any]:
    """A design version as an analysis item: its spec, and its prices resolved through its owner's book (the
    design's team's, else its owner's: apps.designs.pricing), as the design page resolves them."""
    prices = design_prices(version=version, catalog=engine_catalog_snapshot())
    return {"spec": version.spec, "priced_spec": prices.spec, "prices": prices.key}


def _work_calibration(owner: Any, book: PriceOwner | None) -> dict[str, Any]:
    """The calibration a sweep's or recommendation's points are estimated with: the team's when the analysis
    is a team's (``book``), else the requester's own (issue 40)."""
    if book is not None and book.team_id is not None:
        key = calibration_key_of_design(owner_id=book.owner_id, team_id=book.team_id)
        return calibration_state(key=key).to_json()
    return personal_calibration(user=owner).to_json()


def _plan(
    *, owner: Any, kind: str, params: dict[str, Any], book: PriceOwner | None = None
) -> tuple[dict[str, Any], list[list[dict[str, Any]]], Any]:
    records = engine_catalog_records()
    if kind == Analysis.Kind.EVALUATE:
        wanted = _valid_params(EvaluateParamsSerializer, params)
        design = _design(owner, wanted["design"])
        version = design_selectors.design_version_get(design=design, number=wanted.get("version"))
        if version is None:
            raise NotFound(f"design {design.pk} has no version {wanted.get('version')}")
        item = _priced_item(version)
        # The design owner's calibration is in the snapshot (and so its hash): switching it is a new analysis.
        item["calibration"] = calibration = design_calibration(design=design).to_json()
        snapshot: dict[str, Any] = {
            "params": params,
            "catalog": records,
            "freshness": price_freshness().to_json(),
            "prices": {str(design.pk): item["prices"]},
            "calibration": calibration,
        }
        return snapshot, [[item]], version
    if kind == Analysis.Kind.COMPARE:
        items = []
        for design_id in _valid_params(CompareParamsSerializer, params)["designs"]:
            design = _design(owner, design_id)
            items.append(
                {
                    "design": design.pk,
                    "name": design.name,
                    "version": design.version,
                    **_priced_item(design.current),
                    "calibration": design_calibration(design=design).to_json(),
                }
            )
        snapshot = {
            "params": params,
            "catalog": records,
            "freshness": price_freshness().to_json(),
            # Each design's prices through its own owner's book: in the key, so a changed entry is a new run.
            "prices": {str(item["design"]): item["prices"] for item in items},
            # Each design's owner's calibration, in the hash: switching one is a new comparison.
            "calibrations": [item["calibration"] for item in items],
        }
        return snapshot, [[item] for item in items], None
    if kind == Analysis.Kind.SWEEP:
        wanted = _valid_params(SweepParamsSerializer, params)
        snapshot, chunks = _sweep_plan(wanted, records, book, _site(owner, wanted.get("site")))
        # A sweep's points are no one's design: the calibration of whose work it is (the team's given on the
        # request, else the requester's own), in the hash as above.
        snapshot["calibration"] = _work_calibration(owner, book)
        return snapshot, chunks, None
    if kind == Analysis.Kind.RECOMMEND:
        p = _valid_params(RecommendParamsSerializer, params)
        pricing = list(defaults.RECOMMEND_PRICING) + (
            [] if p["interruption_tolerance"] == "none" else ["spot"]
        )
        sweep = {
            "model": p["model"],
            "training": {
                "tokens": p["tokens"],
                "global_batch_tokens": p["global_batch_tokens"],
                "precision": p["precision"],
            },
            "accelerators": p.get("accelerators")
            or sorted(
                {o["accelerator"] for o in records["cloud_offerings"]}
                & {"a100-80gb", "h100-sxm", "h200", "b200", "mi300x"}
            ),
            "nodes": p.get("nodes") or [1, 2, 4, 8, 16, 32, 64, 128, 256],
            "pricing_models": pricing,
            "gpus_per_node": p["gpus_per_node"],
            "on_prem": p["on_prem"],
            **({"site": p["site"]} if "site" in p else {}),
        }
        snapshot, chunks = _sweep_plan(
            _valid_params(SweepParamsSerializer, sweep), records, book, _site(owner, p.get("site"))
        )
        snapshot["params"].update(
            {k: p.get(k) for k in ("deadline_days", "budget_usd", "interruption_tolerance")}
        )
        snapshot["calibration"] = _work_calibration(owner, book)
        return snapshot, chunks, None
    raise InvalidInput({"kind": [f"must be one of {', '.join(Analysis.Kind.values)}"]})


def analysis_create(*, owner: Any, kind: str, params: dict[str, Any], team: int | None = None) -> Analysis:
    """Validate, snapshot and enqueue an analysis. The same snapshot as an earlier successful (or still
    running) analysis of this owner returns that one instead of computing again. A sweep or recommendation
    is priced through ``team``'s price book (a team the owner is a member of; the analysis is then the
    team's, its members follow it) or else the owner's own; an evaluation or comparison through each design's
    owner's book.

    Get-or-create under the database's constraint (one live analysis per owner and input): of identical
    requests at once, one inserts and the others, refused by the unique index, return the one it made."""
    try:
        book = price_owner(user=owner, team_id=team)
    except EngineError as exc:
        raise InvalidInput({exc.field: [exc.message]}) from exc
    snapshot, chunks, version = _plan(owner=owner, kind=kind, params=params, book=book)
    # Keyed by the engine's version too: the same request after an engine change is computed again.
    digest = snapshot_hash({"kind": kind, "engine": ENGINE_VERSION, **_hashed(snapshot)})
    live = Analysis.objects.filter(owner=owner, input_hash=digest, status__in=Analysis.LIVE_STATUSES)
    existing = live.first()
    if existing is not None:
        if not _past_deadline(existing):
            return existing
        analysis_fail(analysis_id=existing.pk, error=_deadline_message(existing))  # frees its place
    limit = dt.timedelta(seconds=settings.ANALYSIS_TIME_LIMIT_S)
    try:
        with transaction.atomic():
            analysis = Analysis.objects.create(
                owner=owner,
                team_id=team if team is not None else _team_of(owner, version),
                kind=kind,
                params=params,
                snapshot=snapshot,
                input_hash=digest,
                design_version=version,
                progress_total=sum(_chunk_size(kind, c, snapshot) for c in chunks),
                deadline_at=timezone.now() + limit,
            )
            AnalysisChunk.objects.bulk_create(
                AnalysisChunk(analysis=analysis, index=i, items=c, size=_chunk_size(kind, c, snapshot))
                for i, c in enumerate(chunks)
            )
            transaction.on_commit(lambda: _enqueue_new(analysis.pk))
    except IntegrityError:
        winner = live.first()
        if winner is None:
            raise
        return winner
    return analysis


def analysis_evaluate_searched(*, user: Any, version: DesignVersion) -> StartedRun:
    """A searched design's evaluation as an ``evaluate`` analysis on the workers: the runner this app
    registers for the designs API (apps/designs/runners.py), which answers 202 with the run's id and URL."""
    params = {"design": version.design_id, "version": version.number}
    analysis = analysis_create(owner=user, kind="evaluate", params=params)
    path = reverse("analysis-detail", args=[analysis.pk])
    return StartedRun(id=analysis.pk, path=path, status=analysis.status)


def _team_of(owner: Any, version: Any) -> int | None:
    """The team an evaluation of a team's design is shared with, when its requester is a member (so they
    keep seeing it); every other analysis is its owner's alone (apps/teams/access.py)."""
    design = getattr(version, "design", None)
    if design is None or design.team_id is None or access.role_of(owner, design) is None:
        return None
    return int(design.team_id)


def _hashed(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as its hash sees it: today's date counts only through which catalog prices it makes stale,
    so the same input on another day returns the stored analysis until a price crosses the threshold."""
    if "freshness" not in snapshot:
        return snapshot
    freshness = Freshness.from_json(snapshot["freshness"])
    return {**snapshot, "freshness": freshness_key(records=snapshot["catalog"], freshness=freshness)}


class QueueUnavailable(ServiceUnavailable):
    code = "queue_unavailable"


def _enqueue_new(analysis_id: int) -> None:
    """Queue a new analysis's chunks. With the broker unreachable the run is marked failed (so the same
    request retried starts a new one rather than finding this one, which nothing would run) and the request
    answers 503 with Retry-After."""
    try:
        _enqueue(analysis_id)
    except BROKER_ERRORS as exc:
        analysis_fail(
            analysis_id=analysis_id,
            error="the task queue was unreachable when it was started; start it again",
        )
        raise QueueUnavailable(
            "The task queue is unavailable, so the analysis was not started; try again shortly."
        ) from exc


def _chunk_size(kind: str, items: list[dict[str, Any]], snapshot: dict[str, Any]) -> int:
    if kind in (Analysis.Kind.SWEEP, Analysis.Kind.RECOMMEND):
        return sum(len(item["pricing_models"]) for item in items)
    return len(items)


def _enqueue(analysis_id: int, chunk_ids: list[int] | None = None) -> None:
    """Queue ``chunk_ids`` (by default every pending chunk of the analysis)."""
    from celery import group

    from apps.analysis.tasks import analysis_run_chunk_task

    if chunk_ids is None:
        chunk_ids = list(
            AnalysisChunk.objects.filter(
                analysis_id=analysis_id, status=AnalysisChunk.Status.PENDING
            ).values_list("pk", flat=True)
        )
    if settings.ANALYSIS_RUN_IN_THREAD:
        threading.Thread(
            target=_run_chunks_in_thread, args=(chunk_ids,), daemon=True, name=f"analysis-{analysis_id}"
        ).start()
        return
    # ignore_result: the rows are the truth, nothing waits on a task's result; without it Celery subscribes
    # to the result backend first, which, with Redis down, retries for some 20 s before it fails.
    group(analysis_run_chunk_task.s(chunk_id) for chunk_id in chunk_ids).apply_async(ignore_result=True)


def _requeue(analysis_id: int, chunk_ids: list[int] | None = None) -> None:
    """Queue a stalled run's chunks again; with the broker still unreachable, leave it for a later rescue."""
    try:
        _enqueue(analysis_id, chunk_ids)
    except BROKER_ERRORS:
        logger.warning(
            "analysis %s: the task queue is unreachable; its chunks stay unqueued", analysis_id, exc_info=True
        )


def _run_chunks_in_thread(chunk_ids: list[int]) -> None:
    """The embedded default's worker: the chunks one after another, each through the task (its failure
    handling included), recording progress as each finishes. A daemon thread: it ends with the process, and
    the stall check on read queues again what it left unfinished."""
    from django.db import connection

    from apps.analysis.tasks import analysis_run_chunk_task

    try:
        for chunk_id in chunk_ids:
            analysis_run_chunk_task.apply(args=(chunk_id,))
    finally:
        connection.close()


def analysis_run_chunk(*, chunk_id: int, worker: str = "") -> None:
    """Compute one chunk and record it exactly once; the last chunk to finish completes the analysis."""
    chunk = AnalysisChunk.objects.select_related("analysis").filter(pk=chunk_id).first()
    if chunk is None or chunk.status == AnalysisChunk.Status.DONE:
        return
    analysis = chunk.analysis
    if analysis.status in (Analysis.Status.SUCCEEDED, Analysis.Status.FAILED):
        return
    if _past_deadline(analysis):
        analysis_fail(analysis_id=analysis.pk, error=_deadline_message(analysis))
        return
    Analysis.objects.filter(pk=analysis.pk, status=Analysis.Status.PENDING).update(
        status=Analysis.Status.RUNNING, started_at=timezone.now()
    )
    now = timezone.now()
    AnalysisChunk.objects.filter(pk=chunk.pk).update(
        attempts=chunk.attempts + 1, worker=worker, started_at=now, heartbeat_at=now
    )
    with _Heartbeat(chunk_id=chunk.pk):
        rows = compute.compute_items(kind=analysis.kind, items=chunk.items, snapshot=analysis.snapshot)
    with transaction.atomic():
        locked = AnalysisChunk.objects.select_for_update().get(pk=chunk.pk)
        if locked.status == AnalysisChunk.Status.DONE:
            return  # another worker finished this chunk first; its rows stand
        locked.status, locked.result, locked.finished_at = (
            AnalysisChunk.Status.DONE,
            jsonable(rows),
            timezone.now(),
        )
        locked.save(update_fields=["status", "result", "finished_at"])
    analysis_finish_if_done(analysis_id=analysis.pk)


class _Heartbeat:
    """While a chunk computes, a daemon thread stamps its ``heartbeat_at`` every ANALYSIS_HEARTBEAT_S, so the
    periodic rescue can tell a live holder from a dead one (analysis_reclaim_orphans). The process dying
    kills the thread with it, which is the point. A failed stamp (the database briefly away) is skipped: the
    lease spans several beats."""

    def __init__(self, *, chunk_id: int) -> None:
        self.chunk_id = chunk_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"heartbeat-{chunk_id}")

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        from django.db import DatabaseError, connection

        try:
            while not self.stop.wait(settings.ANALYSIS_HEARTBEAT_S):
                try:
                    AnalysisChunk.objects.filter(
                        pk=self.chunk_id, status=AnalysisChunk.Status.PENDING
                    ).update(heartbeat_at=timezone.now())
                except DatabaseError:
                    logger.warning("chunk %s: heartbeat not recorded", self.chunk_id, exc_info=True)
                    connection.close()  # a broken connection is opened afresh at the next beat
        finally:
            connection.close()  # this thread's own connection


def analysis_finish_if_done(*, analysis_id: int) -> None:
    with transaction.atomic():
        analysis = Analysis.objects.select_for_update().get(pk=analysis_id)
        if analysis.status in (Analysis.Status.SUCCEEDED, Analysis.Status.FAILED):
            return
        if analysis.chunks.exclude(status=AnalysisChunk.Status.DONE).exists():
            return
        rows: list[Any] = []
        for chunk in analysis.chunks.order_by("index"):
            if chunk.result is None:  # a chunk is marked done with its rows, in one transaction
                raise RuntimeError(f"chunk {chunk.index} of analysis {analysis_id} is done without rows")
            rows.extend(chunk.result)
        analysis.result = jsonable(
            compute.finalize(kind=analysis.kind, rows=rows, snapshot=analysis.snapshot)
        )
        analysis.status, analysis.finished_at = Analysis.Status.SUCCEEDED, timezone.now()
        analysis.save(update_fields=["result", "status", "finished_at"])


def analysis_fail(*, analysis_id: int, error: str) -> None:
    Analysis.objects.filter(
        pk=analysis_id, status__in=[Analysis.Status.PENDING, Analysis.Status.RUNNING]
    ).update(status=Analysis.Status.FAILED, error=error[:2000], finished_at=timezone.now())


def _past_deadline(analysis: Analysis) -> bool:
    return (
        analysis.status in (Analysis.Status.PENDING, Analysis.Status.RUNNING)
        and timezone.now() > analysis.deadline_at
    )


def _deadline_message(analysis: Analysis) -> str:
    done = analysis_progress(analysis=analysis)[0]
    return (
        f"ran past its time limit of {settings.ANALYSIS_TIME_LIMIT_S} s with {done} of "
        f"{analysis.progress_total} items done (workers busy, stopped, or the queue was lost); start it again"
    )


def analysis_resume_orphans() -> list[int]:
    """Run again the unfinished analyses a previous process of the embedded default (ANALYSIS_RUN_IN_THREAD:
    no broker, chunks on a thread of the web process) left behind: called once when a server process starts,
    every run still pending or running was the previous process's (a reload by the dev server, e.g. when
    `make test` touches the checkout, killed its thread), so it is queued again at once instead of waiting
    ANALYSIS_STALL_S for a reader. Exactly once still holds: a chunk is recorded once under its row lock.
    A run past its deadline fails with its message. Returns the ids queued again."""
    resumed = []
    now = timezone.now()
    live = [Analysis.Status.PENDING, Analysis.Status.RUNNING]
    for analysis in Analysis.objects.filter(status__in=live).order_by("created_at"):
        if _past_deadline(analysis):
            analysis_fail(analysis_id=analysis.pk, error=_deadline_message(analysis))
            continue
        claimed = Analysis.objects.filter(
            pk=analysis.pk, requeued_at=analysis.requeued_at, status__in=live
        ).update(requeued_at=now, requeues=F("requeues") + 1)
        if claimed:
            resumed.append(analysis.pk)
            _requeue(analysis.pk)
    if resumed:
        logger.warning(
            "resumed %s analyses a previous server process left unfinished: %s", len(resumed), resumed
        )
    return resumed


def analysis_rescue_stalled() -> list[int]:
    """The periodic sweep (Celery beat: analysis_rescue_stalled_task every ANALYSIS_RESCUE_EVERY_S): each
    live analysis's read-time checks (analysis_refresh) run without waiting for a reader, so a run whose
    queued chunks were lost (Redis restarted, a worker's retries exhausted by a database outage) is queued
    again, a chunk whose worker died is queued again once its lease ends (analysis_reclaim_orphans), and one
    past its deadline fails. Returns the ids it requeued or failed."""
    touched = []
    live = [Analysis.Status.PENDING, Analysis.Status.RUNNING]
    for analysis in Analysis.objects.filter(status__in=live).order_by("created_at"):
        if not _past_deadline(analysis) and analysis_reclaim_orphans(analysis=analysis):
            touched.append(analysis.pk)
            continue
        before = (analysis.status, analysis.requeued_at)
        analysis = analysis_refresh(analysis=analysis)
        if (analysis.status, analysis.requeued_at) != before:
            touched.append(analysis.pk)
    return touched


def analysis_refresh(*, analysis: Analysis) -> Analysis:
    """Read-time (and periodic) checks, so no run stays 'running' forever even with every worker gone: past
    its deadline it fails with a message; a chunk whose worker died is queued again; stalled (its queued
    chunks lost) its unfinished chunks are queued again."""
    if _past_deadline(analysis):
        analysis_fail(analysis_id=analysis.pk, error=_deadline_message(analysis))
        analysis.refresh_from_db()
    elif analysis_reclaim_orphans(analysis=analysis) or analysis_requeue_if_stalled(analysis=analysis):
        analysis.refresh_from_db()
    return analysis


def analysis_reclaim_orphans(*, analysis: Analysis) -> list[int]:
    """Queue again each unfinished chunk whose worker stopped beating ANALYSIS_LEASE_S ago (the worker died:
    kill -9, a lost machine, an out-of-memory kill), without waiting for the chunk's time limit. Each chunk is
    claimed by clearing the heartbeat it was seen with, so of two rescues at once one queues it. Exactly once
    still holds if the worker was only slow: a chunk is recorded once under its row lock, and the copy that
    finds it done does nothing. Returns the chunk ids queued again."""
    if analysis.status not in (Analysis.Status.PENDING, Analysis.Status.RUNNING):
        return []
    expired = timezone.now() - dt.timedelta(seconds=settings.ANALYSIS_LEASE_S)
    orphans = analysis.chunks.filter(status=AnalysisChunk.Status.PENDING, heartbeat_at__lt=expired)
    claimed = [
        chunk.pk
        for chunk in orphans.only("pk", "heartbeat_at")
        if AnalysisChunk.objects.filter(pk=chunk.pk, heartbeat_at=chunk.heartbeat_at).update(
            heartbeat_at=None
        )
    ]
    if claimed:
        logger.warning(
            "analysis %s: chunks %s lost their worker (no heartbeat for %s s); queueing them again",
            analysis.pk,
            claimed,
            settings.ANALYSIS_LEASE_S,
        )
        transaction.on_commit(lambda: _requeue(analysis.pk, claimed))
    return claimed


def analysis_requeue_if_stalled(*, analysis: Analysis) -> bool:
    """Queue a run's unfinished chunks again when nothing has moved for ANALYSIS_STALL_S seconds and no worker
    holds one of them: the broker lost the queued messages (Redis restarted without persistence, a flushed
    queue). Safe to over-trigger: a chunk is recorded once, and a copy that finds it done does nothing.
    A chunk whose worker beat within ANALYSIS_LEASE_S counts as held. Returns whether it requeued."""
    if analysis.status not in (Analysis.Status.PENDING, Analysis.Status.RUNNING):
        return False
    now = timezone.now()
    quiet = dt.timedelta(seconds=settings.ANALYSIS_STALL_S)
    chunks = analysis.chunks.aggregate(started=Max("started_at"), finished=Max("finished_at"))
    moments = (analysis.created_at, analysis.started_at, analysis.requeued_at, *chunks.values())
    if now - max(m for m in moments if m is not None) < quiet:
        return False
    held_since = now - dt.timedelta(seconds=settings.ANALYSIS_LEASE_S)
    if analysis.chunks.exclude(status=AnalysisChunk.Status.DONE).filter(heartbeat_at__gt=held_since).exists():
        return False
    # One reader wins the requeue (the others see requeued_at changed and leave it).
    claimed = Analysis.objects.filter(
        pk=analysis.pk,
        requeued_at=analysis.requeued_at,
        status__in=[Analysis.Status.PENDING, Analysis.Status.RUNNING],
    ).update(requeued_at=now, requeues=F("requeues") + 1)
    if not claimed:
        return False
    logger.warning(
        "analysis %s: no progress for %s s and no chunk held by a worker; queueing its %s "
        "unfinished chunks again",
        analysis.pk,
        settings.ANALYSIS_STALL_S,
        analysis.chunks.exclude(status=AnalysisChunk.Status.DONE).count(),
    )
    transaction.on_commit(lambda: _requeue(analysis.pk))
    return True
