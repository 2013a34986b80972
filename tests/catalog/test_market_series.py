"""Residual-value and rental-price series: sourced points shipped with the seed, read-only in the API, drawn
with their scatter on the catalog's Market history page."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from apps.catalog.models import Accelerator, RentalPricePoint, ResidualValuePoint
from apps.catalog.services import SEED_PATH, catalog_load_seed

pytestmark = pytest.mark.django_db


def test_the_seed_loads_every_series_point_with_a_source_date_and_standing(catalog: dict[str, int]) -> None:
    assert catalog["residual_values"] == ResidualValuePoint.objects.count() == 13
    assert catalog["rental_price_history"] == RentalPricePoint.objects.count() == 12
    for point in [*ResidualValuePoint.objects.all(), *RentalPricePoint.objects.all()]:
        assert point.source and point.as_of and point.verification, point
        # Nothing here is primary; a point says so.
        assert re.search(r"secondary|ESTIMATE", point.verification + point.notes), point


def test_residual_values_fall_with_age_within_each_series(catalog: dict[str, int]) -> None:
    for key in ResidualValuePoint.objects.values_list("series", "generation").distinct():
        fractions = list(
            ResidualValuePoint.objects.filter(series=key[0], generation=key[1])
            .order_by("age_years")
            .values_list("fraction_of_new", flat=True)
        )
        assert fractions == sorted(fractions, reverse=True), key


def test_the_api_lists_residual_values_of_an_accelerator(catalog: dict[str, int], client: Client) -> None:
    body = client.get("/api/v1/residual-values/?accelerator=h100-sxm&ordering=age_years").json()
    # GLRI guide, H100 SXM residual ranges by year: 60-65, 40-45, 25-35, 15-20, 10-15 % -> midpoints
    # (0.60+0.65)/2 = 0.625, 0.425, (0.25+0.35)/2 = 0.30, 0.175, 0.125.
    assert [(r["age_years"], r["fraction_of_new"]) for r in body["results"]] == [
        (1.0, 0.625),
        (2.0, 0.425),
        (3.0, 0.3),
        (4.0, 0.175),
        (5.0, 0.125),
    ]
    assert body["results"][0]["accelerator"] == "h100-sxm"
    assert body["results"][0]["as_of"] == "2026-01-08"


def test_the_api_lists_rental_prices_by_basis_and_date(catalog: dict[str, int], client: Client) -> None:
    body = client.get("/api/v1/rental-prices/?basis=contract_1y&ordering=as_of").json()
    # SemiAnalysis 1-year H100 contract: trough $1.70 (Oct 2025), $2.35 (Mar 2026), ~$2.65 (late Jun 2026).
    assert [(r["as_of"], r["usd_per_gpu_hour"]) for r in body["results"]] == [
        ("2025-10-31", 1.7),
        ("2026-03-31", 2.35),
        ("2026-06-26", 2.65),
    ]
    # The AWS p5 points are the catalog's own on-demand rows per GPU: 98.32 / 8 = 12.29, 55.04 / 8 = 6.88.
    aws = client.get("/api/v1/rental-prices/?series=p5.48xlarge&ordering=as_of").json()["results"]
    assert [r["usd_per_gpu_hour"] for r in aws] == [12.29, 6.88]


def test_the_series_are_read_only_in_the_api(
    catalog: dict[str, int], client: Client, django_user_model: Any
) -> None:
    staff = django_user_model.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    point = ResidualValuePoint.objects.first()
    assert point is not None
    assert client.post("/api/v1/residual-values/", {}, content_type="application/json").status_code == 405
    response = client.delete(f"/api/v1/rental-prices/{RentalPricePoint.objects.first().pk}/")  # type: ignore[union-attr]
    assert response.status_code == 405
    assert "error" in response.json()
    assert client.get(f"/api/v1/residual-values/{point.pk}/").json()["series"] == point.series


def test_a_bad_filter_is_a_400_naming_it(catalog: dict[str, int], client: Client) -> None:
    response = client.get("/api/v1/rental-prices/?as_of_after=June")
    assert response.status_code == 400
    assert "as_of_after" in response.json()["error"]["fields"]
    response = client.get("/api/v1/rental-prices/?basis=forever")
    assert response.status_code == 400
    assert "basis" in response.json()["error"]["fields"]


def test_a_series_point_naming_an_unknown_accelerator_is_refused(tmp_path: Any, db: Any) -> None:
    data = json.loads(SEED_PATH.read_text())
    data["residual_values"][0]["accelerator"] = "h100-nvl"  # not in the catalog
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValidationError, match="no accelerator 'h100-nvl'"):
        catalog_load_seed(path=path)
    assert not ResidualValuePoint.objects.exists()  # all or nothing


def test_the_market_page_draws_both_series_with_their_sources(
    catalog: dict[str, int], client: Client
) -> None:
    page = client.get("/catalog/market/")
    assert page.status_code == 200
    html = page.content.decode()
    residual = json.loads(re.search(r'id="chart-data-residual"[^>]*>(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    rental = json.loads(re.search(r'id="chart-data-rental"[^>]*>(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    traces = {t["name"]: t for t in residual["data"]}
    glri = traces["H100 SXM · GLRI residual value guide"]
    assert glri["x"] == [1.0, 2.0, 3.0, 4.0, 5.0] and glri["y"] == [62.5, 42.5, 30.0, 17.5, 12.5]
    assert residual["layout"]["yaxis"]["title"]["text"] == "Resale value (% of new)"
    assert residual["layout"]["xaxis"]["title"]["text"] == "Age (years)"
    assert rental["layout"]["yaxis"]["title"]["text"] == "USD per GPU-hour"
    assert len(rental["data"]) == 7  # one trace per series
    assert '<td class="num">62.5 %</td>' in html  # the table shows the same figure as the chart
    assert "SemiAnalysis" in html and "spotwire.ai" in html  # each row's source is on the page
    # Linked from the accelerators page.
    assert 'href="/catalog/market/"' in client.get("/catalog/").content.decode()


def test_the_market_page_without_series_says_how_to_load_them(client: Client, db: Any) -> None:
    assert not Accelerator.objects.exists()
    html = client.get("/catalog/market/").content.decode()
    assert "No resale values in the catalog" in html and "No rental prices in the catalog" in html
