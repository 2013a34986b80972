"""A GB300 NVL72 design made in the editor (headless Chromium, live server): the part is in the picker, the
design saves and evaluates, and the results show the part's figures with their sources (issue #32)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_review_paths import _wait_for_status
from tests.conftest import ROOT, screenshot

pytestmark = pytest.mark.browser
SHOTS = ROOT / "artifacts" / "screenshots"
# Each part's source, as its catalog row names it (apps/catalog/data/seed_catalog.json).
SOURCES = {
    "Verda": "verda.com/blog/gb300-nvl72-architecture",
    "STH": "ServeTheHome (servethehome.com/?p=99664",
}


def test_a_gb300_nvl72_design_evaluates_in_the_editor_and_cites_the_part(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    _setup(django_user_model)
    # Opened from the GB300 row's link, so the editor starts with a GB300 cloud offering (OCI), not p5's H100.
    sign_in_by_cookie(page, live_server.url, then="/designs/new/?accelerator=gb300")
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
    shot = screenshot(page, "editor-gb300-nvl72-design")
    # The part's rows of the assumptions table, at reading size.
    page.locator("#assumptions").scroll_into_view_if_needed()
    page.locator("text=catalog.gb300.bf16_dense_tflops").scroll_into_view_if_needed()
    page.screenshot(path=str(shot.with_name("editor-gb300-sources.png")))
    assert page.js_errors == []


@pytest.mark.parametrize(
    ("slug", "per_node", "nodes", "precision", "server_usd", "peak_row", "peak", "source"),
    [
        # GB300 NVL72 FP4 dense 1,080 PF / 72 = 15,000 TFLOP/s; the rack has a catalog owning price.
        ("gb300", "72", "4", "nvfp4", None, "catalog.gb300.fp4_dense_tflops", "15,000", "Verda"),
        # MI350X MXFP8 at the FP8 rate, 2.2 GHz x 1,024 x 1,024 x 2 = 4,613.7 TFLOP/s; no catalog owning
        # price, so the user types a server quote (a made-up $400,000: only the training figures are checked).
        ("mi350x", "8", "32", "mxfp8", "400000", "catalog.mi350x.fp8_dense_tflops", "4,613.7", "STH"),
        # B300 NVFP4 at the catalog's FP4 dense rate, 14,000 TFLOP/s (its source, Verda's per-GPU table); no
        # catalog owning price, so the same made-up server quote.
        ("b300", "8", "32", "nvfp4", "400000", "catalog.b300.fp4_dense_tflops", "14,000", "Verda"),
    ],
)
def test_a_2026_part_with_its_block_scaled_recipe_is_made_in_the_editor(
    page: Any,
    live_server: Any,
    transactional_db: Any,
    django_user_model: Any,
    slug: str,
    per_node: str,
    nodes: str,
    precision: str,
    server_usd: str | None,
    peak_row: str,
    peak: str,
    source: str,
) -> None:
    _setup(django_user_model)
    sign_in_by_cookie(page, live_server.url, then=f"/designs/new/?accelerator={slug}")
    page.fill("#f-name", f"70B on {slug} in {precision}")
    page.select_option("#f-preset", "llama3-70b")
    page.select_option("#f-accelerator", slug)
    page.fill("#f-gpn", per_node)
    page.fill("#f-nodes", nodes)
    page.select_option("#f-precision", precision)
    if server_usd:
        page.fill("#f-server", server_usd)
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=60000)
    _wait_for_status(page, "Saved version 1 and evaluated")
    assert page.input_value("#f-precision") == precision
    results = page.inner_text("#results")
    assert peak_row in results and peak in results and SOURCES[source] in results
    assert f"no measured run of {slug}" in results
    screenshot(page, f"editor-{slug}-{precision}-design")
    page.locator(f"text={peak_row}").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"editor-{slug}-{precision}-sources.png"))
    # The design page (what a reader opens later) shows the same rows with the part's sources.
    page.goto(page.url.replace("/edit/", "/"))
    body = page.inner_text("body")
    assert peak_row in body and SOURCES[source] in body
    page.locator(f"text={peak_row}").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"design-page-{slug}-{precision}-sources.png"))
    assert page.js_errors == []
