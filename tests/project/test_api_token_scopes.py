"""Issue #38 item 8: API tokens hashed at rest (shown once), with an optional expiry, a scope (read only,
designs write, catalog admin) and a last-used time, revocable from the token page and the admin; and the
shared design JSON is sent ``Cache-Control: private, no-store`` like the share page.

Before: tokens were DRF's, stored in plain text, never expiring, with no scope (a staff token could delete
the catalog), and /api/v1/shared/<token>/ sent no Cache-Control."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from apps.catalog.models import Fabric
from clusterdesigner.api_tokens import api_token_create
from clusterdesigner.models import ApiToken
from tests.designs.test_stale_prices import SPEC

KEY = re.compile(r'id="api-token-key"[^>]*value="([0-9a-f]{40})"')


def _client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_shared_design_json_is_private_no_store(user_client: Any, catalog: Any, api_client: Any) -> None:
    made = user_client.post("/api/v1/designs/", {"name": "shared", "spec": SPEC}, format="json").json()
    link = user_client.post(f"/api/v1/designs/{made['id']}/share-links/", {}, format="json").json()
    response = api_client.get(f"/api/v1/shared/{link['token']}/")
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    # An unknown link's 404 is not kept by a cache either.
    missing = api_client.get("/api/v1/shared/" + "x" * 43 + "/")
    assert missing.status_code == 404 and missing["Cache-Control"] == "private, no-store"


def test_the_key_is_stored_only_as_its_hash(alice: Any, db: Any) -> None:
    token = api_token_create(user=alice)
    row = ApiToken.objects.get(user=alice)
    assert len(token.key) == 40
    assert row.key_hash == hashlib.sha256(token.key.encode()).hexdigest()
    assert row.prefix == token.key[:4]
    assert token.key not in {str(v) for v in ApiToken.objects.values_list(flat=True)}
    assert not any(token.key in str(value) for value in ApiToken.objects.values().get().values())
    assert _client(token.key).get("/api/v1/designs/").status_code == 200
    # The hash itself is not a key.
    assert _client(row.key_hash[:40]).get("/api/v1/designs/").status_code == 401


def test_an_expired_token_is_refused(alice: Any, db: Any) -> None:
    token = api_token_create(user=alice, expires_at=timezone.now() + dt.timedelta(days=1))
    assert _client(token.key).get("/api/v1/designs/").status_code == 200
    ApiToken.objects.filter(user=alice).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    refused = _client(token.key).get("/api/v1/designs/")
    assert refused.status_code == 401 and refused.json()["error"]["message"] == "Token expired."


def test_a_read_only_token_reads_and_computes_but_writes_nothing(alice: Any, catalog: Any) -> None:
    client = _client(api_token_create(user=alice, scope="read").key)
    assert client.get("/api/v1/designs/").status_code == 200
    refused = client.post("/api/v1/designs/", {"name": "x", "spec": SPEC}, format="json")
    assert refused.status_code == 403
    assert "'designs' scope" in refused.json()["error"]["message"]
    assert not alice.designs.exists()
    # The serving calculator stores nothing: a read-only token may ask it.
    estimate = client.post("/api/v1/serving/estimate/", {}, format="json")
    assert estimate.status_code != 403


def test_a_read_only_token_evaluates_a_stored_design_and_no_other_write(alice: Any, catalog: Any) -> None:
    """Evaluate computes from a stored design (nothing of the design is written), so the read scope covers
    it; every other POST on the same view (clone, share links, move) still needs the designs scope."""
    owner = APIClient()
    owner.force_login(alice)
    made = owner.post("/api/v1/designs/", {"name": "mine", "spec": SPEC}, format="json").json()
    client = _client(api_token_create(user=alice, scope="read").key)
    evaluated = client.post(f"/api/v1/designs/{made['id']}/evaluate/", {}, format="json")
    assert evaluated.status_code == 200
    assert evaluated.json()["training"]["time_to_train_days"] > 0
    for path in ("clone/", "share-links/"):
        refused = client.post(f"/api/v1/designs/{made['id']}/{path}", {}, format="json")
        assert refused.status_code == 403, path
        assert "'designs' scope" in refused.json()["error"]["message"]
    assert alice.designs.count() == 1 and not alice.designs.get().share_links.exists()


@pytest.mark.parametrize(("scope", "status"), [("read", 403), ("designs", 403), ("catalog", 200)])
def test_only_a_catalog_scope_token_of_staff_writes_the_catalog(
    scope: str, status: int, catalog: Any, django_user_model: Any
) -> None:
    staff = django_user_model.objects.create_user("ops", password="pw-ops-12345", is_staff=True)
    client = _client(api_token_create(user=staff, scope=scope).key)
    before = Fabric.objects.get(slug="eth-10g").latency_us
    assert before != 9.5
    response = client.patch("/api/v1/fabrics/eth-10g/", {"latency_us": 9.5}, format="json")
    assert response.status_code == status, response.content[:300]
    assert Fabric.objects.get(slug="eth-10g").latency_us == (9.5 if status == 200 else before)
    # Deleting needs the catalog scope as well.
    deleted = client.delete("/api/v1/fabrics/eth-10g/")
    assert deleted.status_code == (204 if scope == "catalog" else 403)


def test_a_designs_scope_token_writes_designs(alice: Any, catalog: Any) -> None:
    client = _client(api_token_create(user=alice, scope="designs").key)
    assert client.post("/api/v1/designs/", {"name": "x", "spec": SPEC}, format="json").status_code == 201


def test_last_use_is_recorded_and_shown_on_the_page(alice: Any, db: Any) -> None:
    token = api_token_create(user=alice)
    page = Client()
    page.force_login(alice)
    assert re.search(r'id="token-last-used">never<', page.get("/accounts/tokens/").content.decode())
    _client(token.key).get("/api/v1/designs/")
    used = ApiToken.objects.get(user=alice).last_used_at
    assert used is not None and timezone.now() - used < dt.timedelta(seconds=30)
    shown = page.get("/accounts/tokens/").content.decode()
    assert f'id="token-last-used">{timezone.localtime(used):%Y-%m-%d %H:%M}' in shown


def test_the_page_creates_a_token_with_the_chosen_scope_and_expiry(alice: Any, db: Any) -> None:
    page = Client()
    page.force_login(alice)
    form = page.get("/accounts/tokens/").content.decode()
    # A non-staff user is not offered the catalog scope.
    assert 'value="read"' in form and 'value="designs"' in form and 'value="catalog"' not in form
    created = page.post("/accounts/tokens/create/", {"scope": "designs", "expires_days": "30"}, follow=True)
    key = KEY.search(created.content.decode()).group(1)  # type: ignore[union-attr]
    row = ApiToken.objects.get(user=alice)
    assert row.scope == "designs"
    assert row.expires_at is not None
    assert abs(row.expires_at - (timezone.now() + dt.timedelta(days=30))) < dt.timedelta(minutes=1)
    assert _client(key).get("/api/v1/designs/").status_code == 200
    # A scope the user may not give is refused, and nothing replaces the token.
    page.post("/accounts/tokens/create/", {"scope": "catalog", "expires_days": ""})
    assert ApiToken.objects.get(user=alice).scope == "designs"


def test_staff_revoke_a_token_from_the_admin(alice: Any, db: Any, django_user_model: Any) -> None:
    key = api_token_create(user=alice).key
    admin = django_user_model.objects.create_superuser("root", password="pw-root-123")
    page = Client()
    page.force_login(admin)
    listing = page.get("/admin/clusterdesigner/apitoken/").content.decode()
    assert key[:4] in listing and key not in listing
    row = ApiToken.objects.get(user=alice)
    response = page.post(
        "/admin/clusterdesigner/apitoken/", {"action": "revoke_selected", "_selected_action": [row.pk]}
    )
    assert response.status_code == 302
    assert not ApiToken.objects.exists()
    assert _client(key).get("/api/v1/designs/").status_code == 401
