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


def test_a_rename_committed_while_the_snapshot_is_read_is_not_half_seen(
    transactional_db: Any, postgres_required: None, monkeypatch: Any
) -> None:
    """Issue #38 item 3. The accelerators are read, then another connection renames one and commits, then the
    offerings are read (joined to their accelerator's slug). One consistent read (REPEATABLE READ) shows the
    catalog as it was at its first query: every offering names an accelerator of the snapshot. Before, the
    offerings named "h100-renamed", which the accelerators' query had not seen."""
    import threading

    from django.db import connection

    from apps.catalog import selectors
    from apps.catalog.models import Accelerator
    from tests.conftest import seed_catalog

    seed_catalog()
    monkeypatch.setattr(selectors, "_snapshot", None)
    real = selectors.cloud_offering_list

    def rename_elsewhere() -> None:
        try:
            accelerator = Accelerator.objects.get(slug="h100-sxm")
            accelerator.slug = "h100-renamed"
            accelerator.save()  # committed at once (autocommit), as the catalog's writers save rows
        finally:
            connection.close()

    def offerings_after_a_rename() -> Any:
        thread = threading.Thread(target=rename_elsewhere)
        thread.start()
        thread.join(timeout=30)
        assert not thread.is_alive()
        return real()

    monkeypatch.setattr(selectors, "cloud_offering_list", offerings_after_a_rename)
    snapshot = selectors.engine_catalog_snapshot()
    accelerators = {a["slug"] for a in snapshot.records["accelerators"]}
    named = {o["accelerator"] for o in snapshot.records["cloud_offerings"]}
    assert "h100-sxm" in accelerators and "h100-renamed" not in accelerators
    assert named <= accelerators, named - accelerators
    assert snapshot.specs.offerings["aws-p5-48xlarge"].accelerator == "h100-sxm"

    # The snapshot is labelled with the version it was read at, so the next read sees the rename whole.
    monkeypatch.setattr(selectors, "cloud_offering_list", real)
    after = selectors.engine_catalog_snapshot()
    assert after is not snapshot
    assert "h100-renamed" in {a["slug"] for a in after.records["accelerators"]}
    assert after.specs.offerings["aws-p5-48xlarge"].accelerator == "h100-renamed"
