"""The catalog fixture (tests/conftest.py: seed_catalog) loads the seed catalog in bulk after its first load
in a process: its rows must be the very rows catalog_load_seed writes, or every test on it would test
another catalog."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import _seed_models, seed_catalog

pytestmark = pytest.mark.django_db


def _rows() -> dict[str, list[dict[str, Any]]]:
    """Every seed table's rows in id order, each id (its own and its foreign keys) read as the row's place in
    its table, without the time of the save: equal for the same catalog whatever ids the database gave."""
    models = _seed_models()
    tables = {model: list(model.objects.order_by("pk").values()) for model in models}
    place = {model: {row["id"]: i for i, row in enumerate(rows)} for model, rows in tables.items()}
    out = {}
    for model, rows in tables.items():
        targets = {f.attname: f.related_model for f in model._meta.concrete_fields if f.is_relation}
        out[model.__name__] = [
            {
                key: place[targets[key]][value] if key in targets and value is not None else value
                for key, value in row.items()
                if key not in ("id", "updated_at")
            }
            for row in rows
        ]
    return out


def _empty() -> None:
    for model in reversed(_seed_models()):
        model.objects.all().delete()


def test_the_bulk_loaded_catalog_is_the_one_catalog_load_seed_writes() -> None:
    from apps.catalog.services import catalog_load_seed

    seed_catalog()  # the first load of the process is catalog_load_seed's; later ones are in bulk
    _empty()
    counts = seed_catalog()
    bulk = _rows()
    _empty()
    assert catalog_load_seed() == counts
    loaded = _rows()
    assert bulk == loaded
    assert sum(len(rows) for rows in loaded.values()) >= 140
    assert loaded["Accelerator"] and loaded["CloudPrice"] and loaded["RentalPricePoint"]


def test_a_bulk_loaded_catalog_takes_new_rows_after_its_own() -> None:
    from apps.catalog.models import Vendor

    seed_catalog()
    _empty()
    seed_catalog()
    newest = Vendor.objects.order_by("-pk").first()
    assert newest is not None
    assert Vendor.objects.create(slug="new-vendor", name="New").pk > newest.pk
