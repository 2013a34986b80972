"""The Serving page in headless Chromium: the form submits, the three charts draw, the targets are drawn."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_serving_page_draws_latency_cost_and_layout_charts(
    page: Any, live_server: Any, transactional_db: Any
) -> None:
    from apps.catalog.services import catalog_load_seed

    catalog_load_seed()
    page.goto(f"{live_server.url}/serving/")
    page.select_option("#f-accelerator", "h200")
    page.fill("#f-rps", "40")
    page.click("#estimate-serving")
    page.wait_for_url("**accelerator=h200**")
    for chart in ("serving-latency", "serving-cost", "serving-layouts"):
        page.wait_for_selector(f"#chart-{chart}[data-rendered='1'] svg.main-svg")
    legend = page.locator("#chart-serving-latency .legendtext").evaluate_all(
        "els => els.map(e => e.textContent)"
    )
    assert "TTFT target" in legend and "TPOT target" in legend
    assert int(page.locator("#serving-gpus").inner_text()) >= 1
    assert page.locator("#serving-costs tbody tr").count() >= 2
    screenshot(page, "serving")
    assert page.js_errors == []
