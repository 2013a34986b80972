"""Issue 13: tables fit a 1440 px window (a design review is held on a laptop or a projector at that width).

Every data table on the pages a review uses must show all its columns without a horizontal scroll bar.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser

OVERFLOW = """() => Array.from(document.querySelectorAll('.table-wrap, table.data')).map(el => ({
    id: el.id || (el.querySelector('table') || {}).id || el.className,
    scroll: el.scrollWidth, client: el.clientWidth, right: el.getBoundingClientRect().right}))
  .filter(t => t.scroll > t.client + 1 || t.right > window.innerWidth + 1)"""


def test_every_table_fits_a_1440_px_window(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design

    _setup(django_user_model)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    try:
        sign_in(page, live_server.url)
        demo = Design.objects.filter(is_demo=True).order_by("id")
        ids = ",".join(str(d.pk) for d in demo[:3])
        overflowing = {}
        for path in (
            "/catalog/",
            "/catalog/prices/",
            "/catalog/infrastructure/",
            f"/designs/{demo[0].pk}/",
            f"/compare/?ids={ids}",
        ):
            page.goto(live_server.url + path)
            found = page.evaluate(OVERFLOW)
            if found:
                overflowing[path] = found
                screenshot(page, "overflow" + path.replace("/", "-").split("?")[0])
        assert overflowing == {}
    finally:
        context.close()


def test_the_header_is_one_row_at_1280_px_signed_in(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    """Every section and the account links fit one row on a 1280 px laptop (with Serving and Plans added it
    wrapped the account links onto a second row)."""
    _setup(django_user_model)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        sign_in(page, live_server.url)
        page.goto(live_server.url + "/plans/")
        # One row: the last menu item and the account links start above the brand's bottom edge.
        tops = page.evaluate(
            """() => { const box = s => document.querySelector(s).getBoundingClientRect();
                return [box('.site-header .brand').bottom, box('.site-header li:last-child').top,
                        box('.site-header .account').top]; }"""
        )
        brand_bottom, last_item_top, account_top = tops
        if max(last_item_top, account_top) >= brand_bottom:
            screenshot(page, "header-1280")
        assert last_item_top < brand_bottom and account_top < brand_bottom
    finally:
        context.close()


PAGE_WIDER_THAN_WINDOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
CHARTS_DRAWN = """() => document.querySelectorAll('[data-chart][data-rendered="1"]').length
  === document.querySelectorAll('[data-chart]').length"""


def test_a_phone_width_window_never_scrolls_the_page_sideways(
    browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    """A 360 px phone (finance opening a share link, an engineer between meetings): no page is wider than the
    window. A wide table scrolls inside its own box, fieldsets and text boxes shrink, and a chart title wider
    than its chart wraps onto more lines (static/js/charts.js fitTitles) instead of running off its edge.
    Before: the design and share pages were 600 px wide (the finance tables' 560 px grid columns), the new
    design form 658, serving 584, plans 845, measured runs 440; with the page held to the window, five chart
    titles of the share page were cut."""
    from apps.designs.models import Design
    from apps.designs.services import share_link_create
    from tests.browser.crawl import TITLES_CUT_JS
    from tests.browser.test_dashboard import sign_in_by_cookie

    _setup(django_user_model)
    demo = Design.objects.filter(is_demo=True).order_by("id")
    _, token = share_link_create(design=demo[0], user=demo[0].owner)
    context = browser.new_context(viewport={"width": 360, "height": 800})
    page = context.new_page()
    try:
        sign_in_by_cookie(page, live_server.url, then="/designs/new/")
        wider, cut = {}, {}
        for path in (
            f"/share/{token}/",
            f"/designs/{demo[0].pk}/",
            "/designs/new/",
            "/serving/",
            "/plans/",
            "/measured-runs/",
            "/catalog/",
            f"/compare/?ids={demo[0].pk},{demo[1].pk}",
        ):
            page.goto(live_server.url + path)
            page.wait_for_function(CHARTS_DRAWN, timeout=30_000)
            if (extra := page.evaluate(PAGE_WIDER_THAN_WINDOW)) > 0:
                wider[path] = extra
            if titles := page.evaluate(TITLES_CUT_JS):
                cut[path] = titles
            if path.startswith("/share/"):
                screenshot(page, "phone-share")
                # The finance table keeps every column: it scrolls in its own box, the page does not.
                box = page.evaluate(
                    "() => { const t = document.getElementById('verdict-npv-table');"
                    " return [t.scrollWidth, t.clientWidth, getComputedStyle(t).overflowX]; }"
                )
                assert box[0] > box[1] and box[2] == "auto", box
                # The NPV chart's title ("NPV of the monthly cash flows over 1 year against utilization", 62
                # characters) is drawn on two lines at this width.
                lines = page.locator("#chart-cost-utilization .gtitle tspan.line").count()
                assert lines >= 2, lines
        assert wider == {} and cut == {}
    finally:
        context.close()
