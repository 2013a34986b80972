"""Account and design-page actions in headless Chromium: the API token page, share links with an expiry and
a revoke button, and cloning someone else's design."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.designs.selectors import share_link_list
from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import ROOT, screenshot

pytestmark = pytest.mark.browser


def _panel_shot(page: Any, selector: str, name: str) -> None:
    """One part of the page at full size, beside the full-page screenshot, to check its layout."""
    page.locator(selector).screenshot(path=str(ROOT / "artifacts" / "screenshots" / f"{name}.png"))


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


def test_owner_shares_with_a_7_day_expiry_opens_it_signed_out_then_revokes_it(
    page: Any, browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    import datetime as dt

    from django.utils import timezone

    from apps.designs.models import Design, ShareLink
    from apps.designs.services import design_create

    user = _setup(django_user_model)
    demo = Design.objects.filter(is_demo=True).order_by("id")[3]  # 8 × 8 H200 owned vs AWS reserved
    design = design_create(owner=user, name="Engineer's H200 review", spec=demo.current.spec)
    sign_in(page, live_server.url, then=f"/designs/{design.pk}/")
    assert page.is_hidden("#share-form")  # the panel starts folded
    page.click("#share-panel summary")
    assert page.locator("#share-link-table").inner_text() == "No share links yet."
    page.fill("#share-label", "finance")
    page.select_option("#share-expiry", "7")
    page.click("#create-share-link")
    page.wait_for_selector("#share-url")
    url = page.input_value("#share-url")
    assert url.startswith(f"{live_server.url}/share/")
    page.wait_for_selector("#share-link-table tbody tr")

    link = ShareLink.objects.get(design=design)
    assert link.label == "finance" and link.evaluation.version.number == 1
    # Seven days from the click, as the browser computed it.
    assert abs(link.expires_at - (timezone.now() + dt.timedelta(days=7))) < dt.timedelta(minutes=1)
    expires = timezone.localtime(link.expires_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    row = page.locator(f"#share-link-{link.pk}")
    cells = row.locator("td").all_inner_texts()
    assert cells[:4] == [
        f"{link.token_hint}… finance",
        "version 1",
        timezone.localtime(link.created_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        expires,
    ]
    assert cells[4:6] == ["0×", "active"]
    screenshot(page, "design-share-created")
    _panel_shot(page, "#share-panel", "design-share-panel-created")

    # Someone without an account opens it: another browser context, so no session.
    outsider = browser.new_context()
    try:
        shared = outsider.new_page()
        response = shared.goto(url)
        assert response.status == 200
        frozen = shared.inner_text("#share-frozen")
        assert frozen.startswith("Read-only design review of version 1, frozen ")
        assert frozen.endswith(f"This link expires {expires}.")
        screenshot(shared, "share-frozen")
        _panel_shot(shared, "main > h1 + p", "share-frozen-lead")

        page.once("dialog", lambda dialog: dialog.accept())
        page.click(f"#share-link-{link.pk} .revoke-share-link")
        page.wait_for_selector(f"#share-link-{link.pk} .badge.bad")
        assert page.locator(f"#share-link-{link.pk} .revoke-share-link").count() == 0
        assert page.inner_text(f"#share-link-{link.pk} .share-state").startswith("revoked ")
        assert page.inner_text("#share-status") == "Link revoked."
        assert page.input_value("#share-url") == url  # still there to copy
        screenshot(page, "design-share-revoked")
        _panel_shot(page, "#share-panel", "design-share-panel-revoked")

        assert shared.goto(url).status == 404
    finally:
        outsider.close()
    link = share_link_list(design=link.design).get(pk=link.pk)
    assert link.revoked_at is not None and link.opens == 1  # counted, or logged on PostgreSQL
    assert page.js_errors == []


def test_another_user_clones_a_demo_and_lands_on_their_own_copy(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design

    user = _setup(django_user_model)  # "engineer"; the demos belong to "demo"
    demo = Design.objects.filter(is_demo=True).order_by("id")[0]
    sign_in(page, live_server.url, then=f"/designs/{demo.pk}/")
    assert "by demo" in page.inner_text("h1")
    assert page.locator("#edit-design").count() == 0
    assert page.locator("#share-panel").count() == 0  # share links are the owner's

    page.click("#clone-design")
    page.wait_for_selector("#edit-design")
    copy = Design.objects.get(owner=user)
    assert page.url == f"{live_server.url}/designs/{copy.pk}/"
    assert page.inner_text("h1") == f"Copy of {demo.name} version 1 · by engineer"
    assert page.inner_text(".messages") == f"Cloned “{demo.name}” (version 1): this copy is yours to edit."
    assert page.locator("#share-panel").count() == 1
    assert copy.visibility == "private" and copy.current.spec == demo.current.spec
    screenshot(page, "design-cloned")
    _panel_shot(page, "main > .messages ~ .toolbar", "design-cloned-toolbar")  # after the team line

    page.click("#edit-design")
    page.wait_for_url(f"{live_server.url}/designs/{copy.pk}/edit/")
    assert page.input_value("#f-name") == f"Copy of {demo.name}"
    assert page.js_errors == []
