"""The teams page and the design page's team controls, through their URLs."""

from __future__ import annotations

from typing import Any

import pytest

from apps.designs.models import Design
from apps.teams.models import Membership, Team
from apps.teams.services import member_add, team_create
from tests.teams.conftest import People

PAGE = "/teams/"


@pytest.fixture
def second_team(people: People) -> Team:
    """Another team the first team's owner and editor both edit, so they have somewhere to move a design."""
    team = team_create(user=people.owner, name="Inference")
    member_add(team=team, identifier="eddie", role="editor")
    member_add(team=team, identifier="vera", role="viewer")
    return team


@pytest.mark.parametrize(
    ("who", "page", "edits"),
    [("owner", 200, True), ("editor", 200, True), ("viewer", 200, False), ("outsider", 404, False)],
)
def test_the_design_page_shows_the_team_and_its_controls_by_role(
    people: People, team_design: Design, second_team: Team, client: Any, who: str, page: int, edits: bool
) -> None:
    client.force_login(getattr(people, who))
    response = client.get(f"/designs/{team_design.pk}/")
    assert response.status_code == page
    assert client.get(f"/designs/{team_design.pk}/edit/").status_code == (200 if edits else 404)
    assert client.get(f"/designs/{team_design.pk}/share-links/").status_code == (200 if edits else 404)
    if page == 200:
        html = response.content.decode()
        assert 'id="design-team"' in html and "Team: <a" in html and "Training infra" in html
        assert ('id="move-design"' in html) is edits
        assert ('id="share-panel"' in html) is edits
        assert ('id="edit-design"' in html) is edits
    if edits:
        # The move control offers the other team only (the design is already in the first). Read inside its
        # own <select>: the share panel's expiry options ("7", "30", "90" days) could carry a team's pk.
        move = html.split('<select id="move-team" name="team">', 1)[1].split("</select>", 1)[0]
        assert move == f'<option value="{second_team.pk}">Inference</option>'


def test_anonymous_visitors_are_sent_to_sign_in(team_design: Design, client: Any) -> None:
    for url in (f"/designs/{team_design.pk}/", PAGE):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_moving_a_design_from_its_page(
    people: People, team_design: Design, second_team: Team, client: Any
) -> None:
    url = f"/designs/{team_design.pk}/move/"
    client.force_login(people.viewer)  # reads the design, may not move it
    assert client.post(url, {"team": second_team.pk}).status_code == 404
    client.force_login(people.outsider)
    assert client.post(url, {"team": second_team.pk}).status_code == 404
    client.force_login(people.editor)
    refused = client.post(url, {"team": "nine"}, follow=True)
    assert (
        "Could not move" in refused.content.decode()
        and "team: must be the id of a team" in refused.content.decode()
    )
    moved = client.post(url, {"team": second_team.pk}, follow=True)
    assert moved.status_code == 200 and "Moved “70B on the team&#x27;s H100s” into the team “Inference”" in (
        moved.content.decode()
    )
    team_design.refresh_from_db()
    assert team_design.team == second_team
    assert client.get(url).status_code == 405


def test_the_teams_page_lists_my_teams_with_members_and_roles(people: People, client: Any) -> None:
    client.force_login(people.viewer)
    html = client.get(PAGE).content.decode()
    assert "Training infra" in html and f'id="team-{people.team.pk}"' in html
    for name, role in (("eddie", "Editor"), ("olivia", "Owner"), ("vera (you)", "Viewer")):
        assert f'<td>{name}</td><td class="member-role">{role}</td>' in html
    assert "Add member" not in html and "Change role" not in html  # a viewer manages nothing
    client.force_login(people.outsider)
    html = client.get(PAGE).content.decode()
    assert 'id="no-teams"' in html and "Training infra" not in html


def test_creating_a_team_and_managing_members_on_the_page(people: People, client: Any) -> None:
    client.force_login(people.outsider)
    created = client.post(PAGE, {"action": "create", "name": "Research"}, follow=True)
    assert "Created the team “Research”: you are its owner." in created.content.decode()
    team = Team.objects.get(name="Research")
    assert list(team.memberships.values_list("user__username", "role")) == [("oscar", "owner")]
    add = {"action": "add-member", "team": team.pk, "member": "vera@example.com", "role": "editor"}
    added = client.post(PAGE, add, follow=True)
    assert "Added vera to “Research” as editor." in added.content.decode()
    unknown = client.post(PAGE, {**add, "member": "nobody"})
    assert unknown.status_code == 400 and "user: no account with the username or e-mail address" in (
        unknown.content.decode()
    )
    bad_role = client.post(PAGE, {**add, "member": "eddie", "role": "boss"})
    assert (
        bad_role.status_code == 400
        and "role: must be one of owner, editor, viewer" in bad_role.content.decode()
    )
    assert not Membership.objects.filter(team=team, user=people.editor).exists()
    last = client.post(
        PAGE, {"action": "set-role", "team": team.pk, "user": people.outsider.pk, "role": "viewer"}
    )
    assert last.status_code == 400 and "role: a team must keep at least one owner" in last.content.decode()
    removed = client.post(
        PAGE, {"action": "remove-member", "team": team.pk, "user": people.viewer.pk}, follow=True
    )
    assert "Removed vera from “Research”." in removed.content.decode()
    # Someone who does not own a team cannot manage it from the page either.
    client.force_login(people.viewer)
    other = {"action": "add-member", "team": people.team.pk, "member": "oscar", "role": "owner"}
    assert client.post(PAGE, other).status_code == 404
    assert client.post(PAGE, {"action": "create", "name": ""}).status_code == 400


def test_the_admin_lists_teams_and_memberships(people: People, client: Any, django_user_model: Any) -> None:
    admin = django_user_model.objects.create_superuser("root", email="root@example.com")
    client.force_login(admin)
    listed = client.get("/admin/teams/team/")
    assert listed.status_code == 200 and "Training infra" in listed.content.decode()
    change = client.get(f"/admin/teams/team/{people.team.pk}/change/")
    assert change.status_code == 200 and "eddie" in change.content.decode()
    memberships = client.get("/admin/teams/membership/?role=viewer").content.decode()
    assert "vera in Training infra (viewer)" in memberships and "eddie in" not in memberships
