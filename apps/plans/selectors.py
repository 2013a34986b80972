"""Plan reads. A plan is its owner's alone: anyone else gets 404, never 403."""

from __future__ import annotations

import hmac
from typing import Any

from django.db.models import QuerySet

from apps.designs.models import hash_token
from apps.plans.models import CapacityPlan, PlanRun, PlanShareLink, PlanVersion


def plan_list(*, user: Any) -> QuerySet[CapacityPlan]:
    if not user or not user.is_authenticated:
        return CapacityPlan.objects.none()
    return CapacityPlan.objects.filter(owner=user)


def plan_get(*, user: Any, plan_id: int) -> CapacityPlan | None:
    """The plan if it is this user's, else None (views answer 404)."""
    return plan_list(user=user).filter(pk=plan_id).first()


def plan_version_get(*, plan: CapacityPlan, number: int | None = None) -> PlanVersion | None:
    """Version ``number`` of the plan (default: the current one), or None when it has no such version."""
    return plan.versions.filter(number=number or plan.version).first()


def plan_share_link_resolve(*, token: str) -> PlanShareLink | None:
    """The active link for a token, or None when it does not exist, has expired or was revoked (looked up by
    the token's SHA-256, re-checked in constant time)."""
    digest = hash_token(token)
    link = PlanShareLink.objects.select_related("plan", "solution__version").filter(token_hash=digest).first()
    if link is None or not hmac.compare_digest(link.token_hash, digest) or not link.is_active:
        return None
    return link


def plan_share_link_get(*, user: Any, plan_id: int, link_id: int) -> PlanShareLink | None:
    """A share link of this user's plan, or None."""
    plan = plan_get(user=user, plan_id=plan_id)
    return None if plan is None else PlanShareLink.objects.filter(pk=link_id, plan=plan).first()


def plan_share_link_list(*, plan: CapacityPlan) -> QuerySet[PlanShareLink]:
    """The plan's share links, newest first, with the version each serves."""
    return plan.share_links.select_related("solution__version").order_by("-created_at", "-pk")


def plan_run_get(*, user: Any, plan_id: int, run_id: int) -> PlanRun | None:
    """A run of this user's plan, or None."""
    plan = plan_get(user=user, plan_id=plan_id)
    if plan is None:
        return None
    return (
        PlanRun.objects.select_related("version", "solution__version")
        .filter(pk=run_id, version__plan=plan)
        .first()
    )
