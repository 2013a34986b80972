"""Team reads: a team is seen by its members only (anyone else gets 404, never 403)."""

from __future__ import annotations

from typing import Any

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery

from apps.teams.access import ADMIN_ROLES, EDIT_ROLES, READ_ROLES, team_ids
from apps.teams.models import Membership, Team


def team_list(*, user: Any, roles: tuple[str, ...] = READ_ROLES) -> QuerySet[Team]:
    """The teams in which this user holds one of ``roles``, with their members (and the members' users) and
    ``my_role``, this user's role in each."""
    if not user or not user.is_authenticated:
        return Team.objects.none()
    members = Membership.objects.select_related("user").order_by("user__username", "id")
    mine = Membership.objects.filter(team=OuterRef("pk"), user_id=user.pk).values("role")[:1]
    return (
        Team.objects.filter(pk__in=team_ids(user, roles))
        .annotate(my_role=Subquery(mine))
        .prefetch_related(Prefetch("memberships", queryset=members))
    )


def team_get(*, user: Any, team_id: int) -> Team | None:
    """The team if this user is a member, else None."""
    return team_list(user=user).filter(pk=team_id).first()


def team_get_administered(*, user: Any, team_id: int) -> Team | None:
    """The team if this user is one of its owners (may manage its members), else None."""
    return team_list(user=user, roles=ADMIN_ROLES).filter(pk=team_id).first()


def team_list_editable(*, user: Any) -> QuerySet[Team]:
    """The teams into which this user may move rows (owner or editor)."""
    return team_list(user=user, roles=EDIT_ROLES)


def membership_role(*, user: Any, team: Team) -> str | None:
    return team.memberships.filter(user_id=user.pk).values_list("role", flat=True).first()
