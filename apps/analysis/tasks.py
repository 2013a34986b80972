from __future__ import annotations

from celery import shared_task
from django.db import DatabaseError, InterfaceError, OperationalError

from apps.analysis import services


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=services.CHUNK_TIME_LIMIT_S,
    soft_time_limit=services.CHUNK_TIME_LIMIT_S - 30,
    autoretry_for=(OperationalError, InterfaceError),
    # Retries that outlast a 60 s database outage: backoff 1, 2, 4, 8, then 15 s (jittered: a random wait up
    # to each) for 20 retries, some 2 minutes on average (5 retries spent 9 s, and a 10 s outage stalled a
    # sweep 180 s). Past them, the periodic rescue below queues the chunk again.
    retry_backoff=True,
    retry_backoff_max=15,
    max_retries=20,
)
def analysis_run_chunk_task(self, chunk_id: int) -> None:  # type: ignore[no-untyped-def]
    """Compute one chunk of an analysis (idempotent: a chunk already done is skipped)."""
    from celery.exceptions import SoftTimeLimitExceeded

    from apps.analysis.models import AnalysisChunk

    try:
        services.analysis_run_chunk(chunk_id=chunk_id, worker=self.request.hostname or "")
    except (OperationalError, InterfaceError):
        raise
    except (SoftTimeLimitExceeded, DatabaseError, Exception) as exc:  # noqa: B014 - the run must end with a message
        chunk = AnalysisChunk.objects.filter(pk=chunk_id).first()
        if chunk is not None:
            services.analysis_fail(
                analysis_id=chunk.analysis_id,
                error=f"chunk {chunk.index} failed: {type(exc).__name__}: {exc}",
            )
        raise


# Its own soft limit below its hard one: the global default (CELERY_TASK_SOFT_TIME_LIMIT, 540 s) above 120 s
# made every send raise "soft_time_limit must be less than or equal to time_limit", so beat never sent it.
@shared_task(ignore_result=True, time_limit=120, soft_time_limit=100)
def analysis_rescue_stalled_task() -> None:
    """Run by Celery beat (CELERY_BEAT_SCHEDULE): stalled analyses are queued again, late ones failed."""
    services.analysis_rescue_stalled()
