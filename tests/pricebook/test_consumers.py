"""Every consumer of prices resolves through the same price book (issue #35): sweeps, recommend, compare, the
capacity plan and the serving planner, each through its URL, with a team's book holding a server quote and a
cloud discount; a member of another team sees the catalog's figures, and no stored result crosses owners.

Hand figures (seed catalog): the DGX H100 (8 × H100 SXM) server is $322,500 (server type dgx-h100); the team
quotes $250,000. CoreWeave's 8 × H100 node, the offering a sweep prices H100 on-demand on, is $49.24 an
instance-hour; AWS p5.48xlarge (8 GPUs) is $55.04. The team's discount is 20 % off every on-demand price of
each provider: CoreWeave 49.24 × 0.8 = 39.392 and p5 55.04 × 0.8 = 44.032 USD a node-hour."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.teams.conftest import People

SERVER_QUOTE = 250_000.0
CATALOG_SERVER_USD = 322_500.0
CW_H100 = "coreweave-8x-h100-node"
CW_ON_DEMAND = 49.24
P5_ON_DEMAND = 55.04
DISCOUNT = 0.2


def _entry(client: APIClient, **fields: Any) -> dict[str, Any]:
    body = {"valid_from": "2026-01-01", "source": "test quote", **fields}
    response = client.post("/api/v1/price-entries/", body, format="json")
    assert response.status_code == 201, response.json()
    return dict(response.json())


@pytest.fixture
def team_book(people: People, catalog: Any) -> dict[str, Any]:
    """The team's book: a server quote for 8 × H100 SXM and 20 % off on-demand at CoreWeave and at AWS."""
    editor = people.client("editor")
    team = people.team.pk
    return {
        "server": _entry(
            editor,
            team=team,
            kind="server_quote",
            accelerator="h100-sxm",
            gpus_per_node=8,
            value=SERVER_QUOTE,
        ),
        "coreweave": _entry(
            editor,
            team=team,
            kind="cloud_discount",
            provider="coreweave",
            pricing_model="on_demand",
            value=0.2,
        ),
        "aws": _entry(
            editor, team=team, kind="cloud_discount", provider="aws", pricing_model="on_demand", value=0.2
        ),
    }


def _run(client: APIClient, payload: dict[str, Any], capture: Any) -> dict[str, Any]:
    with capture(execute=True):
        response = client.post("/api/v1/analyses/", payload, format="json")
    assert response.status_code == 202, response.json()
    body = client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded", body
    return dict(body)


SWEEP = {
    "kind": "sweep",
    "params": {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
        "accelerators": ["h100-sxm"],
        "nodes": [1],
        "pricing_models": ["on_demand", "own"],
    },
}


def _rows(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["pricing_model"]: r for r in body["result"]["rows"]}


def _price(rows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(r for r in rows if r["name"] == f"prices.{name}")


def test_a_sweep_prices_through_the_teams_book_and_an_outsider_sees_the_catalog(
    people: People, team_book: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    team = _run(
        people.client("viewer"), {**SWEEP, "team": people.team.pk}, django_capture_on_commit_callbacks
    )
    outsider = _run(people.client("outsider"), SWEEP, django_capture_on_commit_callbacks)
    ours, theirs = _rows(team), _rows(outsider)
    assert ours["on_demand"]["offering"] == theirs["on_demand"]["offering"] == CW_H100
    # On-demand: $49.24 a node-hour of 8 GPUs, 20 % off, is $49.24 × 0.2 / 8 = $1.231 less a GPU-hour (the
    # storage the row adds to it is the same in both).
    cheaper = theirs["on_demand"]["usd_per_gpu_hour"] - ours["on_demand"]["usd_per_gpu_hour"]
    assert cheaper == pytest.approx(CW_ON_DEMAND * DISCOUNT / 8, rel=1e-9)
    # Owning one node: the server $322,500 → $250,000; installation is 3 % of the hardware, so capex falls by
    # ($322,500 − $250,000) × 1.03 = $74,675.
    assert theirs["own"]["capex_usd"] - ours["own"]["capex_usd"] == pytest.approx(74_675, rel=1e-9)
    # Each price says where it came from: the book's entry and date, or the catalog.
    rows = team["result"]["prices"]["h100-sxm"]["rows"]
    server = _price(rows, "on_prem.server_usd")
    assert (server["origin"], server["value"], server["entry_id"], server["as_of"]) == (
        "price_book",
        SERVER_QUOTE,
        team_book["server"]["id"],
        "2026-01-01",
    )
    cloud = _price(rows, f"cloud.{CW_H100}.on_demand")
    assert (cloud["origin"], cloud["entry_id"]) == ("price_book", team_book["coreweave"]["id"])
    assert cloud["value"] == pytest.approx(CW_ON_DEMAND * 0.8, rel=1e-12)  # 39.392
    plain = _price(outsider["result"]["prices"]["h100-sxm"]["rows"], f"cloud.{CW_H100}.on_demand")
    assert (plain["origin"], plain["value"]) == ("catalog", CW_ON_DEMAND)
    # The team's sweep is the team's: its owner sees it, the outsider does not.
    assert people.client("owner").get(f"/api/v1/analyses/{team['id']}/").status_code == 200
    assert people.client("outsider").get(f"/api/v1/analyses/{team['id']}/").status_code == 404


def test_a_sweep_for_a_team_one_is_not_in_is_a_400_naming_team(people: People, catalog: Any) -> None:
    response = people.client("outsider").post(
        "/api/v1/analyses/", {**SWEEP, "team": people.team.pk}, format="json"
    )
    assert response.status_code == 400
    assert "team" in response.json()["error"]["fields"]


def test_the_same_sweep_of_a_changed_book_is_computed_again(
    people: People, team_book: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    """The analysis's key holds the resolved prices: a changed entry is a new sweep, never the stored one."""
    client = people.client("editor")
    first = _run(client, {**SWEEP, "team": people.team.pk}, django_capture_on_commit_callbacks)
    again = _run(client, {**SWEEP, "team": people.team.pk}, django_capture_on_commit_callbacks)
    assert again["id"] == first["id"]
    response = client.patch(
        f"/api/v1/price-entries/{team_book['coreweave']['id']}/", {"value": 0.5}, format="json"
    )
    assert response.status_code == 200, response.json()
    changed = _run(client, {**SWEEP, "team": people.team.pk}, django_capture_on_commit_callbacks)
    assert changed["id"] != first["id"]
    # Half off instead of 20 % off: $49.24 × (0.5 − 0.2) / 8 = $1.8465 less a GPU-hour.
    cheaper = _rows(first)["on_demand"]["usd_per_gpu_hour"] - _rows(changed)["on_demand"]["usd_per_gpu_hour"]
    assert cheaper == pytest.approx(CW_ON_DEMAND * 0.3 / 8, rel=1e-9)
