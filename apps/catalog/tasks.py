from __future__ import annotations

from celery import shared_task

from apps.catalog.services import catalog_load_seed


@shared_task(acks_late=True, time_limit=300, soft_time_limit=240)
def catalog_load_seed_task() -> dict[str, int]:
    """Reload the shipped seed catalog in a worker (idempotent: rows are created or updated by slug)."""
    return catalog_load_seed()
