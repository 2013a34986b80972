"""Catalog reads, including the specs the engines take."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet

from apps.catalog.models import Accelerator, CloudOffering, CloudPrice, Fabric, ServerType, StorageTier, Switch
from clusterdesigner.engine.catalog import CatalogSpecs, specs_from_records


def accelerator_list() -> QuerySet[Accelerator]:
    return Accelerator.objects.select_related("vendor")


def cloud_offering_list() -> QuerySet[CloudOffering]:
    return CloudOffering.objects.select_related("accelerator").prefetch_related(
        Prefetch("prices", queryset=CloudPrice.objects.order_by("pricing_model", "-as_of"))
    )


def cloud_price_list() -> QuerySet[CloudPrice]:
    return CloudPrice.objects.select_related("offering", "offering__accelerator")


def engine_catalog_records() -> dict[str, list[dict[str, Any]]]:
    """Every catalog row the engines may use, as plain records (also stored as a result's input snapshot)."""
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


def engine_catalog() -> CatalogSpecs:
    """The current catalog as engine specs."""
    return specs_from_records(engine_catalog_records())
