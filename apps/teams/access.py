"""Who may read, edit and administer a row that belongs to a user or to a team: the one rule every app's
selectors, views and API go through (designs, capacity plans, analyses; the price book and sites next).

An owned model has an ``owner`` (the user who made the row) and a nullable ``team``:

- without a team the row is its owner's alone: the owner reads, edits and administers it;
- with a team the row is the team's: its owners administer it (delete, share), its owners and editors edit
  it, its viewers read it, and its maker's own rights are whatever role they hold in the team (someone who
  leaves the team leaves its rows behind);
- a model may also be readable by everyone signed in: ``ORGANISATION_READ = ("visibility", "organisation")``
  on the model names the field and value (designs shared with the organisation, read-only).

Nobody else sees the row: selectors return None and views answer 404, never 403, so a row's existence is not
revealed. Anonymous users see nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from django.db.models import Model, Q, QuerySet, Subquery

from apps.teams.models import Membership

M = TypeVar("M", bound=Model)

Role = Membership.Role
EDIT_ROLES = (Role.OWNER, Role.EDITOR)
ADMIN_ROLES = (Role.OWNER,)
READ_ROLES = (Role.OWNER, Role.EDITOR, Role.VIEWER)


def _user_id(user: Any) -> int | None:
    """The signed-in user's id (a user id is accepted as it is, for compiled queries); None for anonymous."""
    if isinstance(user, int):
        return user
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return int(user.pk)


def team_ids(user: Any, roles: Iterable[str] = READ_ROLES) -> QuerySet[Membership, Any]:
    """The ids of the teams in which this user holds one of ``roles``, as a subquery (none for anonymous)."""
    user_id = _user_id(user)
    if user_id is None:
        return Membership.objects.none().values("team_id")
    return Membership.objects.filter(user_id=user_id, role__in=list(roles)).values("team_id")


def _q(user_id: int, roles: Iterable[str], prefix: str, model: type[Model] | None) -> Q:
    personal = Q(**{f"{prefix}team__isnull": True, f"{prefix}owner_id": user_id})
    teams = Q(**{f"{prefix}team_id__in": Subquery(team_ids(user_id, roles))})
    rule = personal | teams
    shared = getattr(model, "ORGANISATION_READ", None) if model is not None else None
    if shared is not None and tuple(roles) == READ_ROLES:
        rule |= Q(**{f"{prefix}{shared[0]}": shared[1]})
    return rule


def visible_to(
    user: Any, queryset: QuerySet[M], *, via: str = "", model: type[Model] | None = None
) -> QuerySet[M]:
    """The rows of ``queryset`` this user may read. ``via`` is the path to the owned row from the
    queryset's model (``"design"`` for design versions), ``model`` that owned row's model when ``via`` is
    given (for its organisation-wide read)."""
    return _filtered(user, queryset, READ_ROLES, via, model)


def editable_by(
    user: Any, queryset: QuerySet[M], *, via: str = "", model: type[Model] | None = None
) -> QuerySet[M]:
    """The rows of ``queryset`` this user may change: a personal row's owner; its team's owners, editors."""
    return _filtered(user, queryset, EDIT_ROLES, via, model)


def administered_by(user: Any, queryset: QuerySet[M]) -> QuerySet[M]:
    """The rows of ``queryset`` this user may delete or share (owner of a personal row; owner of its team)."""
    return _filtered(user, queryset, ADMIN_ROLES, "", None)


def _filtered(user: Any, queryset: QuerySet[M], roles: tuple[str, ...], via: str, model: Any) -> QuerySet[M]:
    user_id = _user_id(user)
    if user_id is None:
        return queryset.none()
    prefix = f"{via}__" if via else ""
    return queryset.filter(_q(user_id, roles, prefix, model if via else queryset.model))


def readable_q(user_id: int, *, via: str = "", model: type[Model]) -> Q:
    """visible_to's condition for a user id, for a query compiled once (clusterdesigner.compiled_query)."""
    return _q(user_id, READ_ROLES, f"{via}__" if via else "", model)


def role_of(user: Any, obj: Any) -> str | None:
    """This user's role on one owned row: ``owner`` for the owner of a personal row, the team role for a team
    row, None otherwise (organisation-wide read is not a role)."""
    user_id = _user_id(user)
    if user_id is None:
        return None
    if obj.team_id is None:
        return Role.OWNER if obj.owner_id == user_id else None
    role = Membership.objects.filter(team_id=obj.team_id, user_id=user_id).values_list("role", flat=True)
    return role.first()


def can_edit(user: Any, obj: Any) -> bool:
    return role_of(user, obj) in EDIT_ROLES


def can_admin(user: Any, obj: Any) -> bool:
    return role_of(user, obj) in ADMIN_ROLES
