"""The price book pages (issue #35): a user's own book and a team's, listing entries with source and expiry;
owners and editors add, edit, expire, delete and import; viewers read; outsiders get 404 on every URL."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

from django.test import Client
from django.utils import timezone

from apps.pricebook.models import PriceEntry
from tests.pricebook.test_files import BOOK, _workbook
from tests.teams.conftest import People

POWER = {"action": "add", "kind": "power", "value": "0.071", "valid_from": "2026-01-01", "source": "PPA 7"}


def _page(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_own_book_adds_lists_edits_expires_and_deletes(alice: Any, catalog: Any) -> None:
    page = _page(alice)
    html = page.get("/price-book/").content.decode()
    assert 'id="no-entries"' in html and 'id="nav-price-book"' in html
    assert "Your own prices, dated and sourced" in html
    assert page.post("/price-book/", POWER).status_code == 302
    entry = PriceEntry.objects.get()
    assert (entry.value, entry.owner, entry.team, entry.source) == (0.071, alice, None, "PPA 7")
    html = page.get("/price-book/").content.decode()
    assert f'id="entry-{entry.pk}"' in html and "PPA 7" in html and "USD/kWh" in html
    # Edit: the form comes filled in; a blank field is cleared.
    form = page.get(f"/price-book/entries/{entry.pk}/edit/").content.decode()
    assert 'value="0.071"' in form and 'value="PPA 7"' in form
    changed = page.post(
        f"/price-book/entries/{entry.pk}/edit/",
        {"kind": "power", "value": "0.065", "valid_from": "2026-01-01", "source": ""},
    )
    assert changed.status_code == 302
    entry.refresh_from_db()
    assert (entry.value, entry.source) == (0.065, "")
    assert page.post(f"/price-book/entries/{entry.pk}/expire/").status_code == 302
    entry.refresh_from_db()
    assert entry.expires_on == timezone.localdate() - dt.timedelta(days=1)
    assert "expired</span>" in page.get("/price-book/").content.decode()
    assert page.post(f"/price-book/entries/{entry.pk}/delete/").status_code == 302
    assert not PriceEntry.objects.exists()


def test_a_bad_entry_or_file_is_a_400_naming_the_field_and_saves_nothing(alice: Any, catalog: Any) -> None:
    page = _page(alice)
    response = page.post("/price-book/", {**POWER, "kind": "quota", "value": "1.5", "offering": "nope"})
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="book-errors"' in html and "offering" in html
    upload = io.BytesIO(_workbook([BOOK[3], {"kind": "power", "value": -1}]))
    upload.name = "book.xlsx"
    response = page.post("/price-book/", {"action": "import", "file": upload})
    assert response.status_code == 400 and "row 3.value" in response.content.decode()
    assert not PriceEntry.objects.exists()


def test_the_page_imports_an_xlsx_book(alice: Any, catalog: Any) -> None:
    upload = io.BytesIO(_workbook(BOOK))
    upload.name = "book.xlsx"
    response = _page(alice).post("/price-book/", {"action": "import", "file": upload})
    assert response.status_code == 302
    assert PriceEntry.objects.filter(owner=alice, team=None).count() == len(BOOK)


def test_who_may_use_a_teams_book_page(people: People, catalog: Any) -> None:
    url = f"/price-book/teams/{people.team.pk}/"
    editor = _page(people.editor)
    assert editor.post(url, POWER).status_code == 302
    entry = PriceEntry.objects.get()
    assert entry.team_id == people.team.pk
    for who in ("owner", "editor"):
        html = _page(getattr(people, who)).get(url).content.decode()
        assert f'id="entry-{entry.pk}"' in html and 'id="entry-form"' in html, who
        assert _page(getattr(people, who)).get(f"/price-book/entries/{entry.pk}/edit/").status_code == 200
    viewer = _page(people.viewer)
    html = viewer.get(url).content.decode()
    assert f'id="entry-{entry.pk}"' in html and 'id="read-only"' in html
    assert "The team's own prices, dated and sourced" in html and "Your own prices" not in html
    assert 'id="entry-form"' not in html and f'id="expire-{entry.pk}"' not in html
    outsider = _page(people.outsider)
    assert outsider.get(url).status_code == 404
    for client in (viewer, outsider):
        assert client.post(url, POWER).status_code == 404
        assert client.get(f"/price-book/entries/{entry.pk}/edit/").status_code == 404
        assert client.post(f"/price-book/entries/{entry.pk}/expire/").status_code == 404
        assert client.post(f"/price-book/entries/{entry.pk}/delete/").status_code == 404
    # The outsider's own book shows nothing of the team's.
    assert f'id="entry-{entry.pk}"' not in outsider.get("/price-book/").content.decode()
    assert PriceEntry.objects.get().expires_on is None
    assert Client().get(url).status_code == 302  # anonymous: to the sign-in page
