"""Team writes: create a team, manage its members (a team always keeps an owner), move a row into a team."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Model
from django.utils.crypto import get_random_string
from django.utils.text import slugify

from apps.teams import params
from apps.teams.models import Membership, Team
from clusterdesigner.errors import InvalidInput

Role = Membership.Role


def _unique_slug(name: str) -> str:
    base = slugify(name)[:200] or "team"
    slug = base
    while Team.objects.filter(slug=slug).exists():
        slug = f"{base}-{get_random_string(6, 'abcdefghijklmnopqrstuvwxyz0123456789')}"
    return slug


@transaction.atomic
def team_create(*, user: Any, name: str) -> Team:
    """A new team with its creator as its first owner."""
    team = Team.objects.create(name=name, slug=_unique_slug(name), created_by=user)
    Membership.objects.create(team=team, user=user, role=Role.OWNER)
    return team


def team_rename(*, team: Team, name: str) -> Team:
    team.name = name
    team.save(update_fields=["name"])
    return team


def _user_named(identifier: str) -> Any:
    """The account with this username, or else this e-mail address (case-insensitive; one account only)."""
    users = get_user_model().objects.filter(is_active=True)
    found = users.filter(username=identifier).first()
    if found is None and "@" in identifier:
        by_email = list(users.filter(email__iexact=identifier)[:2])
        found = by_email[0] if len(by_email) == 1 else None
    if found is None:
        raise InvalidInput({"user": [f"no account with the username or e-mail address {identifier!r}"]})
    return found


@transaction.atomic
def member_add(*, team: Team, identifier: str, role: str) -> Membership:
    user = _user_named(identifier)
    if team.memberships.filter(user=user).exists():
        raise InvalidInput(
            {"user": [f"{user.get_username()} is already a member; change their role instead"]}
        )
    return Membership.objects.create(team=team, user=user, role=role)


def _lock_owners(team_id: int) -> None:
    """Lock the team's owner rows, so two owners demoting or removing each other at once cannot both pass
    the last-owner check."""
    list(Membership.objects.select_for_update().filter(team_id=team_id, role=Role.OWNER).values_list("pk"))


def _other_owners(membership: Membership) -> bool:
    others = Membership.objects.filter(team_id=membership.team_id, role=Role.OWNER).exclude(pk=membership.pk)
    return others.exists()


@transaction.atomic
def member_set_role(*, membership: Membership, role: str) -> Membership:
    """Change a member's role; the last owner cannot stop being one (400 naming ``role``)."""
    _lock_owners(membership.team_id)
    locked = Membership.objects.select_for_update().get(pk=membership.pk)
    if locked.role == Role.OWNER and role != Role.OWNER and not _other_owners(locked):
        raise InvalidInput({"role": ["a team must keep at least one owner: make another member owner first"]})
    locked.role = role
    locked.save(update_fields=["role"])
    return locked


@transaction.atomic
def member_remove(*, membership: Membership) -> None:
    """Remove a member; the last owner cannot be removed (400 naming ``user``)."""
    _lock_owners(membership.team_id)
    if membership.role == Role.OWNER and not _other_owners(membership):
        raise InvalidInput({"user": ["a team must keep at least one owner: make another member owner first"]})
    membership.delete()


def owned_move(*, user: Any, obj: Model, team_id: Any) -> Model:
    """Move a row this user may edit into team ``team_id``, in which they must be an owner or editor (400
    naming ``team`` otherwise, without saying whether a team they are not in exists). The caller has checked
    that the user may edit the row (404 otherwise)."""
    if team_id is None:
        raise InvalidInput({"team": [params.NOT_AN_ID]})
    team_id = params.team_writable(user=user, team_id=team_id)
    obj.team_id = team_id  # type: ignore[attr-defined]
    fields = ["team"] + (["updated_at"] if any(f.name == "updated_at" for f in obj._meta.fields) else [])
    obj.save(update_fields=fields)
    return obj
