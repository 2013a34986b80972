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
