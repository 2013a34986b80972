"""Comments and review state through /api/v1/designs/{id}/versions/{n}/comments/ and …/review/ (issue #36):
who may comment, resolve, send for review and approve; the state machine's 400s; approval staying on its
version after an edit; Markdown rendered as text where it carries script or link payloads."""

from __future__ import annotations

from typing import Any

import pytest

from apps.designs.services import design_create
from apps.reviews import selectors
from apps.reviews.models import Comment, VersionReview
from tests.designs.test_api import SPEC
from tests.teams.conftest import ROLES, People

ANON = 401


def _base(design: Any) -> str:
    return f"/api/v1/designs/{design.pk}/versions/1/"


@pytest.mark.parametrize("who", ROLES)
def test_comment_matrix(people: People, team_design: Any, who: str) -> None:
    """Every reader comments and reads comments; resolving someone else's comment needs edit; an outsider
    sees nothing (404), as for the design itself."""
    theirs = Comment.objects.create(version=team_design.current, author=people.owner, body="the owner's")
    matrix = [
        ("get", "comments/", None, (200, 200, 200, 404, ANON)),
        ("post", "comments/", {"body": "why 8 nodes?"}, (201, 201, 201, 404, ANON)),
        ("post", f"comments/{theirs.pk}/resolve/", None, (200, 200, 404, 404, ANON)),
        ("post", f"comments/{theirs.pk}/unresolve/", None, (200, 200, 404, 404, ANON)),
    ]
    people.check_matrix(who, _base(team_design), matrix)
    made = Comment.objects.filter(body="why 8 nodes?")
    assert made.count() == (1 if who in ("owner", "editor", "viewer") else 0)
    if who in ("owner", "editor", "viewer"):
        assert made.get().author == getattr(people, who)


def test_author_resolves_own_comment(people: People, team_design: Any) -> None:
    """A viewer may resolve their own comment (not others'); resolving records who and when, reopening
    clears both."""
    client = people.client("viewer")
    made = client.post(f"{_base(team_design)}comments/", {"body": "ok"}, format="json").json()
    url = f"{_base(team_design)}comments/{made['id']}/"
    done = client.post(f"{url}resolve/").json()
    assert (done["resolved"], done["resolved_by"]) == (True, "vera")
    assert done["resolved_at"] is not None
    again = client.post(f"{url}unresolve/").json()
    assert (again["resolved"], again["resolved_by"], again["resolved_at"]) == (False, None, None)


def test_reply_and_bad_input(people: People, team_design: Any) -> None:
    client = people.client("viewer")
    url = f"{_base(team_design)}comments/"
    parent = client.post(url, {"body": "first"}, format="json").json()
    reply = client.post(url, {"body": "second", "parent": parent["id"]}, format="json")
    assert reply.status_code == 201 and reply.json()["parent"] == parent["id"]
    other = design_create(owner=people.owner, name="other", spec=SPEC)
    elsewhere = Comment.objects.create(version=other.current, author=people.owner, body="x")
    bad = client.post(url, {"body": "x", "parent": elsewhere.pk}, format="json")
    assert bad.status_code == 400 and "parent" in bad.json()["error"]["fields"]
    empty = client.post(url, {"body": ""}, format="json")
    assert empty.status_code == 400 and "body" in empty.json()["error"]["fields"]
    extra = client.post(url, {"body": "x", "author": "olivia"}, format="json")
    assert extra.status_code == 400
    assert (
        people.client("viewer").get(f"/api/v1/designs/{team_design.pk}/versions/9/comments/").status_code
        == 404
    )
    assert Comment.objects.count() == 3  # first, second, elsewhere: nothing half-saved


def test_markdown_payloads_render_as_text(people: People, team_design: Any) -> None:
    body = "<script>alert(1)</script> **bold** [x](javascript:alert(1)) [doc](https://example.com/a)"
    made = (
        people.client("viewer").post(f"{_base(team_design)}comments/", {"body": body}, format="json").json()
    )
    assert made["body"] == body  # stored as typed
    html = made["html"]
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<strong>bold</strong>" in html
    assert "javascript:" not in html.split("[x](")[0] and 'href="javascript' not in html
    assert "[x](javascript:alert(1))" in html  # left as the text typed, not a link
    assert '<a href="https://example.com/a" rel="nofollow noopener">doc</a>' in html


# (verb, path, body, expected for owner, editor, viewer, outsider, anonymous), in order on one version
REVIEW_MATRIX = [
    ("get", "review/", None, (200, 200, 200, 404, ANON)),
    ("post", "review/", {"state": "in_review", "note": "please look"}, (200, 200, 404, 404, ANON)),
    ("post", "review/", {"state": "approved", "note": "go"}, (200, 404, 404, 404, ANON)),
]


@pytest.mark.parametrize("who", ROLES)
def test_review_matrix(people: People, team_design: Any, who: str) -> None:
    """Editors send a version for review, only the team's owner approves; the approval is pinned."""
    people.check_matrix(who, _base(team_design), REVIEW_MATRIX)
    review = selectors.review_get(version=team_design.current)
    expected = {"owner": "approved", "editor": "in_review"}.get(who, "draft")
    assert review.state == expected
    team_design.refresh_from_db()
    pinned = selectors.approved_review(design=team_design)
    if who == "owner":
        assert pinned is not None and (pinned.version.number, pinned.reviewer) == (1, people.owner)
    else:
        assert pinned is None


def test_transitions_validated(people: People, team_design: Any) -> None:
    client = people.client("owner")
    url = f"{_base(team_design)}review/"
    early = client.post(url, {"state": "approved"}, format="json")
    assert early.status_code == 400
    assert early.json()["error"]["fields"]["state"] == [
        "cannot go from draft to approved; allowed: in_review"
    ]
    unknown = client.post(url, {"state": "shipped"}, format="json")
    assert unknown.status_code == 400 and "state" in unknown.json()["error"]["fields"]
    assert client.post(url, {"state": "in_review"}, format="json").json()["allowed"] == [
        "approved",
        "changes_requested",
        "draft",
    ]
    asked = client.post(url, {"state": "changes_requested", "note": "fewer nodes"}, format="json").json()
    assert (asked["state"], asked["reviewer"], asked["note"]) == (
        "changes_requested",
        "olivia",
        "fewer nodes",
    )
    assert client.post(url, {"state": "in_review"}, format="json").status_code == 200
    assert client.post(url, {"state": "approved"}, format="json").json()["allowed"] == []
    final = client.post(url, {"state": "in_review"}, format="json")
    assert final.status_code == 400 and "approval is final" in final.json()["error"]["fields"]["state"][0]


def test_edit_after_approval_leaves_it_on_the_old_version(people: People, team_design: Any) -> None:
    client = people.client("owner")
    for state in ("in_review", "approved"):
        client.post(f"{_base(team_design)}review/", {"state": state}, format="json")
    edited = client.patch(f"/api/v1/designs/{team_design.pk}/", {"version": 1, "name": "v2"}, format="json")
    assert edited.json()["version"] == 2
    v2 = client.get(f"/api/v1/designs/{team_design.pk}/versions/2/review/").json()
    assert (v2["state"], v2["reviewer"]) == ("draft", None)
    v1 = client.get(f"/api/v1/designs/{team_design.pk}/versions/1/review/").json()
    assert v1["state"] == "approved"
    team_design.refresh_from_db()
    assert selectors.approved_review(design=team_design).version.number == 1


def test_personal_design_its_owner_approves(people: People, catalog: Any) -> None:
    """Without a team the design's owner approves; anybody else (even a team owner elsewhere) sees a 404."""
    design = design_create(owner=people.viewer, name="mine", spec=SPEC)
    url = f"/api/v1/designs/{design.pk}/versions/1/review/"
    mine = people.client("viewer")
    assert mine.post(url, {"state": "in_review"}, format="json").status_code == 200
    assert people.client("owner").post(url, {"state": "approved"}, format="json").status_code == 404
    assert mine.post(url, {"state": "approved"}, format="json").status_code == 200
    assert VersionReview.objects.get(version=design.current).reviewer == people.viewer


def test_the_schema_lists_the_comment_and_review_endpoints(db: Any) -> None:
    from rest_framework.test import APIClient

    paths = APIClient().get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    base = "/api/v1/designs/{design_id}/versions/{number}/"
    assert set(paths[f"{base}comments/"]) == {"get", "post"}
    assert set(paths[f"{base}review/"]) == {"get", "post"}
    assert f"{base}comments/{{id}}/resolve/" in paths and f"{base}comments/{{id}}/unresolve/" in paths
    review = paths[f"{base}review/"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert review == {"$ref": "#/components/schemas/ReviewInputRequest"}


def test_review_history_lists_every_move_with_who_when_and_note(people: People, team_design: Any) -> None:
    """The history is the stored moves (ReviewEvent rows), oldest first: the editor's request for review, the
    owner's request for changes, the editor's second request and the owner's approval, each with its note;
    the review's own reviewed_at is the last move's time."""
    url = f"{_base(team_design)}review/"
    editor, owner = people.client("editor"), people.client("owner")
    assert editor.get(url).json()["history"] == []
    moves = [
        (editor, "in_review", "please look"),
        (owner, "changes_requested", "fewer nodes"),
        (editor, "in_review", "now 4 nodes"),
        (owner, "approved", "go"),
    ]
    for client, state, note in moves:
        assert client.post(url, {"state": state, "note": note}, format="json").status_code == 200
    bad = editor.post(url, {"state": "approved"}, format="json")  # refused: not added to the history
    assert bad.status_code == 404
    answer = people.client("viewer").get(url).json()
    history = answer["history"]
    assert [(h["from_state"], h["to_state"], h["actor"], h["note"]) for h in history] == [
        ("draft", "in_review", "eddie", "please look"),
        ("in_review", "changes_requested", "olivia", "fewer nodes"),
        ("changes_requested", "in_review", "eddie", "now 4 nodes"),
        ("in_review", "approved", "olivia", "go"),
    ]
    times = [h["created_at"] for h in history]
    assert times == sorted(times) and answer["reviewed_at"] == times[-1]
