"""The catalog's Market history page in headless Chromium: both series drawn, every table within 1440 px."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_table_widths import OVERFLOW
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_market_page_draws_both_series_in_chromium(
    browser: Any, live_server: Any, transactional_db: Any
) -> None:
    from tests.conftest import seed_catalog

    seed_catalog()
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_server.url}/catalog/")
        page.click("text=Market history")
        page.wait_for_url("**/catalog/market/")
        page.wait_for_selector("#chart-residual[data-rendered='1'] svg.main-svg")
        page.wait_for_selector("#chart-rental[data-rendered='1'] svg.main-svg")
        # One trace per series: 4 resale series, 7 rental series.
        assert page.locator("#chart-residual .scatterlayer .trace").count() == 4
        assert page.locator("#chart-rental .scatterlayer .trace").count() == 7
        assert "Resale value (% of new)" in page.locator("#chart-residual").inner_text()
        assert page.locator("#residual-values-table tbody tr").count() == 13
        assert page.locator("#rental-prices-table tbody tr").count() == 12
        assert page.evaluate(OVERFLOW) == []
        screenshot(page, "catalog-market")
        assert errors == []
    finally:
        context.close()
