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
from django.test import Client
from rest_framework.test import APIClient

from apps.plans.models import PlanSolution
from clusterdesigner.engine.serving import serving
from tests.designs.test_api import SPEC as DESIGN
from tests.teams.conftest import People, team_design

__all__ = ["team_design"]

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
    # The sweep page names the price each offering was priced at, and where it came from.
    page = Client()
    page.force_login(people.owner)
    offerings = page.get(f"/sweep/{team['id']}/").content.decode().split('id="sweep-offerings"')[1]
    cell = offerings.split("</table>")[0]
    assert f"$39.39/h (price book entry {team_book['coreweave']['id']}, 2026-01-01)" in cell
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


PLAN_URL = "/api/v1/capacity-plans/"
PLAN: dict[str, Any] = {
    "horizon_months": 12,
    "gpus_per_node": 8,
    "training": [{"name": "pretrain", "gpu_hours": 200_000, "gpus": 256, "deadline_month": 3}],
    "inference": [{"name": "chat", "peak_gpus": 16, "offpeak_fraction": 0.5}],
    # On-demand and 3-year reservations priced from the catalog's AWS p5 offering, through the plan's book.
    "supply": {
        "on_demand": {"offering": "aws-p5-48xlarge"},
        "reservations": [{"term_months": 36, "offering": "aws-p5-48xlarge"}],
    },
}
P5_RESERVED_3Y = 23.776  # seed catalog, USD an instance-hour; the team's discount is on-demand only


def _plan(client: APIClient, spec: dict[str, Any], team: int | None = None) -> int:
    response = client.post(PLAN_URL, {"name": "Plan 2027", "spec": spec}, format="json")
    assert response.status_code == 201, response.json()
    plan = int(response.json()["id"])
    if team is not None:
        moved = client.post(f"{PLAN_URL}{plan}/move/", {"team": team}, format="json")
        assert moved.status_code == 200, moved.json()
    return plan


def _solution(client: APIClient, plan: int, capture: Any) -> dict[str, Any]:
    with capture(execute=True):
        response = client.post(f"{PLAN_URL}{plan}/solve/")
    assert response.status_code in (200, 202), response.json()
    body = response.json()
    if response.status_code == 202:  # queued: the task ran in-process on commit
        body = client.get(body["url"]).json()
        assert body["status"] == "done", body
        body = body["solution"]
    return dict(body)


def _rows_by_name(solution: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in solution["prices"]}


def test_a_team_plan_on_the_worker_prices_through_the_teams_book_even_after_its_maker_left(
    people: People,
    team_book: dict[str, Any],
    team_design: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """The plan is resolved as the plan (its team's designs and book), not as the user who made it: its maker
    leaves the team, and a worker still solves it with the team's design and the team's discount."""
    settings.PLAN_SYNC_MAX_SIZE = 10  # 12 months × (2 runs + 1) = 36: queued to the worker
    spec = {**PLAN, "training": [*PLAN["training"], {"design_id": team_design.pk, "deadline_month": 6}]}
    editor = people.client("editor")
    plan = _plan(editor, spec, team=people.team.pk)
    people.team.memberships.filter(user=people.editor).delete()  # the maker leaves the team
    solution = _solution(people.client("owner"), plan, django_capture_on_commit_callbacks)
    rows = _rows_by_name(solution)
    # 20 % off p5 on-demand: $55.04 × 0.8 = $44.032 a node-hour (8-GPU instances, 8-GPU nodes).
    on_demand = rows["supply.on_demand"]
    assert (on_demand["origin"], on_demand["entry_id"], on_demand["as_of"]) == (
        "price_book",
        team_book["aws"]["id"],
        "2026-01-01",
    )
    assert on_demand["value"] == pytest.approx(P5_ON_DEMAND * 0.8, rel=1e-12)
    reserved = rows["supply.reservations.0"]
    assert (reserved["origin"], reserved["value"]) == ("catalog", P5_RESERVED_3Y)
    stored = PlanSolution.objects.get(version__plan_id=plan).snapshot["plan"]["supply"]
    assert stored["on_demand"]["usd_per_node_hour"] == pytest.approx(44.032, rel=1e-12)
    assert f"price book entry {team_book['aws']['id']}" in stored["on_demand"]["source"]
    # The same plan of someone outside the team: the catalog's $55.04, and its own solution.
    theirs = _solution(
        people.client("outsider"),
        _plan(people.client("outsider"), PLAN),
        django_capture_on_commit_callbacks,
    )
    assert _rows_by_name(theirs)["supply.on_demand"]["origin"] == "catalog"
    assert _rows_by_name(theirs)["supply.on_demand"]["value"] == P5_ON_DEMAND
    assert theirs["input_hash"] != solution["input_hash"]


def test_a_plans_solution_is_solved_again_when_its_book_changes(
    people: People, team_book: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    client = people.client("editor")
    plan = _plan(client, PLAN, team=people.team.pk)
    first = _solution(client, plan, django_capture_on_commit_callbacks)
    assert _solution(client, plan, django_capture_on_commit_callbacks)["input_hash"] == first["input_hash"]
    deleted = client.delete(f"/api/v1/price-entries/{team_book['aws']['id']}/")
    assert deleted.status_code == 204
    second = _solution(client, plan, django_capture_on_commit_callbacks)
    assert second["input_hash"] != first["input_hash"]
    assert _rows_by_name(second)["supply.on_demand"]["value"] == P5_ON_DEMAND  # the catalog's again
    # The plan buys on-demand hours: at the catalog's price it costs more than at 20 % off.
    assert second["result"]["on_demand_node_hours"] > 0
    assert second["result"]["total_usd"] > first["result"]["total_usd"]


def test_the_teams_quota_caps_a_plans_on_demand_nodes(
    people: People, team_book: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    """A quota of 3 p5 nodes on-demand is the on-demand option's cap_nodes: the MILP never rents more at
    once (3 nodes × 730 h = 2,190 node-hours a month at most)."""
    editor = people.client("editor")
    quota = _entry(
        editor,
        team=people.team.pk,
        kind="quota",
        offering="aws-p5-48xlarge",
        pricing_model="on_demand",
        value=3,
    )
    plan = _plan(editor, PLAN, team=people.team.pk)
    solution = _solution(editor, plan, django_capture_on_commit_callbacks)
    cap = _rows_by_name(solution)["supply.on_demand.cap_nodes"]
    assert (cap["origin"], cap["value"], cap["entry_id"]) == ("price_book", 3, quota["id"])
    stored = PlanSolution.objects.get(version__plan_id=plan).snapshot["plan"]["supply"]
    assert stored["on_demand"]["cap_nodes"] == 3
    assert max(m["on_demand_node_hours"] for m in solution["result"]["months"]) <= 3 * 730 + 1e-6
    # The plan page states the cap beside the price, and the entry the price came from.
    page = Client()
    page.force_login(people.viewer)
    prices = page.get(f"/plans/{plan}/").content.decode().split('id="plan-prices"')[1].split("</table>")[0]
    on_demand = prices.split("On-demand")[1].split("</tr>")[0]
    assert "$44.032 a node-hour, at most 3 nodes" in on_demand
    assert f"price book entry {team_book['aws']['id']}" in on_demand
    # Without the quota the same plan rents more than 3 nodes on-demand in some month.
    theirs = _solution(
        people.client("outsider"), _plan(people.client("outsider"), PLAN), django_capture_on_commit_callbacks
    )
    assert max(m["on_demand_node_hours"] for m in theirs["result"]["months"]) > 3 * 730


def test_a_sweep_and_a_recommendation_leave_out_what_is_over_the_teams_quota(
    people: People, team_book: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    quota = _entry(
        editor, team=people.team.pk, kind="quota", offering=CW_H100, pricing_model="on_demand", value=2
    )
    sweep = {**SWEEP, "team": people.team.pk, "params": {**SWEEP["params"], "nodes": [1, 2, 4]}}
    body = _run(editor, sweep, django_capture_on_commit_callbacks)
    on_demand = {r["nodes"]: r for r in body["result"]["rows"] if r["pricing_model"] == "on_demand"}
    assert on_demand[1]["cost_usd"] > 0 and on_demand[2]["cost_usd"] > 0
    assert on_demand[4]["cost_usd"] is None
    assert on_demand[4]["error"].startswith(
        "Over quota: on_demand supplies 2 nodes at most and the design needs 4"
    )
    row = _price(body["result"]["prices"]["h100-sxm"]["rows"], f"quota.{CW_H100}.on_demand")
    assert (row["origin"], row["value"], row["entry_id"]) == ("price_book", 2, quota["id"])
    recommend = {
        "kind": "recommend",
        "team": people.team.pk,
        "params": {
            "model": {"preset": "llama3-8b"},
            "tokens": 1e11,
            "deadline_days": 30,
            "interruption_tolerance": "none",
            "accelerators": ["h100-sxm"],
            "nodes": [1, 2, 4, 8],
        },
    }
    result = _run(editor, recommend, django_capture_on_commit_callbacks)["result"]
    over = [r for r in result["rows"] if r["pricing_model"] == "on_demand" and r["nodes"] > 2]
    assert over and all(r["cost_usd"] is None for r in over)
    picked = result["recommendation"]
    assert picked is not None
    assert picked["pricing_model"] != "on_demand" or picked["nodes"] <= 2
    # The recommendation is priced through the same book: its on-demand price is the team's 20 % off.
    cloud = _price(result["prices"]["h100-sxm"]["rows"], f"cloud.{CW_H100}.on_demand")
    assert cloud["value"] == pytest.approx(CW_ON_DEMAND * 0.8, rel=1e-12)


SERVING_URL = "/api/v1/serving/estimate/"
SERVING = dict(serving.EXAMPLE_REQUEST)  # Llama 3 70B on H100 SXM, 8 GPUs a node


def _options(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["option"]: c for c in body["costs"]}


def test_serving_through_the_api_prices_with_the_teams_book_and_an_outsider_sees_the_catalog(
    people: People, team_book: dict[str, Any]
) -> None:
    ours = people.client("viewer").post(f"{SERVING_URL}?team={people.team.pk}", SERVING, format="json")
    theirs = people.client("outsider").post(SERVING_URL, SERVING, format="json")
    assert ours.status_code == theirs.status_code == 200, ours.json()
    mine, other = _options(ours.json()), _options(theirs.json())
    # Renting bills instances × hours × the price (no storage or egress here): 20 % off is 0.8 × the total.
    for option in (f"{CW_H100} on_demand", "aws-p5-48xlarge on_demand"):
        assert mine[option]["billed_gpus"] == other[option]["billed_gpus"]
        assert mine[option]["total_usd"] == pytest.approx(0.8 * other[option]["total_usd"], rel=1e-9)
    # A model the discount does not cover is the catalog's for both (p5's 3-year reservation).
    assert (
        mine["aws-p5-48xlarge reserved_3y"]["total_usd"] == other["aws-p5-48xlarge reserved_3y"]["total_usd"]
    )
    assert mine["own"]["total_usd"] < other["own"]["total_usd"]  # $250,000 servers, not $322,500
    rows = {r["name"]: r for r in ours.json()["prices"]}
    server = rows["prices.on_prem.server_usd"]
    assert (server["origin"], server["value"], server["entry_id"], server["as_of"]) == (
        "price_book",
        SERVER_QUOTE,
        team_book["server"]["id"],
        "2026-01-01",
    )
    p5 = rows["prices.cloud.aws-p5-48xlarge.on_demand"]
    assert (p5["origin"], p5["entry_id"]) == ("price_book", team_book["aws"]["id"])
    assert p5["value"] == pytest.approx(P5_ON_DEMAND * 0.8, rel=1e-12)  # 44.032
    plain = {r["name"]: r for r in theirs.json()["prices"]}["prices.cloud.aws-p5-48xlarge.on_demand"]
    assert (plain["origin"], plain["value"]) == ("catalog", P5_ON_DEMAND)
    # A team one is not in is a 400 naming team; an anonymous caller has no book: every price the catalog's.
    refused = people.client("outsider").post(f"{SERVING_URL}?team={people.team.pk}", SERVING, format="json")
    assert refused.status_code == 400 and "team" in refused.json()["error"]["fields"]
    anonymous = APIClient().post(SERVING_URL, SERVING, format="json").json()
    assert {r["origin"] for r in anonymous["prices"]} == {"catalog"}
    assert _options(anonymous)["own"]["total_usd"] == other["own"]["total_usd"]


def test_the_serving_page_prices_with_the_teams_book_and_shows_where_each_price_came_from(
    people: People, team_book: dict[str, Any]
) -> None:
    viewer = Client()
    viewer.force_login(people.viewer)
    page = viewer.get("/serving/", {"team": people.team.pk})
    assert page.status_code == 200
    body = page.content.decode()
    table = body.split('id="price-sources"')[1].split("</table>")[0]
    row = table.split('data-name="prices.cloud.aws-p5-48xlarge.on_demand"')[1].split("</tr>")[0]
    assert 'data-origin="price_book"' in table and "44.03" in row
    assert f"price book entry {team_book['aws']['id']}" in row
    outsider = Client()
    outsider.force_login(people.outsider)
    plain = outsider.get("/serving/").content.decode()
    row = plain.split('data-name="prices.cloud.aws-p5-48xlarge.on_demand"')[1].split("</tr>")[0]
    assert 'data-origin="catalog"' in row and "55.04" in row
    assert outsider.get("/serving/", {"team": people.team.pk}).status_code == 400


def _design(client: APIClient, name: str, team: int | None = None) -> int:
    response = client.post("/api/v1/designs/", {"name": name, "spec": DESIGN}, format="json")
    assert response.status_code == 201, response.json()
    design = int(response.json()["id"])
    if team is not None:
        moved = client.post(f"/api/v1/designs/{design}/move/", {"team": team}, format="json")
        assert moved.status_code == 200, moved.json()
    return design


def test_compare_prices_each_design_through_its_owners_book(
    people: People, team_book: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    """Two team designs compared by a viewer take the team's prices; the same designs of someone outside the
    team take the catalog's. The design is 64 × 8 H100 SXM renting AWS p5 on-demand."""
    editor = people.client("editor")
    ours = [_design(editor, name, team=people.team.pk) for name in ("a", "b")]
    outsider = people.client("outsider")
    theirs = [_design(outsider, name) for name in ("a", "b")]
    compare = {"kind": "compare", "params": {"designs": ours}}
    mine = _run(people.client("viewer"), compare, django_capture_on_commit_callbacks)["result"]["designs"]
    other = _run(outsider, {**compare, "params": {"designs": theirs}}, django_capture_on_commit_callbacks)
    for row, plain in zip(mine, other["result"]["designs"], strict=True):
        p5 = _price(row["prices"], "cloud.aws-p5-48xlarge.on_demand")
        assert (p5["origin"], p5["entry_id"]) == ("price_book", team_book["aws"]["id"])
        assert p5["value"] == pytest.approx(P5_ON_DEMAND * 0.8, rel=1e-12)  # 44.032
        server = _price(row["prices"], "on_prem.server_usd")
        assert (server["origin"], server["value"]) == ("price_book", SERVER_QUOTE)
        catalog_p5 = _price(plain["prices"], "cloud.aws-p5-48xlarge.on_demand")
        assert (catalog_p5["origin"], catalog_p5["value"]) == ("catalog", P5_ON_DEMAND)
        # The on-demand option per GPU-hour: $55.04 × 0.2 / 8 = $1.376 less (the rest of the figure the same).
        usd = {o["key"]: o["usd_per_gpu_hour"] for o in row["options"]}
        plain_usd = {o["key"]: o["usd_per_gpu_hour"] for o in plain["options"]}
        key = next(k for k in usd if k.endswith("on_demand"))
        assert plain_usd[key] - usd[key] == pytest.approx(P5_ON_DEMAND * DISCOUNT / 8, rel=1e-9)


def test_a_stored_evaluation_is_served_without_resolving_the_book_until_the_book_changes(
    people: People, team_book: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The evaluate memo is keyed by the book's stamp (its entries' count and newest change), so a stored
    evaluation costs no price resolution; a changed entry moves the stamp and the answer."""
    from apps.designs import pricing

    editor = people.client("editor")
    design = _design(editor, "memo", team=people.team.pk)
    editor.post(f"/api/v1/designs/{design}/evaluate/")  # computed and stored
    first = editor.post(f"/api/v1/designs/{design}/evaluate/").json()  # read back, and kept in the memo
    calls: list[Any] = []
    real = pricing.prices_resolve
    monkeypatch.setattr(pricing, "prices_resolve", lambda **kw: calls.append(kw) or real(**kw))
    again = editor.post(f"/api/v1/designs/{design}/evaluate/").json()
    assert calls == [] and again == first
    changed = editor.patch(f"/api/v1/price-entries/{team_book['aws']['id']}/", {"value": 0.5}, format="json")
    assert changed.status_code == 200
    after = editor.post(f"/api/v1/designs/{design}/evaluate/").json()
    assert len(calls) == 1
    p5 = next(a for a in after["assumptions"] if a["name"] == "prices.cloud.aws-p5-48xlarge.on_demand")
    assert p5["value"] == pytest.approx(P5_ON_DEMAND * 0.5, rel=1e-12)  # half off: 27.52


def test_serving_owns_its_nodes_with_the_books_network_quote(people: People, catalog: Any) -> None:
    """The serving planner's owning cost takes the book's network quote as a design's does (a lump sum is the
    network's capex): through the API with the team's book, the owning total equals the same request with
    ``cost.network.capex_usd`` typed in, and differs from the catalog's network (switches and cables counted
    from placeholders); a network the request gives wins over the book's."""
    _entry(
        people.client("editor"),
        team=people.team.pk,
        kind="network_quote",
        network_item="lump_sum",
        value=40_000,
        source="Q-12 serving fabric",
    )
    viewer = people.client("viewer")
    booked = viewer.post(f"{SERVING_URL}?team={people.team.pk}", SERVING, format="json")
    typed_request = {**SERVING, "cost": {**SERVING.get("cost", {}), "network": {"capex_usd": 40_000}}}
    typed = viewer.post(SERVING_URL, typed_request, format="json")
    plain = viewer.post(SERVING_URL, SERVING, format="json")
    assert booked.status_code == typed.status_code == plain.status_code == 200, booked.json()
    own = _options(booked.json())["own"]["total_usd"]
    assert own == pytest.approx(_options(typed.json())["own"]["total_usd"], rel=1e-12)
    assert own != pytest.approx(_options(plain.json())["own"]["total_usd"], rel=1e-6)
    rows = {r["name"]: r for r in booked.json()["prices"]}
    assert rows["prices.network.capex_usd"]["origin"] == "price_book"
    given = {**SERVING, "cost": {**SERVING.get("cost", {}), "network": {"capex_usd": 10_000}}}
    mine = viewer.post(f"{SERVING_URL}?team={people.team.pk}", given, format="json")
    other = viewer.post(SERVING_URL, given, format="json")
    assert _options(mine.json())["own"]["total_usd"] == pytest.approx(
        _options(other.json())["own"]["total_usd"], rel=1e-12
    )
