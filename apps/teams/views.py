"""The teams page: my teams with their members and roles, a form to create a team, and for a team's owners
forms to add a member, change a role and remove a member. Plain forms, posted back to the page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.teams import selectors, services
from apps.teams.models import Membership, Team
from clusterdesigner.errors import InvalidInput
from clusterdesigner.ids import as_id
from clusterdesigner.views import or_404

ROLES = dict(Membership.Role.choices)


def _field(request: HttpRequest, name: str, *, limit: int = 200) -> str:
    value = (request.POST.get(name) or "").strip()
    if not value:
        raise InvalidInput({name: ["is required"]})
    if len(value) > limit:
        raise InvalidInput({name: [f"must be at most {limit} characters"]})
    return value


def _role(request: HttpRequest) -> str:
    role = request.POST.get("role") or ""
    if role not in ROLES:
        raise InvalidInput({"role": [f"must be one of {', '.join(ROLES)}"]})
    return role


def _owned_team(request: HttpRequest) -> Team:
    """The team the form names, if this user is one of its owners; 404 otherwise (as the API answers)."""
    team_id = as_id(request.POST.get("team") or "")
    if team_id is None:
        raise InvalidInput({"team": ["must be the id of a team"]})
    return or_404(selectors.team_get_administered(user=request.user, team_id=team_id))


def _membership(request: HttpRequest, team: Team) -> Membership:
    raw = request.POST.get("user") or ""
    found = team.memberships.filter(user_id=int(raw)).first() if raw.isascii() and raw.isdigit() else None
    return or_404(found)


def _apply(request: HttpRequest) -> str:
    """Do what the posted form asks; the message to show after it."""
    action = request.POST.get("action")
    if action == "create":
        team = services.team_create(user=request.user, name=_field(request, "name"))
        return f"Created the team “{team.name}”: you are its owner."
    team = _owned_team(request)
    if action == "add-member":
        added = services.member_add(
            team=team, identifier=_field(request, "member", limit=254), role=_role(request)
        )
        return f"Added {added.user.get_username()} to “{team.name}” as {added.role}."
    membership = _membership(request, team)
    if action == "set-role":
        changed = services.member_set_role(membership=membership, role=_role(request))
        return f"{membership.user.get_username()} is now {changed.role} of “{team.name}”."
    if action == "remove-member":
        services.member_remove(membership=membership)
        return f"Removed {membership.user.get_username()} from “{team.name}”."
    raise InvalidInput({"action": ["must be create, add-member, set-role or remove-member"]})


@login_required
@require_http_methods(["GET", "POST"])
def team_list(request: HttpRequest) -> HttpResponse:
    error: InvalidInput | None = None
    if request.method == "POST":
        try:
            messages.success(request, _apply(request))
            return redirect("teams:list")
        except InvalidInput as exc:
            error = exc
    context = {
        "teams": selectors.team_list(user=request.user),
        "roles": Membership.Role.choices,
        "error": error,
        "posted": request.POST if error else {},
    }
    return render(request, "teams/list.html", context, status=400 if error else 200)
