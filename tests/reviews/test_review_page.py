"""The review page /designs/<id>/review/ through its URL (issue #36): who sees it and which buttons; a
comment with script and link payloads shown as text; resolving; approving through the page; the diff to the
last approved version once the design moved on from it."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.test import Client

from apps.designs.services import design_update
from apps.reviews.models import Comment, VersionReview
from tests.designs.test_api import SPEC
from tests.teams.conftest import People

PAYLOAD = "<script>alert(1)</script> [x](javascript:alert(1)) **why** 64 nodes?"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _url(design: Any) -> str:
    return f"/designs/{design.pk}/review/"


@pytest.mark.parametrize(
    "who, status, buttons",
    [
        ("owner", 200, ["review-to-in_review"]),
        ("editor", 200, ["review-to-in_review"]),
        ("viewer", 200, []),
        ("outsider", 404, []),
    ],
)
def test_who_sees_the_page(
    people: People, team_design: Any, who: str, status: int, buttons: list[str]
) -> None:
    page = _client(getattr(people, who)).get(_url(team_design))
    assert page.status_code == status
    if status == 200:
        html = page.content.decode()
        assert re.findall(r'id="(review-to-[a-z_]+)"', html) == buttons
        assert 'id="comment-form"' in html and 'id="results"' in html
    assert Client().get(_url(team_design)).status_code == 302  # anonymous: to sign in


def test_comment_payload_renders_as_text(people: People, team_design: Any) -> None:
    viewer = _client(people.viewer)
    posted = viewer.post(_url(team_design), {"action": "comment", "body": PAYLOAD})
    assert posted.status_code == 303
    html = viewer.get(_url(team_design)).content.decode()
    comments = html[html.index('id="comments"') :]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in comments and "<script>alert" not in comments
    assert "[x](javascript:alert(1))" in comments and 'href="javascript' not in comments
    assert "<strong>why</strong> 64 nodes?" in comments
    # the viewer resolves only their own: there is one Resolve button, for their comment
    assert comments.count("Resolve comment") == 1
    bad = viewer.post(_url(team_design), {"action": "comment", "body": "  "})
    assert bad.status_code == 400 and 'id="body-error"' in bad.content.decode()
    assert Comment.objects.count() == 1


def test_resolving_through_the_page(people: People, team_design: Any) -> None:
    theirs = Comment.objects.create(version=team_design.current, author=people.owner, body="mine")
    viewer, editor = _client(people.viewer), _client(people.editor)
    assert viewer.post(_url(team_design), {"action": "resolve", "comment": theirs.pk}).status_code == 404
    assert editor.post(_url(team_design), {"action": "resolve", "comment": theirs.pk}).status_code == 303
    theirs.refresh_from_db()
    assert (theirs.resolved, theirs.resolved_by) == (True, people.editor)
    assert 'id="no-comments"' in editor.get(_url(team_design)).content.decode()


def test_approve_through_the_page_then_the_diff_to_it(people: People, team_design: Any) -> None:
    owner, editor = _client(people.owner), _client(people.editor)
    assert editor.post(_url(team_design), {"action": "review", "state": "approved"}).status_code == 404
    bad = owner.post(_url(team_design), {"action": "review", "state": "approved"})
    assert bad.status_code == 400 and "cannot go from draft to approved" in bad.content.decode()
    assert editor.post(_url(team_design), {"action": "review", "state": "in_review"}).status_code == 303
    assert 'id="review-to-approved"' in owner.get(_url(team_design)).content.decode()
    done = owner.post(_url(team_design), {"action": "review", "state": "approved", "note": "agreed"})
    assert done.status_code == 303
    assert VersionReview.objects.get(version=team_design.current).state == "approved"
    spec = copy.deepcopy(SPEC)
    spec["costs"]["horizon_years"] = 3
    spec["costs"]["utilization"] = 0.5
    design_update(design=team_design, user=people.editor, base_version=1, spec=spec)
    html = owner.get(_url(team_design)).content.decode()
    assert "Review state: <span" in html and ">Draft</span>" in html
    assert "Approved version: <a" in html and "v1</a>, approved by olivia" in html
    changed = re.findall(r'<th scope="row"><code>([a-z_.]+)</code></th>', html)
    assert changed == ["costs.horizon_years", "costs.utilization"]
    assert 'id="attribution-total-usd"' in html
    v1 = owner.get(f"{_url(team_design)}?version=1").content.decode()
    assert 'id="review-diff-none"' in v1 and "This is the approved version." in v1
