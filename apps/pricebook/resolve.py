"""The one resolution of a design's prices (issue #35): for each figure the price book can hold, in this
order, the explicit value on the design (its costs, or its site's power and colocation) → the owner's price
book (the team's when the design is a team's, else the user's own), newest unexpired entry → the public
catalog (the cost engine's own resolution, with its source).

The book's figures are written into the spec the cost engine reads, as if typed on the design, and every
figure's origin is returned as an assumption row (``prices.*``) for the evaluation's answer. An expired entry
is never used; when it is newer than what is used instead, a warning names it. What a design resolves to is
part of its evaluation's key (apps.designs.services), so no owner sees a result priced with another's book.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Case, F, Q, Value, When, Window
from django.db.models.functions import RowNumber

from apps.pricebook.models import PriceEntry
from apps.pricebook.services import TARGETS
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.offerings import COMMITMENT_YEARS, CloudOfferingSpec
from clusterdesigner.engine.cost.cost_request import switch_slug
from clusterdesigner.memo import snapshot_hash

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
    cluster = spec["cluster"]
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
