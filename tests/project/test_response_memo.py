"""The rendered responses kept per process (clusterdesigner.memo) for the load target: the catalog list, a
stored evaluation and the anonymous share page. A kept response must never outlive an edit, a catalog write
or a revoked link, and must never reach a reader who may not see it, or a signed-in reader as the anonymous
copy."""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.catalog.models import CloudPrice
from apps.designs.models import ShareLink
from apps.designs.selectors import share_link_list
from clusterdesigner import memo
from tests.designs.test_api import SPEC, _create


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    memo.clear_all()
    yield
    memo.clear_all()


def test_catalog_list_shows_a_staff_edit_on_the_next_read(
    api_client: Any, staff_client: Any, catalog: Any
) -> None:
    def memory_of(slug: str) -> float:
        rows = api_client.get("/api/v1/accelerators/?page_size=100").json()["results"]
        return next(row["memory_gib"] for row in rows if row["slug"] == slug)

    assert memory_of("h100-sxm") == 80
    assert len(memo.CATALOG_PAGES) == 1  # the page is kept ...
    edited = staff_client.patch("/api/v1/accelerators/h100-sxm/", {"memory_gib": 96}, format="json")
    assert edited.status_code == 200
    assert memory_of("h100-sxm") == 96  # ... and not served after the edit
    added = staff_client.post(
        "/api/v1/accelerators/", {**edited.json(), "slug": "h100-copy", "name": "H100 copy"}, format="json"
    )
    assert added.status_code == 201, added.json()
    assert memory_of("h100-copy") == 96


def test_catalog_list_revalidates_with_its_etag(api_client: Any, catalog: Any) -> None:
    first = api_client.get("/api/v1/accelerators/")
    etag = first["ETag"]
    assert first.status_code == 200 and etag.startswith('"')
    again = api_client.get("/api/v1/accelerators/", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b""
    other_page = api_client.get("/api/v1/accelerators/?page=2&page_size=2", HTTP_IF_NONE_MATCH=etag)
    assert other_page.status_code == 200 and other_page["ETag"] != etag
    assert api_client.get("/api/v1/accelerators/", HTTP_IF_NONE_MATCH='"stale"').status_code == 200


def test_catalog_list_filters_are_kept_apart(api_client: Any, catalog: Any) -> None:
    everything = api_client.get("/api/v1/accelerators/?page_size=100").json()["count"]
    nvidia = api_client.get("/api/v1/accelerators/?page_size=100&search=h100").json()["count"]
    assert 0 < nvidia < everything
    assert api_client.get("/api/v1/accelerators/?page_size=100").json()["count"] == everything


def test_evaluation_after_an_edit_is_of_the_new_version(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/evaluate/"
    first = user_client.post(url).json()
    assert user_client.post(url).json() == first  # served from the memo the second time
    assert len(memo.EVALUATIONS) == 1
    spec = {**SPEC, "cluster": {**SPEC["cluster"], "nodes": 128}}
    spec["parallelism"] = {**SPEC["parallelism"], "dp": 32}
    edited = user_client.patch(
        f"/api/v1/designs/{design['id']}/", {"version": 1, "spec": spec}, format="json"
    )
    assert edited.status_code == 200, edited.json()
    second = user_client.post(url).json()
    assert second["design"]["version"] == 2
    assert second["training"]["time_to_train_days"] < first["training"]["time_to_train_days"]
    # The earlier version is still its own result.
    assert (
        user_client.post(url + "?version=1").json()["training"]["time_to_train_days"]
        == first["training"]["time_to_train_days"]
    )


def test_evaluation_follows_a_catalog_price_change(user_client: Any, staff_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/evaluate/"

    def on_demand_usd() -> float:
        options = user_client.post(url).json()["options"]
        return next(o["run_cost_usd"] for o in options if o["key"] == "aws-p5-48xlarge:on_demand")

    before = on_demand_usd()
    for price in CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand"):
        patched = staff_client.patch(
            f"/api/v1/cloud-prices/{price.pk}/", {"usd_per_hour": price.usd_per_hour * 2}, format="json"
        )
        assert patched.status_code == 200, patched.json()
    assert on_demand_usd() == pytest.approx(2 * before, rel=1e-9)


def test_a_kept_evaluation_is_still_404_for_someone_who_may_not_read_it(
    user_client: Any, django_user_model: Any, catalog: Any
) -> None:
    from rest_framework.test import APIClient

    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/evaluate/"
    assert user_client.post(url).status_code == 200
    assert user_client.post(url).status_code == 200  # a stored result: now kept
    assert len(memo.EVALUATIONS) == 1
    stranger = APIClient()
    stranger.force_authenticate(django_user_model.objects.create_user("mallory", password="pw-mallory-1"))
    response = stranger.post(url)
    assert response.status_code == 404 and "training" not in response.content.decode()
    assert APIClient().post(url).status_code in (401, 403)


def _opens(link: dict[str, Any]) -> int:
    """The link's opens as its owner's list counts them: on the link's row, or still in the open log
    (PostgreSQL, apps.designs.models.ShareLinkOpen)."""
    found = ShareLink.objects.get(pk=link["id"])
    return share_link_list(design=found.design).get(pk=found.pk).opens


def _share(user_client: Any, design: dict[str, Any], **fields: Any) -> dict[str, Any]:
    made = user_client.post(f"/api/v1/designs/{design['id']}/share-links/", fields, format="json")
    assert made.status_code == 201
    return dict(made.json())


def test_share_page_is_404_once_revoked_though_it_was_kept(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    link = _share(user_client, design)
    reader = Client()
    page = f"/share/{link['token']}/"
    first = reader.get(page)
    assert first.status_code == 200 and len(memo.SHARE_PAGES) == 1
    assert reader.get(page).content == first.content
    user_client.post(f"/api/v1/designs/{design['id']}/share-links/{link['id']}/revoke/")
    assert reader.get(page).status_code == 404
    # Two opens counted, not the refused third.
    assert _opens(link) == 2


def test_share_page_is_404_once_expired_though_it_was_kept(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    design = _create(user_client)
    expires = timezone.now() + dt.timedelta(hours=1)
    link = _share(user_client, design, expires_at=expires.isoformat())
    page = f"/share/{link['token']}/"
    assert Client().get(page).status_code == 200
    assert len(memo.SHARE_PAGES) == 1  # kept, under a key that the clock moving on does not change
    later = expires + dt.timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)
    assert Client().get(page).status_code == 404
    assert _opens(link) == 1


def test_a_kept_share_page_costs_one_query(
    user_client: Any, catalog: Any, django_assert_num_queries: Any
) -> None:
    """The check for revocation and expiry, the open count and the page's key are one statement: the load
    target's share view (bench/load.sh) waits on the database once per request."""
    design = _create(user_client)
    link = _share(user_client, design)
    page = f"/share/{link['token']}/"
    first = Client().get(page)
    with django_assert_num_queries(1):
        again = Client().get(page)
    assert again.status_code == 200 and again.content == first.content


def test_share_page_counts_every_open_though_it_was_kept(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    link = _share(user_client, design)
    for _ in range(3):
        assert Client().get(f"/share/{link['token']}/").status_code == 200
    rows = user_client.get(f"/api/v1/designs/{design['id']}/share-links/").json()["results"]
    assert rows[0]["open_count"] == 3


def test_a_signed_in_reader_never_gets_the_anonymous_copy_nor_leaves_theirs(
    user_client: Any, django_user_model: Any, catalog: Any
) -> None:
    design = _create(user_client)
    page = f"/share/{_share(user_client, design)['token']}/"
    anonymous = Client().get(page)
    assert anonymous.status_code == 200 and b"Sign in" in anonymous.content
    carol = Client()
    carol.force_login(django_user_model.objects.create_user("carol", password="pw-carol-123"))
    signed_in = carol.get(page).content.decode()
    assert "carol" in signed_in and "Sign out" in signed_in and "csrfmiddlewaretoken" in signed_in
    later = Client().get(page).content.decode()
    assert "carol" not in later and "csrfmiddlewaretoken" not in later


def _shared_json_as_drf_renders_it(token: str) -> bytes:
    """What GET /api/v1/shared/<token>/ answered before its body was kept: DRF's JSON renderer (the API's
    default, clusterdesigner.renderers.JSONRenderer) over the link's version and frozen evaluation."""
    from rest_framework.renderers import JSONRenderer

    from apps.designs.selectors import share_link_resolve

    link = share_link_resolve(token=token)
    assert link is not None
    version = link.evaluation.version
    body = {
        "name": version.name,
        "description": version.description,
        "version": version.number,
        "approved": False,  # a frozen link (one that follows the approved version is not kept)
        "evaluation": link.evaluation.result,
    }
    return bytes(JSONRenderer().render(body))


def test_shared_json_is_kept_with_the_same_bytes_and_costs_one_query(
    user_client: Any, catalog: Any, django_assert_num_queries: Any
) -> None:
    design = _create(user_client)
    link = _share(user_client, design)
    url = f"/api/v1/shared/{link['token']}/"
    first = Client().get(url)
    assert first.status_code == 200 and len(memo.SHARED_JSON) == 1
    assert first.content == _shared_json_as_drf_renders_it(link["token"])
    assert first.json()["evaluation"]["design"]["id"] == design["id"]
    # Kept: the open (with the revocation and expiry check) is the one statement; the same bytes and headers.
    with django_assert_num_queries(1):
        again = Client().get(url)
    assert again.status_code == 200 and again.content == first.content
    assert again["Content-Type"] == first["Content-Type"] == "application/json"
    assert again["Cache-Control"] == "private, no-store"
    # Indented output asked for is still indented (the kept text is decoded and rendered as asked).
    indented = Client().get(url, HTTP_ACCEPT="application/json; indent=2")
    assert indented.status_code == 200 and b'\n  "name": ' in indented.content
    assert indented.json() == first.json()


def test_shared_json_is_404_once_revoked_though_it_was_kept(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    link = _share(user_client, design)
    url = f"/api/v1/shared/{link['token']}/"
    assert Client().get(url).status_code == 200
    assert Client().get(url).status_code == 200 and len(memo.SHARED_JSON) == 1
    user_client.post(f"/api/v1/designs/{design['id']}/share-links/{link['id']}/revoke/")
    gone = Client().get(url)
    assert gone.status_code == 404 and b"evaluation" not in gone.content
    assert _opens(link) == 2  # the refused read is not counted


def test_two_links_to_two_versions_are_kept_apart(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    first = _share(user_client, design)
    spec = {**SPEC, "cluster": {**SPEC["cluster"], "nodes": 128}}
    spec["parallelism"] = {**SPEC["parallelism"], "dp": 32}
    edited = user_client.patch(
        f"/api/v1/designs/{design['id']}/", {"version": 1, "spec": spec}, format="json"
    )
    assert edited.status_code == 200, edited.json()
    second = _share(user_client, design)
    one = Client().get(f"/api/v1/shared/{first['token']}/").json()
    two = Client().get(f"/api/v1/shared/{second['token']}/").json()
    assert (one["version"], two["version"]) == (1, 2)
    assert (
        one["evaluation"]["training"]["time_to_train_days"]
        > two["evaluation"]["training"]["time_to_train_days"]
    )
    assert Client().get(f"/api/v1/shared/{first['token']}/").json() == one


def test_a_kept_catalog_list_costs_one_query(
    api_client: Any, catalog: Any, django_assert_num_queries: Any
) -> None:
    """The load target's catalog list (bench/load.sh): once kept, a page is the catalog's change stamp
    (catalog_version(), part of the memo's key) and nothing else, with the same bytes."""
    first = api_client.get("/api/v1/accelerators/")
    assert first.status_code == 200 and first.json()["count"] > 10
    with django_assert_num_queries(1):
        again = api_client.get("/api/v1/accelerators/")
    assert again.status_code == 200 and again.content == first.content and again["ETag"] == first["ETag"]


def _kept_evaluation(client: Any, design_id: int) -> dict[str, Any]:
    """The evaluation, asked twice, so that the memo holds it (the second request keeps the stored text): each
    change below is then read past a kept result."""
    url = f"/api/v1/designs/{design_id}/evaluate/"
    first = client.post(url)  # evaluated (or read from the database) and kept
    assert first.status_code == 200, first.json()
    kept = client.post(url)
    assert kept.json() == first.json() and len(memo.EVALUATIONS) >= 1
    return dict(kept.json())


def _server_usd(result: dict[str, Any]) -> float:
    return float(result["costs"]["aws-p5-48xlarge"]["on_prem"]["capex_parts"]["servers"]["usd"])


def test_a_kept_evaluation_follows_every_write_to_the_price_book(user_client: Any, catalog: Any) -> None:
    """The memo is keyed by the book's stamp, not by its resolved prices (which are no longer read on a hit):
    an added, changed, imported or deleted entry is each a new answer. SPEC is 64 servers; the seed catalog's
    DGX H100 is $322,500 a server."""
    design = _create(user_client)["id"]
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 322_500
    quote = {
        "kind": "server_quote",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "valid_from": "2026-01-01",
    }
    entry = user_client.post("/api/v1/price-entries/", {**quote, "value": 200_000}, format="json").json()
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 200_000  # added
    changed = user_client.patch(f"/api/v1/price-entries/{entry['id']}/", {"value": 210_000}, format="json")
    assert changed.status_code == 200
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 210_000  # changed
    # A newer quote imported from a file (bulk_create: no save() per row) wins over the older one.
    csv = io.BytesIO(
        b"kind,accelerator,gpus_per_node,value,valid_from\nserver_quote,h100-sxm,8,190000,2026-02-01\n"
    )
    csv.name = "book.csv"
    imported = user_client.post("/api/v1/price-entries/import/", {"file": csv}, format="multipart")
    assert imported.status_code == 201, imported.content
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 190_000  # imported
    newest = max(e["id"] for e in user_client.get("/api/v1/price-entries/").json()["results"])
    assert user_client.delete(f"/api/v1/price-entries/{newest}/").status_code == 204
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 210_000  # deleted: the older quote
    assert user_client.delete(f"/api/v1/price-entries/{entry['id']}/").status_code == 204
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 322_500  # the catalog's again


def test_a_kept_evaluation_follows_the_calibration_switch(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)["id"]
    off = _kept_evaluation(user_client, design)["calibration"]
    assert off["applied"] is False and "switched off" in off["reason"]
    switched = user_client.post("/api/v1/measured-runs/calibration/", {"enabled": True}, format="json")
    assert switched.status_code == 200, switched.json()
    on = _kept_evaluation(user_client, design)["calibration"]
    assert on != off and "switched off" not in on["reason"]
    user_client.post("/api/v1/measured-runs/calibration/", {"enabled": False}, format="json")
    assert _kept_evaluation(user_client, design)["calibration"] == off


def test_a_kept_evaluation_follows_a_move_into_a_team_with_its_book(user_client: Any, catalog: Any) -> None:
    """Moving the design changes which book it resolves through, without a new version."""
    from apps.teams.services import team_create

    team = team_create(user=user_client.user, name="Training")
    quote = {
        "kind": "server_quote",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "valid_from": "2026-01-01",
    }
    made = user_client.post(
        "/api/v1/price-entries/", {**quote, "value": 150_000, "team": team.pk}, format="json"
    )
    assert made.status_code == 201, made.json()
    design = _create(user_client)["id"]
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 322_500  # the owner's own book: empty
    moved = user_client.post(f"/api/v1/designs/{design}/move/", {"team": team.pk}, format="json")
    assert moved.status_code == 200, moved.json()
    assert _server_usd(_kept_evaluation(user_client, design)) == 64 * 150_000
