"""The sites API (issue #35, Sites): the owner's sites only (404 for anyone else), every bad field a 400 that
names it with nothing saved, and the site page lists and creates sites."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.sites.models import Site

SITE: dict[str, Any] = {
    "name": "Ashburn A",
    "region": "us-east",
    "power_usd_per_kwh": 0.12,
    "colocation_usd_per_kw_month": 200,
    "pue": {"air": 1.5, "direct_liquid": 1.15},
    "max_kw_per_rack": 40,
    "cooling": ["air", "direct_liquid"],
    "power_now_mw": 2,
    "power_later": [{"date": "2028-01", "mw": 10}, {"date": "2027-06", "mw": 5}],
    "rack_lead_time_months": 4,
}


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_creates_reads_changes_and_deletes_the_owners_site(alice: Any) -> None:
    client = _client(alice)
    created = client.post("/api/v1/sites/", SITE, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "Ashburn A"
    assert body["colocation_basis"] == "contracted_kw"  # the default basis
    assert [s["date"] for s in body["power_later"]] == ["2027-06", "2028-01"]  # sorted by date
    url = f"/api/v1/sites/{body['id']}/"
    changed = client.patch(url, {"max_kw_per_rack": 130}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["max_kw_per_rack"] == 130
    assert changed.json()["power_now_mw"] == 2
    assert client.get("/api/v1/sites/").json()["results"][0]["max_kw_per_rack"] == 130
    assert client.delete(url).status_code == 204
    assert not Site.objects.exists()


def test_another_users_site_is_404_for_every_method(alice: Any, bob: Any) -> None:
    site = _client(alice).post("/api/v1/sites/", SITE, format="json").json()
    url = f"/api/v1/sites/{site['id']}/"
    other = _client(bob)
    assert other.get(url).status_code == 404
    assert other.patch(url, {"max_kw_per_rack": 1}, format="json").status_code == 404
    assert other.put(url, SITE, format="json").status_code == 404
    assert other.delete(url).status_code == 404
    assert other.get("/api/v1/sites/").json()["results"] == []
    assert Site.objects.get().data["max_kw_per_rack"] == 40
    assert APIClient().get(url).status_code in (401, 403)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"pue": {"air": 0.9}}, "pue.air", "Ensure this value is greater than or equal to 1."),
        ({"cooling": ["air", "immersion"]}, "cooling.1", '"immersion" is not a valid choice.'),
        ({"power_later": [{"date": "next year", "mw": 4}]}, "power_later.0.date", "must be a date"),
        ({"cooling": ["air", "rear_door"]}, "pue.rear_door", "give the PUE of the site's rear_door cooling"),
        ({"power_now_mw": "lots"}, "power_now_mw", "must be a number"),
        ({"colocation_basis": "nameplate_kw"}, "colocation_basis", "is not a valid choice"),
        ({"id": 7}, "id", "a saved site does not take this field"),
    ],
)
def test_a_bad_field_is_a_400_naming_it_and_saves_nothing(
    alice: Any, change: dict[str, Any], field: str, message: str
) -> None:
    response = _client(alice).post("/api/v1/sites/", {**SITE, **change}, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert message in " ".join(fields[field]), fields
    assert not Site.objects.exists()


def test_a_second_site_of_the_same_name_is_refused(alice: Any) -> None:
    client = _client(alice)
    assert client.post("/api/v1/sites/", SITE, format="json").status_code == 201
    again = client.post("/api/v1/sites/", SITE, format="json")
    assert again.status_code == 400
    assert again.json()["error"]["fields"]["name"] == ["you already have a site named 'Ashburn A'"]


def test_the_site_page_creates_and_lists_a_site(alice: Any) -> None:
    browser = Client()
    browser.force_login(alice)
    form = {
        "name": "Dallas liquid",
        "power_usd_per_kwh": "0.07",
        "colocation_usd_per_kw_month": "180",
        "colocation_basis": "drawn_kw",
        "cooling": ["direct_liquid"],
        "pue_direct_liquid": "1.12",
        "max_kw_per_rack": "140",
        "power_now_mw": "5",
        "power_later": "2027-09 12\n",
    }
    assert browser.post("/sites/", form).status_code == 302
    site = Site.objects.get(owner=alice)
    assert site.data["pue"] == {"direct_liquid": 1.12}
    assert site.data["power_later"] == [{"date": "2027-09", "mw": 12.0}]
    page = browser.get("/sites/").content.decode()
    assert "Dallas liquid" in page and "12.0 MW from 2027-09" in page
    bad = browser.post("/sites/", {**form, "name": "x", "max_kw_per_rack": "0"})
    assert bad.status_code == 400
    assert "max_kw_per_rack: Ensure this value is greater than or equal to 0.1." in bad.content.decode()
    assert Site.objects.count() == 1
