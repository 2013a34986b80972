"""The cached catalog snapshot the engines read: reused while the catalog is unchanged, rebuilt on any
change."""

from __future__ import annotations

from typing import Any

from apps.catalog.models import CloudPrice, Fabric
from apps.catalog.selectors import engine_catalog_snapshot


def test_snapshot_is_reused_until_a_row_changes(catalog: Any) -> None:
    first = engine_catalog_snapshot()
    assert engine_catalog_snapshot() is first
    price = CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand").latest(
        "as_of"
    )
    price.usd_per_hour = 50.0
    price.save()
    second = engine_catalog_snapshot()
    assert second is not first and second.digest != first.digest
    assert second.specs.offerings["aws-p5-48xlarge"].usd_per_hour["on_demand"] == 50.0


def test_a_deleted_row_changes_the_snapshot(catalog: Any) -> None:
    first = engine_catalog_snapshot()
    Fabric.objects.filter(slug="eth-10g").delete()
    second = engine_catalog_snapshot()
    assert "eth-10g" in first.specs.fabrics and "eth-10g" not in second.specs.fabrics
