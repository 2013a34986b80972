"""Teams through /api/v1/teams/: who sees a team, who manages its members, and the last-owner rule."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.teams.models import Membership
from tests.teams.conftest import ROLES, People


def _status(people: People, who: str, verb: str, path: str, body: Any = None) -> int:
    url = f"/api/v1/teams/{people.team.pk}/{path}"
    return getattr(people.client(who), verb)(url, body or {}, format="json").status_code


# (verb, path, body, expected status for owner, editor, viewer, outsider, anonymous)
MATRIX = [
    ("get", "", None, (200, 200, 200, 404, 401)),
    ("get", "members/", None, (200, 200, 200, 404, 401)),
    ("patch", "", {"name": "Renamed"}, (200, 404, 404, 404, 401)),
    ("post", "members/", {"user": "newcomer", "role": "viewer"}, (201, 404, 404, 404, 401)),
    ("patch", "members/{vera}/", {"role": "editor"}, (200, 404, 404, 404, 401)),
    ("delete", "members/{vera}/", None, (204, 404, 404, 404, 401)),
]


@pytest.mark.parametrize(("verb", "path", "body", "expected"), MATRIX)
@pytest.mark.parametrize("who", ROLES)
def test_team_endpoints_answer_each_role(
    people: People, django_user_model: Any, who: str, verb: str, path: str, body: Any, expected: tuple[int]
) -> None:
    django_user_model.objects.create_user("newcomer")
    path = path.format(vera=people.viewer.pk)
    assert _status(people, who, verb, path, body) == expected[ROLES.index(who)]
    # Nothing changed unless the owner asked.
    if who != "owner":
        assert sorted(people.team.memberships.values_list("user__username", "role")) == [
            ("eddie", "editor"),
            ("olivia", "owner"),
            ("vera", "viewer"),
        ]
        people.team.refresh_from_db()
        assert people.team.name == "Training infra"


def test_list_shows_my_teams_with_members_and_my_role(people: People) -> None:
    body = people.client("viewer").get("/api/v1/teams/").json()
    assert body["count"] == 1
    team = body["results"][0]
    assert team["name"] == "Training infra" and team["my_role"] == "viewer"
    assert [(m["username"], m["role"]) for m in team["members"]] == [
        ("eddie", "editor"),
        ("olivia", "owner"),
        ("vera", "viewer"),
    ]
    assert people.client("outsider").get("/api/v1/teams/").json()["count"] == 0
    assert people.client("anonymous").get("/api/v1/teams/").status_code == 401


def test_creating_a_team_makes_its_creator_the_owner(people: People) -> None:
    response = people.client("outsider").post("/api/v1/teams/", {"name": "Inference"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["my_role"] == "owner" and body["slug"] == "inference"
    assert [(m["username"], m["role"]) for m in body["members"]] == [("oscar", "owner")]
    # A second team of the same name gets its own slug.
    again = people.client("outsider").post("/api/v1/teams/", {"name": "Inference"}, format="json").json()
    assert again["slug"] != "inference" and again["slug"].startswith("inference-")
    missing = people.client("outsider").post("/api/v1/teams/", {}, format="json")
    assert missing.status_code == 400 and "name" in missing.json()["error"]["fields"]
    extra = people.client("outsider").post("/api/v1/teams/", {"name": "x", "owner": 1}, format="json")
    assert extra.status_code == 400 and "owner" in extra.json()["error"]["fields"]


def test_owner_adds_members_by_username_or_email_with_a_role(people: People, django_user_model: Any) -> None:
    django_user_model.objects.create_user("nina", email="Nina@Example.com")
    owner = people.client("owner")
    url = f"/api/v1/teams/{people.team.pk}/members/"
    added = owner.post(url, {"user": "nina@example.com", "role": "editor"}, format="json")
    assert (
        added.status_code == 201 and added.json()["username"] == "nina" and added.json()["role"] == "editor"
    )
    again = owner.post(url, {"user": "nina", "role": "viewer"}, format="json")
    assert again.status_code == 400 and "already a member" in again.json()["error"]["fields"]["user"][0]
    unknown = owner.post(url, {"user": "nobody", "role": "viewer"}, format="json")
    assert unknown.status_code == 400 and "nobody" in unknown.json()["error"]["fields"]["user"][0]
    bad_role = owner.post(url, {"user": "oscar", "role": "admin"}, format="json")
    assert bad_role.status_code == 400 and "role" in bad_role.json()["error"]["fields"]
    assert not Membership.objects.filter(user=people.outsider).exists()  # nothing half-saved
    listed = owner.get(url).json()["results"]
    assert [(m["username"], m["role"]) for m in listed] == [
        ("eddie", "editor"),
        ("nina", "editor"),
        ("olivia", "owner"),
        ("vera", "viewer"),
    ]


def test_a_team_always_keeps_an_owner(people: People) -> None:
    owner = people.client("owner")
    me = f"/api/v1/teams/{people.team.pk}/members/{people.owner.pk}/"
    demote = owner.patch(me, {"role": "editor"}, format="json")
    assert demote.status_code == 400
    assert "at least one owner" in demote.json()["error"]["fields"]["role"][0]
    leave = owner.delete(me)
    assert leave.status_code == 400 and "at least one owner" in leave.json()["error"]["fields"]["user"][0]
    assert people.team.memberships.get(user=people.owner).role == "owner"
    # With a second owner, the first may step down, and is then no longer allowed to manage members.
    promote = owner.patch(f"/api/v1/teams/{people.team.pk}/members/{people.editor.pk}/", {"role": "owner"})
    assert promote.status_code == 200 and promote.json()["role"] == "owner"
    assert owner.patch(me, {"role": "viewer"}, format="json").json()["role"] == "viewer"
    assert owner.post(f"/api/v1/teams/{people.team.pk}/members/", {"user": "oscar"}).status_code == 404
    # The new sole owner cannot leave either.
    eddie = people.client("editor")
    eddie_url = f"/api/v1/teams/{people.team.pk}/members/{people.editor.pk}/"
    assert eddie.delete(eddie_url).status_code == 400
    assert eddie.delete(me).status_code == 204
    assert people.client("owner").get(f"/api/v1/teams/{people.team.pk}/").status_code == 404


def test_member_urls_for_someone_not_in_the_team_are_404(people: People) -> None:
    owner = people.client("owner")
    outsider = f"/api/v1/teams/{people.team.pk}/members/{people.outsider.pk}/"
    assert owner.patch(outsider, {"role": "editor"}, format="json").status_code == 404
    assert owner.delete(outsider).status_code == 404
    assert owner.get("/api/v1/teams/99999999/").status_code == 404
    assert owner.get("/api/v1/teams/abc/").status_code == 404


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    """The OpenAPI schema as GET /api/v1/schema/ serves it, fetched once for this file's two readers (~0.3 s
    of CPU to generate each time). The request reads no database (pytest-django would refuse it here)."""
    response = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return dict(response.json())


def test_the_schema_lists_the_team_endpoints(people: People, schema: dict[str, Any]) -> None:
    paths = schema["paths"]
    assert {"/api/v1/teams/", "/api/v1/teams/{id}/", "/api/v1/teams/{id}/members/"} <= set(paths)
    assert "/api/v1/teams/{id}/members/{user_id}/" in paths
    assert "/api/v1/designs/{id}/move/" in paths and "/api/v1/capacity-plans/{id}/move/" in paths


def test_a_page_that_does_not_exist_is_a_documented_404(people: People, schema: dict[str, Any]) -> None:
    """?page=0 or a page past the last answers 404 "Invalid page." (DRF's pagination), which the list's
    schema now states (schemathesis found it undocumented: GET /api/v1/teams/?page=0)."""
    client = people.client("owner")
    for page in ("0", "99"):
        answer = client.get(f"/api/v1/teams/?page={page}")
        assert answer.status_code == 404, page
        assert answer.json()["error"]["message"] == "Invalid page."
    assert {"200", "400", "401", "404"} <= set(schema["paths"]["/api/v1/teams/"]["get"]["responses"])
