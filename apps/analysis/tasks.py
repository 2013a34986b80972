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
    retry_backoff=True,
    max_retries=5,
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
