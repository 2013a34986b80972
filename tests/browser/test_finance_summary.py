"""The share view opens with the answer for finance (issue #31): the design-level verdict over every offering
and only the options chosen, the NPV table, the thresholds that flip it, the top movers with their sources
and owning's three figures reconciled, before any detail, and it fits on one A4 page when printed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup
from tests.conftest import ROOT, screenshot
from tests.designs.test_design_verdict import _b200_spec

pytestmark = pytest.mark.browser

# A4 printed with print.css's 12 mm margins: 273 mm of height at 96 px per inch.
A4_CONTENT_HEIGHT_PX = (297 - 24) / 25.4 * 96
A4_CONTENT_WIDTH_PX = (210 - 24) / 25.4 * 96


def test_share_view_opens_with_a_one_page_answer_for_finance(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.selectors import evaluation_read
    from apps.designs.services import design_create, share_link_create

    user = _setup(django_user_model)
    spec = _b200_spec(["aws-p6-b200-48xlarge", "coreweave-8x-b200-node"])
    design = design_create(owner=user, name="B200 rent or own", spec=spec)
    link, token = share_link_create(design=design, user=user)
    verdict = evaluation_read(result=link.evaluation.result).design_verdict
    assert verdict is not None and verdict.rival.key == "coreweave-8x-b200-node:on_demand"

    response = page.goto(f"{live_server.url}/share/{token}/")
    assert response.status == 200
    # First in the results: the summary comes before the per-offering cash flows and everything else.
    first = page.eval_on_selector("#results", "el => el.querySelector('section, div, h2').id")
    assert first == "finance-summary"
    text = page.inner_text("#design-verdict")
    assert text.startswith("Own." if verdict.winner == "own" else "Rent ")
    assert verdict.sentence in text and "CoreWeave" in text
    rows = page.locator("#verdict-npv-table tbody tr")
    assert rows.count() == 3  # owning, CoreWeave on-demand, AWS on-demand: nothing unchosen
    assert page.get_attribute("#verdict-npv-table tbody tr.best", "data-verdict-option") == verdict.rival.key
    shown = page.inner_text("#verdict-npv-table tr[data-verdict-option='own'] td:nth-child(2)")
    assert shown == f"${verdict.own.npv_usd:,.0f}"
    assert page.locator("#verdict-flips tbody tr").count() == len(verdict.flips) == 5
    assert page.locator("#owning-figures tbody tr").count() == 3
    assert page.locator("#verdict-movers tbody tr").count() == len(verdict.movers) > 0
    screenshot(page, "share-finance-summary")
    page.locator("#finance-summary").screenshot(
        path=str(ROOT / "artifacts" / "screenshots" / "share-finance-summary-panel.png")
    )

    # Printed: the summary alone fits on one A4 page, and the details start on the next.
    page.set_viewport_size({"width": round(A4_CONTENT_WIDTH_PX), "height": 1200})
    page.emulate_media(media="print")
    box = page.locator("#finance-summary").bounding_box()
    assert box is not None and box["height"] < A4_CONTENT_HEIGHT_PX, box
    after = page.eval_on_selector("#finance-summary", "el => getComputedStyle(el).breakAfter")
    assert after == "page"
    page.locator("#finance-summary").screenshot(
        path=str(ROOT / "artifacts" / "screenshots" / "share-finance-summary-print.png")
    )
    assert page.js_errors == []
