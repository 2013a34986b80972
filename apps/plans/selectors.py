"""Plan reads. A plan is its owner's alone: anyone else gets 404, never 403."""

from __future__ import annotations

import hmac
from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from apps.designs.models import hash_token
from apps.plans.models import CapacityPlan, PlanRun, PlanShareLink, PlanSolution, PlanVersion


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


def plan_share_link_resolve(*, token: str) -> PlanShareLink:
    """The active link for a token, or 404 (looked up by the token's SHA-256, re-checked in constant time)."""
    digest = hash_token(token)
    link = PlanShareLink.objects.select_related("plan", "solution__version").filter(token_hash=digest).first()
    if link is None or not hmac.compare_digest(link.token_hash, digest) or not link.is_active:
        raise Http404("This link does not exist, has expired or was revoked.")
    return link


def plan_share_link_get(*, user: Any, plan_id: int, link_id: int) -> PlanShareLink:
    link = PlanShareLink.objects.filter(pk=link_id, plan=plan_get(user=user, plan_id=plan_id)).first()
    if link is None:
        raise Http404("No such share link of yours.")
    return link


def plan_share_link_list(*, plan: CapacityPlan) -> QuerySet[PlanShareLink]:
    """The plan's share links, newest first, with the version each serves."""
    return plan.share_links.select_related("solution__version").order_by("-created_at", "-pk")


def plan_run_get(*, user: Any, plan_id: int, run_id: int) -> PlanRun:
    run = (
        PlanRun.objects.select_related("version", "solution__version")
        .filter(pk=run_id, version__plan=plan_get(user=user, plan_id=plan_id))
        .first()
    )
    if run is None:
        raise Http404("No such run of your plan.")
    return run
