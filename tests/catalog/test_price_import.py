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
    assert response.json() == {
        "error": {
            "code": "invalid",
            "message": "1 bad row(s); nothing was imported",
            "fields": {"line 2.usd_per_hour": ["not a number: 'free'"]},
        }
    }
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
    ("a field over the csv module's limit", OVERLONG_FIELD.encode(), "not readable as CSV: field larger"),
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
    # Named at the line the unreadable record starts on, as every other row error is.
    assert list(error["fields"]) == ["line 2.file"]
    assert error["fields"]["line 2.file"][0].startswith("not readable as CSV: field larger")


def test_api_import_of_a_file_that_is_not_utf8_is_a_400_naming_the_file(
    staff_client: Any, catalog: Any
) -> None:
    upload = SimpleUploadedFile("p.csv", b"\x89PNG\r\n\x1a\n\x00\x00")
    response = staff_client.post("/api/v1/cloud-prices/import/", {"file": upload}, format="multipart")
    reason = "not UTF-8 text (byte 0); save the CSV as UTF-8"
    assert (response.status_code, response.json()) == (
        400,
        {"error": {"code": "invalid", "message": f"file: {reason}", "fields": {"file": [reason]}}},
    )


def _errors(content: str) -> list[str]:
    before = CloudPrice.objects.count()
    with pytest.raises(PriceImportError) as info:
        cloud_price_import_csv(content=content)
    assert CloudPrice.objects.count() == before  # all or nothing
    return [str(e) for e in info.value.errors]


GOOD = "aws-p5-48xlarge,reserved_3y,21.5,USD,us-east-1,2026-11-01,our quote\n"


def test_a_region_too_long_is_reported_at_its_line(catalog: Any) -> None:
    """It was reported as "line 0" (the model's check after parsing)."""
    long_region = "r" * 101
    messages = _errors(HEADER + GOOD + f"aws-p5-48xlarge,spot,20,USD,{long_region},2026-11-01,quote\n")
    assert messages == ["line 3: region: at most 100 characters, got 101"]


def test_an_unterminated_quote_is_refused_at_the_line_it_opens(catalog: Any) -> None:
    """It was read as one field holding the rest of the file, and the rows after it vanished."""
    content = HEADER + GOOD + 'aws-p5-48xlarge,spot,20,USD,"us-east-1,2026-11-01,quote\n' + GOOD
    messages = _errors(content)
    assert len(messages) == 1 and messages[0].startswith("line 3: file: not readable as CSV")


def test_a_quoted_field_over_two_lines_keeps_later_line_numbers_true(catalog: Any) -> None:
    content = HEADER + 'aws-p5-48xlarge,reserved_3y,21.5,USD,us-east-1,2026-11-01,"our\nquote"\n'
    content += "aws-p5-48xlarge,spot,free,USD,,2026-01-01,x\n"
    assert _errors(content) == ["line 4: usd_per_hour: not a number: 'free'"]


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (
            "aws-p5-48xlarge,spot,20,USD,,2026-11-01,quote,extra\n",
            "8 values, more than the header's 7 columns",
        ),
        ("aws-p5-48xlarge,spot,20,USD,,2026-11-01\n", "6 values, fewer than the header's 7 columns"),
    ],
)
def test_a_row_with_more_or_fewer_values_than_columns_is_refused(catalog: Any, row: str, reason: str) -> None:
    """An extra value was dropped in silence (csv.DictReader keeps it under the key None)."""
    assert _errors(HEADER + GOOD + row) == [f"line 3: file: {reason}"]


def test_an_unknown_column_is_refused(catalog: Any) -> None:
    messages = _errors(HEADER.strip() + ",discount\n" + GOOD.strip() + ",0.2\n")
    assert len(messages) == 1 and messages[0].startswith("line 1: header: unknown column(s): discount")


def test_a_price_in_another_currency_is_refused(catalog: Any) -> None:
    """A EUR row was stored and then added up as US dollars by the cost engine."""
    messages = _errors(HEADER + GOOD.replace(",USD,", ",EUR,"))
    assert messages == [
        "line 2: currency: only USD prices are used ('EUR' given): convert the price to US dollars and cite "
        "the rate in the source"
    ]


def test_the_api_refuses_a_price_in_another_currency(staff_client: Any, catalog: Any) -> None:
    body = {
        "offering": "aws-p5-48xlarge",
        "pricing_model": "reserved_3y",
        "usd_per_hour": 20.0,
        "currency": "EUR",
        "region": "eu-west-1",
        "as_of": "2026-11-01",
        "source": "a quote",
    }
    response = staff_client.post("/api/v1/cloud-prices/", body, format="json")
    assert response.status_code == 400 and "currency" in response.json()["error"]["fields"]
    assert (
        staff_client.post("/api/v1/cloud-prices/", {**body, "currency": "USD"}, format="json").status_code
        == 201
    )


def test_a_stored_price_in_another_currency_is_never_used_as_dollars(catalog: Any) -> None:
    from apps.catalog.selectors import engine_catalog_records

    price = CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand").first()
    assert price is not None
    CloudPrice.objects.filter(pk=price.pk).update(currency="EUR")  # a row stored before the check
    price.offering.save()  # a catalog change the snapshot notices (update() skips updated_at)
    offering = next(o for o in engine_catalog_records()["cloud_offerings"] if o["slug"] == "aws-p5-48xlarge")
    assert all(p["currency"] == "USD" for p in offering["prices"])
    on_demand = [p for p in offering["prices"] if p["pricing_model"] == "on_demand"]
    stored = CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand").count()
    assert len(on_demand) == stored - 1


def test_api_import_reads_lines_ended_by_cr_alone(staff_client: Any, catalog: Any) -> None:
    """A CSV saved with CR line ends (classic Mac Excel) is two rows, as the measured-run and price-book
    imports read it: the csv module sees the lines only with newline="" (without it, 400 'new-line character
    seen in unquoted field')."""
    rows = [
        HEADER.strip(),
        "aws-p5-48xlarge,reserved_3y,21.5,USD,us-east-1,2026-11-01,our quote",
        "aws-p5-48xlarge,spot,19.25,USD,us-east-1,2026-11-01,our quote",
    ]
    upload = SimpleUploadedFile("p.csv", "\r".join(rows).encode())
    response = staff_client.post("/api/v1/cloud-prices/import/", {"file": upload}, format="multipart")
    assert response.status_code == 201 and response.json() == {"imported": 2}
    spot = CloudPrice.objects.get(offering__slug="aws-p5-48xlarge", pricing_model="spot", as_of="2026-11-01")
    assert spot.usd_per_hour == 19.25
