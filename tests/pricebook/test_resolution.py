"""A design's prices resolved through its owner's price book (issue #35), checked through the evaluate API
against hand calculations: design value → the owner's (team's) newest unexpired entry → the public catalog.

The design is tests.designs.test_api.SPEC: 64 nodes × 8 H100 SXM, 2-year horizon, 70 % utilization, AWS
p5.48xlarge on-demand. With the seed catalog its server is the DGX H100 at $322,500 (server type dgx-h100) and
p5 on-demand is $55.04 an instance-hour (8 GPUs, so $55.04 a node-hour)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.designs.services import design_create
from apps.teams.services import owned_move
from tests.designs.test_api import SPEC
from tests.teams.conftest import People

CATALOG_SERVER_USD = 322_500.0
CATALOG_P5_ON_DEMAND = 55.04
NODES = 64


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _entry(client: APIClient, **fields: Any) -> dict[str, Any]:
    body = {"valid_from": "2026-01-01", "source": "test quote", **fields}
    response = client.post("/api/v1/price-entries/", body, format="json")
    assert response.status_code == 201, response.json()
    return dict(response.json())


def _evaluate(client: APIClient, design_id: int) -> dict[str, Any]:
    response = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert response.status_code == 200, response.json()
    return dict(response.json())


def _design(client: APIClient, spec: dict[str, Any] | None = None) -> int:
    response = client.post("/api/v1/designs/", {"name": "70B", "spec": spec or SPEC}, format="json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def _price(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(row for row in result["assumptions"] if row["name"] == f"prices.{name}")


def _p5(result: dict[str, Any]) -> dict[str, Any]:
    return dict(result["costs"]["aws-p5-48xlarge"])


def test_a_server_quote_changes_owning_capex_by_the_hand_figure(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    before = _p5(_evaluate(client, design))["on_prem"]
    assert before["capex_parts"]["servers"]["usd"] == NODES * CATALOG_SERVER_USD  # 20,640,000
    entry = _entry(client, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8, value=250_000)
    result = _evaluate(client, design)
    after = _p5(result)["on_prem"]
    # Servers 64 × $250,000 = $16,000,000; installation is 3 % of all hardware, so capex falls by
    # 64 × ($322,500 − $250,000) × 1.03 = $4,779,200.
    assert after["capex_parts"]["servers"]["usd"] == 16_000_000
    assert before["capex_usd"] - after["capex_usd"] == pytest.approx(4_779_200, rel=1e-12)
    row = _price(result, "on_prem.server_usd")
    assert (row["origin"], row["value"], row["entry_id"], row["as_of"]) == (
        "price_book",
        250_000,
        entry["id"],
        "2026-01-01",
    )
    assert f"price book entry {entry['id']}" in row["source"] and "test quote" in row["source"]


def test_a_cloud_discount_changes_the_rent_npv_by_the_hand_figure(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    before = _p5(_evaluate(client, design))
    _entry(client, kind="cloud_discount", offering="aws-p5-48xlarge", value=0.2)
    after = _p5(_evaluate(client, design))
    assert after["cloud"]["on_demand"]["usd_per_node_hour"] == pytest.approx(CATALOG_P5_ON_DEMAND * 0.8)
    rent = {option["name"]: option["npv_usd"] for option in before["cashflow"]["rent"]}
    rent_after = {option["name"]: option["npv_usd"] for option in after["cashflow"]["rent"]}
    # On-demand compute is billed monthly at the end of each month: 64 nodes × $55.04 × 730 h × 0.7 =
    # $1,800,028.16 a month, discounted at 8 %/year compounded monthly, v = 1.08^(−1/12), over 24 months:
    # Σ v^m (m = 1..24) = 22.17291141930017. 20 % off removes 0.2 × 1,800,028.16 × 22.1729114 = $7,982,372.99
    # of the rent NPV (storage, billed apart, does not change; prices flat, no tax: the engine defaults).
    v = 1.08 ** (-1 / 12)
    hand = 0.2 * NODES * CATALOG_P5_ON_DEMAND * 730 * 0.7 * sum(v**m for m in range(1, 25))
    assert hand == pytest.approx(7_982_372.99, abs=0.01)
    assert rent["on_demand"] - rent_after["on_demand"] == pytest.approx(hand, rel=1e-9)


def test_a_provider_discount_applies_when_the_offering_has_none(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    _entry(client, kind="cloud_discount", provider="aws", value=0.1)
    result = _evaluate(client, design)
    assert _p5(result)["cloud"]["on_demand"]["usd_per_node_hour"] == pytest.approx(49.536)  # 55.04 × 0.9
    offering = _entry(client, kind="cloud_discount", offering="aws-p5-48xlarge", value=0.3)
    result = _evaluate(client, design)
    assert _p5(result)["cloud"]["on_demand"]["usd_per_node_hour"] == pytest.approx(38.528)  # 55.04 × 0.7
    assert _price(result, "cloud.aws-p5-48xlarge.on_demand")["entry_id"] == offering["id"]


def test_a_private_rate_replaces_the_catalog_rate(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    _entry(client, kind="cloud_discount", offering="aws-p5-48xlarge", value=0.2)
    rate = _entry(
        client, kind="private_rate", offering="aws-p5-48xlarge", pricing_model="on_demand", value=40
    )
    result = _evaluate(client, design)
    on_demand = _p5(result)["cloud"]["on_demand"]
    assert on_demand["usd_per_node_hour"] == 40  # the private rate wins over the discount
    # 64 nodes × $40 × 17,520 h × 0.7 = $31,395,840
    assert on_demand["parts"]["compute"]["usd"] == pytest.approx(31_395_840, rel=1e-12)
    row = _price(result, "cloud.aws-p5-48xlarge.on_demand")
    assert (row["origin"], row["entry_id"], row["value"]) == ("price_book", rate["id"], 40)


def test_the_designs_own_value_wins_over_the_book(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    spec = copy.deepcopy(SPEC)
    spec["costs"]["on_prem"] = {"server_usd": 300_000, "usd_per_kwh": 0.1}
    spec["costs"]["cloud"][0]["usd_per_node_hour"] = {"on_demand": 50}
    design = _design(client, spec)
    _entry(client, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8, value=250_000)
    _entry(client, kind="power", value=0.05)
    _entry(client, kind="private_rate", offering="aws-p5-48xlarge", pricing_model="on_demand", value=40)
    result = _evaluate(client, design)
    assert _p5(result)["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 300_000
    assert _p5(result)["cloud"]["on_demand"]["usd_per_node_hour"] == 50
    for name in ("on_prem.server_usd", "on_prem.usd_per_kwh", "cloud.aws-p5-48xlarge.on_demand"):
        assert _price(result, name)["origin"] == "design"


def test_power_and_colocation_entries_set_the_yearly_lines(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    before = _p5(_evaluate(client, design))["on_prem"]["annual"]
    _entry(client, kind="power", value=0.12)
    _entry(client, kind="colocation", value=200, colocation_basis="contracted_kw")
    after = _p5(_evaluate(client, design))["on_prem"]["annual"]
    # Energy is linear in $/kWh: 0.12 / 0.08 (the default) = 1.5 ×; colocation 200 / 150 of the default's.
    assert after["energy"]["usd"] == pytest.approx(before["energy"]["usd"] * 1.5, rel=1e-12)
    assert after["colocation"]["usd"] == pytest.approx(before["colocation"]["usd"] * 200 / 150, rel=1e-12)


def test_an_expired_entry_is_ignored_with_a_warning_naming_it(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    design = _design(client)
    old = _entry(
        client,
        kind="server_quote",
        accelerator="h100-sxm",
        gpus_per_node=8,
        value=250_000,
        valid_from="2024-01-01",
        expires_on="2024-06-30",
    )
    result = _evaluate(client, design)
    assert _p5(result)["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * CATALOG_SERVER_USD
    assert _price(result, "on_prem.server_usd")["origin"] == "catalog"
    warnings = [f for f in result["findings"] if f["code"] == "price_entry_expired"]
    assert len(warnings) == 1 and warnings[0]["severity"] == "warning"
    assert f"price book entry {old['id']}" in warnings[0]["message"]
    assert "expired on 2024-06-30" in warnings[0]["message"]


def test_a_team_design_uses_the_teams_book_and_another_users_design_does_not(
    people: People, catalog: Any
) -> None:
    _entry(people.client("editor"), team=people.team.pk, kind="server_quote", accelerator="h100-sxm",
           gpus_per_node=8, value=200_000)  # fmt: skip
    team_design = owned_move(
        user=people.editor,
        obj=design_create(owner=people.editor, name="team", spec=SPEC),
        team_id=people.team.pk,
    )
    for who in ("owner", "editor", "viewer"):
        result = _evaluate(people.client(who), team_design.pk)
        assert _p5(result)["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 200_000
    outsider = people.client("outsider")
    theirs = _design(outsider)
    assert _p5(_evaluate(outsider, theirs))["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 322_500
    # The editor's own private design resolves through the editor's personal book (empty), not the team's.
    mine = _design(people.client("editor"))
    result = _evaluate(people.client("editor"), mine)
    assert _p5(result)["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 322_500


def test_the_stored_evaluation_is_not_shared_across_owners_with_different_books(
    people: People, catalog: Any
) -> None:
    """One version, evaluated while the editor's own (no book) and again once moved into the team (whose book
    quotes $200,000): the second answer is the team's, not the stored first one; and a changed entry is a
    new evaluation too."""
    editor = people.client("editor")
    entry = _entry(editor, team=people.team.pk, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8,
                   value=200_000)  # fmt: skip
    design = _design(editor)
    assert _p5(_evaluate(editor, design))["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 322_500
    moved = editor.post(f"/api/v1/designs/{design}/move/", {"team": people.team.pk}, format="json")
    assert moved.status_code == 200, moved.json()
    assert _p5(_evaluate(editor, design))["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 200_000
    changed = editor.patch(f"/api/v1/price-entries/{entry['id']}/", {"value": 210_000}, format="json")
    assert changed.status_code == 200, changed.json()
    assert _p5(_evaluate(editor, design))["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 210_000


def test_an_older_live_quote_is_used_when_a_newer_one_expired_and_a_future_one_waits(
    alice: Any, catalog: Any
) -> None:
    client = _client(alice)
    design = _design(client)
    live = _entry(client, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8, value=260_000,
                  valid_from="2024-01-01")  # fmt: skip
    newer = _entry(client, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8, value=240_000,
                   valid_from="2024-06-01", expires_on="2024-12-31")  # fmt: skip
    _entry(
        client,
        kind="server_quote",
        accelerator="h100-sxm",
        gpus_per_node=8,
        value=100_000,
        valid_from="2099-01-01",
    )  # fmt: skip  (not valid yet: never used)
    # A quote for another node size is never used for this one.
    _entry(client, kind="server_quote", accelerator="h100-sxm", gpus_per_node=4, value=90_000)
    result = _evaluate(client, design)
    assert _p5(result)["on_prem"]["capex_parts"]["servers"]["usd"] == NODES * 260_000
    assert _price(result, "on_prem.server_usd")["entry_id"] == live["id"]
    (warning,) = [f for f in result["findings"] if f["code"] == "price_entry_expired"]
    assert f"price book entry {newer['id']}" in warning["message"]
    assert f"price book entry {live['id']} (server quote h100-sxm × 8) is used" in warning["message"]
