"""Price book writes: every entry checked by its kind's rule (the target fields it needs, the ones that do
not apply, its value's range as the cost engine reads it, and the catalog rows it names), so a saved entry is
one a design can resolve through. Errors name the field; nothing is saved from a refused request."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from apps.catalog.selectors import engine_catalog_snapshot
from apps.pricebook.files import file_rows
from apps.pricebook.models import PriceEntry
from apps.pricebook.serializers import PriceEntrySerializer
from apps.teams.params import team_writable
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.offerings import COMMITMENT_YEARS
from clusterdesigner.engine.cost.cost_request import check_input
from clusterdesigner.errors import InvalidInput, flatten_fields

Kind = PriceEntry.Kind

# The target and terms fields, and which of them each kind takes (required ones first).
TARGETS = (
    "accelerator",
    "gpus_per_node",
    "provider",
    "offering",
    "pricing_model",
    "network_included",
    "support_years",
    "colocation_basis",
    "network_item",
    "switch_model",
    "region",
    "duration_hours",
    "block_nodes",
)
# The target fields stored as NULL when left out (the others are text, stored empty).
NULLABLE = frozenset({"gpus_per_node", "network_included", "support_years", "duration_hours", "block_nodes"})
REQUIRED: Mapping[str, tuple[str, ...]] = {
    Kind.SERVER_QUOTE: ("accelerator", "gpus_per_node"),
    Kind.CLOUD_DISCOUNT: (),
    Kind.PRIVATE_RATE: ("offering", "pricing_model"),
    Kind.POWER: (),
    Kind.COLOCATION: (),
    Kind.NETWORK_QUOTE: ("network_item",),
    Kind.STORAGE_QUOTE: (),
    Kind.CAPACITY_BLOCK: ("offering", "duration_hours", "block_nodes"),
    Kind.COMMITTED_RATE: ("offering", "pricing_model"),
    Kind.ENTERPRISE_DISCOUNT: (),
    Kind.QUOTA: ("offering",),
    Kind.STAFF_COST: (),
}
ALLOWED: Mapping[str, frozenset[str]] = {
    Kind.SERVER_QUOTE: frozenset({"accelerator", "gpus_per_node", "network_included", "support_years"}),
    Kind.CLOUD_DISCOUNT: frozenset({"provider", "offering", "pricing_model"}),
    Kind.PRIVATE_RATE: frozenset({"offering", "pricing_model"}),
    Kind.POWER: frozenset(),
    Kind.COLOCATION: frozenset({"colocation_basis"}),
    Kind.NETWORK_QUOTE: frozenset({"network_item", "switch_model"}),
    Kind.STORAGE_QUOTE: frozenset(),
    Kind.CAPACITY_BLOCK: frozenset({"offering", "pricing_model", "duration_hours", "block_nodes"}),
    Kind.COMMITTED_RATE: frozenset({"offering", "pricing_model"}),
    Kind.ENTERPRISE_DISCOUNT: frozenset(),
    Kind.QUOTA: frozenset({"offering", "region", "pricing_model"}),
    Kind.STAFF_COST: frozenset(),
}
# A network quote's line, as the cost engine's input it stands for.
NETWORK_INPUT: Mapping[str, str] = {
    PriceEntry.NetworkItem.SWITCH: "network.switch_usd",
    PriceEntry.NetworkItem.CABLE: "network.cable_usd",
    PriceEntry.NetworkItem.TRANSCEIVER: "network.transceiver_usd",
    PriceEntry.NetworkItem.LUMP_SUM: "network.capex_usd",
}
# The longest capacity block taken (AWS EC2 Capacity Blocks for ML run 1 to 182 days; a year is ample).
MAX_BLOCK_HOURS = 8_760.0
# The cost engine's input each kind's value stands for: its range is the engine's (bounds.COST).
ENGINE_INPUT: Mapping[str, str] = {
    Kind.SERVER_QUOTE: "on_prem.server_usd",
    Kind.PRIVATE_RATE: "cloud.usd_per_node_hour.on_demand",
    Kind.POWER: "on_prem.usd_per_kwh",
    Kind.COLOCATION: "on_prem.colo_usd_per_kw_month",
    Kind.STORAGE_QUOTE: "on_prem.storage_usd_per_tb",
    Kind.STAFF_COST: "on_prem.staff_usd_per_fte_year",
}
DISCOUNTS = frozenset({Kind.CLOUD_DISCOUNT, Kind.ENTERPRISE_DISCOUNT})


def _given(data: Mapping[str, Any], name: str) -> bool:
    return data.get(name) not in (None, "")


def _kind_errors(data: dict[str, Any]) -> dict[str, list[str]]:
    """The kind's rule: required targets present, others absent, the value in range."""
    kind = data["kind"]
    label = Kind(kind).label.lower()
    errors: dict[str, list[str]] = {}
    for name in REQUIRED[kind]:
        if not _given(data, name):
            errors[name] = [f"a {label} needs this field"]
    for name in TARGETS:
        if _given(data, name) and name not in ALLOWED[kind]:
            errors[name] = [f"does not apply to a {label}"]
    if kind == Kind.CLOUD_DISCOUNT and _given(data, "provider") == _given(data, "offering"):
        errors["offering"] = ["a cloud discount names either a provider or an offering (one of the two)"]
    errors.update(_terms_errors(data))
    if "value" not in errors:
        errors.update(_value_errors(data))
    if data.get("expires_on") and data["expires_on"] < data["valid_from"]:
        errors["expires_on"] = ["must be on or after valid_from"]
    return errors


def _terms_errors(data: Mapping[str, Any]) -> dict[str, list[str]]:
    """The terms a kind's target fields must meet beyond being given: a switch line names its switch, a
    committed rate a commitment, a capacity block a duration and a size the engine can price."""
    kind, errors = data["kind"], {}
    if kind == Kind.NETWORK_QUOTE:
        switch = data.get("network_item") == PriceEntry.NetworkItem.SWITCH
        if switch != _given(data, "switch_model"):
            errors["switch_model"] = [
                "a switch line needs the switch's model" if switch else "only a switch line names a model"
            ]
    if kind == Kind.COMMITTED_RATE and data.get("pricing_model") not in COMMITMENT_YEARS:
        errors["pricing_model"] = [f"a committed-use rate is one of {', '.join(COMMITMENT_YEARS)}"]
    if kind == Kind.CAPACITY_BLOCK:
        hours = data.get("duration_hours")
        if hours is not None and not 0 < hours <= MAX_BLOCK_HOURS:
            errors["duration_hours"] = [f"must be above 0 and at most {MAX_BLOCK_HOURS:g}, got {hours:g}"]
        if data.get("block_nodes") == 0:
            errors["block_nodes"] = ["a block holds at least 1 node"]
    return errors


def _value_errors(data: Mapping[str, Any]) -> dict[str, list[str]]:
    """The value in range, as the cost engine reads the input it stands for."""
    kind, value = data["kind"], data["value"]
    model = data.get("pricing_model") or "on_demand"
    if kind in DISCOUNTS:
        if not 0 < value < 1:
            return {
                "value": [f"a discount is a fraction above 0 and below 1 (0.2 is 20 % off), got {value:g}"]
            }
        return {}
    if kind != Kind.QUOTA and value <= 0:
        return {"value": [f"must be above 0, got {value:g}"]}
    if kind == Kind.QUOTA:
        path, checked = f"cloud.capacity_nodes.{model}", value
    elif kind in (Kind.PRIVATE_RATE, Kind.COMMITTED_RATE):
        path, checked = f"cloud.usd_per_node_hour.{model}", value
    elif kind == Kind.CAPACITY_BLOCK:
        if not data.get("duration_hours") or not data.get("block_nodes"):
            return {}  # the missing size is named
        path, checked = (
            f"cloud.usd_per_node_hour.{model}",
            value / data["duration_hours"] / data["block_nodes"],
        )
    elif kind == Kind.NETWORK_QUOTE:
        if data.get("network_item") not in NETWORK_INPUT:
            return {}
        path, checked = NETWORK_INPUT[data["network_item"]], value
    else:
        path, checked = ENGINE_INPUT[kind], value
    try:
        check_input(path, checked)
    except EngineError as exc:
        return {"value": [exc.message if checked is value else f"{checked:g} USD/node-hour: {exc.message}"]}
    return {}


def _catalog_errors(data: dict[str, Any]) -> dict[str, list[str]]:
    """The catalog rows the entry names exist (never a price for a row the catalog does not know)."""
    specs = engine_catalog_snapshot().specs
    errors: dict[str, list[str]] = {}
    if _given(data, "accelerator") and data["accelerator"] not in specs.accelerators:
        errors["accelerator"] = [f"unknown accelerator {data['accelerator']!r}"]
    if _given(data, "offering") and data["offering"] not in specs.offerings:
        errors["offering"] = [f"unknown cloud offering {data['offering']!r}"]
    if _given(data, "switch_model") and data["switch_model"] not in specs.switches:
        known = ", ".join(sorted(specs.switches)) or "none"
        errors["switch_model"] = [f"unknown switch {data['switch_model']!r}; known: {known}"]
    offering = specs.offerings.get(data.get("offering") or "")
    if _given(data, "region") and offering is not None and data["region"] != offering.region:
        errors["region"] = [f"{offering.slug} is offered in {offering.region!r}, not {data['region']!r}"]
    providers = {o.provider for o in specs.offerings.values()}
    if _given(data, "provider") and data["provider"] not in providers:
        known = ", ".join(sorted(providers)) or "none"
        errors["provider"] = [f"unknown provider {data['provider']!r}; known: {known}"]
    return errors


def price_entry_clean(*, data: Any, entry: PriceEntry | None = None) -> dict[str, Any]:
    """The entry's fields checked (types by the serializer, then the kind's rule and the catalog); for a
    change, the fields not sent keep their value. InvalidInput names every refused field."""
    form = PriceEntrySerializer(instance=entry, data=data, partial=entry is not None)
    if not form.is_valid():
        raise InvalidInput(flatten_fields(form.errors))
    clean = dict(form.validated_data)
    if entry is not None:
        if "team_id" in clean and clean["team_id"] != entry.team_id:
            raise InvalidInput({"team": ["an entry's team is set when it is made; make a new entry instead"]})
        stored = {f: getattr(entry, f) for f in (*TARGETS, "kind", "value", "valid_from", "expires_on")}
        clean = {**stored, **clean}
    if clean["kind"] == Kind.COLOCATION and not _given(clean, "colocation_basis"):
        clean["colocation_basis"] = "contracted_kw"
    if clean["kind"] in (Kind.CLOUD_DISCOUNT, Kind.CAPACITY_BLOCK) and not _given(clean, "pricing_model"):
        clean["pricing_model"] = "on_demand"  # a discount off on-demand unless it names another model
    errors = _kind_errors(clean) or _catalog_errors(clean)
    if errors:
        raise InvalidInput(errors)
    for name in TARGETS:  # the fields a kind does not take are stored empty
        if not _given(clean, name):
            clean[name] = None if name in NULLABLE else ""
    if clean["kind"] == Kind.QUOTA:
        clean["value"] = float(int(clean["value"]))  # nodes: a whole number (checked above)
    return clean


@transaction.atomic
def price_entry_create(*, user: Any, data: Any) -> PriceEntry:
    clean = price_entry_clean(data=data)
    team_id = team_writable(user=user, team_id=clean.pop("team_id", None))
    return PriceEntry.objects.create(owner=user, team_id=team_id, entered_by=user, **clean)


@transaction.atomic
def price_entry_update(*, entry: PriceEntry, data: Any) -> PriceEntry:
    clean = price_entry_clean(data=data, entry=entry)
    clean.pop("team_id", None)
    for name, value in clean.items():
        setattr(entry, name, value)
    entry.save()
    return entry


@transaction.atomic
def price_entry_expire(*, entry: PriceEntry, today: dt.date) -> PriceEntry:
    """End an entry's validity yesterday (an entry is valid through its expiry date), so that from today no
    design uses it and those that did are stale. One that starts today or later cannot have ended: delete
    it instead (400 naming expires_on)."""
    yesterday = today - dt.timedelta(days=1)
    if entry.valid_from > yesterday:
        raise InvalidInput(
            {
                "expires_on": [
                    f"the entry starts {entry.valid_from}, so it cannot have expired; delete it instead"
                ]
            }
        )
    if entry.expires_on is None or entry.expires_on > yesterday:
        entry.expires_on = yesterday
        entry.save(update_fields=["expires_on", "updated_at"])
    return entry


def price_entry_delete(*, entry: PriceEntry) -> None:
    entry.delete()


@transaction.atomic
def price_entry_import(*, user: Any, content: str | bytes, team: int | None = None) -> list[PriceEntry]:
    """Every row of a CSV (text) or XLSX (bytes) book checked as an entry made through the API; if any is
    refused, nothing is saved and each refused cell is named ``line N.<column>`` in a CSV (N the file's line,
    the header being line 1) or ``row N.<column>`` in a workbook (N the sheet's row)."""
    team_id = team_writable(user=user, team_id=team)
    rows = file_rows(content)
    if not rows:
        raise InvalidInput({"file": ["no rows to import"]})
    errors: dict[str, list[str]] = {}
    clean_rows = []
    for where, cells in rows:
        try:
            clean_rows.append(price_entry_clean(data=cells))
        except InvalidInput as exc:
            errors.update({f"{where}.{field}": messages for field, messages in exc.fields.items()})
    if errors:
        raise InvalidInput(errors)
    made = [PriceEntry(owner=user, team_id=team_id, entered_by=user, **clean) for clean in clean_rows]
    return PriceEntry.objects.bulk_create(made)
