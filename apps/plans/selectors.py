"""Plan reads. A plan is its owner's, or its team's members' by role (apps/teams/access.py): anyone else gets
404, never 403."""

from __future__ import annotations

import hmac
from typing import Any

from django.db.models import QuerySet

from apps.designs.models import hash_token
from apps.plans.models import CapacityPlan, PlanRun, PlanShareLink, PlanVersion
from apps.teams import access


def plan_list(*, user: Any) -> QuerySet[CapacityPlan]:
    """The plans this user may read (none for anonymous)."""
    return access.visible_to(user, CapacityPlan.objects.select_related("team"))


def plan_get(*, user: Any, plan_id: int) -> CapacityPlan | None:
    """The plan if this user may read it, else None (views answer 404)."""
    return plan_list(user=user).filter(pk=plan_id).first()


def plan_get_editable(*, user: Any, plan_id: int) -> CapacityPlan | None:
    """The plan if this user may change it and its share links (its owner, or a team owner or editor)."""
    return access.editable_by(user, CapacityPlan.objects.select_related("team")).filter(pk=plan_id).first()


def plan_get_administered(*, user: Any, plan_id: int) -> CapacityPlan | None:
    """The plan if this user may delete it (its owner, or an owner of its team)."""
    return access.administered_by(user, CapacityPlan.objects.all()).filter(pk=plan_id).first()


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
    """A share link of a plan this user may edit, or None."""
    plan = plan_get_editable(user=user, plan_id=plan_id)
    return None if plan is None else PlanShareLink.objects.filter(pk=link_id, plan=plan).first()


def plan_share_link_list(*, plan: CapacityPlan) -> QuerySet[PlanShareLink]:
    """The plan's share links, newest first, with the version each serves."""
    return plan.share_links.select_related("solution__version").order_by("-created_at", "-pk")


def plan_run_get(*, user: Any, plan_id: int, run_id: int) -> PlanRun | None:
    """A run of a plan this user may read, or None."""
    plan = plan_get(user=user, plan_id=plan_id)
    if plan is None:
        return None
    return (
        PlanRun.objects.select_related("version", "solution__version")
        .filter(pk=run_id, version__plan=plan)
        .first()
    )
