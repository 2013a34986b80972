"""Design writes and evaluation: a version per save, optimistic concurrency, share links, engine calls."""

from __future__ import annotations

import datetime as dt
import json
import math
import secrets
from collections.abc import Mapping
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import F, Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from apps.catalog.selectors import CatalogSnapshot, engine_catalog_snapshot, price_freshness
from apps.designs.goals import goals_verdict
from apps.designs.models import Design, DesignVersion, Evaluation, ShareLink, ShareLinkOpen, hash_token
from apps.designs.pricing import PriceOwner, evaluation_stamps, prices_resolve
from apps.designs.specs import PRICING_MODELS
from apps.measurements.selectors import CalibrationKey, calibration_key_of_design, calibration_state
from apps.pricebook.resolve import Resolution, explain
from apps.sites.services import site_resolve
from clusterdesigner import memo
from clusterdesigner.engine import cost, rl, rl_fleet, serving, training
from clusterdesigner.engine import spec as design_spec
from clusterdesigner.engine.catalog import CatalogSpecs, specs_from_records
from clusterdesigner.engine.cost_result import CloudOption, CostResult, DesignOption, PerRun
from clusterdesigner.engine.design_verdict import BASIS, DesignVerdict, design_verdict
from clusterdesigner.engine.errors import (
    EngineError,
    FieldPaths,
    InfeasibleError,
    InputError,
    UnknownReferenceError,
    named_by,
)
from clusterdesigner.engine.offerings import Freshness
from clusterdesigner.engine.resale import ResaleCurve, curves_from_records
from clusterdesigner.engine.user_calibration import CalibrationState, calibrate
from clusterdesigner.engine.version import ENGINE_VERSION
from clusterdesigner.errors import Conflict, InvalidInput
from clusterdesigner.jsonutil import JSONText, jsonable, snapshot_hash

cost_requests = design_spec.cost_requests
serving_request = design_spec.serving_request
spec_with_defaults = design_spec.with_defaults
training_request = design_spec.training_request

OPTION_LABELS = {
    "on_demand": "on-demand",
    "reserved_1y": "reserved 1 year",
    "reserved_3y": "reserved 3 years",
    "savings_1y": "savings plan 1 year",
    "savings_3y": "savings plan 3 years",
    "spot": "spot",
}


class VersionConflict(Conflict):
    """The design changed since the version the caller edited (the API answers 409 naming the current)."""

    def __init__(self, current: int, given: int) -> None:
        super().__init__(
            f"design is at version {current}; your edit was based on version {given}. "
            "Reload it, re-apply your change and save again.",
            {"version": [f"current version is {current}"]},
        )
        self.current = current


def spec_validate(*, spec: dict[str, Any] | None) -> dict[str, Any]:
    """The spec parsed once (clusterdesigner.engine.spec: types, known keys, ranges, defaults), then checked
    against the catalog and by the engines (a dry evaluation), so a design that saves is a design that
    evaluates. Errors name the field as sent, e.g. ``spec.parallelism.tp``."""
    try:
        parsed = design_spec.parse_design_spec(spec_with_defaults(spec))
        clean: dict[str, Any] = json.loads(json.dumps(parsed.json))
    except design_spec.SpecError as exc:
        # Reported with the rest: a catalog row the spec names that does not exist (a partial cluster with an
        # unknown accelerator named only its missing fields).
        raise InvalidInput({**_unknown_slugs(spec), **exc.fields()}) from exc
    catalog = engine_catalog_snapshot().specs
    try:
        check_references(clean, catalog)
        # A searched layout is searched here too (well under a second even for 16K GPUs): a design whose
        # model fits in memory at no layout is refused with the memory figures, not saved to fail later.
        training.estimate(
            training_request(clean), paths=design_spec.TRAINING_PATHS, **catalog.training_kwargs()
        )
        _serving(clean, catalog)
        _rl(clean, catalog)
    except EngineError as exc:
        message = exc.message
        if isinstance(exc, InfeasibleError) and getattr(exc, "need_gib", None):
            fits_from = min_nodes(clean)
            if fits_from:
                message += f"; a layout fits from {fits_from} nodes"
        raise InvalidInput({exc.field: [message]}) from exc
    for index, request in enumerate(cost_requests(clean)):
        try:
            cost.check_request(request, catalog, paths=_cost_paths(index, request))
        except EngineError as exc:
            raise InvalidInput({exc.field: [exc.message]}) from exc
    try:
        _check_rollout_pool(clean, catalog)
    except EngineError as exc:
        raise InvalidInput({exc.field: [exc.message]}) from exc
    return clean


def _check_rollout_pool(spec: dict[str, Any], catalog: CatalogSpecs) -> None:
    """A rollout pool of its own (``rl.rollout``) names catalog rows that exist, rents only its own part, and
    has a price of its own wherever the design compares one: a design that rents its trainers must name the
    rollout pool's offerings when the pool is another part (a part's price is never another's); its owning
    inputs pass the cost engine's checks, its server priced from its own part (EngineError naming
    ``spec.rl.rollout.<field>`` otherwise)."""
    pool_spec = design_spec.rollout_pool_spec(spec)
    if pool_spec is None:
        return
    pool, part = spec["rl"]["rollout"], pool_spec["cluster"]["accelerator"]
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
    for index, request in enumerate(cost_requests(pool_spec)):
        cost.check_request(request, catalog, paths=_rollout_cost_paths(index, request))


def _rollout_cost_paths(index: int, request: Mapping[str, Any]) -> FieldPaths:
    return design_spec.rollout_cost_paths(index if (request.get("cloud") or {}).get("offering") else None)


def _cost_paths(index: int, request: Mapping[str, Any]) -> FieldPaths:
    """Where cost request ``index`` of the spec's :func:`cost_requests` came from in the spec."""
    return design_spec.cost_paths(index if (request.get("cloud") or {}).get("offering") else None)


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
    _check_usable(spec, catalog)
    for field, slug, known in checks:
        if slug not in known:
            raise UnknownReferenceError(f"unknown {field.split('.')[-1]} {slug!r}", field=field)
    for index, choice in enumerate((spec.get("costs") or {}).get("cloud") or []):
        _check_offering(index, choice, catalog.offerings[choice["offering"]], cluster["accelerator"])


def _check_usable(spec: dict[str, Any], catalog: CatalogSpecs) -> None:
    """A catalog row the design names that exists but cannot be used (a staff edit left it malformed) is
    named as such, with why, rather than as unknown. Rows the design does not name do not matter."""
    cluster = spec["cluster"]
    named = [
        ("spec.cluster.accelerator", "accelerators", "accelerator", cluster["accelerator"]),
        ("spec.cluster.fabric", "fabrics", "fabric", cluster["fabric"]),
        ("spec.cluster.storage", "storage_tiers", "storage tier", cluster.get("storage")),
    ]
    for index, choice in enumerate((spec.get("costs") or {}).get("cloud") or []):
        offering = choice["offering"]
        named.append((f"spec.costs.cloud.{index}.offering", "cloud_offerings", "cloud offering", offering))
    for field, section, what, slug in named:
        why = slug and catalog.why_unusable(section, slug)
        if why:
            raise UnknownReferenceError(
                f"the catalog's {what} {slug!r} cannot be used ({why}); ask the catalog's staff to correct "
                "it or choose another",
                field=field,
            )


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
    clean = spec_validate(spec=site_resolve(user=owner, spec=spec))
    design = Design.objects.create(
        owner=owner, name=name, description=description, visibility=visibility, version=1, is_demo=is_demo
    )
    DesignVersion.objects.create(
        design=design,
        number=1,
        name=name,
        description=description,
        spec=clean,
        message=message,
        created_by=owner,
    )
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
    new_spec = spec_validate(spec=site_resolve(user=user, spec=spec)) if spec is not None else current.spec
    locked.name = name if name is not None else locked.name
    locked.description = description if description is not None else locked.description
    locked.visibility = visibility if visibility is not None else locked.visibility
    locked.version = F("version") + 1
    locked.save()
    locked.refresh_from_db()
    DesignVersion.objects.create(
        design=locked,
        number=locked.version,
        name=locked.name,
        description=locked.description,
        spec=new_spec,
        message=message,
        created_by=user,
    )
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


def evaluate_spec(
    *,
    spec: dict[str, Any],
    records: dict[str, Any],
    specs: CatalogSpecs | None = None,
    freshness: Freshness | None = None,
    calibration: CalibrationState | None = None,
) -> dict[str, Any]:
    """Run the training engine, then the cost engine once per cloud offering; build the options table.

    Pure given (spec, records, freshness, calibration): the same snapshot always gives the same result.
    ``specs`` are the records already built into engine specs, when the caller has them. ``freshness``
    (today's date and PRICE_STALE_AFTER_DAYS) adds a ``stale_price`` finding for each stale catalog price the
    result uses. ``calibration`` (the owner's switch and fitted factors, issue 40): the training estimate is
    calibrated (engine/user_calibration.py) before the costs are computed from it, and the result states it
    under ``calibration``; switched off, the published estimate as it is.
    """
    catalog = specs or specs_from_records(records)
    _check_usable(spec, catalog)
    train = training.estimate(
        training_request(spec), paths=design_spec.TRAINING_PATHS, **catalog.training_kwargs()
    )
    statement = None
    if calibration is not None:
        calibrated, statement = calibrate(train, calibration)
        train = dict(calibrated)
    costs: dict[str, dict[str, Any]] = {}
    resale = _resale_curves(spec, records)
    post_training = _rl(spec, catalog)
    for index, request in enumerate(cost_requests(spec)):
        key = (request.get("cloud") or {}).get("offering") or "on_prem_only"
        if post_training is not None:
            # An RL run lasts the chosen placement's days, not the pre-training estimate's.
            request = {**request, "run": {"days": post_training["chosen"]["days"]}}
        costs[key] = cost.tco(
            request,
            training=train,
            freshness=freshness,
            resale=resale,
            paths=_cost_paths(index, request),
            **catalog.cost_kwargs(),
        )
    chosen = {c["offering"]: c.get("pricing_models") for c in (spec.get("costs") or {}).get("cloud") or []}
    typed = {key: CostResult.from_json(result) for key, result in costs.items()}
    options = _options(typed, chosen, catalog)
    _check_finite({"training": train, "costs": costs, "options": options})
    verdict = design_verdict(
        costs=typed, chosen=chosen, names=_offering_names(typed, catalog), model_labels=cost.MODEL_LABELS
    )
    result = {
        "spec": spec,
        "training": train,
        "costs": costs,
        "options": _with_npv_break_even(options, verdict),
        "ranking": _npv_ranking(verdict, options) if verdict else _horizon_ranking(typed, options),
        "assumptions": _assumptions(spec, train, costs, records),
        "findings": _unpriced_findings(costs, chosen, catalog) + _findings(costs),
        "verdict": goals_verdict(
            spec=spec,
            train=train,
            options=options,
            catalog=catalog,
            resale=resale,
            costs=costs,
            design_verdict=verdict,
            calibration=calibration,
        ),
    }
    if verdict is not None:
        result["design_verdict"] = verdict.to_json()
    if statement is not None:
        result["calibration"] = statement.to_json()
    if freshness is not None:
        result["price_freshness"] = freshness.to_json()
    estimate = _serving(spec, catalog)
    if estimate is not None:
        result["serving"] = estimate
    if post_training is not None:
        result["rl"] = post_training
        fleet = _rl_fleet(
            spec=spec,
            records=records,
            catalog=catalog,
            run=post_training,
            trainers=typed,
            freshness=freshness,
        )
        if fleet is not None:
            result["rl_fleet"] = fleet
    return result


def _rl_fleet(
    *,
    spec: dict[str, Any],
    records: dict[str, Any],
    catalog: CatalogSpecs,
    run: Mapping[str, Any],
    trainers: Mapping[str, CostResult],
    freshness: Freshness | None,
) -> dict[str, Any] | None:
    """A mixed fleet's run priced pool by pool (engine/rl_fleet.py): the trainer pool is the design's cluster
    (its cost results, ``trainers``); the rollout pool is costed by the cost engine on its own part, server
    and offerings (design_spec.rollout_pool_spec) for the RL estimate's days. None without a rollout pool."""
    pool_spec = design_spec.rollout_pool_spec(spec)
    if pool_spec is None:
        return None
    chosen = run["chosen"]
    part = str(pool_spec["cluster"]["accelerator"])
    resale = curves_from_records(records, accelerator=part)
    rollouts: dict[str, CostResult] = {}
    for index, request in enumerate(cost_requests(pool_spec)):
        key = (request.get("cloud") or {}).get("offering") or "on_prem_only"
        priced = cost.tco(
            {**request, "run": {"days": chosen["days"]}},
            freshness=freshness,
            resale=resale,
            paths=_rollout_cost_paths(index, request),
            **catalog.cost_kwargs(),
        )
        rollouts[key] = CostResult.from_json(priced)
    cluster = spec["cluster"]
    trainer = rl_fleet.pool_cost(
        pool="trainer",
        accelerator=str(cluster["accelerator"]),
        nodes=int(cluster["nodes"]),
        gpus_per_node=int(cluster["gpus_per_node"]),
        costs=trainers,
    )
    rollout = rl_fleet.pool_cost(
        pool="rollout",
        accelerator=part,
        nodes=int(pool_spec["cluster"]["nodes"]),
        gpus_per_node=int(pool_spec["cluster"]["gpus_per_node"]),
        costs=rollouts,
    )
    fleet = rl_fleet.fleet_cost(trainer=trainer, rollout=rollout)
    return None if fleet is None else fleet.to_json()


def _resale_curves(spec: Mapping[str, Any], records: Mapping[str, Any]) -> tuple[ResaleCurve, ...]:
    """The catalog's residual-value series of the design's accelerator (the cost engine reads the one that
    covers the depreciation life, else keeps the given or default residual value)."""
    return curves_from_records(records, accelerator=str(spec["cluster"]["accelerator"]))


def _serving(spec: dict[str, Any], catalog: CatalogSpecs) -> dict[str, Any] | None:
    """The serving estimate of a spec with a ``serving`` section (None without one); its errors name
    ``spec.serving.<field>``."""
    request = serving_request(spec)
    if request is None:
        return None
    return serving.estimate(request, catalog=catalog, paths=design_spec.SERVING_PATHS).to_json()


def _rl(spec: dict[str, Any], catalog: CatalogSpecs) -> dict[str, Any] | None:
    """The RL post-training estimate of a spec with an ``rl`` section (None without one): the placement and
    split the search chose, its step by part, days and GPU-hours; errors name ``spec.rl.<field>``,
    ``spec.workload.*`` or ``spec.cluster.*``."""
    request = design_spec.rl_request(spec)
    if request is None:
        return None
    with named_by(design_spec.RL_PATHS):
        return rl.estimate(request, **catalog.training_kwargs()).to_json()


def _check_finite(value: Any, path: str = "") -> None:
    """Refuse a result holding an infinite or NaN figure: stored, it would read as null and break every page
    that draws it. The engines bound their inputs so this should not happen; if it does, the design says why
    on its page instead of saving a result no page can show."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(
            f"the evaluation overflowed: {path} is {value}; an input is too large to compute with "
            "(check the costs and the cluster size)",
            field="",
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_finite(item, f"{path}.{index}")


def _band(per_run: PerRun, option: str, days_key: str) -> dict[str, Any]:
    """An option's run cost and expected days at the ends of the training estimate's error band, when the
    cost result carries them (cost._per_run_band)."""
    run = (per_run.usd or {}).get(option)
    pairs = {
        "run_cost_usd_low": None if run is None else run.usd_low,
        "run_cost_usd_high": None if run is None else run.usd_high,
        "days_low": getattr(per_run, f"{days_key}_low"),
        "days_high": getattr(per_run, f"{days_key}_high"),
    }
    return {k: float(v) for k, v in pairs.items() if v is not None}


def _run_cost(per_run: PerRun, option: str) -> float | None:
    """What one run costs on ``option`` (``on_prem`` or a pricing model); None when it has no price."""
    run = (per_run.usd or {}).get(option)
    return None if run is None else run.usd


def _own_option(result: CostResult, days: float | None) -> DesignOption:
    """The owning row of the options table, from the first offering's cost result (owning is the same in
    each)."""
    run = result.per_run
    return DesignOption(
        key="own",
        label="Own (on-prem)",
        kind="own",
        offering=None,
        pricing_model=None,
        total_usd=result.on_prem.total_usd,
        usd_per_gpu_hour=result.on_prem.usd_per_gpu_hour,
        run_cost_usd=_run_cost(run, "on_prem"),
        days=days,
        break_even_utilization=None,
        **_band(run, "on_prem", "effective_days"),
    )


def _cloud_option(
    slug: str, offering: Any, model: str, row: CloudOption, result: CostResult, days: float | None
) -> DesignOption:
    """One offering's pricing model as a row of the options table."""
    run = result.per_run
    be = result.break_even_utilization.get(model)
    days_key = "spot_effective_days" if model == "spot" else "effective_days"
    name = f"{_provider_label(offering.provider)} {offering.instance_type}" if offering else slug
    return DesignOption(
        key=f"{slug}:{model}",
        label=f"{name} {OPTION_LABELS.get(model, model)}",
        kind="cloud",
        offering=slug,
        pricing_model=model,
        total_usd=row.total_usd,
        usd_per_gpu_hour=row.usd_per_gpu_hour,
        run_cost_usd=_run_cost(run, model),
        days=run.spot_effective_days if model == "spot" else days,
        break_even_utilization=None if be is None else _break_even(be.utilization),
        break_even_meaning="" if be is None else be.meaning,
        **_band(run, model, days_key),
    )


def _options(costs: Mapping[str, CostResult], chosen: dict[str, Any], catalog: Any) -> list[dict[str, Any]]:
    """Owning and every chosen cloud pricing model of each offering, cheapest run first."""
    options: list[DesignOption] = []
    for index, (slug, result) in enumerate(costs.items()):
        days = result.per_run.effective_days or result.per_run.days
        if index == 0:
            options.append(_own_option(result, days))
        offering = catalog.offerings.get(slug)
        for model, row in result.cloud.items():
            if chosen.get(slug) and model not in chosen[slug]:
                continue
            options.append(_cloud_option(slug, offering, model, row, result, days))
    options.sort(key=lambda o: (o.run_cost_usd is None, o.run_cost_usd or o.total_usd))
    return [o.to_json() for o in options]


def _horizon_ranking(costs: Mapping[str, CostResult], options: list[dict[str, Any]]) -> dict[str, Any]:
    """The options cheapest first over the whole horizon, read from the cost engine's ``ranking`` of each
    offering (owning's total over the horizon, each rent option's bill over it) and merged into the design's
    option keys: one frame, so a per-run figure never ranks against a horizon one. Options the spec did not
    ask for are left out, as ``options`` leaves them out."""
    shown = {o["key"] for o in options}
    totals: dict[str, float] = {}
    for slug, result in costs.items():
        for row in result.ranking.options if result.ranking else ():
            key = "own" if row.option == "on_prem" else f"{slug}:{row.option}"
            if key in shown:
                totals[key] = float(row.total_usd)
    order = sorted(totals, key=lambda k: (totals[k], k))
    return {"frame": "whole horizon", "options": [{"key": k, "total_usd": totals[k]} for k in order]}


def _offering_names(costs: Mapping[str, CostResult], catalog: Any) -> dict[str, str]:
    """Each offering's display name, as the options table writes it ("AWS p5.48xlarge")."""
    out = {}
    for slug in costs:
        offering = catalog.offerings.get(slug)
        out[slug] = f"{_provider_label(offering.provider)} {offering.instance_type}" if offering else slug
    return out


def _with_npv_break_even(
    options: list[dict[str, Any]], verdict: DesignVerdict | None
) -> list[dict[str, Any]]:
    """Each rent option's break-even utilization with owning on the verdict's basis (where the NPVs of the
    monthly cash flows cross), in place of the annualised closed form."""
    if verdict is None:
        return options
    by_key = {o.key: o.break_even_utilization for o in verdict.options}
    out = []
    for option in options:
        if option["key"] in by_key:
            option = {**option, "break_even_utilization": by_key[option["key"]]}
            option.pop("break_even_meaning", None)
        out.append(option)
    return out


def _npv_ranking(verdict: DesignVerdict, options: list[dict[str, Any]]) -> dict[str, Any]:
    """The options cheapest first by the NPV of their monthly cash flows (the verdict's basis): owning and
    each chosen rent option of every offering, ties by key, so the offerings' order changes nothing."""
    shown = {o["key"] for o in options}
    rows = [verdict.own, *verdict.options]
    totals = {r.key: r.npv_usd for r in rows if r.key in shown}
    order = sorted(totals, key=lambda k: (totals[k], k))
    return {"frame": BASIS, "options": [{"key": k, "total_usd": totals[k]} for k in order]}


def _provider_label(provider: str) -> str:
    from apps.catalog.models import CloudOffering

    try:
        return str(CloudOffering.Provider(provider).label)
    except ValueError:
        return provider


def _break_even(u: float | None) -> float | None:
    """The break-even utilization when it lies in (0, 1]; outside it one option wins everywhere (see
    meaning)."""
    return u if u is not None and 0 < u <= 1 else None


def _assumptions(
    spec: dict[str, Any], train: dict[str, Any], costs: dict[str, Any], records: dict[str, Any]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for result in costs.values():
        for item in result.get("assumptions") or []:
            if item["name"] not in seen:
                seen.add(item["name"])
                rows.append({"as_of": "", **item})
    for item in train.get("assumptions") or []:
        name = f"training.{item['name']}"
        if name not in seen:
            seen.add(name)
            rows.append({"as_of": "", **item, "name": name})
    accelerator = next(
        (a for a in records.get("accelerators", []) if a["slug"] == spec["cluster"]["accelerator"]), None
    )
    if accelerator:
        for key, unit in (
            ("bf16_dense_tflops", "TFLOP/s"),
            ("fp8_dense_tflops", "TFLOP/s"),
            ("fp4_dense_tflops", "TFLOP/s"),
            ("memory_gib", "GiB"),
            ("hbm_bandwidth_tbps", "TB/s"),
            ("scaleup_bandwidth_gbps", "GB/s"),
        ):
            if accelerator.get(key) is not None:
                rows.append(
                    {
                        "name": f"catalog.{accelerator['slug']}.{key}",
                        "value": accelerator[key],
                        "unit": unit,
                        "source": accelerator.get("source", "catalog"),
                        "as_of": accelerator.get("as_of") or "",
                    }
                )
    return rows


def _unpriced_findings(
    costs: dict[str, dict[str, Any]], chosen: dict[str, Any], catalog: Any
) -> list[dict[str, Any]]:
    """A pricing model the design asks for that has no price now (the catalog row went since it was saved)
    is said, not dropped from the options in silence."""
    out = []
    for slug, models in chosen.items():
        result = costs.get(slug) or {}
        # An option that cannot finish the run is priced; the engine's option_cannot_finish finding says why.
        priced = {**(result.get("cloud") or {}), **(result.get("cloud_unavailable") or {})}
        offering = catalog.offerings.get(slug)
        name = offering.instance_type if offering else slug
        for model in models or []:
            if model not in priced:
                why = catalog.why_unusable("cloud_offerings", slug, model)
                reason = (
                    f"the catalog's price cannot be used ({why}) and none was negotiated"
                    if why
                    else "none in the catalog, none negotiated"
                )
                label = f"{name} {OPTION_LABELS.get(model, model)}"
                message = f"{label}: asked for but has no price ({reason}), so it is not compared."
                out.append({"severity": "warning", "code": "pricing_model_unpriced", "message": message})
    return out


def _findings(costs: dict[str, Any]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for result in costs.values():
        for finding in result.get("findings") or []:
            key = finding.get("code", "") + finding.get("message", "")
            if key not in seen:
                seen.add(key)
                out.append(finding)
    return _by_severity(out)


def _by_severity(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = {"critical": 0, "error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: order.get(f.get("severity", "info"), 3))


def design_evaluate(*, version: DesignVersion) -> Evaluation:
    """Evaluate a design version now (fixed layout, or a search small enough to run in the request) and store
    the input snapshot beside the result. The same snapshot twice returns the stored evaluation."""
    catalog, prices, digest, calibration = evaluation_input(version)
    # The stored snapshot (the whole catalog) is only kept to explain the result later: don't load it here.
    existing = version.evaluations.filter(input_hash=digest).defer("snapshot").first()
    return existing or _evaluation_store(
        version=version, catalog=catalog, prices=prices, digest=digest, calibration=calibration
    )


def design_evaluate_or_problem(*, version: DesignVersion) -> tuple[Evaluation | None, dict[str, Any] | None]:
    """design_evaluate for a page: the evaluation, or why the version does not evaluate (the engine's message,
    the spec field it names and, when no layout fits in memory, the fewest nodes at which one does). The
    problem is cached by the same input hash as an evaluation is stored under, so a page view of a design that
    fits nowhere does not search again (the node-count search costs up to eight layout searches)."""
    catalog, prices, digest, calibration = evaluation_input(version)
    existing = version.evaluations.filter(input_hash=digest).defer("snapshot").first()
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
    snapshot = engine_catalog_snapshot()  # one catalog for the whole evaluation
    # The book's stamp and the switch of the calibration that applies, in one statement.
    stamp, setting = evaluation_stamps(PriceOwner.of(version.design))
    key = _memo_key(version, snapshot, stamp, setting)
    text = memo.EVALUATIONS.get(key)
    if text is not None:
        return JSONText(text)
    catalog, prices, digest, calibration = evaluation_input(version, snapshot, None, setting)
    stored = version.evaluations.values_list(Cast("result", TextField()), flat=True)
    try:
        text = stored.get(input_hash=digest)
    except Evaluation.DoesNotExist:
        result: dict[str, Any] = _evaluation_store(
            version=version, catalog=catalog, prices=prices, digest=digest, calibration=calibration
        ).result
        return result
    memo.EVALUATIONS.put(key, text, len(text))
    return JSONText(text)


def _memo_key(
    version: DesignVersion,
    catalog: CatalogSnapshot,
    book: tuple[Any, ...],
    setting: CalibrationKey,
) -> tuple[Any, ...]:
    """What a stored evaluation's text depends on, as the memo keys it: the inputs of evaluation_input's
    digest (the version, the catalog, the owner's price book by its stamp (pricing.evaluation_stamps) with
    the day, which decides what has expired, the day's stale threshold, the engines' output version, whose
    calibration applies (the design's team's, else its maker's), its switch and its stamp, which moves with
    every write to the holder's measured runs)."""
    fresh = price_freshness()
    day = (fresh.today, fresh.stale_after_days)
    return (
        version.pk,
        version.created_at,
        catalog.version,
        book,
        *day,
        ENGINE_VERSION,
        *setting.memo_key(),
    )


def design_calibration(*, design: Design) -> CalibrationState:
    """The calibration a design's estimates are made with: its owner's (its team's for a team's design, its
    maker's for a personal one), for the analyses and plans built from it."""
    return calibration_state(key=calibration_key_of_design(owner_id=design.owner_id, team_id=design.team_id))


def _calibration_key(version: DesignVersion) -> CalibrationKey:
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
) -> tuple[CatalogSnapshot, Resolution, str, CalibrationState]:
    """The catalog (by default the current one), the version's resolved prices, the owner's calibration state
    and the hash that identifies an evaluation of this version against them (against which catalog prices are
    stale today, and against the engines' output version). The resolved prices are in the hash, so an
    evaluation priced with one owner's book is never shown for another's, and a changed or expired entry is a
    new evaluation."""
    catalog = catalog or engine_catalog_snapshot()
    prices = prices or design_prices(version=version, catalog=catalog)
    stale = freshness_key(records=catalog.records, freshness=price_freshness())
    calibration = calibration_state(key=setting or _calibration_key(version))
    # The engine version is in the hash, so a result stored before an engine change (lacking the figures it
    # added) is recomputed on the next view rather than shown as it was; the calibration (the switch and the
    # factors fitted on the holder's runs, and whose) is, so a result is never served under another one.
    return (
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


def evaluation_result(
    *, version: DesignVersion, catalog: CatalogSnapshot, prices: Resolution, calibration: CalibrationState
) -> dict[str, Any]:
    """The evaluation of ``version`` (stored or not: a draft is evaluated as an unsaved version) against the
    catalog, its resolved prices and its owner's calibration, as stored: the design's own spec shown, the
    figures the price book set in the prices.* assumptions."""
    result = evaluate_spec(
        spec=prices.spec,
        records=catalog.records,
        specs=catalog.specs,
        freshness=price_freshness(),
        calibration=calibration,
    )
    result["spec"] = version.spec
    result["assumptions"] = explain(prices.rows, result["costs"]) + result["assumptions"]
    result["findings"] = _by_severity(prices.findings + result["findings"])
    result["design"] = {"id": version.design_id, "name": version.name, "version": version.number}
    result["computed_at"] = timezone.now().isoformat()
    return result


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
