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


def book_stamp_sql(*, owner_id: int, team_id: int | None) -> tuple[str, list[Any]]:
    """SQL for one row that changes with every write to the book a design resolves its prices through (the
    team's when ``team_id`` is set, else the owner's personal entries; apps/pricebook/resolve.book_entries):
    the entries' count, newest id, sum of ids and latest ``updated_at``. An added entry raises the newest id
    (ids only grow), a deleted one lowers the count, an edit or a move between books (both save
    ``updated_at``) raises the latest change, a move also changes the count or the sum of ids. A kept
    evaluation is keyed by it (apps.designs.services.design_evaluate_json), so the book is resolved only when
    it changed. Raw SQL, for the caller to combine with its other per-request reads in one statement."""
    table = PriceEntry._meta.db_table
    where, params = (
        ("team_id = %s", [team_id]) if team_id else ("owner_id = %s AND team_id IS NULL", [owner_id])
    )
    sql = (
        "SELECT COUNT(*) AS entries, MAX(id) AS newest_id, SUM(id) AS id_sum, MAX(updated_at) AS changed "
        f'FROM "{table}" WHERE {where}'
    )
    return sql, params
