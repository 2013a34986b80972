from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError

from apps.plans import services

PLAN_RUN_TIME_LIMIT_S = 600


@shared_task(
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=PLAN_RUN_TIME_LIMIT_S,
    soft_time_limit=PLAN_RUN_TIME_LIMIT_S - 30,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=True,
    max_retries=5,
)
def plan_run_task(run_id: int) -> None:
    """Solve one queued capacity plan run (idempotent: a run already done is skipped)."""
    from celery.exceptions import SoftTimeLimitExceeded

    from apps.plans.models import PlanRun

    try:
        services.plan_run_execute(run_id=run_id)
    except (OperationalError, InterfaceError):
        raise
    except (SoftTimeLimitExceeded, Exception) as exc:  # noqa: B014 - the run must end with a message
        PlanRun.objects.filter(pk=run_id).update(
            status=PlanRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}"
        )
        raise
