"""A team named in a request is read one way by every app (apps/teams/params.py): the same 400 naming ``team``
for a value that is not a team's id, ``?team=`` empty included (it is not "your own"; leaving team out is),
and the same 400 for a team the user may not write into, through each URL that takes one."""

from __future__ import annotations

import html
from typing import Any

import pytest

from clusterdesigner.engine.serving import serving
from tests.designs.test_api import SPEC
from tests.measurements.conftest import RUN
from tests.pricebook.test_api import QUOTE
from tests.teams.conftest import People

NOT_AN_ID = {"team": ["must be the id of a team (a whole number from 1); leave team out for your own"]}
NOT_AN_EDITOR = {"team": ["must be the id of a team you own or edit"]}
SERVING = "/api/v1/serving/estimate/"


@pytest.mark.parametrize("team", ["", "%20", "abc", "0", "-1", "1.5", "٣", str(2**63)])
def test_a_team_query_that_is_not_an_id_is_the_same_400_everywhere(people: People, team: str) -> None:
    client = people.client("owner")
    answers = {
        "measured runs": client.get(f"/api/v1/measured-runs/?team={team}"),
        "their summary": client.get(f"/api/v1/measured-runs/summary/?team={team}"),
        "price book export": client.get(f"/api/v1/price-entries/export/?format=csv&team={team}"),
        "serving": client.post(f"{SERVING}?team={team}", dict(serving.EXAMPLE_REQUEST), format="json"),
    }
    for door, answer in answers.items():
        assert answer.status_code == 400, door
        assert answer.json()["error"]["fields"] == NOT_AN_ID, door


def test_a_team_query_left_out_is_your_own(people: People, catalog: Any) -> None:
    client = people.client("owner")
    assert client.get("/api/v1/measured-runs/").status_code == 200
    assert client.get("/api/v1/price-entries/export/?format=csv").status_code == 200
    assert client.post(SERVING, dict(serving.EXAMPLE_REQUEST), format="json").status_code == 200


def test_the_serving_pages_your_own_choice_sends_an_empty_team_which_is_no_error(
    people: People, catalog: Any, client: Any
) -> None:
    client.force_login(people.owner)
    assert client.get("/serving/?team=").status_code == 200
    refused = client.get("/serving/?team=abc")
    assert refused.status_code == 400 and html.escape(NOT_AN_ID["team"][0]) in refused.content.decode()


@pytest.mark.parametrize("team", [0, 2**63, "abc"])
def test_a_body_team_that_is_not_an_id_is_refused_naming_team(
    people: People, catalog: Any, team: Any
) -> None:
    client = people.client("editor")
    answers = {
        "analysis": client.post(
            "/api/v1/analyses/", {"kind": "evaluate", "team": team, "params": {}}, format="json"
        ),
        "measured run": client.post("/api/v1/measured-runs/", {**RUN, "team": team}, format="json"),
        "price entry": client.post("/api/v1/price-entries/", {**QUOTE, "team": team}, format="json"),
    }
    for door, answer in answers.items():
        assert answer.status_code == 400, door
        fields = answer.json()["error"]["fields"]
        assert list(fields) == ["team"], door
        if not isinstance(team, str):  # a string is refused for its JSON type first, naming team too
            assert fields == NOT_AN_ID, door


def test_a_team_you_only_view_is_the_same_400_for_every_write(people: People, catalog: Any) -> None:
    client = people.client("viewer")
    team = people.team.pk
    design = client.post("/api/v1/designs/", {"name": "v", "spec": SPEC}, format="json").json()
    answers = {
        "measured run": client.post("/api/v1/measured-runs/", {**RUN, "team": team}, format="json"),
        "price entry": client.post("/api/v1/price-entries/", {**QUOTE, "team": team}, format="json"),
        "design move": client.post(f"/api/v1/designs/{design['id']}/move/", {"team": team}, format="json"),
    }
    for door, answer in answers.items():
        assert answer.status_code == 400, door
        assert answer.json()["error"]["fields"] == NOT_AN_EDITOR, door
