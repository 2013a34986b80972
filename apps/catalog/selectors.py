"""Catalog reads, including the specs the engines take."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Prefetch, QuerySet
from django.utils import timezone

from apps.catalog.models import (
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    RentalPricePoint,
    ResidualValuePoint,
    ServerType,
    StorageTier,
    Switch,
    Vendor,
)
from clusterdesigner import prepared
from clusterdesigner.engine.core.catalog import CatalogSpecs, specs_from_records
from clusterdesigner.engine.core.offerings import Freshness


def price_freshness() -> Freshness:
    """Today (in the site's time zone) and PRICE_STALE_AFTER_DAYS: what the engines and pages call stale."""
    return Freshness(today=timezone.localdate(), stale_after_days=settings.PRICE_STALE_AFTER_DAYS)


def accelerator_list() -> QuerySet[Accelerator]:
    return Accelerator.objects.select_related("vendor")


def cloud_offering_list() -> QuerySet[CloudOffering]:
    return CloudOffering.objects.select_related("accelerator").prefetch_related(
        Prefetch("prices", queryset=CloudPrice.objects.order_by("pricing_model", "-as_of"))
    )


def cloud_price_list() -> QuerySet[CloudPrice]:
    return CloudPrice.objects.select_related("offering", "offering__accelerator")


def residual_value_list() -> QuerySet[ResidualValuePoint]:
    return ResidualValuePoint.objects.select_related("accelerator")


def rental_price_history() -> QuerySet[RentalPricePoint]:
    return RentalPricePoint.objects.select_related("accelerator")


def _build_records() -> dict[str, list[dict[str, Any]]]:
    return {
        "accelerators": [a.engine_record() for a in accelerator_list()],
        "fabrics": [
            {
                f: getattr(x, f)
                for f in ("slug", "name", "kind", "port_gbps", "latency_us", "collective_efficiency")
            }
            for x in Fabric.objects.all()
        ],
        "cloud_offerings": [o.engine_record(list(o.prices.all())) for o in cloud_offering_list()],
        "storage_tiers": [
            {
                f: getattr(x, f)
                for f in ("slug", "name", "kind", "read_gbps", "write_gbps", "scope", "usd_per_tb_month")
            }
            for x in StorageTier.objects.all()
        ],
        "switches": [
            {f: getattr(x, f) for f in ("slug", "name", "ports", "port_gbps", "price_usd", "power_w")}
            for x in Switch.objects.all()
        ],
        "server_types": [
            {
                f: getattr(x, f)
                for f in (
                    "slug",
                    "name",
                    "gpus_per_node",
                    "nics_per_node",
                    "nic_gbps",
                    "node_power_kw",
                    "price_usd",
                )
            }
            | {"accelerator": x.accelerator.slug, "as_of": x.as_of.isoformat() if x.as_of else None}
            for x in ServerType.objects.select_related("accelerator")
        ],
        # Sourced residual-value series (resale as a fraction of the price new, by age): the design
        # evaluation reads the design's accelerator's series for the resale at the horizon's end.
        "residual_values": [
            {f: getattr(x, f) for f in ("series", "age_years", "fraction_of_new", "source")}
            | {"accelerator": x.accelerator.slug if x.accelerator else None, "as_of": _iso(x.as_of)}
            for x in ResidualValuePoint.objects.select_related("accelerator")
        ],
    }


def _iso(day: Any) -> str | None:
    return day.isoformat() if day else None


CATALOG_MODELS = (Vendor, Accelerator, ServerType, Fabric, Switch, StorageTier, CloudOffering, CloudPrice)


@dataclass(frozen=True)
class CatalogSnapshot:
    """The catalog as the engines use it: plain records (stored beside results), their hash, and specs.

    Shared between requests: treat ``records`` as read-only.
    """

    version: str
    records: dict[str, list[dict[str, Any]]]
    digest: str
    specs: CatalogSpecs
    # The retired accelerators' slugs, read with the records (pickers hide them): not in ``records``, which
    # results store, since retiring a part changes no figure.
    retired_accelerators: frozenset[str] = frozenset()


_snapshot_lock = threading.Lock()
_snapshot: CatalogSnapshot | None = None


def catalog_version() -> str:
    """Row count and latest change of every catalog table: any save, insert or delete changes it.

    One round trip (a UNION ALL of per-table aggregates). A QuerySet.update() skips auto_now and so would
    not change it; the catalog's writers all save rows. Every API request that reads the catalog runs it, so
    the latest change comes back as the database's text for it (the same instant, to the microsecond), not
    as a datetime each driver call would parse, the SQL is built once per process, and on PostgreSQL it is
    a prepared statement of the connection (clusterdesigner.prepared).
    """
    from django.db import connection

    with connection.cursor() as cursor:
        rows = _catalog_version_rows(connection, cursor)
    return "|".join(f"{count}@{latest}" for count, latest in rows)


# PostgreSQL plans the eight-table UNION on every execution, which costs about three times running it
# (measured: 210-350 us of the server's CPU a call, 70 us prepared): a prepared statement of each connection.
_PREPARED = "clusterdesigner_catalog_version"


def _catalog_version_rows(connection: Any, cursor: Any) -> list[tuple[Any, ...]]:
    prepared.execute(cursor, _PREPARED, _catalog_version_sql(connection.vendor))
    return list(cursor.fetchall())


@functools.cache
def _catalog_version_sql(vendor: str) -> str:
    """catalog_version's SQL for this database vendor (the cache key: the quoting is the vendor's)."""
    # A UNION ALL's rows come in no promised order (PostgreSQL returned a prepared statement's and the plain
    # query's in different orders under CI), so the tables are put in a fixed order: the text must not change
    # while the catalog does not.
    return f"SELECT n, latest FROM ({_per_table_sql()}) AS per_table ORDER BY i"


def _per_table_sql() -> str:
    """Each catalog table's position (i), row count (n) and latest change as text (latest), UNION ALL'ed."""
    from django.db import connection

    tables = (connection.ops.quote_name(model._meta.db_table) for model in CATALOG_MODELS)
    return " UNION ALL ".join(
        f"SELECT {i} AS i, COUNT(*) AS n, CAST(MAX(updated_at) AS TEXT) AS latest FROM {t}"
        for i, t in enumerate(tables)
    )


@functools.cache
def catalog_version_column_sql() -> str:
    """PostgreSQL only: a scalar subquery whose value is catalog_version()'s text, for a caller that reads it
    in the same statement as its own columns (apps.designs.pricing.evaluation_stamps_and_catalog: a round
    trip fewer a request). The same text, character for character: the count as an integer's digits, the
    latest change as the database's text for it, or None for an empty table (Python's str of the NULL), in
    table order."""
    return (
        "(SELECT string_agg(n::text || '@' || COALESCE(latest, 'None'), '|' ORDER BY i)"
        f" FROM ({_per_table_sql()}) AS per_table)"
    )


@contextmanager
def _one_read() -> Iterator[None]:
    """Every query inside sees the same committed catalog: on PostgreSQL one REPEATABLE READ, read-only
    transaction, whose snapshot is taken at its first query, so rows created, renamed or deleted meanwhile
    (an offering naming an accelerator the accelerators' query did not see) never mix into one snapshot.
    Inside a caller's transaction (a test's, say) its isolation is the caller's."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def engine_catalog_snapshot(version: str | None = None) -> CatalogSnapshot:
    """The current catalog snapshot, rebuilt only when the catalog changed (one cheap query per table). A
    rebuild reads every table, and the version it is labelled with, in one consistent read (_one_read).
    ``version``: catalog_version()'s text when the caller has just read it (in a statement of its own, see
    catalog_version_column_sql), so that it is not read twice."""
    global _snapshot
    version = version if version is not None else catalog_version()
    current = _snapshot
    if current is not None and current.version == version:
        return current
    with _snapshot_lock, _one_read():
        version = catalog_version()  # the version of exactly the rows read below
        current = _snapshot
        if current is not None and current.version == version:
            return current  # another thread rebuilt it while this one waited
        records = _build_records()
        digest = hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()
        retired = frozenset(Accelerator.objects.filter(retired=True).values_list("slug", flat=True))
        _snapshot = CatalogSnapshot(version, records, digest, specs_from_records(records), retired)
        return _snapshot


def engine_catalog_records() -> dict[str, list[dict[str, Any]]]:
    """Every catalog row the engines may use, as plain records (also stored as a result's input snapshot)."""
    return engine_catalog_snapshot().records


def engine_catalog() -> CatalogSpecs:
    """The current catalog as engine specs."""
    return engine_catalog_snapshot().specs


@dataclass(frozen=True)
class PricePoint:
    """A price shown on the accelerator page: what it is, per GPU, from which row, and whether it is stale."""

    label: str
    usd: float
    usd_per_gpu: float
    as_of: Any
    what: str
    stale: bool


@dataclass(frozen=True)
class AcceleratorPrices:
    """Per accelerator: the freshest cloud price per pricing model, and the owning price."""

    cloud: dict[str, PricePoint]
    owning: PricePoint | None


def accelerator_price_summary(
    *, accelerators: Iterable[Accelerator], freshness: Freshness
) -> dict[str, AcceleratorPrices]:
    """For each accelerator: per pricing model its freshest cloud price (the latest as-of; of several on that
    date, the lowest per GPU-hour), with the offering and region it is for; and its owning price, a server
    type's price (the freshest priced server type of that accelerator) or else the accelerator's list price.
    Each says whether it is stale under ``freshness``."""
    slugs = [a.slug for a in accelerators]
    best: dict[tuple[str, str], CloudPrice] = {}
    for price in cloud_price_list().filter(offering__accelerator__slug__in=slugs):
        key = (price.offering.accelerator.slug, price.pricing_model)
        held = best.get(key)
        if held is None or (price.as_of, -price.usd_per_gpu_hour) > (held.as_of, -held.usd_per_gpu_hour):
            best[key] = price
    # by accelerator id: the server, its price and its price a GPU
    servers: dict[int, tuple[ServerType, float, float]] = {}
    for server in ServerType.objects.filter(accelerator__slug__in=slugs, price_usd__isnull=False):
        if server.price_usd is None:  # not selected (price_usd__isnull=False); the check narrows the type
            continue
        per_gpu = server.price_usd / server.gpus_per_node
        held_server = servers.get(server.accelerator_id)
        if held_server is None or (server.as_of, -per_gpu) > (held_server[0].as_of, -held_server[2]):
            servers[server.accelerator_id] = (server, server.price_usd, per_gpu)
    summary: dict[str, AcceleratorPrices] = {}
    for accelerator in accelerators:
        cloud = {}
        for model, label in CloudPrice.PricingModel.choices:
            chosen = best.get((accelerator.slug, model))
            if chosen is not None:
                region = chosen.region or chosen.offering.region
                cloud[model] = PricePoint(
                    label=str(label),
                    usd=chosen.usd_per_hour,
                    usd_per_gpu=chosen.usd_per_gpu_hour,
                    as_of=chosen.as_of,
                    what=f"{chosen.offering}" + (f", {region}" if region else ""),
                    stale=freshness.is_stale(chosen.as_of.isoformat()),
                )
        priced = servers.get(accelerator.pk)
        owning: PricePoint | None = None
        if priced is not None:
            server, server_usd, per_gpu = priced
            owning = PricePoint(
                label="server",
                usd=server_usd,
                usd_per_gpu=per_gpu,
                as_of=server.as_of,
                what=server.name,
                stale=freshness.is_stale(server.as_of.isoformat()),
            )
        elif accelerator.list_price_usd:
            owning = PricePoint(
                label="list price",
                usd=accelerator.list_price_usd,
                usd_per_gpu=accelerator.list_price_usd,
                as_of=accelerator.as_of,
                what="list price per GPU",
                stale=freshness.is_stale(accelerator.as_of.isoformat()),
            )
        summary[accelerator.slug] = AcceleratorPrices(cloud=cloud, owning=owning)
    return summary
