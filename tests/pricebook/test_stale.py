"""Stale prices (issue #35): changing or expiring a price book entry marks the designs that used it as stale,
with each figure then and now and the verdict before and after, on the design page and the API, until an
editor accepts the new prices. Who may read the status and accept it.

The design (tests.designs.test_api.SPEC at 5 % utilization) rents: 64 p5.48xlarge nodes on-demand at $55.04 a
node-hour win at that use. A quota of 0 on-demand nodes makes renting infeasible, so owning wins."""

from __future__ import annotations

import copy
from typing import Any

from django.test import Client

from apps.designs.services import design_create
from apps.teams.services import owned_move
from tests.designs.test_api import SPEC
from tests.pricebook.test_resolution import _client, _design, _entry, _evaluate
from tests.teams.conftest import People

RENT = "AWS p5.48xlarge on-demand"
P5 = "aws-p5-48xlarge"


def _renting_spec() -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = 0.05
    return spec


def _status(client: Any, design: int) -> dict[str, Any]:
    response = client.get(f"/api/v1/designs/{design}/prices/")
    assert response.status_code == 200, response.json()
    return dict(response.json())


def test_a_changed_entry_marks_the_design_stale_with_the_verdict_before_and_after(
    alice: Any, catalog: Any
) -> None:
    client = _client(alice)
    quota = _entry(client, kind="quota", offering=P5, pricing_model="on_demand", value=64)
    design = _design(client, _renting_spec())
    assert _evaluate(client, design)["verdict"]["option"] == RENT
    assert _status(client, design)["stale"] is False
    assert (
        client.patch(f"/api/v1/price-entries/{quota['id']}/", {"value": 0}, format="json").status_code == 200
    )
    status = _status(client, design)
    assert status["stale"] is True
    assert (status["verdict_before"], status["verdict_after"]) == (RENT, "Own (on-prem)")
    (change,) = status["changes"]
    assert change["figure"] == f"quota.{P5}.on_demand"
    assert (change["before"]["value"], change["after"]["value"]) == (64, 0)
    assert change["before"]["entry_id"] == change["after"]["entry_id"] == quota["id"]
    accepted = client.post(f"/api/v1/designs/{design}/prices/accept/")
    assert accepted.status_code == 200 and accepted.json()["stale"] is False
    assert _status(client, design)["stale"] is False


def test_an_expired_entry_marks_the_design_stale_and_names_the_catalog_figure_now(
    alice: Any, catalog: Any
) -> None:
    client = _client(alice)
    quote = _entry(client, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8, value=250_000,
                   valid_from="2024-01-01")  # fmt: skip
    design = _design(client)
    _evaluate(client, design)
    expired = client.patch(
        f"/api/v1/price-entries/{quote['id']}/", {"expires_on": "2024-06-30"}, format="json"
    )
    assert expired.status_code == 200
    (change,) = _status(client, design)["changes"]
    assert change["figure"] == "on_prem.server_usd"
    assert (change["before"]["origin"], change["before"]["value"]) == ("price_book", 250_000)
    assert (change["after"]["origin"], change["after"]["value"]) == ("catalog", 322_500)
    # The page shows it, with the accept button for its owner.
    page = Client()
    page.force_login(alice)
    html = page.get(f"/designs/{design}/").content.decode()
    assert 'id="stale-prices"' in html and 'id="accept-prices"' in html
    assert f"price book entry {quote['id']} of 2024-01-01" in html and "public catalog of 2025-03-03" in html
    assert page.post(f"/designs/{design}/prices/accept/").status_code == 302
    assert 'id="stale-prices"' not in page.get(f"/designs/{design}/").content.decode()


def test_a_new_version_starts_afresh(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    entry = _entry(client, kind="power", value=0.1)
    design = _design(client)
    _evaluate(client, design)
    client.patch(f"/api/v1/price-entries/{entry['id']}/", {"value": 0.2}, format="json")
    assert _status(client, design)["stale"] is True
    edited = client.patch(f"/api/v1/designs/{design}/", {"name": "renamed", "version": 1}, format="json")
    assert edited.status_code == 200, edited.json()
    assert _status(client, design)["stale"] is False


def test_who_may_read_and_accept_a_team_designs_price_status(people: People, catalog: Any) -> None:
    design = owned_move(
        user=people.editor,
        obj=design_create(owner=people.editor, name="team", spec=SPEC),
        team_id=people.team.pk,
    )
    base = f"/api/v1/designs/{design.pk}/prices/"
    for who, read, accept in (
        ("owner", 200, 200),
        ("editor", 200, 200),
        ("viewer", 200, 404),
        ("outsider", 404, 404),
    ):
        client = people.client(who)
        assert client.get(base).status_code == read, who
        assert client.post(f"{base}accept/").status_code == accept, who
    assert people.client("anonymous").get(base).status_code in (401, 403)
    viewer = Client()
    viewer.force_login(people.viewer)
    assert viewer.post(f"/designs/{design.pk}/prices/accept/").status_code == 404
