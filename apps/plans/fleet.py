"""A plan of several node types (issue 39): split its spec into one plan per accelerator, resolve each as a
one-type plan is resolved (services.plan_spec_priced), and join them into the engine's FleetPlan, with an
RL run of a mixed fleet (a rollout pool of its own accelerator) as two runs coupled to the same months.

The spec: ``node_types`` a list of ``{accelerator, gpus_per_node, supply}``; ``horizon_months``,
``growth_pct_per_month`` and ``discount_rate`` for all; ``training``, ``inference`` and ``baseline`` items
each name their ``node_type`` (an accelerator of the list), except what says its own part: a saved design
(its cluster's accelerator; a mixed RL design without ``pool`` is both its pools) and an inline RL run
(likewise), and inference in tokens per day (its ``accelerator``). Errors name the fields as sent."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterdesigner.engine.capacity.capacity_fleet import Coupling, FleetPlan, NodeType
from clusterdesigner.engine.core.errors import EngineError, InputError
from clusterdesigner.errors import InvalidInput

SHARED_KEYS = ("horizon_months", "growth_pct_per_month", "discount_rate")
TYPE_KEYS = {"accelerator", "gpus_per_node", "supply"}
WORKLOADS = ("training", "inference", "baseline")
# A plan of node types gives these per type, not for the whole plan.
PER_TYPE = ("gpus_per_node", "supply")


@dataclass
class _Part:
    """One node type's share of the spec: its sub-spec, and for each of its workload items the index of the
    item it came from in the spec as sent (an RL design's two pools come from one item)."""

    accelerator: str
    spec: dict[str, Any]
    origin: dict[str, list[int]] = field(default_factory=lambda: {key: [] for key in WORKLOADS})


def fleet_spec_priced(*, spec: dict[str, Any], ctx: Any, one_type: Callable[..., Any]) -> FleetPlan:
    """The engine's FleetPlan from a spec with ``node_types``: each type resolved by ``one_type``
    (services._one_type_priced, a one-type plan's resolution) with ``ctx.accelerator`` its part, so that
    every RL run, design and offering it takes is of that part; the prices' rows named
    ``node_types.<i>.supply...``."""
    parts = _parts(spec)
    couplings: list[tuple[str, list[tuple[int, int]]]] = []
    for index, item in enumerate(_list(spec, "training")):
        _place_run(parts, item, index, ctx, couplings)
    for key in ("inference", "baseline"):
        for index, item in enumerate(_list(spec, key)):
            _place(parts, key, index, item, _named_type(parts, key, index, item))
    types = []
    for t, part in enumerate(parts):
        rows = len(ctx.rows)
        ctx.accelerator = part.accelerator
        try:
            plan = one_type(spec=part.spec, ctx=ctx)
        except InvalidInput as exc:
            raise InvalidInput({_field(f, t, part): m for f, m in exc.fields.items()}) from exc
        except EngineError as exc:
            raise type(exc)(exc.message, field=_field(exc.field or "spec", t, part)) from exc
        finally:
            ctx.accelerator = None
        ctx.rows[rows:] = [{**r, "name": f"node_types.{t}.{r['name']}"} for r in ctx.rows[rows:]]
        types.append(NodeType(part.accelerator, plan))
    joined = tuple(Coupling(name, tuple(runs)) for name, runs in couplings)
    return FleetPlan(node_types=tuple(types), couplings=joined)


def _list(spec: Mapping[str, Any], key: str) -> list[Any]:
    value = spec.get(key) or []
    if not isinstance(value, list):
        raise InputError("must be a list", field=f"spec.{key}")
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError("must be an object", field=f"spec.{key}.{i}")
    return value


def _parts(spec: Mapping[str, Any]) -> list[_Part]:
    """One part per node type, checked: at least two, distinct accelerators of the catalog, no per-type key
    given for the whole plan."""
    from apps.catalog.selectors import engine_catalog

    for key in PER_TYPE:
        if key in spec:
            raise InputError(
                "a plan of node types gives it per type (node_types.<i>." + key + ")", field=f"spec.{key}"
            )
    types = spec.get("node_types")
    if not isinstance(types, list) or len(types) < 2:
        raise InputError(
            "must be a list of at least two {accelerator, gpus_per_node, supply} (one type: leave it out)",
            field="spec.node_types",
        )
    accelerators = engine_catalog().accelerators
    parts: list[_Part] = []
    for t, item in enumerate(types):
        path = f"spec.node_types.{t}"
        if not isinstance(item, dict):
            raise InputError("must be an object", field=path)
        unknown = sorted(set(item) - TYPE_KEYS)
        if unknown:
            raise InputError(f"unknown field(s): {', '.join(unknown)}", field=f"{path}.{unknown[0]}")
        slug = item.get("accelerator")
        if not isinstance(slug, str) or slug not in accelerators:
            raise InputError("must be the slug of an accelerator in the catalog", field=f"{path}.accelerator")
        if any(p.accelerator == slug for p in parts):
            raise InputError(f"{slug} is listed twice", field=f"{path}.accelerator")
        sub = {key: spec[key] for key in SHARED_KEYS if key in spec}
        sub.update({key: item.get(key) for key in PER_TYPE}, training=[], inference=[], baseline=[])
        parts.append(_Part(slug, sub))
    return parts


def _type_index(parts: list[_Part], slug: Any, path: str, what: str) -> int:
    for t, part in enumerate(parts):
        if part.accelerator == slug:
            return t
    listed = ", ".join(p.accelerator for p in parts)
    raise InputError(
        f"{what} on {slug}, which is not one of the plan's node types ({listed}): add a node type of "
        f"{slug} with its prices",
        field=path,
    )


def _named_type(parts: list[_Part], key: str, index: int, item: dict[str, Any]) -> int:
    """The type an item names (``node_type``; inference in tokens per day: its ``accelerator``)."""
    path = f"spec.{key}.{index}.node_type"
    slug = item.get("node_type", item.get("accelerator") if "tokens_per_day" in item else None)
    if slug is None:
        listed = ", ".join(p.accelerator for p in parts)
        raise InputError(f"is required in a plan of several node types: one of {listed}", field=path)
    return _type_index(parts, slug, path, "it runs")


def _place(parts: list[_Part], key: str, index: int, item: dict[str, Any], t: int) -> int:
    """Put the item (without node_type) in type t's spec; its index there."""
    part = parts[t]
    part.spec[key].append({k: v for k, v in item.items() if k != "node_type"})
    part.origin[key].append(index)
    return len(part.spec[key]) - 1


def _place_run(parts: list[_Part], item: dict[str, Any], index: int, ctx: Any, couplings: list[Any]) -> None:
    """A training item into its type: a mixed RL fleet without ``pool`` (a saved design's or inline) as its
    two pools, each in its part's type, coupled; a design by its cluster's accelerator; else ``node_type``."""
    path = f"spec.training.{index}."
    pools = _mixed_pools(item, path, ctx)
    if pools is not None and item.get("pool") is None and "node_type" not in item:
        placed = []
        for pool, slug in pools.items():
            t = _type_index(
                parts,
                slug,
                f"{path}design_id" if "design_id" in item else f"{path}rl",
                f"its {pool} pool runs",
            )
            named = {"name": f"{item['name']} ({pool} pool)"} if item.get("name") else {}
            placed.append((t, _place(parts, "training", index, {**item, "pool": pool, **named}, t)))
        name = item.get("name") or (_version(item, path, ctx).name if "design_id" in item else "RL run")
        couplings.append((f"{name}: trainer and rollout pools", placed))
        return
    if "node_type" in item:
        t = _named_type(parts, "training", index, item)
    elif pools is not None:  # one pool of a mixed fleet, named
        chosen = str(item.get("pool"))
        if chosen not in pools:
            raise InputError(f"must be one of {', '.join(pools)}", field=f"{path}pool")
        t = _type_index(parts, pools[chosen], f"{path}pool", f"the {chosen} pool runs")
    elif "design_id" in item:
        version = _version(item, path, ctx)
        slug = version.spec["cluster"]["accelerator"]
        t = _type_index(parts, slug, f"{path}design_id", f"design {version.name!r} runs")
    elif "rl" in item:
        found = _inline_accelerators(item)
        t = 0 if found is None else _type_index(parts, found["trainer"], f"{path}rl", "the RL run runs")
    else:
        t = _named_type(parts, "training", index, item)
    _place(parts, "training", index, item, t)


def _version(item: dict[str, Any], path: str, ctx: Any) -> Any:
    """The saved design the item names, as a one-type plan reads it (services._visible_version)."""
    from apps.plans.services import _visible_version  # services imports this module

    return _visible_version(item=item, path=path, ctx=ctx)


def _mixed_pools(item: dict[str, Any], path: str, ctx: Any) -> dict[str, str] | None:
    """A mixed RL fleet's parts by pool ({"trainer": ..., "rollout": ...}), or None for any other item."""
    if "design_id" in item:
        version = _version(item, path, ctx)
        rollout = (version.spec.get("rl") or {}).get("rollout")
        if rollout is None:
            return None
        trainer = version.spec["cluster"]["accelerator"]
        return {"trainer": trainer, "rollout": rollout.get("accelerator") or trainer}
    if "rl" in item:
        found = _inline_accelerators(item)
        return found if found is not None and "rollout" in found else None
    return None


def _inline_accelerators(item: dict[str, Any]) -> dict[str, str] | None:
    """An inline RL run's parts, as the one-type resolver will parse its block (the design spec's defaults
    filled): its cluster's accelerator, and its rollout pool's when it has one; None when the block does not
    parse (its own error is then reported where it was sent, by the type it is put in)."""
    from clusterdesigner.engine.core.spec_rules import SpecError
    from clusterdesigner.engine.design import spec as design_spec

    section = item.get("rl")
    if not isinstance(section, dict):
        return None
    try:
        parsed = design_spec.parse_design_spec(design_spec.with_defaults(section))
    except SpecError:
        return None
    trainer = str(parsed.json["cluster"]["accelerator"])
    rollout = (parsed.rl or {}).get("rollout")
    if rollout is None:
        return {"trainer": trainer}
    return {"trainer": trainer, "rollout": str(rollout.get("accelerator") or trainer)}


_INDEXED = re.compile(r"^spec\.(training|inference|baseline)\.(\d+)(.*)$")


def _field(path: str, t: int, part: _Part) -> str:
    """A field of type t's sub-spec as the field of the spec sent: its workload items by their index there,
    its supply and node size under node_types.<t>."""
    found = _INDEXED.match(path)
    if found:
        key, j, rest = found.group(1), int(found.group(2)), found.group(3)
        origin = part.origin[key]
        return f"spec.{key}.{origin[j] if j < len(origin) else j}{rest}"
    for key in PER_TYPE:
        if path == f"spec.{key}" or path.startswith(f"spec.{key}."):
            return f"spec.node_types.{t}.{path.removeprefix('spec.')}"
    return path if path != "spec" else f"spec.node_types.{t}"
