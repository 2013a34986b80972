"""The catalog page in headless Chromium."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_catalog_page_in_chromium(page: Any, live_server: Any, transactional_db: Any) -> None:
    from tests.conftest import seed_catalog

    seed_catalog()
    page.goto(f"{live_server.url}/catalog/")
    rows = page.locator("#accelerator-table tbody tr")
    assert rows.count() >= 11
    h100 = page.locator('#accelerator-table tr[data-slug="h100-sxm"]')
    assert "989.4" in h100.inner_text()
    page.select_option("#id_precision", "fp8")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**precision=fp8**")
    assert page.locator('#accelerator-table tr[data-slug="a100-80gb"]').count() == 0
    assert page.locator('#accelerator-table tr[data-slug="h100-sxm"]').count() == 1
    screenshot(page, "catalog")
    assert page.js_errors == []
