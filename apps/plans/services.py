"""Plan writes and solving: resolve a plan's spec (training runs from saved designs) into the engine's input,
solve it, and store the input snapshot beside the result."""

from __future__ import annotations

import dataclasses
import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.designs import pricing as design_pricing
from apps.designs import selectors as design_selectors
from apps.designs import services as design_services
from apps.designs.models import hash_token
from apps.designs.pricing import OfferingPrices, PriceOwner, offerings_priced
from apps.plans.fleet import fleet_spec_priced
from apps.plans.models import CapacityPlan, PlanRun, PlanShareLink, PlanSolution, PlanVersion
from clusterdesigner.engine.capacity import capacity, capacity_fleet
from clusterdesigner.engine.core.errors import EngineError, InputError
from clusterdesigner.engine.core.version import ENGINE_VERSION
from clusterdesigner.engine.cost.cost import DEFAULTS as COST_DEFAULTS
from clusterdesigner.engine.cost.cost import FINANCE_LINES
from clusterdesigner.engine.cost.rent_own import OnPremInputs
from clusterdesigner.engine.cost.resale import curves_from_records
from clusterdesigner.errors import InvalidInput
from clusterdesigner.memo import snapshot_hash

if TYPE_CHECKING:  # the serving engine loads on first use (tokens-per-day inference only)
    from clusterdesigner.engine.serving.serving import ServingResult

HOURS_PER_DAY = 24.0


def _visible_version(*, item: dict[str, Any], path: str, ctx: PlanContext) -> Any:
    """The saved design version ``item["design_id"]`` names (``design_version``, default current), if this
    user may read it, or the plan's team's design (whoever solves it)."""
    design_id = item.get("design_id")
    if isinstance(design_id, bool) or not isinstance(design_id, int) or design_id < 1:
        raise InputError("must be the id of a saved design", field=f"{path}design_id")
    number = item.get("design_version")
    if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 1):
        raise InputError("must be a version number", field=f"{path}design_version")
    version = design_selectors.design_version_get_visible(user=ctx.user, design_id=design_id, number=number)
    if version is None and ctx.team_id is not None:  # the plan's team's designs, whoever solves it
        version = design_selectors.design_version_get_of_team(
            team_id=ctx.team_id, design_id=design_id, number=number
        )
    if version is None:  # no such design (or version) visible to this user; said without telling which
        raise InputError("no saved design with this id is visible to you", field=f"{path}design_id")
    return version


def _design_evaluated(
    *, item: dict[str, Any], path: str, ctx: PlanContext, gpus_per_node: Any
) -> tuple[Any, Any]:
    """The saved design ``item["design_id"]`` names (version ``design_version``, default current), if this
    user may read it, its nodes are the plan's size and it evaluates: (version, evaluation)."""
    version = _visible_version(item=item, path=path, ctx=ctx)
    cluster = version.spec.get("cluster") or {}
    if ctx.accelerator is not None and cluster.get("accelerator") != ctx.accelerator:
        raise InputError(
            f"design {version.name!r} is of {cluster.get('accelerator')}; its node type is {ctx.accelerator}",
            field=f"{path}design_id",
        )
    if cluster.get("gpus_per_node") != gpus_per_node:
        raise InputError(
            f"design {version.name!r} has {cluster.get('gpus_per_node')} GPUs per node; "
            f"the plan's nodes have {gpus_per_node}",
            field=f"{path}design_id",
        )
    return version, _evaluation(version=version, path=path)


def _evaluation(*, version: Any, path: str) -> Any:
    """The design version's evaluation, or a 400 on ``design_id`` saying why it does not evaluate."""
    evaluation, problem = design_services.design_evaluate_or_problem(version=version)
    if evaluation is None:
        reason = problem["message"] if problem else "unknown"
        raise InputError(f"design {version.name!r} does not evaluate: {reason}", field=f"{path}design_id")
    return evaluation


def _design_run(*, item: dict[str, Any], path: str, ctx: PlanContext, gpus_per_node: Any) -> dict[str, Any]:
    """A training run taken from a saved design: its GPUs from the design's cluster, its GPU-hours from the
    training engine's expected days (with failures and restarts): GPU-hours = GPUs × 24 × days. An RL design
    (an ``rl`` section) runs for the RL estimate's days (its cost results price them, so its expected days
    are the RL run's) on every GPU of the design, both pools of a disaggregated split; with a rollout pool of
    its own (a mixed fleet) ``pool`` says which pool this plan holds (``_rl_pool_run``). ``gpus_per_node``
    is the plan's value as sent; _design_evaluated refuses one unlike the design's."""
    if item.get("pool") is not None:
        return _rl_pool_run(item=item, path=path, ctx=ctx, gpus_per_node=gpus_per_node)
    version, evaluation = _design_evaluated(item=item, path=path, ctx=ctx, gpus_per_node=gpus_per_node)
    if (version.spec.get("rl") or {}).get("rollout") is not None:
        raise InputError(
            f"design {version.name!r} is a mixed RL fleet (two parts) and this plan is of one node type: "
            'give pool "trainer" or "rollout" to plan one pool here, or plan both in a plan of node_types '
            "(one per part)",
            field=f"{path}pool",
        )
    days = design_selectors.evaluation_read(result=evaluation.result).expected_days
    if days is None:
        raise InputError(f"design {version.name!r} gives no days to train", field=f"{path}design_id")
    gpus = int(version.spec["cluster"]["nodes"]) * gpus_per_node
    run = {key: value for key, value in item.items() if key not in {"design_id", "design_version"}}
    what = "RL run" if version.spec.get("rl") else "run"
    return {
        **run,
        "name": item.get("name") or version.name,
        "gpus": gpus,
        "gpu_hours": gpus * HOURS_PER_DAY * float(days),
        "source": f"design {version.design_id} v{version.number} ({what} on "
        f"{version.spec['cluster']['accelerator']}): {gpus} GPUs × 24 h × {float(days):.4g} d",
    }


POOLS = ("trainer", "rollout")


def _rl_pool_run(*, item: dict[str, Any], path: str, ctx: PlanContext, gpus_per_node: Any) -> dict[str, Any]:
    """One pool of a mixed RL fleet (a design whose ``rl.rollout`` is a pool of its own) as a training run:
    its GPUs and GPU-hours as the design's evaluation priced them (engine/rl/rl_fleet.py: the pool's effective
    days, with its own failures, × 24 × its GPUs). The plan is one node type, so it holds one pool: the
    pool's node size must be the plan's."""
    pool = item.get("pool")
    if pool not in POOLS:
        raise InputError(f"must be one of {', '.join(POOLS)}", field=f"{path}pool")
    version = _visible_version(item=item, path=path, ctx=ctx)
    if (version.spec.get("rl") or {}).get("rollout") is None:
        raise InputError(
            f"design {version.name!r} has no rollout pool of its own (rl.rollout): leave pool out",
            field=f"{path}pool",
        )
    evaluation = _evaluation(version=version, path=path)
    fleet = design_selectors.evaluation_read(result=evaluation.result).rl_fleet
    if fleet is None:
        raise InputError(f"design {version.name!r} prices no pool", field=f"{path}design_id")
    chosen = next(p for p in fleet.pools if p.pool == pool)
    if chosen.gpus // chosen.nodes != gpus_per_node:
        raise InputError(
            f"the {pool} pool of design {version.name!r} has {chosen.gpus // chosen.nodes} GPUs per node; "
            f"the plan's nodes have {gpus_per_node}",
            field=f"{path}pool",
        )
    run = {key: value for key, value in item.items() if key not in {"design_id", "design_version", "pool"}}
    return {
        **run,
        "name": item.get("name") or f"{version.name} ({pool} pool, {chosen.accelerator})",
        "gpus": chosen.gpus,
        "gpu_hours": chosen.gpu_hours,
        "source": f"design {version.design_id} v{version.number}, RL {pool} pool on {chosen.accelerator}: "
        f"{chosen.gpus} GPUs × 24 h × {chosen.effective_days:.4g} d",
        "accelerator": chosen.accelerator,
    }


def _inline_rl_run(*, item: dict[str, Any], path: str, gpus_per_node: int) -> dict[str, Any]:
    """An RL run given inline: ``rl`` a design spec's sections (``workload``, ``cluster``, ``rl``) evaluated
    by the RL engine alone (no costs: the plan prices the capacity), its failure-free days; ``pool`` picks one
    pool of a mixed fleet as in ``_rl_pool_run``. GPU-hours: the chosen placement's (rl.RLPlacement), the
    pool's share for a pool."""
    from apps.catalog.selectors import engine_catalog
    from clusterdesigner.engine.core.spec_rules import SpecError
    from clusterdesigner.engine.design import spec as design_spec
    from clusterdesigner.engine.rl import rl

    section = item["rl"]
    if not isinstance(section, dict):
        raise InputError("must be an object: a design spec's workload, cluster and rl", field=f"{path}rl")
    try:
        parsed = design_spec.parse_design_spec(design_spec.with_defaults(section))
    except SpecError as exc:
        refused = exc.fields()
        # A refused rl section leaves the workload without the run's tokens: its own error comes first.
        field = next((f for f in refused if f.startswith("spec.rl")), next(iter(refused)))
        message = refused[field]
        raise InputError(message[0], field=f"{path}rl.{field.removeprefix('spec.')}") from exc
    request = design_spec.rl_request(dict(parsed.json))
    if request is None:
        raise InputError("is required: the RL run's section", field=f"{path}rl.rl")
    # The run's sections sit in the item's ``rl`` as in a design spec: the engine names its errors there.
    where = design_spec.training_sections(f"{path}rl")
    chosen = rl.estimate(
        request, where=where, rl_at=f"{path}rl.rl", **engine_catalog().training_kwargs()
    ).chosen
    pool = item.get("pool")
    mixed = parsed.rl is not None and parsed.rl.get("rollout") is not None
    if mixed and pool not in POOLS:
        raise InputError(f"a mixed fleet: one of {', '.join(POOLS)}", field=f"{path}pool")
    if not mixed and pool is not None:
        raise InputError(
            "the run has no rollout pool of its own (rl.rollout): leave pool out", field=f"{path}pool"
        )
    cluster = parsed.json["cluster"]
    if pool == "rollout":
        gpn = (parsed.rl or {})["rollout"].get("gpus_per_node") or cluster["gpus_per_node"]
        gpus, hours, part = chosen.rollout_gpus, chosen.rollout_gpu_hours, chosen.rollout_accelerator
    elif pool == "trainer":
        gpn = cluster["gpus_per_node"]
        gpus, hours, part = chosen.trainer_gpus, chosen.trainer_gpu_hours, chosen.trainer_accelerator
    else:
        gpn, gpus, hours, part = (
            cluster["gpus_per_node"],
            cluster["nodes"] * cluster["gpus_per_node"],
            chosen.gpu_hours,
            chosen.trainer_accelerator,
        )
    if gpn != gpus_per_node:
        raise InputError(
            f"the run's {pool or 'cluster'} has {gpn} GPUs per node; the plan's nodes have {gpus_per_node}",
            field=f"{path}pool" if pool else f"{path}rl.cluster.gpus_per_node",
        )
    run = {key: value for key, value in item.items() if key not in {"rl", "pool"}}
    return {
        **run,
        "name": item.get("name") or f"RL {chosen.placement}" + (f" ({pool} pool, {part})" if pool else ""),
        "gpus": gpus,
        "gpu_hours": float(hours or 0.0),
        "source": f"RL engine ({chosen.placement}, {part}{', ' + pool + ' pool' if pool else ''}): "
        f"{gpus} GPUs × 24 h × {chosen.days:.4g} d failure-free",
        "accelerator": part,
    }


def _training_runs(*, runs: list[Any], supply: Any, ctx: PlanContext, gpus_per_node: Any) -> list[Any]:
    """The plan's training runs: a saved design's (``design_id``), an inline RL run's (``rl``), or as given;
    the RL runs' parts checked to be one (``_one_part``)."""
    resolved: list[Any] = []
    parts: list[tuple[int, str]] = []
    for i, item in enumerate(runs):
        path = f"training.{i}."
        if isinstance(item, dict) and "design_id" in item:
            run = _design_run(item=item, path=path, ctx=ctx, gpus_per_node=gpus_per_node)
        elif isinstance(item, dict) and "rl" in item:
            run = _inline_rl_run(item=item, path=path, gpus_per_node=gpus_per_node)
        else:
            resolved.append(item)
            continue
        if "accelerator" in run:
            parts.append((i, run.pop("accelerator")))
        resolved.append(run)
    _one_part(parts, supply, ctx)
    return resolved


def _one_part(parts: list[tuple[int, str]], supply: Any, ctx: PlanContext) -> None:
    """A plan is one node type: the RL runs it holds (and a design whose prices it takes) are of one
    accelerator, so that no part's demand is priced at another's rates."""
    if not parts:
        return
    for index, part in parts:
        if ctx.accelerator is not None and part != ctx.accelerator:
            raise InputError(
                f"this run is on {part}; its node type is {ctx.accelerator}", field=f"training.{index}.pool"
            )
    first = parts[0][1]
    for index, part in parts[1:]:
        if part != first:
            raise InputError(
                f"this run is on {part}, an earlier one on {first}: this plan is one node type; plan both "
                "parts in a plan of node_types (one per part)",
                field=f"training.{index}.pool",
            )
    ref = supply.get("from_design") if isinstance(supply, dict) else None
    number = ref.get("design_version") if isinstance(ref, dict) else None
    if isinstance(ref, dict) and isinstance(ref.get("design_id"), int) and isinstance(number, int | None):
        try:
            version = _visible_version(item=ref, path="supply.from_design.", ctx=ctx)
        except InputError:
            version = None  # _from_design says so, naming the field
        if version is not None and version.spec["cluster"]["accelerator"] != first:
            priced = version.spec["cluster"]["accelerator"]
            raise InputError(
                f"design {version.name!r} prices {priced}; the plan's RL runs are on {first}: take the "
                f"prices of a design of {first}, or give them",
                field="supply.from_design.design_id",
            )


ON_PREM_KEYS = (
    "installation_fraction pue usd_per_kwh idle_power_fraction colo_usd_per_kw_month"
    " maintenance_fraction_per_year staff_fte staff_usd_per_fte_year depreciation_years discount_rate"
    " residual_fraction server_usd node_power_kw load_power_fraction"
).split()


def _lead_time(values: Mapping[str, Any], horizon_months: Any) -> int:
    """The procurement lead time of owned nodes when the plan gives none: the one the design's evaluation
    resolved (``cashflow.lead_time_months``, the design's own or the cost engine's sourced default, 4 months,
    engine/cost/defaults.py), else that default; capped below the plan's horizon (as the cost engine caps it
    below the design's), so that a default never makes a short plan invalid."""
    lead = int(values.get("cashflow.lead_time_months", COST_DEFAULTS["cashflow.lead_time_months"].value))
    if isinstance(horizon_months, int) and not isinstance(horizon_months, bool) and horizon_months >= 1:
        lead = min(lead, horizon_months - 1)
    return max(lead, 0)


def _design_owned(*, option: Any, ctx: PlanContext, gpus_per_node: Any, horizon_months: Any = None) -> Any:
    """Owned nodes priced as a saved design owns them: the owning inputs its evaluation resolved (catalog
    server price, network and storage capex, power, the cost engine's defaults or the design's own), run
    through the cost engine's owning model per node (capacity.owned_option_from_on_prem). Without
    ``lead_time_months``, the design's lead time (``_lead_time``), not 0."""
    if not isinstance(option, dict):
        return option
    if "design_id" not in option:
        # Owning costs given directly: without a lead time, the cost engine's sourced default (not 0).
        return (
            option
            if "lead_time_months" in option
            else {**option, "lead_time_months": _lead_time({}, horizon_months)}
        )
    path = "supply.owned."
    version, evaluation = _design_evaluated(item=option, path=path, ctx=ctx, gpus_per_node=gpus_per_node)
    costs = next(iter(evaluation.result["costs"].values()))
    values = {a["name"]: a["value"] for a in costs["assumptions"] if isinstance(a, dict)}
    inputs = OnPremInputs(
        nodes=int(values["cluster.nodes"]),
        gpus_per_node=int(values["cluster.gpus_per_node"]),
        network_capex_usd=float(costs["network"]["capex_usd"]),
        network_power_kw=float(costs["network"]["power_kw"]),
        storage_capex_usd=float(costs["on_prem"]["capex_parts"]["storage"]["usd"]),
        **{key: float(values[f"on_prem.{key}"]) for key in ON_PREM_KEYS},
        colo_all_in=values.get("colocation.pricing") == "all_in",
        # The colocation basis and the finance lines the design's evaluation resolved (older ones: none).
        colo_basis=str(values.get("colocation.basis", "nameplate_kw")),
        colo_contracted_kw=values.get("on_prem.colo_contracted_kw"),
        **{key: float(values.get(f"on_prem.{key}", 0.0)) for key in FINANCE_LINES},
        # How capital is recovered (older evaluations: yearly, one life for all capex).
        capital_payments_per_year=int(values.get("on_prem.capital_payments_per_year", 1)),
        facility_life_years=values.get("on_prem.facility_life_years"),
    )
    owned = capacity.owned_option_from_on_prem(
        inputs=inputs,
        lead_time_months=option.get("lead_time_months", _lead_time(values, horizon_months)),
        existing_nodes=option.get("existing_nodes", 0),
    )
    source = f"design {version.design_id} v{version.number}: {owned.source}"
    return {
        **dataclasses.asdict(owned),
        **_market_resale(str(version.spec["cluster"]["accelerator"])),
        "source": source,
    }


def _market_resale(accelerator: str) -> dict[str, Any]:
    """The catalog's residual-value series for the accelerator, for the cash view's resale (the series with
    the most points, ties by name, as engine/cost/resale.py ``covering`` picks one): its points and source;
    none when the catalog has no series (the cash view then takes the book value, and says so)."""
    from apps.catalog.selectors import engine_catalog_records

    curves = sorted(
        curves_from_records(engine_catalog_records(), accelerator=accelerator),
        key=lambda c: (-len(c.points), c.series),
    )
    if not curves:
        return {}
    curve = curves[0]
    return {
        "resale_points": [list(point) for point in curve.points],
        "resale_source": f"{curve.series} for {accelerator} (catalog, as of {curve.as_of}: {curve.source})",
    }


TERM_MODELS = {12: "reserved_1y", 36: "reserved_3y"}
MODEL_TERMS = {model: term for term, model in TERM_MODELS.items()}


def _design_offering(*, ref: dict[str, Any], version: Any, costs: Mapping[str, Any]) -> str | None:
    """The cloud offering of the design whose prices the plan takes: ``offering`` when given (one the design
    prices), else the design's only one. A design with several must be told which: taking the first would
    let the order of its offerings change the plan."""
    priced = [slug for slug, cost in costs.items() if cost.get("offering")]
    slug = ref.get("offering")
    if slug is None:
        if len(priced) > 1:
            raise InputError(
                f"design {version.name!r} prices {len(priced)} offerings ({', '.join(priced)}): name one",
                field="supply.from_design.offering",
            )
        return priced[0] if priced else None
    if slug not in priced:
        raise InputError(
            f"design {version.name!r} does not price {slug!r}; it prices {', '.join(priced) or 'none'}",
            field="supply.from_design.offering",
        )
    return str(slug)


def _from_design(*, supply: Any, ctx: PlanContext, gpus_per_node: Any) -> Any:
    """``supply.from_design: {design_id, design_version?, offering?, owned?, lead_time_months?}``: the
    plan takes the saved design's prices as its evaluation resolved them (its negotiated $/node-hour where it
    gives one, else the catalog's), for the pricing models the design chose for that offering: on-demand and
    spot, and 1- and 3-year reservations as 12- and 36-month terms; and, unless ``owned`` is false, owned
    nodes priced as the design owns them, with their capital share (so the plan has a cash view). What the
    supply gives itself wins, key by key; a design the user may not read is a 400 naming design_id."""
    if not isinstance(supply, dict) or "from_design" not in supply:
        return supply
    ref = supply["from_design"]
    if not isinstance(ref, dict):
        raise InputError("must be an object", field="supply.from_design")
    version, evaluation = _design_evaluated(
        item=ref, path="supply.from_design.", ctx=ctx, gpus_per_node=gpus_per_node
    )
    costs = evaluation.result.get("costs") or {}
    out = {key: value for key, value in supply.items() if key != "from_design"}
    slug = _design_offering(ref=ref, version=version, costs=costs)
    where = f"design {version.design_id} v{version.number}"
    if slug is not None:
        cloud = costs[slug].get("cloud") or {}
        entries = version.spec["costs"].get("cloud") or []
        entry: dict[str, Any] = next((c for c in entries if c.get("offering") == slug), {})
        reservations: list[dict[str, Any]] = []
        for model in [m for m in entry.get("pricing_models") or list(cloud) if m in cloud]:
            price = float(cloud[model]["usd_per_node_hour"])
            item = {"usd_per_node_hour": price, "source": f"{where}: {slug} {model} ${price:g}/node-hour"}
            row = _design_row(evaluation.result, where=where, slug=slug, model=model, usd=price)
            if model in ("on_demand", "spot"):
                given: dict[str, Any] = out[model] if isinstance(out.get(model), dict) else {}
                out[model] = {**item, **({"offering": slug} if model == "spot" else {}), **given}
                if "usd_per_node_hour" not in given:
                    ctx.rows.append({**row, "name": f"supply.{model}"})
            elif model in MODEL_TERMS and "reservations" not in supply:
                ctx.rows.append({**row, "name": f"supply.reservations.{len(reservations)}"})
                reservations.append({"term_months": MODEL_TERMS[model], **item})
        if reservations and "reservations" not in supply:
            out["reservations"] = reservations
    if ref.get("owned", True) is not False and "owned" not in supply:
        out["owned"] = {
            "design_id": version.design_id,
            "design_version": version.number,
            # Absent: the design's lead time (_lead_time), not 0.
            **({"lead_time_months": ref["lead_time_months"]} if "lead_time_months" in ref else {}),
        }
    return out


def _design_row(
    result: Mapping[str, Any], *, where: str, slug: str, model: str, usd: float
) -> dict[str, Any]:
    """Where a price the plan takes from a design came from: the design's evaluation, and there the origin
    its own resolution gave it (the design's value, its owner's price book entry with its date, or the
    public catalog: the evaluation's ``prices.cloud.<offering>.<model>`` row)."""
    used: Mapping[str, Any] = next(
        (a for a in result.get("assumptions") or [] if a.get("name") == f"prices.cloud.{slug}.{model}"), {}
    )
    origin = used.get("origin", "catalog")
    row: dict[str, Any] = {"value": usd, "unit": "USD/node-hour", "origin": "design", "as_of": ""}
    row["source"] = f"{where}: {slug} {model}, from {origin}: {used.get('source') or 'the public catalog'}"
    for key in ("entry_id", "as_of"):
        if used.get(key):
            row[key] = used[key]
    return row


def _given_rows(supply: Any) -> list[dict[str, Any]]:
    """The prices the plan states itself (``usd_per_node_hour`` on an option): their origin is the plan."""
    if not isinstance(supply, dict):
        return []
    options = [(f"supply.{key}", supply.get(key)) for key in ("on_demand", "spot")]
    reservations = supply.get("reservations")
    if isinstance(reservations, list):
        options += [(f"supply.reservations.{i}", r) for i, r in enumerate(reservations)]
    return [
        {
            "name": name,
            "value": option["usd_per_node_hour"],
            "unit": "USD/node-hour",
            "origin": "plan",
            "as_of": "",
            "source": "the plan",
        }
        for name, option in options
        if isinstance(option, dict) and "usd_per_node_hour" in option
    ]


def _catalog_priced(
    *, option: Any, path: str, pricing_model: str | None, gpus_per_node: Any, catalog: Any, ctx: PlanContext
) -> Any:
    """An option that names a catalog ``offering`` instead of a price takes that offering's price of the
    pricing model through the plan's price book (apps.designs.pricing: the book's private rate or discount,
    else the catalog's newest price; a missing one is an error, never another model's or offering's price).
    The figure's origin is kept (``ctx.rows``)."""
    if not isinstance(option, dict) or "offering" not in option or "usd_per_node_hour" in option:
        return option
    slug = option["offering"]
    offering = catalog.offerings.get(slug) if isinstance(slug, str) else None
    if offering is None:
        raise InputError("no cloud offering with this slug in the catalog", field=f"{path}offering")
    if ctx.accelerator is not None and offering.accelerator != ctx.accelerator:
        raise InputError(
            f"{slug} rents {offering.accelerator}; this node type is {ctx.accelerator}",
            field=f"{path}offering",
        )
    if offering.gpu_count != gpus_per_node:
        raise InputError(
            f"{slug} rents {offering.gpu_count} GPUs a node; the plan's nodes have {gpus_per_node}",
            field=f"{path}offering",
        )
    book = offerings_priced(
        owner=ctx.book,
        catalog=catalog,
        accelerator=offering.accelerator,
        gpus_per_node=gpus_per_node,
        slugs=[slug],
    )
    ctx.findings.extend(f for f in book.findings if f not in ctx.findings)
    row = next((r for r in book.rows if r["name"] == f"prices.cloud.{slug}.{pricing_model}"), None)
    price = None if row is None else row["value"]
    if price is None:
        raise InputError(
            f"{slug} has no {pricing_model or 'such'} price in the catalog: give usd_per_node_hour",
            field=f"{path}usd_per_node_hour",
        )
    assert row is not None
    name = f"supply.{path.removeprefix('supply.').rstrip('.')}"
    ctx.rows.append({**row, "name": name})
    source = f"{slug} {pricing_model}: {row['source']}"
    rest = {k: v for k, v in option.items() if k != "offering"}
    return {
        **rest,
        "usd_per_node_hour": float(price),
        "source": source,
        **_quota_cap(rest, book, pricing_model, name, ctx),
    }


def _quota_cap(
    option: Mapping[str, Any], book: OfferingPrices, model: str | None, name: str, ctx: PlanContext
) -> dict[str, Any]:
    """The nodes the book says are obtainable on this option (its quota for the offering and pricing model,
    or a capacity block's size): the option's ``cap_nodes``, an upper bound the plan's MILP holds; a lower
    cap the plan gives itself stays."""
    quota = next(
        (r for r in book.rows if r["name"].endswith(f".{model}") and r["name"].startswith("prices.quota.")),
        None,
    )
    if quota is None or quota["origin"] != "price_book":
        return {}
    ctx.rows.append({**quota, "name": f"{name}.cap_nodes"})
    given = option.get("cap_nodes")
    if isinstance(given, int | float) and not isinstance(given, bool) and given <= quota["value"]:
        return {}
    return {"cap_nodes": quota["value"]}


def _supply_priced(*, supply: Any, gpus_per_node: Any, ctx: PlanContext) -> Any:
    if not isinstance(supply, dict) or not any(
        isinstance(v, dict) and "offering" in v
        for v in [supply.get("on_demand"), supply.get("spot"), *(supply.get("reservations") or [])]
    ):
        return supply
    from apps.catalog.selectors import engine_catalog

    catalog = engine_catalog()
    out = dict(supply)
    for key in ("on_demand", "spot"):
        out[key] = _catalog_priced(
            option=supply.get(key),
            path=f"supply.{key}.",
            pricing_model=key,
            gpus_per_node=gpus_per_node,
            catalog=catalog,
            ctx=ctx,
        )
    if isinstance(supply.get("reservations"), list):
        out["reservations"] = [
            _catalog_priced(
                option=r,
                path=f"supply.reservations.{i}.",
                # 0 months: no term; the option's own term check names a missing one
                pricing_model=TERM_MODELS.get(r.get("term_months", 0)) if isinstance(r, dict) else None,
                gpus_per_node=gpus_per_node,
                catalog=catalog,
                ctx=ctx,
            )
            for i, r in enumerate(supply["reservations"])
        ]
    return out


def _spot_goodput(*, spot: Any, raw: Any, training: Any, gpus_per_node: Any) -> Any:
    """Spot without a ``goodput`` takes the cost engine's failures model (capacity.spot_goodput_from_failures)
    for the plan's largest training run (a preemption of any of its nodes stops it), or one node when the plan
    has none: preemptions from the spot offering in the catalog, else the cost engine's default; hardware
    failures and restart time from the cost engine's defaults; ``checkpoint_write_s`` as given, else 0 s. A
    goodput the user gives wins."""
    if not isinstance(spot, dict) or "goodput" in spot or not isinstance(gpus_per_node, int):
        return spot
    write_s = spot.get("checkpoint_write_s", 0.0)
    if isinstance(write_s, bool) or not isinstance(write_s, int | float) or not 0 <= write_s <= 86_400:
        raise InputError("must be seconds, 0 to 86,400", field="supply.spot.checkpoint_write_s")
    sizes = [
        -(-r["gpus"] // gpus_per_node)
        for r in training
        if isinstance(r, dict) and isinstance(r.get("gpus"), int) and r["gpus"] > 0 and gpus_per_node > 0
    ]
    nodes = max(sizes, default=1)
    preempt = COST_DEFAULTS["cloud.spot_preemptions_per_day"]
    rate, rate_source = float(preempt.value), preempt.source
    slug = raw.get("offering") if isinstance(raw, dict) else None
    if isinstance(slug, str):
        from apps.catalog.selectors import engine_catalog

        offering = engine_catalog().offerings.get(slug)
        if offering is not None and offering.spot_preemptions_per_day is not None:
            rate, rate_source = float(offering.spot_preemptions_per_day), f"{slug} (catalog)"
    failures = COST_DEFAULTS["failures.failures_per_gpu_day"]
    restart = COST_DEFAULTS["failures.restart_minutes"]
    goodput = capacity.spot_goodput_from_failures(
        nodes=nodes,
        gpus_per_node=gpus_per_node,
        preemptions_per_node_day=rate,
        failures_per_gpu_day=float(failures.value),
        restart_minutes=float(restart.value),
        checkpoint_write_s=float(write_s),
    )
    source = (
        f"cost engine's failures model for {nodes} node(s) of {gpus_per_node} GPUs"
        f" ({'the largest training run' if sizes else 'no training run: one node'}):"
        f" {rate:g} preemptions per node-day ({rate_source}); {float(failures.value):.4g} failures per"
        f" GPU-day ({failures.source}); restart {float(restart.value):g} min ({restart.source});"
        f" checkpoint write {float(write_s):g} s ({'given' if 'checkpoint_write_s' in spot else 'not given'})"
    )
    rest = {k: v for k, v in spot.items() if k != "checkpoint_write_s"}
    return {**rest, "goodput": goodput, "goodput_source": source}


# The serving engine's request fields an inference workload in tokens passes through as they are.
SERVING_KEYS = (
    "model",
    "accelerator",
    "input_tokens",
    "output_tokens",
    "targets",
    "weight_precision",
    "kv_precision",
)
TOKEN_KEYS = {
    "name",
    "tokens_per_day",
    "offpeak_fraction",
    "peak_start_hour",
    "peak_end_hour",
    "start_month",
} | set(SERVING_KEYS)
# The serving engine's request fields an inference workload passes through, and the plan field a serving
# error on the rest is reported on.
SERVING_FIELDS = {"demand.output_tokens_per_day": "tokens_per_day", "demand.peak_to_mean": "offpeak_fraction"}


def _shape(item: dict[str, Any], path: str) -> tuple[float, int, int]:
    fraction = item.get("offpeak_fraction", 1.0)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 <= fraction <= 1:
        raise InputError("must be 0 to 1", field=f"{path}offpeak_fraction")
    start, end = item.get("peak_start_hour", 8), item.get("peak_end_hour", 20)
    for key, value in (("peak_start_hour", start), ("peak_end_hour", end)):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 24:
            raise InputError("must be a whole hour, 0 to 24", field=f"{path}{key}")
    if not start < end:
        raise InputError("must be after peak_start_hour", field=f"{path}peak_end_hour")
    return float(fraction), start, end


def _tokens_inference(*, item: dict[str, Any], path: str, gpus_per_node: Any) -> dict[str, Any]:
    """An inference workload given as output tokens per day with a model, accelerator, lengths and TTFT/TPOT
    targets: the serving engine sizes it at its daily peak (peak_to_mean = 24 / (h + f · (24 − h)) of the
    workload's shape, capacity.peak_to_mean_of_day) and its GPUs at that peak become ``peak_gpus``; the
    conversion is kept as ``sizing``."""
    from apps.catalog.selectors import engine_catalog
    from clusterdesigner.engine.serving_cost import serving_cost

    _tokens_item_check(item, path)
    fraction, start, end = _shape(item, path)
    peak_to_mean = capacity.peak_to_mean_of_day(
        offpeak_fraction=fraction, peak_start_hour=start, peak_end_hour=end
    )
    request: dict[str, Any] = {key: item[key] for key in SERVING_KEYS if key in item}
    request.update(
        gpus_per_node=gpus_per_node,
        demand={"output_tokens_per_day": item["tokens_per_day"], "peak_to_mean": peak_to_mean},
        disaggregated=False,
        cost={"include_cloud": False},
    )
    try:  # only the GPU count is used: no owning price is needed (a 2026 part may have none)
        result = serving_cost.estimate(request, catalog=engine_catalog(), price_owning=False)
    except EngineError as exc:
        field = SERVING_FIELDS.get(exc.field, exc.field or "tokens_per_day")
        raise type(exc)(exc.message, field=f"{path}{field}") from exc
    sizing = _sizing(result, tokens_per_day=item["tokens_per_day"], peak_to_mean=peak_to_mean)
    return {
        "name": item.get("name") or "inference",
        "peak_gpus": float(result.best.gpus),
        "offpeak_fraction": fraction,
        "peak_start_hour": start,
        "peak_end_hour": end,
        "start_month": item.get("start_month", 0),
        "sizing": dataclasses.asdict(sizing),
    }


def _tokens_item_check(item: dict[str, Any], path: str) -> None:
    """An inference item in tokens per day: not also in GPUs, no field the conversion ignores, and the model
    and accelerator it is sized for."""
    if "peak_gpus" in item:
        raise InputError("give peak_gpus or tokens_per_day, not both", field=f"{path}tokens_per_day")
    unknown = sorted(set(item) - TOKEN_KEYS)
    if unknown:
        raise InputError(
            f"unknown field(s) with tokens_per_day: {', '.join(unknown)}", field=f"{path}{unknown[0]}"
        )
    for key in ("model", "accelerator"):
        if key not in item:
            raise InputError("is required with tokens_per_day", field=f"{path}{key}")


def _sizing(result: ServingResult, *, tokens_per_day: Any, peak_to_mean: float) -> capacity.InferenceSizing:
    """The serving estimate's conversion of tokens per day into GPUs at the peak, with its sentence."""
    best = result.best
    from clusterdesigner.engine.serving.serving import layout_label  # loaded on first use, as the estimate

    layout = layout_label(best.tp, best.pp, best.ep, best.attention_dp)
    return capacity.InferenceSizing(
        output_tokens_per_day=float(tokens_per_day),
        model=result.model,
        accelerator=result.accelerator,
        peak_to_mean=peak_to_mean,
        peak_requests_per_s=result.peak_requests_per_s,
        layout=layout,
        batch=best.batch,
        replicas=best.replicas,
        gpus=best.gpus,
        output_tokens_per_s_per_gpu=best.output_tokens_per_s_per_gpu,
        ttft_s=best.ttft_s,
        tpot_s=best.tpot_s,
        source=(
            f"serving engine: {float(tokens_per_day):,.4g} output tokens/day at peak/mean"
            f" {peak_to_mean:.4g} = {result.peak_requests_per_s:.4g} requests/s at the peak;"
            f" {best.replicas} × {layout} replicas at batch {best.batch} = {best.gpus} GPUs"
        ),
    )


@dataclass
class PlanContext:
    """Whom a plan is resolved for: the user whose designs it may name (``user``, and the plan's team's
    designs when it is a team's), the price book its catalog-priced options resolve through (``book``, the
    plan's: its team's, else its owner's), and where each price came from (``rows``, the book's warnings in
    ``findings``)."""

    user: Any
    team_id: int | None
    book: PriceOwner | None
    rows: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    # While one node type of a plan of several is resolved: its accelerator, which every design, RL run and
    # offering that type takes must be of (apps/plans/fleet.py). None for a plan of one node type.
    accelerator: str | None = None

    @classmethod
    def of(cls, *, plan: CapacityPlan | None, user: Any) -> PlanContext:
        """A new plan is its maker's; a saved one is resolved as the plan (its team's designs and book)."""
        if plan is None:
            return cls(user=user, team_id=None, book=PriceOwner(owner_id=int(user.pk)))
        return cls(user=user, team_id=plan.team_id, book=PriceOwner.of(plan))


EnginePlan = capacity.CapacityPlan | capacity_fleet.FleetPlan


def plan_spec_resolve(*, spec: Any, user: Any, plan: CapacityPlan | None = None) -> EnginePlan:
    """The engine's plan from a saved spec (plan_spec_priced, without the prices' origins)."""
    return plan_spec_priced(spec=spec, ctx=PlanContext.of(plan=plan, user=user))


def plan_spec_priced(*, spec: Any, ctx: PlanContext) -> EnginePlan:
    """The engine's plan from a saved spec; training runs that name a design take its GPUs and GPU-hours,
    options that name an offering its price through the plan's book; ``ctx.rows`` say where each price came
    from. Errors name the field under ``spec.``. A spec with ``node_types`` is a plan of several node types
    (apps/plans/fleet.py), each type resolved as a plan of one."""
    if not isinstance(spec, dict):
        raise InputError("must be an object", field="spec")
    if "node_types" in spec:
        return fleet_spec_priced(spec=spec, ctx=ctx, one_type=_one_type_priced)
    return _one_type_priced(spec=spec, ctx=ctx)


def _one_type_priced(*, spec: dict[str, Any], ctx: PlanContext) -> capacity.CapacityPlan:
    try:
        resolved = dict(spec)
        gpus_per_node = spec.get("gpus_per_node")
        given = _from_design(supply=spec.get("supply"), ctx=ctx, gpus_per_node=gpus_per_node)
        supply = _supply_priced(supply=given, gpus_per_node=gpus_per_node, ctx=ctx)
        if isinstance(supply, dict):
            supply = {
                **supply,
                "owned": _design_owned(
                    option=supply.get("owned"),
                    ctx=ctx,
                    gpus_per_node=gpus_per_node,
                    horizon_months=spec.get("horizon_months"),
                ),
            }
        resolved["supply"] = supply
        ctx.rows.extend(_given_rows(spec.get("supply")))
        runs = spec.get("training") or []
        if isinstance(runs, list):
            resolved["training"] = _training_runs(
                runs=runs, supply=spec.get("supply"), ctx=ctx, gpus_per_node=gpus_per_node
            )
        loads = spec.get("inference") or []
        if isinstance(loads, list):
            resolved["inference"] = [
                _tokens_inference(item=item, path=f"inference.{i}.", gpus_per_node=gpus_per_node)
                if isinstance(item, dict) and "tokens_per_day" in item
                else item
                for i, item in enumerate(loads)
            ]
        if isinstance(supply, dict) and isinstance(resolved.get("training"), list):
            raw = given.get("spot") if isinstance(given, dict) else None
            resolved["supply"] = {
                **supply,
                "spot": _spot_goodput(
                    spot=supply.get("spot"),
                    raw=raw,
                    training=resolved["training"],
                    gpus_per_node=gpus_per_node,
                ),
            }
        return capacity.CapacityPlan.from_json(resolved)
    except capacity.PlanInputErrors as exc:  # every error of the plan at once
        raise InvalidInput({f"spec.{path}": [message] for path, message in exc.fields.items()}) from exc
    except EngineError as exc:  # input, reference and infeasibility errors alike keep their kind
        raise type(exc)(exc.message, field=f"spec.{exc.field}" if exc.field else "spec") from exc


@transaction.atomic
def plan_create(*, owner: Any, name: str, spec: dict[str, Any], description: str = "") -> CapacityPlan:
    plan_spec_resolve(spec=spec, user=owner)
    plan = CapacityPlan.objects.create(owner=owner, name=name, description=description, version=1)
    PlanVersion.objects.create(plan=plan, number=1, spec=spec, created_by=owner)
    return plan


@transaction.atomic
def plan_update(
    *,
    plan: CapacityPlan,
    user: Any,
    name: str | None = None,
    description: str | None = None,
    spec: dict[str, Any] | None = None,
) -> CapacityPlan:
    """Rename or describe in place; a new spec is a new version (old versions and their results stay)."""
    plan = CapacityPlan.objects.select_for_update().get(pk=plan.pk)
    if spec is not None:
        plan_spec_resolve(spec=spec, user=user, plan=plan)
        plan.version += 1
        PlanVersion.objects.create(plan=plan, number=plan.version, spec=spec, created_by=user)
    if name is not None:
        plan.name = name
    if description is not None:
        plan.description = description
    plan.save()
    return plan


def plan_delete(*, plan: CapacityPlan) -> None:
    plan.delete()


def plan_size(*, plan: EnginePlan) -> int:
    """A plan's weight for choosing how to solve it: months × (training runs + 1), each node type counted
    (a type's own dispatch is the + 1). The integer variables and the pieces of the demand curve grow with
    the months; each run that may not be split adds binaries."""
    if isinstance(plan, capacity_fleet.FleetPlan):
        return plan.horizon_months * (plan.training_runs + len(plan.node_types))
    return plan.horizon_months * (len(plan.training) + 1)


def _resolved(*, version: PlanVersion, user: Any) -> tuple[EnginePlan, dict[str, Any], str]:
    """The version resolved as its plan (PlanContext.of: the plan's team's designs and price book), whoever
    asks and wherever it runs, so the request and a worker resolve it alike. ``user`` (the one asking) is
    not what it is resolved as: the plan's owner is, with its team."""
    plan = version.plan
    ctx = PlanContext.of(plan=plan, user=plan.owner)
    engine_plan = plan_spec_priced(spec=version.spec, ctx=ctx)
    # The prices' origins are in the snapshot and so in the key: another book is another solution.
    snapshot = {
        "plan": engine_plan.to_json(),
        "prices": ctx.rows,
        "price_findings": ctx.findings,
        "calibrations": _calibrations(spec=version.spec, ctx=ctx),
    }
    # Keyed by the engines' output version too, so a solution stored before an engine change is solved again.
    return engine_plan, snapshot, snapshot_hash({**snapshot, "engine": ENGINE_VERSION})


def _calibrations(*, spec: Any, ctx: PlanContext) -> dict[str, Any]:
    """The calibration each design a training run is taken from was estimated with (its owner's switch,
    factors and their runs; issue 40), by design id: stored beside the solution and in its key, so switching
    it is a new solution even where the factor leaves the days as they were."""
    runs = spec.get("training") if isinstance(spec, dict) else None
    found: dict[str, Any] = {}
    for item in runs if isinstance(runs, list) else []:
        design_id = item.get("design_id") if isinstance(item, dict) else None
        if not isinstance(design_id, int) or isinstance(design_id, bool):
            continue
        try:  # the design as the plan resolves it (its owner's, or its team's: PlanContext)
            version = _visible_version(item={"design_id": design_id}, path="", ctx=ctx)
        except InputError:
            continue
        found[str(version.design_id)] = design_pricing.design_calibration(design=version.design).to_json()
    return found


def _store(
    *,
    version: PlanVersion,
    engine_plan: EnginePlan,
    snapshot: dict[str, Any],
    digest: str,
    in_request: bool = True,
) -> PlanSolution:
    existing = version.solutions.filter(input_hash=digest).first()
    if existing is not None:
        return existing
    limits: dict[str, Any] = {
        "node_limit": settings.PLAN_SOLVE_NODE_LIMIT,
        "mip_gap": settings.PLAN_SOLVE_MIP_GAP,
        "time_limit_s": settings.PLAN_SYNC_TIME_LIMIT_S if in_request else settings.PLAN_SOLVE_TIME_LIMIT_S,
    }
    if isinstance(engine_plan, capacity_fleet.FleetPlan):
        result = capacity_fleet.fleet_solve(plan=engine_plan, **limits)
    else:
        result = capacity.plan_solve(plan=engine_plan, **limits)
    solution, _ = PlanSolution.objects.get_or_create(
        version=version, input_hash=digest, defaults={"snapshot": snapshot, "result": result.to_json()}
    )
    return solution


def plan_solve(*, version: PlanVersion, user: Any) -> PlanSolution:
    """Solve one version synchronously; the same resolved input twice returns the stored solution."""
    engine_plan, snapshot, digest = _resolved(version=version, user=user)
    return _store(version=version, engine_plan=engine_plan, snapshot=snapshot, digest=digest)


def plan_solve_start(*, version: PlanVersion, user: Any) -> PlanSolution | PlanRun:
    """A stored or small plan is solved now (its solution); a large one (``plan_size`` above
    settings.PLAN_SYNC_MAX_SIZE) is queued to a worker once per input (its run)."""
    engine_plan, snapshot, digest = _resolved(version=version, user=user)
    existing = version.solutions.filter(input_hash=digest).first()
    if existing is not None or plan_size(plan=engine_plan) <= settings.PLAN_SYNC_MAX_SIZE:
        return existing or _store(version=version, engine_plan=engine_plan, snapshot=snapshot, digest=digest)
    run, created = PlanRun.objects.get_or_create(version=version, input_hash=digest)
    if created or run.status == PlanRun.Status.FAILED:
        PlanRun.objects.filter(pk=run.pk).update(status=PlanRun.Status.QUEUED, error="")
        from apps.plans.tasks import plan_run_task

        transaction.on_commit(lambda: plan_run_task.delay(run.pk))
        run.refresh_from_db()
    return run


def plan_run_execute(*, run_id: int) -> None:
    """The worker's part: solve the run's version as its owner would, and record how it ended. Idempotent: a
    run already done is left alone."""
    run = PlanRun.objects.select_related("version__plan__owner", "version__plan__team").get(pk=run_id)
    if run.status == PlanRun.Status.DONE:
        return
    PlanRun.objects.filter(pk=run_id).update(status=PlanRun.Status.RUNNING)
    try:
        engine_plan, snapshot, digest = _resolved(version=run.version, user=run.version.plan.owner)
        solution = _store(
            version=run.version, engine_plan=engine_plan, snapshot=snapshot, digest=digest, in_request=False
        )
    except EngineError as exc:
        PlanRun.objects.filter(pk=run_id).update(
            status=PlanRun.Status.FAILED, error=f"{exc.field}: {exc.message}" if exc.field else exc.message
        )
        return
    PlanRun.objects.filter(pk=run_id).update(status=PlanRun.Status.DONE, solution=solution)


def plan_share_link_create(
    *, plan: CapacityPlan, user: Any, expires_in_days: int | None = None
) -> tuple[PlanShareLink, str]:
    """Freeze the current version's solution behind a new 256-bit token; returns (link, token), the token
    shown once."""
    solution = plan_solve(version=plan.versions.get(number=plan.version), user=user)
    token = secrets.token_urlsafe(32)
    link = PlanShareLink.objects.create(
        plan=plan,
        solution=solution,
        token_hash=hash_token(token),
        token_hint=token[:6],
        created_by=user,
        expires_at=timezone.now() + dt.timedelta(days=expires_in_days) if expires_in_days else None,
    )
    return link, token


def plan_share_link_revoke(*, link: PlanShareLink) -> PlanShareLink:
    if link.revoked_at is None:
        link.revoked_at = timezone.now()
        link.save(update_fields=["revoked_at"])
    return link
