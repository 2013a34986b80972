"""The draft's page parts through their URLs (issue #36): /designs/<id>/draft/results/ (the editor swaps it
in after each change it writes) and /designs/<id>/draft/discard/ (the banner's button), for the team's owner,
editor, viewer and an outsider; and the "Unsaved draft, based on vN" notice on the design page."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from apps.designs.drafts import draft_put
from apps.designs.models import DesignDraft
from tests.designs.test_api import SPEC
from tests.teams import conftest as teams
from tests.teams.conftest import People

people = teams.people  # the teams tests' fixtures: a team with one member of each role, and its design
team_design = teams.team_design


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "who, results, discard",
    [
        ("owner", 200, 302),
        ("editor", 200, 302),
        ("viewer", 404, 404),
        ("outsider", 404, 404),
    ],
)
def test_draft_results_and_discard_by_role(
    people: People, team_design: Any, who: str, results: int, discard: int
) -> None:
    """Each may see and discard only their own draft: the owner's and the editor's are theirs; a viewer, who
    reads the design, cannot have one (404), nor an outsider."""
    user = getattr(people, who)
    if who in ("owner", "editor"):
        spec = copy.deepcopy(SPEC)
        spec["costs"]["utilization"] = 0.35
        draft_put(design=team_design, user=user, spec=spec)
    client = _client(user)
    answer = client.get(f"/designs/{team_design.pk}/draft/results/")
    assert answer.status_code == results
    if results == 200:
        # The draft's results: its utilization, not v1's 70 %.
        shown = answer.content.decode()
        assert "at 35% utilization" in shown and "at 70% utilization" not in shown
        assert answer["Cache-Control"] == "private, no-store"
        page = client.get(f"/designs/{team_design.pk}/").content.decode()
        assert "Unsaved draft, based on v1" in page and 'id="discard-draft"' in page
    assert client.post(f"/designs/{team_design.pk}/draft/discard/").status_code == discard
    assert not DesignDraft.objects.exists()
    if who in ("owner", "editor"):
        assert client.get(f"/designs/{team_design.pk}/draft/results/").status_code == 404  # discarded


def test_the_design_page_says_nothing_without_a_draft(people: People, team_design: Any) -> None:
    page = _client(people.editor).get(f"/designs/{team_design.pk}/").content.decode()
    assert "Unsaved draft" not in page and 'id="draft-notice"' not in page
