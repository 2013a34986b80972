"""CSV import and export of cloud prices: all rows or none, bad rows reported by line number."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.catalog.models import CloudPrice
from apps.catalog.services import PriceImportError, cloud_price_export_csv, cloud_price_import_csv

HEADER = "offering,pricing_model,usd_per_hour,currency,region,as_of,source\n"


def test_good_rows_import(catalog: Any) -> None:
    before = CloudPrice.objects.count()
    saved = cloud_price_import_csv(
        content=HEADER + "aws-p5-48xlarge,reserved_3y,21.5,USD,us-east-1,2026-11-01,our quote\n"
    )
    assert len(saved) == 1 and CloudPrice.objects.count() == before + 1
    price = CloudPrice.objects.get(
        offering__slug="aws-p5-48xlarge", pricing_model="reserved_3y", as_of="2026-11-01"
    )
    assert price.usd_per_hour == 21.5 and price.source == "our quote"


def test_one_bad_row_imports_nothing_and_reports_each_line(catalog: Any) -> None:
    before = CloudPrice.objects.count()
    content = HEADER + (
        "aws-p5-48xlarge,reserved_3y,21.5,USD,us-east-1,2026-11-01,ok row\n"
        "aws-p5-48xlarge,spot,-3,USD,us-east-1,2026-11-01,negative\n"
        "no-such-offering,lease,abc,USD,,yesterday,\n"
    )
    with pytest.raises(PriceImportError) as info:
        cloud_price_import_csv(content=content)
    messages = [str(e) for e in info.value.errors]
    assert any(m.startswith("line 3: usd_per_hour") for m in messages)
    assert {e.field for e in info.value.errors if e.line == 4} == {
        "offering",
        "pricing_model",
        "usd_per_hour",
        "as_of",
        "source",
    }
    assert CloudPrice.objects.count() == before


def test_missing_columns_are_reported(catalog: Any) -> None:
    with pytest.raises(PriceImportError, match="1 bad row"):
        cloud_price_import_csv(content="offering,price\nx,1\n")


def test_export_then_import_round_trips(catalog: Any) -> None:
    prices = CloudPrice.objects.filter(offering__provider="aws").select_related("offering")
    exported = cloud_price_export_csv(prices=prices)
    assert exported.splitlines()[0].startswith(HEADER.strip())
    before = CloudPrice.objects.count()
    saved = cloud_price_import_csv(content=exported)
    assert len(saved) == prices.count() and CloudPrice.objects.count() == before


def test_api_import_requires_staff_and_reports_line_numbers(
    staff_client: Any, api_client: Any, catalog: Any
) -> None:
    bad = SimpleUploadedFile("p.csv", (HEADER + "aws-p5-48xlarge,spot,free,USD,,2026-01-01,x\n").encode())
    assert api_client.post("/api/v1/cloud-prices/import/", {"file": bad}, format="multipart").status_code in (
        401,
        403,
    )
    bad.seek(0)
    response = staff_client.post("/api/v1/cloud-prices/import/", {"file": bad}, format="multipart")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"line 2.usd_per_hour": ["not a number: 'free'"]}
    good = SimpleUploadedFile("p.csv", (HEADER + "aws-p5-48xlarge,spot,20,USD,,2026-01-01,x\n").encode())
    response = staff_client.post("/api/v1/cloud-prices/import/", {"file": good}, format="multipart")
    assert response.status_code == 201 and response.json() == {"imported": 1}


def test_api_export_is_csv(api_client: Any, catalog: Any) -> None:
    response = api_client.get("/api/v1/cloud-prices/export/", {"provider": "aws"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    lines = response.content.decode().splitlines()
    assert len(lines) > 1 and all(line.startswith("aws-") for line in lines[1:])


# The csv module refuses a field over 131,072 characters (csv.field_size_limit()'s default) with csv.Error.
OVERLONG_FIELD = HEADER + "aws-p5-48xlarge,spot,20,USD,,2026-01-01," + "x" * 140_000 + "\n"
UNREADABLE_UPLOADS = [
    ("a field over the csv module's limit", OVERLONG_FIELD.encode(), "not a readable CSV: field larger"),
    ("not UTF-8", b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text (byte 0)"),
]


@pytest.mark.parametrize(
    ("case", "content", "reason"), UNREADABLE_UPLOADS, ids=[c[0] for c in UNREADABLE_UPLOADS]
)
def test_admin_import_of_an_unreadable_file_shows_why_and_imports_nothing(
    case: str, content: bytes, reason: str, admin_client: Any, catalog: Any
) -> None:
    before = CloudPrice.objects.count()
    response = admin_client.post(
        "/admin/catalog/cloudprice/import-csv/", {"file": SimpleUploadedFile("p.csv", content)}
    )
    assert response.status_code == 200
    assert f"file: {reason}" in response.content.decode()
    assert CloudPrice.objects.count() == before


def test_api_import_of_a_field_over_the_csv_limit_is_a_400_on_file(staff_client: Any, catalog: Any) -> None:
    upload = SimpleUploadedFile("p.csv", OVERLONG_FIELD.encode())
    response = staff_client.post("/api/v1/cloud-prices/import/", {"file": upload}, format="multipart")
    assert response.status_code == 400
    error = response.json()["error"]
    assert list(error["fields"]) == ["file"] and error["fields"]["file"][0].startswith("not a readable CSV")
