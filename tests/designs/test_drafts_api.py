"""Drafts through /api/v1/designs/{id}/draft/ and …/draft/save/ (issue #36): editing makes no version until
"Save version"; the message is stored and listed; who may have a draft (owner, editor; not a viewer or an
outsider); a stale draft is a 409; the old PATCH keeps making versions, now with a message; editing after
approval leaves the approval on the approved version."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.designs.models import Design, DesignDraft
from apps.reviews import selectors as review_selectors
from tests.designs.test_api import SPEC
from tests.teams import conftest as teams
from tests.teams.conftest import ROLES, People

ANON = 401
people = teams.people  # the teams tests' fixtures: a team with one member of each role, and its design
team_design = teams.team_design


def _spec(busy: float) -> dict[str, Any]:
    """The test spec at utilization ``busy`` (its fixed layout is for its 64 nodes, so nodes stay)."""
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = busy
    return spec


def _busy(spec: dict[str, Any]) -> float:
    return float(spec["costs"]["utilization"])


# (verb, path, body, expected for owner, editor, viewer, outsider, anonymous), in order on one design
DRAFT_MATRIX = [
    ("get", "draft/", None, (404, 404, 404, 404, ANON)),  # no draft yet: 404 for all who may edit too
    ("put", "draft/", {"name": "draft name"}, (200, 200, 404, 404, ANON)),
    ("get", "draft/", None, (200, 200, 404, 404, ANON)),
    ("post", "draft/save/", {"message": "renamed"}, (201, 201, 404, 404, ANON)),
    ("put", "draft/", {"description": "again"}, (200, 200, 404, 404, ANON)),
    ("delete", "draft/", None, (204, 204, 404, 404, ANON)),
    ("delete", "draft/", None, (404, 404, 404, 404, ANON)),  # discarded: nothing left to discard
]


@pytest.mark.parametrize("who", ROLES)
def test_draft_matrix(people: People, team_design: Any, who: str) -> None:
    """The team's owner and editor keep drafts and save them; a viewer, who reads the design, and an
    outsider get 404 (never 403), and nothing is written for them."""
    people.check_matrix(who, f"/api/v1/designs/{team_design.pk}/", DRAFT_MATRIX)
    team_design.refresh_from_db()
    saves = who in ("owner", "editor")
    assert team_design.version == (2 if saves else 1)
    assert team_design.name == ("draft name" if saves else "70B on the team's H100s")
    assert not DesignDraft.objects.exists()
    if saves:
        v2 = team_design.versions.get(number=2)
        assert (v2.message, v2.created_by) == ("renamed", getattr(people, who))


def test_drafts_are_per_user_and_make_no_version_until_saved(people: People, team_design: Any) -> None:
    """The owner's and the editor's drafts are their own; evaluating-as-you-type writes (three PUTs) make no
    version; saving one makes v2 with its message and leaves the other's draft, now stale, refused (409)."""
    base = f"/api/v1/designs/{team_design.pk}/"
    owner, editor = people.client("owner"), people.client("editor")
    for busy in (0.4, 0.6, 0.8):
        assert owner.put(f"{base}draft/", {"spec": _spec(busy)}, format="json").status_code == 200
    assert editor.put(f"{base}draft/", {"spec": _spec(0.2)}, format="json").status_code == 200
    assert Design.objects.get(pk=team_design.pk).version == 1
    mine = owner.get(f"{base}draft/").json()
    assert (mine["base_version"], mine["current_version"], _busy(mine["spec"])) == (1, 1, 0.8)
    assert _busy(editor.get(f"{base}draft/").json()["spec"]) == 0.2

    saved = owner.post(f"{base}draft/save/", {"message": "busier: 80 %"}, format="json")
    assert saved.status_code == 201 and saved.json()["version"] == 2
    assert _busy(saved.json()["spec"]) == 0.8
    listed = owner.get(f"{base}versions/").json()["results"]
    assert [(v["number"], v["message"]) for v in listed] == [(2, "busier: 80 %"), (1, "")]

    stale = editor.post(f"{base}draft/save/", {"message": "20 %"}, format="json")
    assert stale.status_code == 409
    assert stale.json()["error"]["fields"] == {"version": ["current version is 2"]}
    assert Design.objects.get(pk=team_design.pk).version == 2
    assert _busy(editor.get(f"{base}draft/").json()["spec"]) == 0.2  # kept, to rebase or discard
    # Rebased on v2 by naming it, the editor's draft saves as v3.
    assert editor.put(f"{base}draft/", {"version": 2}, format="json").status_code == 200
    assert editor.post(f"{base}draft/save/", {}, format="json").json()["version"] == 3


def test_bad_draft_input_is_a_400_naming_the_field_and_keeps_the_last_good_draft(
    people: People, team_design: Any
) -> None:
    base = f"/api/v1/designs/{team_design.pk}/"
    client = people.client("owner")
    client.put(f"{base}draft/", {"spec": _spec(0.4)}, format="json")
    bad = client.put(f"{base}draft/", {"spec": _spec(0)}, format="json")
    assert bad.status_code == 400 and "spec.costs.utilization" in bad.json()["error"]["fields"]
    assert _busy(client.get(f"{base}draft/").json()["spec"]) == 0.4
    for body, field in (
        ({"version": 7}, "version"),
        ({"visibility": "everyone"}, "visibility"),
        ({"colour": "red"}, "colour"),
    ):
        answer = client.put(f"{base}draft/", body, format="json")
        assert answer.status_code == 400 and field in answer.json()["error"]["fields"], body
    long = client.post(f"{base}draft/save/", {"message": "x" * 201}, format="json")
    assert long.status_code == 400 and "message" in long.json()["error"]["fields"]
    assert Design.objects.get(pk=team_design.pk).version == 1


def test_patch_keeps_making_a_version_now_with_a_message(people: People, team_design: Any) -> None:
    client = people.client("editor")
    url = f"/api/v1/designs/{team_design.pk}/"
    plain = client.patch(url, {"version": 1, "spec": _spec(0.4)}, format="json")
    assert plain.status_code == 200 and plain.json()["version"] == 2
    said = client.put(url, {"version": 2, "spec": _spec(0.6), "message": "60 % busy"}, format="json")
    assert said.json()["version"] == 3
    messages = [(v.number, v.message) for v in team_design.versions.order_by("number")]
    assert messages == [(1, ""), (2, ""), (3, "60 % busy")]


def test_editing_after_approval_starts_a_draft_and_leaves_the_approval(
    people: People, team_design: Any
) -> None:
    client = people.client("owner")
    base = f"/api/v1/designs/{team_design.pk}/"
    for state in ("in_review", "approved"):
        client.post(f"{base}versions/1/review/", {"state": state}, format="json")
    assert client.put(f"{base}draft/", {"spec": _spec(0.6)}, format="json").status_code == 200
    team_design.refresh_from_db()
    assert (team_design.version, team_design.approved_version.number) == (1, 1)  # a draft, no version yet
    saved = client.post(f"{base}draft/save/", {"message": "60 % after approval"}, format="json").json()
    assert saved["version"] == 2
    team_design.refresh_from_db()
    assert team_design.approved_version.number == 1
    assert review_selectors.review_get(version=team_design.versions.get(number=1)).state == "approved"
    assert review_selectors.review_get(version=team_design.current).state == "draft"


def test_the_schema_lists_the_draft_endpoints(db: Any) -> None:
    from rest_framework.test import APIClient

    paths = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    assert set(paths["/api/v1/designs/{id}/draft/"]) == {"get", "put", "delete"}
    assert set(paths["/api/v1/designs/{id}/draft/save/"]) == {"post"}
    save = paths["/api/v1/designs/{id}/draft/save/"]["post"]
    assert {"201", "400", "404", "409"} <= set(save["responses"])
