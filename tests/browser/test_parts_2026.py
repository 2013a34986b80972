"""A GB300 NVL72 design made in the editor (headless Chromium, live server): the part is in the picker, the
design saves and evaluates, and the results show the part's figures with their sources (issue #32)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in
from tests.browser.test_review_paths import _wait_for_status
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_a_gb300_nvl72_design_evaluates_in_the_editor_and_cites_the_part(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    _setup(django_user_model)
    # Opened from the GB300 row's link, so the editor starts with a GB300 cloud offering (OCI), not p5's H100.
    sign_in(page, live_server.url, then="/designs/new/?accelerator=gb300")
    options = page.eval_on_selector_all("#f-accelerator option", "els => els.map(e => e.value)")
    assert {"gb300", "b300", "mi350x", "vera-rubin"} <= set(options)
    page.fill("#f-name", "70B on 4 GB300 NVL72 racks")
    page.select_option("#f-preset", "llama3-70b")
    page.select_option("#f-accelerator", "gb300")
    page.fill("#f-gpn", "72")
    page.fill("#f-nodes", "4")
    page.select_option("#f-precision", "fp8")
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=60000)
    _wait_for_status(page, "Saved version 1 and evaluated")
    results = page.inner_text("#results")
    # The part's FP8 peak (360 PF / 72) and memory beside their source, and the widened error band.
    assert "catalog.gb300.fp8_dense_tflops" in results and "5,000" in results
    assert "catalog.gb300.memory_gib" in results and "Verda" in results
    screenshot(page, "editor-gb300-nvl72-design")
    # The part's rows of the assumptions table, at reading size.
    page.locator("#assumptions").scroll_into_view_if_needed()
    page.locator("text=catalog.gb300.bf16_dense_tflops").scroll_into_view_if_needed()
    page.screenshot(
        path=str(screenshot(page, "editor-gb300-nvl72-design").with_name("editor-gb300-sources.png"))
    )
    assert page.js_errors == []
