"""Share links on the design page (the owner's list, with the version each serves, its times and state) and
the signed-out share view saying which version it shows and when it was frozen."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.designs.models import Design
from apps.designs.services import design_create, design_update, share_link_create, share_link_revoke

pytestmark = pytest.mark.django_db

MINUTE_UTC = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d UTC$")


@pytest.fixture
def design(alice: Any, demos: list[Any]) -> Design:
    spec = demos[3].current.spec
    return design_create(owner=alice, name="Alice's 8B", visibility="organisation", spec=spec)


def _client(user: Any = None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _minute(value: dt.datetime) -> str:
    return timezone.localtime(value, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _rows(body: str) -> dict[int, str]:
    """The share-link table's rows by link id, as text with the tags taken out."""
    rows = re.findall(r'<tr id="share-link-(\d+)"[^>]*>(.*?)</tr>', body, re.S)
    return {int(pk): " ".join(re.sub(r"<[^>]+>", " ", html).split()) for pk, html in rows}


def test_owner_lists_each_link_with_version_times_opens_and_state(alice: Any, design: Design) -> None:
    expires = timezone.now() + dt.timedelta(days=7)
    old, _ = share_link_create(design=design, user=alice, label="finance", expires_at=expires)
    design_update(design=design, user=alice, base_version=1, name="Alice's 8B, more nodes")
    design.refresh_from_db()
    revoked, _ = share_link_create(design=design, user=alice)
    share_link_revoke(link=revoked)
    old.open_count = 3
    old.save(update_fields=["open_count"])

    body = _client(alice).get(f"/designs/{design.pk}/").content.decode()
    rows = _rows(body)
    assert rows[old.pk] == (
        f"{old.token_hint}… finance version 1 {_minute(old.created_at)} {_minute(expires)} 3× active Revoke"
    )
    revoked.refresh_from_db()
    assert rows[revoked.pk] == (
        f"{revoked.token_hint}… version 2 {_minute(revoked.created_at)} never 0× "
        f"revoked {_minute(revoked.revoked_at)}"
    )
    assert list(rows) == [revoked.pk, old.pk]  # newest first
    assert body.count('class="danger small revoke-share-link"') == 1  # only the active link can be revoked
    assert 'id="share-expiry"' in body and '<option value="7">in 7 days</option>' in body


def test_an_expired_link_is_listed_as_expired_without_a_revoke_button(alice: Any, design: Design) -> None:
    link, _ = share_link_create(design=design, user=alice, expires_at=timezone.now() + dt.timedelta(days=1))
    link.expires_at = timezone.now() - dt.timedelta(minutes=1)
    link.save(update_fields=["expires_at"])
    body = _client(alice).get(f"/designs/{design.pk}/share-links/").content.decode()
    assert _rows(body)[link.pk].endswith(f"{_minute(link.expires_at)} 0× expired")


def test_share_link_table_is_the_owners_alone(alice: Any, bob: Any, design: Design) -> None:
    share_link_create(design=design, user=alice)
    url = f"/designs/{design.pk}/share-links/"
    assert len(_rows(_client(alice).get(url).content.decode())) == 1
    assert _client(bob).get(url).status_code == 404  # bob reads the design, but its links are not his
    assert 'id="share-form"' not in _client(bob).get(f"/designs/{design.pk}/").content.decode()
    signed_out = _client().get(url)
    assert signed_out.status_code == 302 and signed_out["Location"].startswith("/accounts/login/")


def test_share_link_table_loads_no_evaluation_per_link(
    alice: Any, design: Design, django_assert_num_queries: Any
) -> None:
    for _ in range(5):
        share_link_create(design=design, user=alice)
    client = _client(alice)
    # session, user, design, the links with their versions in one query: the same for 1 link or 50.
    with django_assert_num_queries(4):
        body = client.get(f"/designs/{design.pk}/share-links/").content.decode()
    assert len(_rows(body)) == 5


def test_share_view_names_the_version_and_when_it_was_frozen(alice: Any, design: Design) -> None:
    expires = timezone.now() + dt.timedelta(days=30)
    link, token = share_link_create(design=design, user=alice, expires_at=expires)
    design_update(design=design, user=alice, base_version=1, description="edited after sharing")
    body = _client().get(f"/share/{token}/").content.decode()
    lead = re.search(r'id="share-frozen">(.*?)</p>', body, re.S).group(1)  # type: ignore[union-attr]
    lead = " ".join(re.sub(r"<[^>]+>", "", lead).split())
    assert lead == (
        f"Read-only design review of version 1, frozen {_minute(link.created_at)} "
        f"(evaluated {_minute(link.evaluation.created_at)}): "
        f"later edits to the design do not change this page. This link expires {_minute(expires)}."
    )
    assert "edited after sharing" not in body


def test_a_design_that_cannot_be_evaluated_lists_its_links_but_offers_no_new_one(
    alice: Any, design: Design
) -> None:
    from apps.designs.models import DesignVersion

    link, token = share_link_create(design=design, user=alice)
    spec = design.current.spec
    spec["cluster"]["accelerator"] = "retired-gpu"  # a catalog row the stored spec names has gone
    DesignVersion.objects.filter(pk=design.current.pk).update(spec=spec)
    body = _client(alice).get(f"/designs/{design.pk}/").content.decode()
    assert 'id="share-form"' not in body and 'id="share-unavailable"' in body
    assert _rows(body)[link.pk].endswith("active Revoke")
    assert _client().get(f"/share/{token}/").status_code == 200  # the link still serves what it froze


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_share_link_never_writes_it_refuses_every_unsafe_method(
    alice: Any, design: Design, method: str
) -> None:
    """A share link is read-only: the page and its exports answer 405 to any write, before any work (a POST
    used to render the page with 200), and the design and its links are unchanged."""
    link, token = share_link_create(design=design, user=alice)
    client = _client()
    for path in (f"/share/{token}/", f"/share/{token}/export/xlsx/"):
        response = getattr(client, method)(path, {"name": "changed"})
        assert response.status_code == 405, path
        assert response["Allow"] == "GET"
    design.refresh_from_db()
    assert design.name == "Alice's 8B" and design.versions.count() == 1
    assert client.get(f"/share/{token}/").status_code == 200
