"""Catalog reads, including the specs the engines take."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from typing import Any

from django.db.models import Prefetch, QuerySet

from apps.catalog.models import (
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    ServerType,
    StorageTier,
    Switch,
    Vendor,
)
from clusterdesigner.engine.catalog import CatalogSpecs, specs_from_records


def accelerator_list() -> QuerySet[Accelerator]:
    return Accelerator.objects.select_related("vendor")


def cloud_offering_list() -> QuerySet[CloudOffering]:
    return CloudOffering.objects.select_related("accelerator").prefetch_related(
        Prefetch("prices", queryset=CloudPrice.objects.order_by("pricing_model", "-as_of"))
    )


def cloud_price_list() -> QuerySet[CloudPrice]:
    return CloudPrice.objects.select_related("offering", "offering__accelerator")


def _build_records() -> dict[str, list[dict[str, Any]]]:
    return {
        "accelerators": [a.engine_record() for a in accelerator_list()],
        "fabrics": [
            {f: getattr(x, f) for f in ("slug", "name", "kind", "port_gbps", "latency_us", "collective_efficiency")}
            for x in Fabric.objects.all()
        ],
        "cloud_offerings": [o.engine_record(list(o.prices.all())) for o in cloud_offering_list()],
        "storage_tiers": [
            {f: getattr(x, f) for f in ("slug", "name", "kind", "read_gbps", "write_gbps", "scope", "usd_per_tb_month")}
            for x in StorageTier.objects.all()
        ],
        "switches": [
            {f: getattr(x, f) for f in ("slug", "name", "ports", "port_gbps", "price_usd", "power_w")}
            for x in Switch.objects.all()
        ],
        "server_types": [
            {f: getattr(x, f) for f in ("slug", "name", "gpus_per_node", "nics_per_node", "nic_gbps", "node_power_kw",
                                        "price_usd")}
            | {"accelerator": x.accelerator.slug}
            for x in ServerType.objects.select_related("accelerator")
        ],
    }


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


_snapshot_lock = threading.Lock()
_snapshot: CatalogSnapshot | None = None


def catalog_version() -> str:
    """Row count and latest change of every catalog table: any save, insert or delete changes it.

    One round trip (a UNION ALL of per-table aggregates). A QuerySet.update() skips auto_now and so would
    not change it; the catalog's writers all save rows.
    """
    from django.db import connection

    sql = " UNION ALL ".join(
        f"SELECT COUNT(*), MAX(updated_at) FROM {connection.ops.quote_name(model._meta.db_table)}"
        for model in CATALOG_MODELS
    )
    with connection.cursor() as cursor:
        cursor.execute(sql)
        rows = cursor.fetchall()
    return "|".join(f"{count}@{latest}" for count, latest in rows)


def engine_catalog_snapshot() -> CatalogSnapshot:
    """The current catalog snapshot, rebuilt only when the catalog changed (one cheap query per table)."""
    global _snapshot
    version = catalog_version()
    current = _snapshot
    if current is not None and current.version == version:
        return current
    with _snapshot_lock:
        records = _build_records()
        digest = hashlib.sha256(json.dumps(records, sort_keys=True, default=str).encode()).hexdigest()
        _snapshot = CatalogSnapshot(version, records, digest, specs_from_records(records))
        return _snapshot


def engine_catalog_records() -> dict[str, list[dict[str, Any]]]:
    """Every catalog row the engines may use, as plain records (also stored as a result's input snapshot)."""
    return engine_catalog_snapshot().records


def engine_catalog() -> CatalogSpecs:
    """The current catalog as engine specs."""
    return engine_catalog_snapshot().specs
