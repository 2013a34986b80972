"""A price book in and out as XLSX and CSV (issue #35): an XLSX import is all or nothing with each bad cell
named by the sheet's row and the column; the export round-trips (importing it gives the same book); who may
export which book."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import openpyxl
from rest_framework.test import APIClient

from apps.pricebook.models import PriceEntry
from apps.pricebook.serializers import IMPORT_COLUMNS
from tests.pricebook.test_resolution import _client
from tests.teams.conftest import People

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# Every kind, with its target fields: what a buyer's book might hold.
BOOK = [
    {
        "kind": "server_quote",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "value": 250_000,
        "network_included": True,
        "support_years": 3,
        "source": '=HYPERLINK("x") Dell Q-1',
        "attachment_name": "q1.pdf",
    },
    {"kind": "network_quote", "network_item": "switch", "switch_model": "ib-ndr-64", "value": 25_000},
    {
        "kind": "network_quote",
        "network_item": "lump_sum",
        "value": 1_500_000,
        "expires_on": dt.date(2026, 12, 31),
    },
    {"kind": "storage_quote", "value": 150},
    {"kind": "cloud_discount", "provider": "aws", "value": 0.125},
    {"kind": "enterprise_discount", "value": 0.05},
    {"kind": "private_rate", "offering": "aws-p5-48xlarge", "pricing_model": "reserved_3y", "value": 21.5},
    {"kind": "committed_rate", "offering": "aws-p5-48xlarge", "pricing_model": "savings_1y", "value": 30},
    {
        "kind": "capacity_block",
        "offering": "aws-p5-48xlarge",
        "duration_hours": 336,
        "block_nodes": 16,
        "value": 250_000,
    },
    {
        "kind": "quota",
        "offering": "aws-p5-48xlarge",
        "region": "us-east-1",
        "pricing_model": "spot",
        "value": 0,
    },
    {"kind": "power", "value": 0.071},
    {"kind": "colocation", "value": 180, "colocation_basis": "drawn_kw"},
    {"kind": "staff_cost", "value": 210_000},
]


def _workbook(rows: list[dict[str, Any]], header: tuple[str, ...] = IMPORT_COLUMNS) -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(list(header))
    for row in rows:
        sheet.append([{"valid_from": dt.date(2026, 1, 1), **row}.get(c) for c in header])
        for cell in sheet[sheet.max_row]:
            if isinstance(cell.value, str):
                cell.data_type = "s"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _upload(client: APIClient, content: bytes, name: str = "book.xlsx", **extra: Any) -> Any:
    data = io.BytesIO(content)
    data.name = name
    return client.post("/api/v1/price-entries/import/", {"file": data, **extra}, format="multipart")


def _book(user: Any) -> list[dict[str, Any]]:
    """The user's entries by their columns, in one order whatever order the file listed them in."""
    rows = [{c: getattr(e, c) for c in IMPORT_COLUMNS} for e in PriceEntry.objects.filter(owner=user)]
    return sorted(rows, key=repr)


def test_an_xlsx_book_of_every_kind_imports(alice: Any, catalog: Any) -> None:
    response = _upload(_client(alice), _workbook(BOOK))
    assert response.status_code == 201, response.json()
    assert response.json() == {"imported": len(BOOK)}
    block = PriceEntry.objects.get(kind="capacity_block")
    assert (block.duration_hours, block.block_nodes, block.pricing_model) == (336, 16, "on_demand")
    assert PriceEntry.objects.get(kind="quota").value == 0
    assert PriceEntry.objects.get(kind="server_quote").source == '=HYPERLINK("x") Dell Q-1'


def test_bad_xlsx_rows_name_row_and_column_and_nothing_is_saved(alice: Any, catalog: Any) -> None:
    rows = [
        BOOK[0],
        {"kind": "quota", "offering": "aws-p5-48xlarge", "value": 2.5},
        BOOK[3],
        {"kind": "network_quote", "network_item": "switch", "value": 1},
        {"kind": "power", "value": "lots"},
    ]
    response = _upload(_client(alice), _workbook(rows))
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    # The header is row 1: the quota is row 3, the switch line row 5, the power row 6.
    assert set(fields) == {"row 3.value", "row 5.switch_model", "row 6.value"}, fields
    assert "whole number" in fields["row 3.value"][0]
    assert not PriceEntry.objects.exists()


def test_an_unknown_column_or_a_broken_workbook_is_refused(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    response = _upload(client, _workbook([BOOK[3]], header=("kind", "value", "valid_from", "price")))
    assert response.status_code == 400
    assert "unknown column 'price'" in response.json()["error"]["fields"]["file"][0]
    response = _upload(client, b"PK\x03\x04 not really a zip")
    assert response.status_code == 400
    assert "not a readable XLSX workbook" in response.json()["error"]["fields"]["file"][0]
    assert not PriceEntry.objects.exists()


def test_the_xlsx_and_csv_exports_import_to_the_same_book(alice: Any, bob: Any, catalog: Any) -> None:
    assert _upload(_client(alice), _workbook(BOOK)).status_code == 201
    original = _book(alice)
    for fmt, content_type in (("xlsx", XLSX), ("csv", "text/csv; charset=utf-8")):
        response = _client(alice).get(f"/api/v1/price-entries/export/?format={fmt}")
        assert response.status_code == 200 and response["Content-Type"] == content_type
        PriceEntry.objects.filter(owner=bob).delete()
        imported = _upload(_client(bob), response.content, name=f"book.{fmt}")
        assert imported.status_code == 201, imported.json()
        assert _book(bob) == original, fmt
    # A formula-looking source is text in the CSV (a leading apostrophe), read back without it.
    csv_text = _client(alice).get("/api/v1/price-entries/export/?format=csv").content.decode()
    assert "'=HYPERLINK" in csv_text


def test_who_may_export_a_teams_book(people: People, catalog: Any) -> None:
    editor = people.client("editor")
    made = editor.post(
        "/api/v1/price-entries/",
        {"team": people.team.pk, "kind": "power", "value": 0.09, "valid_from": "2026-01-01"},
        format="json",
    )
    assert made.status_code == 201
    url = f"/api/v1/price-entries/export/?format=csv&team={people.team.pk}"
    for who in ("owner", "editor", "viewer"):
        response = people.client(who).get(url)
        assert response.status_code == 200, who
        assert response.content.decode().splitlines()[1].startswith("power,")
    assert people.client("outsider").get(url).status_code == 404
    # The outsider's own book holds nothing of the team's.
    own = people.client("outsider").get("/api/v1/price-entries/export/?format=csv")
    assert own.content.decode().splitlines() == [",".join(IMPORT_COLUMNS)]
    assert APIClient().get(url).status_code in (401, 403)


def test_a_viewer_cannot_import_into_the_teams_book(people: People, catalog: Any) -> None:
    response = _upload(people.client("viewer"), _workbook([BOOK[10]]), team=people.team.pk)
    assert response.status_code == 400
    assert "team" in response.json()["error"]["fields"]
    assert _upload(people.client("editor"), _workbook([BOOK[10]]), team=people.team.pk).status_code == 201
    assert PriceEntry.objects.get().team_id == people.team.pk


def test_a_team_id_beyond_a_database_integer_is_a_400_not_a_500(alice: Any, catalog: Any) -> None:
    """Schemathesis sent ``team=48222713943700831615965986816`` to the export (the import and an entry
    took it too): the database's bigint overflowed into a 500. The id's bound (2**63 − 1) is checked first."""
    client = _client(alice)
    huge = 2**63
    answer = client.get(f"/api/v1/price-entries/export/?format=xlsx&team={huge}")
    assert answer.status_code == 400 and "team" in answer.json()["error"]["fields"]
    data = {"file": io.BytesIO(b"kind\n"), "team": str(huge)}
    answer = client.post("/api/v1/price-entries/import/", data, format="multipart")
    assert answer.status_code == 400 and "team" in answer.json()["error"]["fields"]
    assert not PriceEntry.objects.exists()
