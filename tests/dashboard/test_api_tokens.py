"""The API token page (/accounts/tokens/): a signed-in user creates, replaces and revokes the token their
tools send as `Authorization: Token <key>`, and the REST API accepts it until it is revoked."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.designs.services import design_create

pytestmark = pytest.mark.django_db

PAGE = "/accounts/tokens/"
KEY = re.compile(r'id="api-token-key"[^>]*value="([0-9a-f]{40})"')
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture
def carol(django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("carol", password="pw-carol-123")


def _signed_in(user: Any) -> Client:
    client = Client(enforce_csrf_checks=True)  # the forms must carry the CSRF token, as a browser's do
    client.force_login(user)
    return client


def _post_form(client: Client, button_id: str) -> Any:
    """Submit the page's form holding the button `button_id`, with the CSRF token the page rendered."""
    page = client.get(PAGE).content.decode()
    form = next(f for f in re.findall(r"<form .*?</form>", page, re.S) if f'id="{button_id}"' in f)
    action = re.search(r'action="([^"]+)"', form).group(1)  # type: ignore[union-attr]
    csrf = CSRF.search(form).group(1)  # type: ignore[union-attr]
    return client.post(action, {"csrfmiddlewaretoken": csrf}, follow=True)


def _designs(key: str) -> Any:
    return APIClient().get("/api/v1/designs/", HTTP_AUTHORIZATION=f"Token {key}")


def test_a_token_created_on_the_page_reads_the_api_until_it_is_revoked_on_the_page(
    carol: Any, catalog: Any
) -> None:
    design = design_create(owner=carol, name="Carol's 8B")
    client = _signed_in(carol)
    assert "You have no API token." in client.get(PAGE).content.decode()

    created = _post_form(client, "create-token")
    assert created.redirect_chain == [(PAGE, 302)]
    shown = created.content.decode()
    key = KEY.search(shown).group(1)  # type: ignore[union-attr]
    assert f'curl -H "Authorization: Token {key}" http://testserver/api/v1/designs/' in shown

    response = _designs(key)
    assert response.status_code == 200
    assert [(d["id"], d["name"]) for d in response.json()["results"]] == [(design.pk, "Carol's 8B")]

    # Shown once: reloading the page names the token but no longer shows its key.
    again = client.get(PAGE).content.decode()
    assert key not in again and f"<code>{key[:4]}…</code>" in again and 'id="revoke-token"' in again

    revoked = _post_form(client, "revoke-token")
    assert revoked.redirect_chain == [(PAGE, 302)]
    body = revoked.content.decode()
    assert "Token revoked" in body and "You have no API token." in body

    refused = _designs(key)
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == "Token"
    assert refused.json()["error"]["code"] == "authentication_failed"


def test_replacing_the_token_stops_the_old_key_and_the_new_one_works(carol: Any) -> None:
    client = _signed_in(carol)
    old = KEY.search(_post_form(client, "create-token").content.decode()).group(1)  # type: ignore[union-attr]
    replaced = _post_form(client, "replace-token").content.decode()
    new = KEY.search(replaced).group(1)  # type: ignore[union-attr]
    assert new != old
    assert "The previous one no longer works." in replaced
    assert _designs(old).status_code == 401
    assert _designs(new).status_code == 200


def test_token_page_forms_are_refused_without_the_csrf_token(carol: Any) -> None:
    client = _signed_in(carol)
    assert client.post(reverse("api-token-create")).status_code == 403
    assert "You have no API token." in client.get(PAGE).content.decode()


def test_token_page_and_its_forms_send_a_signed_out_visitor_to_sign_in(carol: Any) -> None:
    client = Client()
    for url in (PAGE, reverse("api-token-create"), reverse("api-token-revoke")):
        response = client.post(url) if url != PAGE else client.get(url)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={url}"


def test_creating_a_token_takes_a_post_not_a_link(carol: Any) -> None:
    assert _signed_in(carol).get(reverse("api-token-create")).status_code == 405


def test_the_navigation_links_the_token_page_for_a_signed_in_user(carol: Any) -> None:
    body = _signed_in(carol).get("/").content.decode()
    assert f'<a href="{PAGE}">API token</a>' in body
    assert PAGE not in Client().get("/").content.decode()
