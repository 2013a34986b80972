"""A real Celery worker process runs a task through Redis that writes to PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.models import Accelerator, CloudPrice

pytestmark = pytest.mark.integration


def test_worker_loads_the_catalog_into_postgres(celery_worker_process: Any, settings: Any) -> None:
    from apps.catalog.tasks import catalog_load_seed_task

    assert "postgresql" in settings.DATABASES["default"]["ENGINE"]
    assert Accelerator.objects.count() == 0
    result = catalog_load_seed_task.apply_async()
    counts = result.get(timeout=120)
    # The worker wrote the rows into the same (test) database this process reads.
    assert counts["accelerators"] == Accelerator.objects.count() >= 11
    assert CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge").exists()
