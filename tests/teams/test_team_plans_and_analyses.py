"""A team's capacity plans and analyses through their URLs: members read by role, others get 404."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.analysis.models import Analysis
from apps.plans.models import CapacityPlan, PlanShareLink
from apps.plans.services import plan_create
from apps.teams.services import owned_move
from tests.plans.test_api import SPEC
from tests.teams.conftest import ROLES, People

URL = "/api/v1/capacity-plans/"

# (verb, path after /api/v1/capacity-plans/<id>/, body, expected for owner, editor, viewer, outsider, anon)
MATRIX = [
    ("get", "", None, (200, 200, 200, 404, 401)),
    ("get", "versions/", None, (200, 200, 200, 404, 401)),
    ("post", "solve/", None, (200, 200, 200, 404, 401)),
    ("patch", "", {"name": "Plan 2028"}, (200, 200, 404, 404, 401)),
    ("post", "share-links/", {}, (201, 201, 404, 404, 401)),
    ("delete", "", None, (204, 404, 404, 404, 401)),
]


@pytest.fixture
def team_plan(people: People) -> CapacityPlan:
    plan = plan_create(owner=people.editor, name="Plan 2027", spec=SPEC)
    return owned_move(user=people.editor, obj=plan, team_id=people.team.pk)  # type: ignore[return-value]


@pytest.mark.parametrize("who", ROLES)
def test_team_plan_endpoints_answer_each_role(people: People, team_plan: CapacityPlan, who: str) -> None:
    people.check_matrix(who, f"{URL}{team_plan.pk}/", MATRIX)
    after = CapacityPlan.objects.filter(pk=team_plan.pk).first()
    assert (after is None) is (who == "owner")
    if after is not None:
        assert after.name == ("Plan 2028" if who == "editor" else "Plan 2027")
        assert PlanShareLink.objects.filter(plan=team_plan).count() == (1 if who == "editor" else 0)


def test_plan_list_and_page_follow_the_team(people: People, team_plan: CapacityPlan, client: Any) -> None:
    names = [p["name"] for p in people.client("viewer").get(URL).json()["results"]]
    assert names == ["Plan 2027"]
    assert people.client("outsider").get(URL).json()["count"] == 0
    client.force_login(people.viewer)
    page = client.get(f"/plans/{team_plan.pk}/")
    assert page.status_code == 200 and 'id="plan-summary"' in page.content.decode()
    assert 'id="share-form"' not in page.content.decode()  # a viewer makes no links
    assert client.post(f"/plans/{team_plan.pk}/", {}).status_code == 404
    assert not PlanShareLink.objects.exists()
    client.force_login(people.outsider)
    assert client.get(f"/plans/{team_plan.pk}/").status_code == 404


def test_moving_a_plan_needs_an_editor_of_the_target_team(people: People) -> None:
    plan = plan_create(owner=people.viewer, name="vera's", spec=SPEC)
    vera = people.client("viewer")
    refused = vera.post(f"{URL}{plan.pk}/move/", {"team": people.team.pk}, format="json")
    assert refused.status_code == 400 and "team" in refused.json()["error"]["fields"]
    assert people.client("editor").post(f"{URL}{plan.pk}/move/", {"team": people.team.pk}).status_code == 404
    people.team.memberships.filter(user=people.viewer).update(role="editor")
    moved = vera.post(f"{URL}{plan.pk}/move/", {"team": people.team.pk}, format="json")
    assert moved.status_code == 200 and moved.json()["team"] == people.team.pk
    assert people.client("owner").get(f"{URL}{plan.pk}/").status_code == 200


def _analysis(owner: Any, team: Any = None) -> Analysis:
    return Analysis.objects.create(
        owner=owner,
        team=team,
        kind=Analysis.Kind.SWEEP,
        status=Analysis.Status.FAILED,
        error="stopped",
        params={},
        snapshot={},
        input_hash="0" * 64,
        deadline_at=timezone.now() + dt.timedelta(hours=1),
    )


def test_an_analysis_of_the_team_is_read_by_its_members_only(people: People) -> None:
    shared = _analysis(people.editor, people.team)
    personal = _analysis(people.editor)
    for who, expected in (("owner", 200), ("viewer", 200), ("editor", 200), ("outsider", 404)):
        assert people.client(who).get(f"/api/v1/analyses/{shared.pk}/").status_code == expected, who
    assert people.client("viewer").get(f"/api/v1/analyses/{personal.pk}/").status_code == 404
    assert people.client("editor").get(f"/api/v1/analyses/{personal.pk}/").status_code == 200
    assert [a["id"] for a in people.client("viewer").get("/api/v1/analyses/").json()["results"]] == [
        shared.pk
    ]


def test_an_evaluation_of_a_team_design_is_shared_with_the_team(people: People, team_design: Any) -> None:
    """Started by a member, the analysis is the team's (its viewers follow it); started by someone who reads
    the design only because it is shared with the organisation, it stays theirs alone."""
    body = {"kind": "evaluate", "params": {"design": team_design.pk}}
    started = people.client("editor").post("/api/v1/analyses/", body, format="json")
    assert started.status_code == 202, started.json()
    analysis = Analysis.objects.get(pk=started.json()["id"])
    assert analysis.team_id == people.team.pk and analysis.owner == people.editor
    assert people.client("viewer").get(f"/api/v1/analyses/{analysis.pk}/").status_code == 200
    assert people.client("outsider").get(f"/api/v1/analyses/{analysis.pk}/").status_code == 404
    assert people.client("outsider").post("/api/v1/analyses/", body, format="json").status_code == 404
    type(team_design).objects.filter(pk=team_design.pk).update(visibility="organisation")
    own = people.client("outsider").post("/api/v1/analyses/", body, format="json")
    assert own.status_code == 202 and Analysis.objects.get(pk=own.json()["id"]).team_id is None
    assert people.client("viewer").get(f"/api/v1/analyses/{own.json()['id']}/").status_code == 404
