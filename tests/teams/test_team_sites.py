"""Sites belong to a user or a team (issue #35: "designs, capacity plans, … price books and sites belong to a
user or a team"): a team's members read its sites and may place the team's designs in them, its owners and
editors change them, a viewer's change and anyone else's request answer 404, and only an owner or editor of
a team makes a site in it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.sites.models import Site
from tests.designs.test_design_site import AIR_40KW, _spec
from tests.teams.conftest import ROLES, People

ANON = 401


def _team_site(people: People) -> dict[str, Any]:
    created = people.client("editor").post(
        "/api/v1/sites/", {**AIR_40KW, "team": people.team.pk}, format="json"
    )
    assert created.status_code == 201, created.json()
    return dict(created.json())


def test_an_editor_makes_a_site_in_the_team_and_a_viewer_cannot(people: People) -> None:
    site = _team_site(people)
    assert site["team"] == people.team.pk and Site.objects.get(pk=site["id"]).owner == people.editor
    refused = people.client("viewer").post(
        "/api/v1/sites/", {**AIR_40KW, "name": "B", "team": people.team.pk}, format="json"
    )
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"]["team"] == ["must be the id of a team you own or edit"]
    assert Site.objects.count() == 1  # nothing half-saved


@pytest.mark.parametrize("who", ROLES)
def test_who_reads_changes_and_deletes_a_teams_site(people: People, who: str) -> None:
    site = _team_site(people)
    url = f"/api/v1/sites/{site['id']}/"
    client = people.client(who)
    read = {"owner": 200, "editor": 200, "viewer": 200, "outsider": 404, "anonymous": ANON}[who]
    write = {"owner": 200, "editor": 200, "viewer": 404, "outsider": 404, "anonymous": ANON}[who]
    assert client.get(url).status_code == read
    listed = client.get("/api/v1/sites/")
    if read == 200:
        assert [s["id"] for s in listed.json()["results"]] == [site["id"]]
    assert client.patch(url, {"max_kw_per_rack": 130}, format="json").status_code == write
    assert client.delete(url).status_code == (204 if write == 200 else write)
    assert Site.objects.filter(pk=site["id"]).exists() == (write != 200)


def test_the_teams_designs_are_placed_in_its_site_and_an_outsider_cannot_name_it(
    people: People, team_design: Any
) -> None:
    site = _team_site(people)
    spec = _spec("h100-sxm", 8, 8, site={"id": site["id"]})
    # The team's owner (who did not make the site) places the team's design in it: the site's power price
    # ($0.12/kWh) is the one the owning cost then takes, and its source names the saved site.
    owner = people.client("owner")
    saved = owner.patch(
        f"/api/v1/designs/{team_design.pk}/", {"version": team_design.version, "spec": spec}, format="json"
    )
    assert saved.status_code == 200, saved.json()
    evaluated = owner.post(f"/api/v1/designs/{team_design.pk}/evaluate/").json()
    sources = {a["name"]: a["source"] for a in evaluated["assumptions"]}
    assert sources["on_prem.usd_per_kwh"] == f"site Ashburn A (saved site {site['id']})"
    assert evaluated["spec"]["site"]["power_usd_per_kwh"] == 0.12
    # Someone outside the team cannot place their own design in it (nor learn that it exists).
    outsider = people.client("outsider").post(
        "/api/v1/designs/", {"name": "mine", "spec": copy.deepcopy(spec)}, format="json"
    )
    assert outsider.status_code == 400
    assert outsider.json()["error"]["fields"]["spec.site.id"] == [f"you have no site {site['id']}"]
