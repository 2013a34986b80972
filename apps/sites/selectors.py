"""Site reads, through the one ownership rule (apps/teams/access.py): a personal site is its owner's, a
team's site its members'; anyone else gets 404, never 403."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.sites.models import Site
from apps.teams import access


def site_list(*, user: Any) -> QuerySet[Site]:
    """The sites this user may read and place designs in (theirs, and their teams')."""
    return access.visible_to(user, Site.objects.all())


def site_get(*, user: Any, site_id: int) -> Site | None:
    """The site if this user may read it, else None (views answer 404)."""
    return site_list(user=user).filter(pk=site_id).first()


def site_get_editable(*, user: Any, site_id: int) -> Site | None:
    """The site if this user may change or delete it (its owner; its team's owners and editors), else None:
    a team viewer's change answers 404, as a read-only design's does."""
    return access.editable_by(user, Site.objects.all()).filter(pk=site_id).first()
