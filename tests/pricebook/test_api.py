"""The price book API (issue #35): who may read and change an entry (a personal entry's owner; a team's
owners and editors change, its viewers read, anyone else 404), and every bad field a 400 naming it with
nothing saved."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.pricebook.models import PriceEntry
from tests.teams.conftest import ROLES, People

QUOTE: dict[str, Any] = {
    "kind": "server_quote",
    "accelerator": "h100-sxm",
    "gpus_per_node": 8,
    "value": 250_000,
    "network_included": True,
    "support_years": 3,
    "valid_from": "2026-01-01",
    "expires_on": "2026-12-31",
    "source": "Vendor X quote Q-123",
    "attachment_name": "quote-Q-123.pdf",
}
ANON = 401

# (verb, path after /api/v1/price-entries/<id>/, body, expected for owner, editor, viewer, outsider,
# anonymous)
MATRIX = [
    ("get", "", None, (200, 200, 200, 404, ANON)),
    ("patch", "", {"value": 240_000}, (200, 200, 404, 404, ANON)),
    ("put", "", {**QUOTE, "value": 230_000}, (200, 200, 404, 404, ANON)),
    ("delete", "", None, (204, 204, 404, 404, ANON)),
]


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_creates_reads_changes_and_deletes_a_personal_entry(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    created = client.post("/api/v1/price-entries/", QUOTE, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["unit"], body["entered_by"], body["team"]) == ("USD/server", "alice", None)
    assert (body["network_included"], body["support_years"], body["attachment_name"]) == (
        True,
        3,
        "quote-Q-123.pdf",
    )
    url = f"/api/v1/price-entries/{body['id']}/"
    changed = client.patch(url, {"value": 240_000}, format="json")
    assert changed.status_code == 200, changed.json()
    assert (changed.json()["value"], changed.json()["accelerator"]) == (240_000, "h100-sxm")
    assert [e["id"] for e in client.get("/api/v1/price-entries/").json()["results"]] == [body["id"]]
    assert client.delete(url).status_code == 204
    assert not PriceEntry.objects.exists()


def test_another_users_personal_entry_is_404(alice: Any, bob: Any, catalog: Any) -> None:
    entry = _client(alice).post("/api/v1/price-entries/", QUOTE, format="json").json()
    url = f"/api/v1/price-entries/{entry['id']}/"
    other = _client(bob)
    assert other.get(url).status_code == 404
    assert other.patch(url, {"value": 1}, format="json").status_code == 404
    assert other.put(url, QUOTE, format="json").status_code == 404
    assert other.delete(url).status_code == 404
    assert other.get("/api/v1/price-entries/").json()["results"] == []
    assert PriceEntry.objects.get().value == 250_000


@pytest.mark.parametrize("who", ROLES)
def test_team_entry_endpoints_answer_each_role(people: People, catalog: Any, who: str) -> None:
    made = people.client("editor").post(
        "/api/v1/price-entries/", {**QUOTE, "team": people.team.pk}, format="json"
    )
    assert made.status_code == 201, made.json()
    entry = made.json()
    assert entry["team"] == people.team.pk
    listed = people.client(who).get("/api/v1/price-entries/")
    if who == "anonymous":
        assert listed.status_code == ANON
    else:
        ids = [e["id"] for e in listed.json()["results"]]
        assert ids == ([] if who == "outsider" else [entry["id"]])
    people.check_matrix(who, f"/api/v1/price-entries/{entry['id']}/", MATRIX)
    after = PriceEntry.objects.filter(pk=entry["id"]).first()
    if who in ("owner", "editor"):
        assert after is None  # deleted last
    else:
        assert after is not None and after.value == 250_000


@pytest.mark.parametrize("who", ["viewer", "outsider"])
def test_only_a_teams_owners_and_editors_add_to_its_book(people: People, catalog: Any, who: str) -> None:
    response = people.client(who).post(
        "/api/v1/price-entries/", {**QUOTE, "team": people.team.pk}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"team": ["must be the id of a team you own or edit"]}
    assert not PriceEntry.objects.exists()


def test_an_entrys_team_cannot_be_changed(people: People, catalog: Any) -> None:
    client = people.client("editor")
    entry = client.post("/api/v1/price-entries/", QUOTE, format="json").json()
    moved = client.patch(f"/api/v1/price-entries/{entry['id']}/", {"team": people.team.pk}, format="json")
    assert moved.status_code == 400 and "team" in moved.json()["error"]["fields"]
    assert PriceEntry.objects.get().team_id is None


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({**QUOTE, "accelerator": ""}, "accelerator", "a server quote needs this field"),
        ({**QUOTE, "gpus_per_node": None}, "gpus_per_node", "a server quote needs this field"),
        ({**QUOTE, "offering": "aws-p5-48xlarge"}, "offering", "does not apply to a server quote"),
        ({**QUOTE, "accelerator": "h900"}, "accelerator", "unknown accelerator 'h900'"),
        ({**QUOTE, "value": -5}, "value", "must be above 0, got -5"),
        ({**QUOTE, "value": 2e8}, "value", "must be at most 100,000,000"),
        ({**QUOTE, "value": "lots"}, "value", "A valid number is required."),
        ({**QUOTE, "expires_on": "2025-01-01"}, "expires_on", "must be on or after valid_from"),
        ({**QUOTE, "valid_from": None}, "valid_from", "This field may not be null."),
        ({**QUOTE, "kind": "rebate"}, "kind", '"rebate" is not a valid choice.'),
        (
            {
                "kind": "cloud_discount",
                "offering": "aws-p5-48xlarge",
                "value": 20,
                "valid_from": "2026-01-01",
            },
            "value",
            "a discount is a fraction above 0 and below 1",
        ),
        (
            {
                "kind": "cloud_discount",
                "provider": "aws",
                "offering": "aws-p5-48xlarge",
                "value": 0.2,
                "valid_from": "2026-01-01",
            },  # fmt: skip
            "offering",
            "either a provider or an offering",
        ),
        (
            {"kind": "cloud_discount", "provider": "acme", "value": 0.2, "valid_from": "2026-01-01"},
            "provider",
            "unknown provider 'acme'",
        ),
        (
            {"kind": "private_rate", "offering": "aws-p5-48xlarge", "value": 40, "valid_from": "2026-01-01"},
            "pricing_model",
            "a private cloud rate needs this field",
        ),
        (
            {
                "kind": "private_rate",
                "offering": "aws-p5-48xlarge",
                "pricing_model": "monthly",
                "value": 40,
                "valid_from": "2026-01-01",
            },  # fmt: skip
            "pricing_model",
            '"monthly" is not a valid choice.',
        ),
        ({"kind": "power", "value": 0, "valid_from": "2026-01-01"}, "value", "must be above 0"),
        ({"kind": "power", "value": 0.1, "valid_from": "2026-01-01", "team": 999}, "team", "you own or edit"),
        (
            {"kind": "colocation", "value": 150, "colocation_basis": "racks", "valid_from": "2026-01-01"},
            "colocation_basis",
            '"racks" is not a valid choice.',
        ),
    ],
)
def test_a_bad_field_is_a_400_naming_it_and_saves_nothing(
    alice: Any, catalog: Any, body: dict[str, Any], field: str, message: str
) -> None:
    response = _client(alice).post("/api/v1/price-entries/", body, format="json")
    assert response.status_code == 400, response.json()
    fields = response.json()["error"]["fields"]
    assert message in " ".join(fields[field]), fields
    assert not PriceEntry.objects.exists()


def test_a_bad_change_is_a_400_and_keeps_the_entry(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    entry = client.post("/api/v1/price-entries/", QUOTE, format="json").json()
    bad = client.patch(f"/api/v1/price-entries/{entry['id']}/", {"provider": "aws"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["error"]["fields"] == {"provider": ["does not apply to a server quote"]}
    assert PriceEntry.objects.get().provider == ""
