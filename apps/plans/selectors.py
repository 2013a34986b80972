"""Plan reads. A plan is its owner's alone: anyone else gets 404, never 403."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from apps.plans.models import CapacityPlan, PlanSolution, PlanVersion


def plan_list(*, user: Any) -> QuerySet[CapacityPlan]:
    if not user or not user.is_authenticated:
        return CapacityPlan.objects.none()
    return CapacityPlan.objects.filter(owner=user)


def plan_get(*, user: Any, plan_id: int) -> CapacityPlan:
    plan = plan_list(user=user).filter(pk=plan_id).first()
    if plan is None:
        raise Http404("No capacity plan with this id is yours.")
    return plan


def plan_version_get(*, plan: CapacityPlan, number: int | None = None) -> PlanVersion:
    version = plan.versions.filter(number=number or plan.version).first()
    if version is None:
        raise Http404(f"Plan {plan.pk} has no version {number}.")
    return version


def plan_solution_latest(*, version: PlanVersion) -> PlanSolution | None:
    return version.solutions.first()
