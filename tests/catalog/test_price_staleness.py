"""Stale prices (older than PRICE_STALE_AFTER_DAYS) are marked on the catalog pages and in the API.

Dates are set relative to today, so the tests do not depend on the day they run.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from apps.catalog.models import Accelerator, CloudOffering, CloudPrice

TODAY = timezone.localdate()
OLD, RECENT = TODAY - dt.timedelta(days=400), TODAY - dt.timedelta(days=10)


@pytest.fixture
def dated(catalog: Any, settings: Any) -> CloudOffering:
    """aws-p5-48xlarge with a 400-day-old spot price and a 10-day-old on-demand one."""
    settings.PRICE_STALE_AFTER_DAYS = 180
    offering = CloudOffering.objects.get(slug="aws-p5-48xlarge")
    for model, as_of, usd in (("spot", OLD, 30.0), ("on_demand", RECENT, 50.0)):
        CloudPrice.objects.create(
            offering=offering,
            pricing_model=model,
            usd_per_hour=usd,
            region="us-east-1",
            as_of=as_of,
            source="test",
        )
    return offering


def _row(html: str, needle: str) -> str:
    return next(row for row in html.split("<tr") if needle in row)


def test_price_list_badges_prices_older_than_the_threshold(client: Any, dated: Any) -> None:
    html = client.get("/catalog/prices/", {"offering": "aws-p5-48xlarge"}).content.decode()
    assert "stale</span>" in _row(html, OLD.isoformat())
    assert "stale</span>" not in _row(html, RECENT.isoformat())
    assert "more than 180 days old" in html


def test_api_says_stale_per_price_and_filters_by_it(api_client: Any, dated: Any, settings: Any) -> None:
    def stale_by_date(**params: Any) -> dict[str, bool]:
        body = api_client.get("/api/v1/cloud-prices/", {"offering": "aws-p5-48xlarge", **params}).json()
        return {row["as_of"]: row["stale"] for row in body["results"]}

    marks = stale_by_date()
    assert marks[OLD.isoformat()] is True and marks[RECENT.isoformat()] is False
    assert all(stale_by_date(stale="true").values()) and OLD.isoformat() in stale_by_date(stale="true")
    assert not any(stale_by_date(stale="false").values())
    nested = api_client.get("/api/v1/cloud-offerings/aws-p5-48xlarge/").json()["prices"]
    assert {p["as_of"]: p["stale"] for p in nested}[OLD.isoformat()] is True
    # The threshold comes from the setting (PRICE_STALE_AFTER_DAYS in the environment).
    settings.PRICE_STALE_AFTER_DAYS = 1000
    assert stale_by_date()[OLD.isoformat()] is False


def test_accelerator_page_shows_the_freshest_price_per_model_and_the_owning_price(
    client: Any, dated: Any
) -> None:
    html = client.get("/catalog/").content.decode()
    table = html.split('id="accelerator-prices"')[1].split("</table>")[0]
    h100 = re.sub(r"\s+", " ", _row(table, 'data-slug="h100-sxm"'))
    cells = h100.split("<td")[1:]  # on-demand, reserved 1y, reserved 3y, spot, owning
    # On-demand: the 10-day-old row wins over every older one, whatever its price; not stale.
    assert "6.25" in cells[0] and RECENT.isoformat() in cells[0] and "AWS p5.48xlarge, us-east-1" in cells[0]
    assert "stale" not in cells[0]
    # Owning: a server type's price, else the list price, with its date; stale ones say so.
    a100 = re.sub(r"\s+", " ", _row(table, 'data-slug="a100-40gb"'))
    # DGX A100 320GB: $199,000 at launch (NVIDIA press release, 2020-05-14; seed catalog) = $24,875 per GPU.
    assert (
        "$199,000" in a100
        and "$24,875/GPU" in a100
        and "as of 2020-05-14" in a100
        and "stale</span>" in a100.split("<td")[-1]
    )
    rtx = re.sub(r"\s+", " ", _row(table, 'data-slug="rtx-4090"'))
    assert "$1,599" in rtx and "list price per GPU" in rtx and "stale</span>" in rtx.split("<td")[-1]
    h100_owning = h100.split("<td")[-1]
    # DGX H100: $322,500, the midpoint of $270k–375k (seed catalog, an estimate) = $40,313 per GPU.
    assert "$322,500" in h100_owning and "$40,313/GPU" in h100_owning


def test_a_fresh_owning_price_is_not_stale(client: Any, catalog: Any, settings: Any) -> None:
    settings.PRICE_STALE_AFTER_DAYS = 180
    Accelerator.objects.filter(slug="rtx-4090").update(as_of=RECENT)
    html = client.get("/catalog/").content.decode()
    table = html.split('id="accelerator-prices"')[1].split("</table>")[0]
    assert "stale</span>" not in _row(table, 'data-slug="rtx-4090"').split("<td")[-1]


def test_the_setting_must_be_a_whole_number_of_days(monkeypatch: Any) -> None:
    from clusterdesigner import settings as project_settings

    monkeypatch.setenv("PRICE_STALE_AFTER_DAYS", "90")
    assert project_settings._stale_after_days() == 90
    monkeypatch.setenv("PRICE_STALE_AFTER_DAYS", "six months")
    with pytest.raises(ImproperlyConfigured, match="PRICE_STALE_AFTER_DAYS"):
        project_settings._stale_after_days()
