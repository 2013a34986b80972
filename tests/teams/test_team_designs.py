"""A team's designs through the API and the pages: what owners, editors, viewers, people outside the team
and anonymous visitors may do, moving a design into a team, and share links (made by editors, never writing).

Today's convention for read-only access (a design shared with the organisation) is kept for a team's viewers:
they read, evaluate, clone and export; a change answers 404, as for a design they cannot see."""

from __future__ import annotations

from typing import Any

import pytest

from apps.designs.models import Design, ShareLink
from apps.designs.services import design_create
from apps.teams.services import member_add, team_create
from tests.designs.test_api import SPEC
from tests.teams.conftest import ROLES, People

ANON = 401  # token/session API: not signed in

# (verb, path after /api/v1/designs/<id>/, body, expected for owner, editor, viewer, outsider, anonymous)
MATRIX = [
    ("get", "", None, (200, 200, 200, 404, ANON)),
    ("get", "versions/", None, (200, 200, 200, 404, ANON)),
    ("post", "evaluate/", None, (200, 200, 200, 404, ANON)),
    ("get", "export/?format=csv", None, (200, 200, 200, 404, ANON)),
    ("post", "clone/", {}, (201, 201, 201, 404, ANON)),
    ("patch", "", {"version": 1, "name": "renamed"}, (200, 200, 404, 404, ANON)),
    ("get", "share-links/", None, (200, 200, 404, 404, ANON)),
    ("post", "share-links/", {"label": "finance"}, (201, 201, 404, 404, ANON)),
    ("delete", "", None, (204, 404, 404, 404, ANON)),
]


@pytest.mark.parametrize("who", ROLES)
def test_team_design_endpoints_answer_each_role(people: People, team_design: Design, who: str) -> None:
    people.check_matrix(who, f"/api/v1/designs/{team_design.pk}/", MATRIX)
    team_design_after = Design.objects.filter(pk=team_design.pk).first()
    if who == "owner":
        assert team_design_after is None  # deleted last
        return
    assert team_design_after is not None
    edited = who == "editor"
    assert (team_design_after.name, team_design_after.version) == (
        ("renamed", 2) if edited else ("70B on the team's H100s", 1)
    )
    assert ShareLink.objects.filter(design=team_design).count() == (1 if edited else 0)
    # A clone is the cloner's own private design, outside the team.
    clones = Design.objects.exclude(pk=team_design.pk)
    if who in ("editor", "viewer"):
        clone = clones.get()
        assert clone.owner == getattr(people, who) and clone.team is None and clone.visibility == "private"
    else:
        assert not clones.exists()


def test_share_link_of_a_team_design_reads_without_login_and_never_writes(
    people: People, team_design: Design, api_client: Any
) -> None:
    made = people.client("editor").post(f"/api/v1/designs/{team_design.pk}/share-links/", {}, format="json")
    token = made.json()["token"]
    url = f"/api/v1/shared/{token}/"
    assert api_client.get(url).json()["name"] == "70B on the team's H100s"
    for verb in ("post", "put", "patch", "delete"):
        assert getattr(api_client, verb)(url, {"name": "changed"}, format="json").status_code in (403, 405)
    # The share page reads whatever the method (a POST renders the page too); nothing is written.
    assert api_client.post(f"/share/{token}/", {"name": "changed"}).status_code in (200, 405)
    team_design.refresh_from_db()
    assert (team_design.name, team_design.version) == ("70B on the team's H100s", 1)
    # The viewer can neither list nor revoke it.
    link = ShareLink.objects.get()
    viewer = people.client("viewer")
    assert viewer.post(f"/api/v1/designs/{team_design.pk}/share-links/{link.pk}/revoke/").status_code == 404
    link.refresh_from_db()
    assert link.revoked_at is None


def test_moving_a_design_into_a_team(people: People, catalog: Any, django_user_model: Any) -> None:
    mine = design_create(owner=people.outsider, name="oscar's", spec=SPEC)
    oscar = people.client("outsider")
    url = f"/api/v1/designs/{mine.pk}/move/"
    # Oscar is not in the team: 400 naming team, and the design stays his.
    refused = oscar.post(url, {"team": people.team.pk}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {"team": ["must be the id of a team you own or edit"]}
    for bad in ({}, {"team": "x"}, {"team": 0}, {"team": 10**20}):
        answer = oscar.post(url, bad, format="json")
        assert answer.status_code == 400 and "team" in answer.json()["error"]["fields"], bad
    assert oscar.post(url, {"team": 99999999}, format="json").status_code == 400
    # As a viewer of the team he still may not move into it.
    member_add(team=people.team, identifier="oscar", role="viewer")
    assert oscar.post(url, {"team": people.team.pk}, format="json").status_code == 400
    mine.refresh_from_db()
    assert mine.team is None
    # Vera (a viewer) cannot see oscar's private design at all.
    assert people.client("viewer").post(url, {"team": people.team.pk}, format="json").status_code == 404
    # As an editor he may: the team's viewers then read it, and he reads it as an editor.
    people.team.memberships.filter(user=people.outsider).update(role="editor")
    moved = oscar.post(url, {"team": people.team.pk}, format="json")
    assert moved.status_code == 200 and moved.json()["team"] == people.team.pk
    assert people.client("viewer").get(f"/api/v1/designs/{mine.pk}/").status_code == 200
    assert people.client("viewer").patch(f"/api/v1/designs/{mine.pk}/", {"version": 1}).status_code == 404
    # Once out of the team, its maker no longer sees it: it is the team's.
    people.team.memberships.filter(user=people.outsider).delete()
    assert oscar.get(f"/api/v1/designs/{mine.pk}/").status_code == 404


def test_an_editor_moves_a_team_design_only_into_a_team_they_edit(
    people: People, team_design: Design
) -> None:
    other = team_create(user=people.outsider, name="Other")
    url = f"/api/v1/designs/{team_design.pk}/move/"
    eddie = people.client("editor")
    assert eddie.post(url, {"team": other.pk}, format="json").status_code == 400
    member_add(team=other, identifier="eddie", role="editor")
    assert eddie.post(url, {"team": other.pk}, format="json").json()["team"] == other.pk
    # Now the first team's owner and viewer have lost it; the other team's owner has it.
    assert people.client("owner").get(f"/api/v1/designs/{team_design.pk}/").status_code == 404
    assert people.client("viewer").get(f"/api/v1/designs/{team_design.pk}/").status_code == 404
    assert people.client("outsider").get(f"/api/v1/designs/{team_design.pk}/").status_code == 200


def test_organisation_visibility_still_shares_a_team_design_read_only(
    people: People, team_design: Design
) -> None:
    Design.objects.filter(pk=team_design.pk).update(visibility=Design.Visibility.ORGANISATION)
    oscar = people.client("outsider")
    assert oscar.get(f"/api/v1/designs/{team_design.pk}/").status_code == 200
    assert oscar.patch(f"/api/v1/designs/{team_design.pk}/", {"version": 1, "name": "x"}).status_code == 404
    assert oscar.post(f"/api/v1/designs/{team_design.pk}/move/", {"team": people.team.pk}).status_code == 404
    assert oscar.get(f"/api/v1/designs/{team_design.pk}/share-links/").status_code == 404


def test_lists_and_the_mine_filter_follow_the_team(people: People, team_design: Design) -> None:
    design_create(owner=people.viewer, name="vera's own", spec=SPEC)

    def names(who: str, **query: str) -> set[str]:
        return {d["name"] for d in people.client(who).get("/api/v1/designs/", query).json()["results"]}

    assert names("viewer") == {"70B on the team's H100s", "vera's own"}
    assert names("viewer", mine="true") == {"vera's own"}  # she cannot edit the team's
    assert names("editor", mine="true") == {"70B on the team's H100s"}
    assert names("outsider") == set()
