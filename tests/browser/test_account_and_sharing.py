"""Account and design-page actions in headless Chromium: the API token page, share links with an expiry and
a revoke button, and cloning someone else's design."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_api_token_page_creates_a_token_the_api_accepts_and_revokes_it(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    _setup(django_user_model)
    sign_in(page, live_server.url)
    page.click("header >> text=API token")
    page.wait_for_url(f"{live_server.url}/accounts/tokens/")
    assert page.inner_text("#token-state") == "You have no API token."

    page.click("#create-token")
    page.wait_for_selector("#api-token-key")
    key = page.input_value("#api-token-key")
    assert len(key) == 40
    assert page.inner_text("#token-state").startswith("Active since ")
    assert page.inner_text("#token-state").endswith(f"its key begins {key[:4]}….")
    screenshot(page, "api-token-created")
    designs = APIClient().get("/api/v1/designs/", HTTP_AUTHORIZATION=f"Token {key}")
    assert designs.status_code == 200 and designs.json()["count"] == 4  # the demos, visible to everyone

    page.click("#revoke-token")
    page.wait_for_selector("text=Token revoked")
    assert page.locator("#api-token-key").count() == 0
    screenshot(page, "api-token-revoked")
    assert APIClient().get("/api/v1/designs/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert page.js_errors == []
