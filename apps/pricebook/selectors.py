"""Price book reads, through the one access rule (apps/teams/access.py): the owner's personal entries and
those of the teams the user is in; nobody else's (views answer 404, never 403)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.pricebook.models import PriceEntry
from apps.teams import access


def price_entry_list(*, user: Any) -> QuerySet[PriceEntry]:
    return access.visible_to(user, PriceEntry.objects.select_related("entered_by"))


def price_entry_get(*, user: Any, entry_id: int) -> PriceEntry | None:
    return price_entry_list(user=user).filter(pk=entry_id).first()


def price_entry_get_editable(*, user: Any, entry_id: int) -> PriceEntry | None:
    """The entry if this user may change it (a personal entry's owner; its team's owners and editors)."""
    return access.editable_by(user, PriceEntry.objects.all()).filter(pk=entry_id).first()


def price_book_entries(*, user: Any, team_id: int | None) -> QuerySet[PriceEntry] | None:
    """One book's entries: the user's personal ones, or a team's the user is a member of (None when the user
    is not: the caller answers 404)."""
    if team_id is None:
        return PriceEntry.objects.filter(owner=user, team__isnull=True).select_related("entered_by")
    if not access.team_ids(user).filter(team_id=team_id).exists():
        return None
    return PriceEntry.objects.filter(team_id=team_id).select_related("entered_by")
