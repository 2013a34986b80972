"""Site reads. A site is its owner's alone: anyone else gets 404, never 403."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.sites.models import Site


def site_list(*, user: Any) -> QuerySet[Site]:
    if not user or not user.is_authenticated:
        return Site.objects.none()
    return Site.objects.filter(owner=user)


def site_get(*, user: Any, site_id: int) -> Site | None:
    """The site if it is this user's, else None (views answer 404)."""
    return site_list(user=user).filter(pk=site_id).first()
