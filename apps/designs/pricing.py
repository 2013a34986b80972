"""The one place prices are composed (issue #35), for every consumer: a design's evaluation, the capacity
plan, sweeps, compare, recommend and the serving planner. Each asks :func:`prices_resolve` (a design-shaped
spec) or :func:`offerings_priced` (an accelerator's offerings and owning inputs) with the owner whose book
applies: the design's, the plan's or the analysis's (its team's when it is a team's, else its user's own),
never the user who happens to ask or the worker that runs it. The order is apps.pricebook.resolve's: the value
given → the owner's price book, newest unexpired entry → the public catalog; every figure says which, with its
entry's date. A new price source is added here (and in apps.pricebook.resolve), and every consumer has it."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import connection

from apps.catalog.selectors import price_freshness
from apps.measurements.selectors import CalibrationKey, calibration_holder_sql, calibration_key_of_row
from apps.pricebook.models import PriceEntry
from apps.pricebook.resolve import Resolution, book_entries, resolve_prices
from apps.teams import access
from clusterdesigner import prepared
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.site import cooling_used, cost_inputs, input_source, parse_site


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
    priced with an older book. The switch is apps.measurements.selectors.calibration_key_of_design's (the
    team's for a team's design, else its maker's). Plain SQL: the ORM built the aggregate, and then the
    switch's query, anew each time (each about a fifth of the request's CPU, bench/load_profile.py
    --profile design-evaluate)."""
    if owner.team_id:
        where, book_params = "team_id = %s", [owner.team_id]
    else:
        where, book_params = "owner_id = %s AND team_id IS NULL", [owner.owner_id]
    holder_sql = calibration_holder_sql(team=owner.team_id is not None)
    holder_id = owner.team_id if owner.team_id is not None else owner.owner_id
    sql = (
        f"SELECT b.n, b.latest, h.* FROM (SELECT COUNT(*) AS n, MAX(updated_at) AS latest FROM {_ENTRIES}"
        f" WHERE {where}) b LEFT OUTER JOIN ({holder_sql}) h ON TRUE"
    )
    with connection.cursor() as cursor:
        # Prepared once per connection: planning it was most of the server's work (clusterdesigner.prepared).
        name = "designs_stamps_team" if owner.team_id else "designs_stamps_personal"
        prepared.execute(cursor, name, sql, [*book_params, holder_id])
        count, newest, *holder = cursor.fetchone()
    # No holder row: the LEFT JOIN's NULLs, as the ORM's .first() answered None.
    row = None if holder[0] is None else tuple(holder)
    calibration = calibration_key_of_row(owner_id=owner.owner_id, team_id=owner.team_id, row=row)
    return (owner.owner_id, owner.team_id, count, newest), calibration


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
