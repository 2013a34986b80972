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


def test_the_one_page_answer_states_the_commitments_and_still_prints_on_one_page(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    # Issue #31 item 7 in the summary: owning's capex and the chosen 3-year reservation's contract dollars,
    # beside the flip thresholds, on the share view's first page.
    from apps.designs.selectors import evaluation_read
    from apps.designs.services import design_create, share_link_create
    from tests.designs.test_design_verdict import _p5_spec

    user = _setup(django_user_model)
    design = design_create(owner=user, name="p5 reserved", spec=_p5_spec())
    link, token = share_link_create(design=design, user=user)
    evaluation = evaluation_read(result=link.evaluation.result)
    verdict = evaluation.design_verdict
    assert verdict is not None
    response = page.goto(f"{live_server.url}/share/{token}/")
    assert response.status == 200
    rows = page.locator("#finance-summary #verdict-commitments tbody tr")
    assert rows.count() == 2
    # By hand: 64 nodes × 730 h × 36 months × $23.776/node-h × (1 + managed overhead), one term.
    cashflow = evaluation.costs["aws-p5-48xlarge"].cashflow
    assert cashflow is not None and cashflow.inputs is not None
    reserved = 64 * 730 * 36 * 23.776 * (1.0 + cashflow.inputs.managed_overhead_fraction)
    cell = "#verdict-commitments tr[data-commitment='aws-p5-48xlarge:reserved_3y'] td:nth-child(2)"
    assert page.inner_text(cell) == f"${reserved:,.0f}"
    capex = page.inner_text("#verdict-commitments tr[data-commitment='own'] td:nth-child(2)")
    assert capex == f"${cashflow.inputs.capex_usd:,.0f}"
    assert "end of month 4" in page.inner_text("#verdict-commitments tr[data-commitment='own']")
    assert page.locator("#finance-summary #verdict-flips tbody tr").count() == len(verdict.flips) > 0

    page.set_viewport_size({"width": round(A4_CONTENT_WIDTH_PX), "height": 1200})
    page.emulate_media(media="print")
    box = page.locator("#finance-summary").bounding_box()
    assert box is not None and box["height"] < A4_CONTENT_HEIGHT_PX, box
    page.locator("#finance-summary").screenshot(
        path=str(ROOT / "artifacts" / "screenshots" / "share-finance-summary-commitments-print.png")
    )
    assert page.js_errors == []
