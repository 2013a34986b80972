"""The price catalog export (GET /api/v1/cloud-prices/export/, no sign-in) writes text that a spreadsheet
would run as a formula behind an apostrophe, as the design exports do, and the importer reads it back."""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.catalog.models import CloudOffering, CloudPrice

HOSTILE = [
    ('=HYPERLINK("https://evil.example/x","click")', "us-east-1"),
    ("+cmd|' /C calc'!A0", "us-west-2"),
    ("-2+3+cmd|' /C calc'!A0", "eu-west-1"),
    ("@SUM(1+9)*cmd|' /C calc'!A0", "eu-central-1"),
    ("\t=1+1", "=1+1"),
    ("\r=1+1", "@region"),
]


@pytest.fixture
def hostile_prices(catalog: Any) -> list[CloudPrice]:
    offering = CloudOffering.objects.get(slug="aws-p5-48xlarge")
    return [
        CloudPrice.objects.create(
            offering=offering,
            pricing_model="spot",
            usd_per_hour=30 + i,
            region=region,
            as_of=dt.date(2026, 1, 1 + i),
            source=source,
        )
        for i, (source, region) in enumerate(HOSTILE)
    ]


def _rows(response: Any) -> list[dict[str, str]]:
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def test_price_export_escapes_text_that_starts_like_a_formula(hostile_prices: Any, api_client: Any) -> None:
    rows = _rows(api_client.get("/api/v1/cloud-prices/export/", {"provider": "aws"}))
    by_date = {row["as_of"]: row for row in rows if row["pricing_model"] == "spot"}
    for i, (source, region) in enumerate(HOSTILE):
        row = by_date[f"2026-01-0{i + 1}"]
        assert row["source"] == "'" + source
        assert row["region"] == ("'" + region if region[0] in "=+-@" else region)
        assert row["usd_per_hour"] == str(30.0 + i)  # numbers stay numbers
    # Nothing a spreadsheet would run is left in any cell of the file.
    for row in rows:
        assert not any(value.startswith(("=", "+", "-", "@", "\t", "\r")) for value in row.values())


def test_an_escaped_export_imports_back_unchanged(
    hostile_prices: Any, api_client: Any, staff_client: Any
) -> None:
    exported = api_client.get("/api/v1/cloud-prices/export/", {"provider": "aws"}).content
    # The importer strips whitespace around every cell (a leading tab or CR too): compare the rest.
    before = {(p.pk, p.source.strip(), p.region.strip()) for p in CloudPrice.objects.all()}
    upload = {"file": SimpleUploadedFile("p.csv", exported)}
    response = staff_client.post("/api/v1/cloud-prices/import/", upload, format="multipart")
    assert response.status_code == 201, response.content
    after = {(p.pk, p.source, p.region) for p in CloudPrice.objects.all()}
    assert after == before
    assert {"=1+1", "+cmd|' /C calc'!A0"} <= {source for _, source, _ in after}
