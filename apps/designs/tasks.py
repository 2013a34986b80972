"""Designs' periodic work (Celery beat, CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from celery import shared_task

from apps.designs import services


@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
def share_link_opens_fold_task() -> None:
    """Add the share links' logged opens to their counters (services.share_link_opens_fold)."""
    services.share_link_opens_fold()
