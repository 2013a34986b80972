"""Who uses a catalog row: the saved designs, capacity plans and unfinished sweeps whose JSON names its slug,
and the engine's defaults. A row in use cannot be deleted (the API and the admin answer 409 naming the
users); it is retired instead: hidden from pickers, still there for what uses it.

Designs, plans and analyses store catalog rows by slug inside JSON (a spec, a sweep's params), not as foreign
keys, so the database cannot protect them: deleting ``ib-ndr400`` turned every design on it into 400
"unknown fabric". This module reads those JSON documents. It lives in the project package because the
catalog app may not import the apps that refer to it (tests/test_app_boundaries.py); it reaches their
models through the app registry.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.apps import apps

from clusterdesigner.engine.cost import defaults

# The JSON keys that name a row of each kind: a single slug, or a list of slugs.
SLUG_KEYS = {
    "accelerator": ("accelerator",),
    "fabric": ("fabric",),
    "storage_tier": ("storage",),
    "cloud_offering": ("offering",),
    "server_type": ("server_type",),
}
LIST_KEYS = {"accelerator": ("accelerators",)}
# A sweep's ``offerings`` maps accelerator slug -> offering slug.
MAP_KEYS = {"accelerator": ("offerings", "keys"), "cloud_offering": ("offerings", "values")}
SHOWN = 5  # users named in a message; the rest are counted


@dataclass(frozen=True)
class Row:
    """A catalog row as the finder sees it: its kind, slug and, for a server type, the accelerator and node
    size whose owning option prices it."""

    kind: str
    slug: str
    accelerator: str = ""
    gpus_per_node: int = 0


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every JSON object inside ``node``, depth first (iteratively: stored specs are bounded, but a stack
    keeps a pathological one from recursing)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _names(document: Any, row: Row) -> bool:
    """Whether a JSON document uses ``row``: names its slug under one of its kind's keys or, for a server
    type, describes a cluster of its accelerator and GPUs per node (owning that cluster buys this server)."""
    for obj in _walk(document):
        for key in SLUG_KEYS.get(row.kind, ()):
            if obj.get(key) == row.slug:
                return True
        for key in LIST_KEYS.get(row.kind, ()):
            value = obj.get(key)
            if isinstance(value, list) and row.slug in value:
                return True
        if row.kind in MAP_KEYS:
            key, side = MAP_KEYS[row.kind]
            value = obj.get(key)
            if isinstance(value, dict) and row.slug in (value.keys() if side == "keys" else value.values()):
                return True
        if row.kind == "server_type" and row.accelerator:
            gpus = obj.get("gpus_per_node", defaults.GPUS_PER_NODE.value)
            if obj.get("accelerator") == row.accelerator and gpus == row.gpus_per_node:
                return True
            listed = obj.get("accelerators")
            if isinstance(listed, list) and row.accelerator in listed and gpus == row.gpus_per_node:
                return True
    return False


def _default_users(row: Row) -> list[str]:
    named = {
        "accelerator": {defaults.ACCELERATOR.value, *defaults.SWEEP_ACCELERATORS},
        "fabric": {defaults.FABRIC.value},
        "storage_tier": {defaults.STORAGE.value},
        "cloud_offering": {defaults.CLOUD_OFFERING.value},
    }.get(row.kind, set())
    if row.slug in named:
        return [f"the default {row.kind.replace('_', ' ')}"]
    if row.kind == "server_type" and row.accelerator == defaults.ACCELERATOR.value:
        if row.gpus_per_node == defaults.GPUS_PER_NODE.value:
            return [f"the default accelerator {defaults.ACCELERATOR.value}"]
    return []


def users(row: Row) -> list[str]:
    """Who uses ``row``, each as a short label ("design 12 “GPT-3 on H100”", "capacity plan 3 “2027”",
    "sweep 41 (running)", "the default fabric"), designs first; every version of a design or plan counts,
    since any stored version can be evaluated again."""
    found: list[str] = []
    DesignVersion = apps.get_model("designs", "DesignVersion")
    seen: set[int] = set()
    for design_id, name, spec in DesignVersion.objects.values_list("design_id", "design__name", "spec"):
        if design_id not in seen and _names(spec, row):
            seen.add(design_id)
            found.append(f"design {design_id} “{name}”")
    PlanVersion = apps.get_model("plans", "PlanVersion")
    seen = set()
    for plan_id, name, spec in PlanVersion.objects.values_list("plan_id", "plan__name", "spec"):
        if plan_id not in seen and _names(spec, row):
            seen.add(plan_id)
            found.append(f"capacity plan {plan_id} “{name}”")
    Analysis = apps.get_model("analysis", "Analysis")
    unfinished = Analysis.objects.filter(status__in=("pending", "running"))
    for analysis_id, kind, status, params, spec in unfinished.values_list(
        "id", "kind", "status", "params", "design_version__spec"
    ):
        if _names(params, row) or _names(spec, row):
            found.append(f"{kind} {analysis_id} ({status})")
    return found + _default_users(row)


def in_use_message(row: Row, found: list[str]) -> str:
    """The 409's message: who uses the row (the first few, then a count) and what to do instead."""
    shown = ", ".join(found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return (
        f"{row.kind.replace('_', ' ')} {row.slug} is used by {shown}{more}; retire it instead "
        f"(retired: true hides it from pickers and keeps it for what uses it)"
    )
