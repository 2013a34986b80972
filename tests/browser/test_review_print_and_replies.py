"""The review page in the browser (issue #36): a reply posted with the reply form sits under its comment, its
script and link payload rendered as text (no element injected); the version's review history; and the page
printed to A4: no header, navigation or forms, charts redrawn within the page width, no table wider than
the page, a PDF of a few A4 pages."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from tests.browser.crawl import TITLES_CUT_JS
from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot
from tests.designs.test_stale_prices import SPEC

pytestmark = pytest.mark.browser

REPLY = (
    "Because <script>alert(2)</script><img src=x onerror=alert(3)> [x](javascript:alert(4)) <a href=/x>y</a>"
)
# A4 at 96 CSS px an inch is 210 mm = 793.7 px wide; less the two 12 mm margins of review-print.css, the
# page box is 186 mm = 703 px.
A4_CONTENT_PX = 186 / 25.4 * 96
A4_POINTS = (595.92, 842.88)  # 210 × 297 mm in PDF points (1/72 inch), as Chromium writes the MediaBox


def _review_page(page: Any, live_server: Any, django_user_model: Any) -> Any:
    from apps.designs.services import design_create
    from apps.reviews.models import Comment
    from apps.reviews.services import review_transition

    user = _setup(django_user_model)
    design = design_create(owner=user, name="H100 pod for print", spec=copy.deepcopy(SPEC), message="v1")
    Comment.objects.create(version=design.current, author=user, body="Why **0.7** busy?")
    review_transition(user=user, version=design.current, state="in_review", note="for Monday")
    review_transition(user=user, version=design.current, state="changes_requested", note="quote the servers")
    sign_in(page, live_server.url, then=f"/designs/{design.pk}/review/")
    return design


def test_a_reply_is_threaded_under_its_comment_and_its_payload_is_text(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.reviews.models import Comment

    _review_page(page, live_server, django_user_model)
    parent = Comment.objects.get()
    page.click(f"#reply-to-{parent.pk}")
    page.fill(f"#reply-body-{parent.pk}", REPLY)
    page.click(f"#reply-submit-{parent.pk}")
    page.wait_for_selector(".comment.reply")
    reply = Comment.objects.exclude(pk=parent.pk).get()
    assert (reply.parent_id, reply.version_id, reply.body) == (parent.pk, parent.version_id, REPLY)
    shown = page.locator(f"#comment-{reply.pk}")
    assert shown.get_attribute("data-parent") == str(parent.pk) and "reply-depth-1" in shown.get_attribute(
        "class"
    )
    # The reply comes right after its parent in the list.
    order = page.eval_on_selector_all(".comment-list > li", "els => els.map(e => e.id)")
    assert order == [f"comment-{parent.pk}", f"comment-{reply.pk}"]
    body = shown.locator(".comment-body")
    injected = body.locator("script, img, iframe, a, [onerror]").count()
    assert injected == 0  # no element from the payload: the script, the image, the javascript: and <a> link
    text = body.inner_text()
    assert "<script>alert(2)</script>" in text and "<img src=x onerror=alert(3)>" in text
    assert "[x](javascript:alert(4))" in text and "<a href=/x>y</a>" in text
    assert page.js_errors == []
    screenshot(page, "review-reply")


def test_review_history_and_the_page_printed_to_a4(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    design = _review_page(page, live_server, django_user_model)
    rows = page.locator("#review-history tbody tr")
    assert rows.count() == 2
    cells = [rows.nth(i).locator("td").all_inner_texts() for i in range(2)]
    assert [c[1:] for c in cells] == [
        ["engineer", "Draft", "In review", "for Monday"],
        ["engineer", "In review", "Changes requested", "quote the servers"],
    ]
    assert page.inner_text("#version-message") == "“v1”"
    page.wait_for_selector("[data-chart][data-rendered='1']")

    # The print layout at the A4 page box's width: what the PDF lays out.
    page.set_viewport_size({"width": round(A4_CONTENT_PX), "height": 1000})
    page.emulate_media(media="print")
    page.wait_for_timeout(500)  # the charts redraw on the print media's change (static/js/charts.js)
    for hidden in (".site-header", "#review-form", "#comment-form", ".reply-panel"):
        assert page.locator(hidden).first.is_hidden(), hidden
    widest = page.evaluate(
        """() => Math.max(...[...document.querySelectorAll('table.data, .js-plotly-plot, svg.main-svg')]
               .map(e => e.getBoundingClientRect().right))"""
    )
    assert widest <= A4_CONTENT_PX + 1, widest
    # A figure is never broken mid-number on paper (the Swing column printed "$1,234,5" over "67"): every
    # numeric cell keeps to one line, the text columns beside it take the wrapping.
    wrapped = page.eval_on_selector_all(
        "table.data td.num",
        """els => els.filter(e => {
               const text = document.createRange();
               text.selectNodeContents(e);
               return e.innerText.trim() && (getComputedStyle(e).whiteSpace !== 'nowrap'
                   || text.getBoundingClientRect().height > 1.5 * parseFloat(getComputedStyle(e).lineHeight));
           }).map(e => e.innerText)""",
    )
    assert page.locator("#verdict-movers td.num").count() > 0 and wrapped == [], wrapped
    assert page.evaluate("document.documentElement.scrollWidth") <= A4_CONTENT_PX + 1
    charts = page.eval_on_selector_all(
        ".js-plotly-plot", "els => els.map(e => e.getBoundingClientRect().width)"
    )
    assert charts and all(0.8 * A4_CONTENT_PX <= w <= A4_CONTENT_PX + 1 for w in charts), charts
    # Redrawn at the page's width, every chart's title and subtitle still lie within its chart.
    assert page.evaluate(TITLES_CUT_JS) == []
    screenshot(page, "review-print")

    pdf = page.pdf(format="A4", print_background=False)
    boxes = re.findall(rb"/MediaBox\s*\[\s*0\s+0\s+([\d.]+)\s+([\d.]+)\s*\]", pdf)
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))
    # Nine pages when written: the finance summary alone on page 1 (print.css), the state, history, comments
    # and summary, then ten charts at two or three a page; the assumptions and the other layouts, which
    # made it 17, are left to the design page and its XLSX (#print-note). Ten is the bound.
    assert pages == len(boxes) and 1 <= pages <= 10, pages
    assert all(abs(float(w) - A4_POINTS[0]) < 1 and abs(float(h) - A4_POINTS[1]) < 1 for w, h in boxes)
    (screenshot(page, "review-print").with_name("review-print.pdf")).write_bytes(pdf)
    assert design.pk and page.js_errors == []
