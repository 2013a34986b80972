"""A share link that follows the approved version (issue #36): it shows the version approved last and says
who approved it and when; before any approval it shows the version it froze and says none is approved; an
edit after approval leaves it on the approved version; a frozen link beside it does not move; it never
writes."""

from __future__ import annotations

from typing import Any

from django.test import Client

from apps.reviews.models import Comment, VersionReview
from tests.teams.conftest import People


def _link(people: People, design: Any, follow: bool) -> str:
    made = people.client("editor").post(
        f"/api/v1/designs/{design.pk}/share-links/", {"follow_approved": follow}, format="json"
    )
    assert made.status_code == 201 and made.json()["follow_approved"] is follow
    return str(made.json()["token"])


def _approve(people: People, design: Any, number: int) -> None:
    url = f"/api/v1/designs/{design.pk}/versions/{number}/review/"
    assert people.client("editor").post(url, {"state": "in_review"}, format="json").status_code == 200
    done = people.client("owner").post(url, {"state": "approved", "note": "ship it"}, format="json")
    assert done.status_code == 200


def _edit(people: People, design: Any, base: int) -> None:
    url = f"/api/v1/designs/{design.pk}/"
    edited = people.client("editor").patch(url, {"version": base, "name": f"v{base + 1}"}, format="json")
    assert edited.status_code == 200 and edited.json()["version"] == base + 1


def test_link_follows_the_approved_version(people: People, team_design: Any) -> None:
    follow, frozen = _link(people, team_design, True), _link(people, team_design, False)
    page = Client().get(f"/share/{follow}/").content.decode()
    assert 'id="share-unapproved"' in page and "<strong>version 1</strong>" in page
    _edit(people, team_design, 1)
    _approve(people, team_design, 2)
    page = Client().get(f"/share/{follow}/").content.decode()
    day = VersionReview.objects.get(version__number=2).reviewed_at.strftime("%Y-%m-%d")
    assert f"Approved version v2, approved by olivia on {day}: “ship it”." in page
    assert Client().get(f"/api/v1/shared/{follow}/").json()["version"] == 2
    assert Client().get(f"/api/v1/shared/{follow}/").json()["approved"] is True
    _edit(people, team_design, 2)  # v3, a draft: the approval stays on v2
    assert "Approved version v2," in Client().get(f"/share/{follow}/").content.decode()
    frozen_page = Client().get(f"/share/{frozen}/").content.decode()
    assert 'id="share-frozen"' in frozen_page and "<strong>version 1</strong>" in frozen_page
    assert Client().get(f"/api/v1/shared/{frozen}/").json()["approved"] is False


def test_share_links_never_write(people: People, team_design: Any) -> None:
    token = _link(people, team_design, True)
    base = f"/api/v1/designs/{team_design.pk}/versions/1/"
    anon = Client()
    anon.post(f"/share/{token}/", {"body": "hi", "state": "approved"})  # the page ignores a form post
    assert anon.post(f"{base}comments/?token={token}", {"body": "hi"}).status_code == 401
    assert anon.post(f"{base}review/", {"state": "in_review"}).status_code == 401
    assert Comment.objects.count() == 0 and VersionReview.objects.count() == 0
    team_design.refresh_from_db()
    assert team_design.approved_version_id is None
