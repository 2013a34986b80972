"""Importing a price book from CSV (issue #35): all or nothing, each bad cell named by line and column."""

from __future__ import annotations

import io
from typing import Any

from rest_framework.test import APIClient

from apps.pricebook.models import PriceEntry
from tests.teams.conftest import People

HEADER = ",".join(
    ["kind", "accelerator", "gpus_per_node", "offering", "pricing_model", "value", "network_included"]
    + ["valid_from", "expires_on", "source"]
)
GOOD = [
    "server_quote,h100-sxm,8,,,250000,yes,2026-01-01,2026-12-31,Vendor X Q-1",
    "cloud_discount,,,aws-p5-48xlarge,,0.2,,2026-01-01,,EDP",
    "private_rate,,,aws-p5-48xlarge,reserved_1y,30,,2026-01-01,,private offer",
    "power,,,,,0.07,,2026-01-01,,utility contract",
    "colocation,,,,,180,,2026-01-01,,colo MSA",
]


def _upload(client: APIClient, lines: list[str], newline: str = "\n", **extra: Any) -> Any:
    data = io.BytesIO(newline.join(lines).encode())
    data.name = "book.csv"
    return client.post("/api/v1/price-entries/import/", {"file": data, **extra}, format="multipart")


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_good_file_imports_every_row(alice: Any, catalog: Any) -> None:
    response = _upload(_client(alice), [HEADER, *GOOD])
    assert response.status_code == 201, response.json()
    assert response.json() == {"imported": 5}
    quote = PriceEntry.objects.get(kind="server_quote")
    assert (quote.value, quote.network_included, str(quote.expires_on), quote.owner) == (
        250_000,
        True,
        "2026-12-31",
        alice,
    )
    assert PriceEntry.objects.get(kind="cloud_discount").pricing_model == "on_demand"
    assert PriceEntry.objects.get(kind="colocation").colocation_basis == "contracted_kw"


def test_bad_rows_name_line_and_column_and_nothing_is_saved(alice: Any, catalog: Any) -> None:
    lines = [
        HEADER,
        GOOD[0],
        "server_quote,h900,8,,,250000,,2026-01-01,,",  # line 3: unknown accelerator
        "power,,,,,lots,,2026-01-01,,",  # line 4: not a number
        GOOD[3],
    ]
    response = _upload(_client(alice), lines)
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert fields == {
        "line 3.accelerator": ["unknown accelerator 'h900'"],
        "line 4.value": ["A valid number is required."],
    }
    assert not PriceEntry.objects.exists()


def test_lines_ending_in_a_bare_carriage_return_import_as_lines(alice: Any, catalog: Any) -> None:
    """A file saved with CR line ends (classic Mac, some exporters) reads as its lines: the csv module
    refused a bare CR in an unquoted field (csv.Error, a 500) before the text was read with newline=""."""
    response = _upload(_client(alice), [HEADER, *GOOD], newline="\r")
    assert response.status_code == 201, response.json()
    assert response.json() == {"imported": 5}


def test_a_file_the_csv_module_cannot_read_is_a_400_naming_the_file(alice: Any, catalog: Any) -> None:
    """A cell over csv.field_size_limit() (131,072 characters) is a csv.Error: refused naming the file and
    the line, nothing saved (it answered 500)."""
    huge = "power,,,,,0.07,,2026-01-01,," + "x" * 140_000
    response = _upload(_client(alice), [HEADER, GOOD[0], huge])
    assert response.status_code == 400, response.json()
    message = response.json()["error"]["fields"]["file"][0]
    assert message.startswith("line 3: not readable as CSV: field larger than field limit"), message
    assert not PriceEntry.objects.exists()


def test_an_unknown_column_is_refused_by_name(alice: Any, catalog: Any) -> None:
    response = _upload(_client(alice), ["kind,value,valid_from,colour", "power,0.1,2026-01-01,red"])
    assert response.status_code == 400
    assert "unknown column 'colour'" in response.json()["error"]["fields"]["file"][0]
    assert not PriceEntry.objects.exists()


def test_a_team_import_needs_an_owner_or_editor(people: People, catalog: Any) -> None:
    refused = _upload(people.client("viewer"), [HEADER, *GOOD], team=people.team.pk)
    assert refused.status_code == 400 and "team" in refused.json()["error"]["fields"]
    assert not PriceEntry.objects.exists()
    made = _upload(people.client("editor"), [HEADER, *GOOD], team=people.team.pk)
    assert made.status_code == 201, made.json()
    assert PriceEntry.objects.filter(team=people.team).count() == 5
    listed = people.client("viewer").get("/api/v1/price-entries/").json()["results"]
    assert len(listed) == 5
