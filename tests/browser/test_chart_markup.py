"""Markup in a design's name or a catalog offering's instance type is drawn by Plotly as text, never as a live
link, on the design page, the signed-out share view and the compare page."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser

EVIL_NAME = '<a href="https://evil.example/p5">EVIL5</a>'
EVIL_INSTANCE = '<a href="https://evil.example/p6">EVIL6</a>'
# The design's second offering, as the cost charts' legend names it (provider, instance type, pricing model).
EVIL_OPTION = f"CoreWeave {EVIL_INSTANCE} on-demand"
COST_CHARTS = ("cost-utilization", "cumulative-cost")


def _evil_design(owner: Any) -> Any:
    from apps.catalog.models import CloudOffering
    from apps.designs.models import Design
    from apps.designs.services import design_create

    offering = CloudOffering.objects.get(slug="coreweave-8x-h200-node")
    offering.instance_type = EVIL_INSTANCE
    offering.save()  # a save, not update(): the catalog snapshot notices it
    demo = Design.objects.filter(is_demo=True).order_by("id")[3]  # 8 × 8 H200 owned vs AWS reserved
    spec = demo.current.spec
    coreweave = {"offering": "coreweave-8x-h200-node", "pricing_models": ["on_demand"]}
    costs = {**spec["costs"], "cloud": [*spec["costs"]["cloud"], coreweave]}
    return design_create(owner=owner, name=EVIL_NAME, spec={**spec, "costs": costs})


def _assert_no_injected_link(page: Any, chart_ids: tuple[str, ...]) -> None:
    for chart_id in chart_ids:
        page.wait_for_selector(f"#chart-{chart_id} svg.main-svg", timeout=15000)
    # Plotly writes a link as <a xlink:href=...>: `*|href` matches the attribute in any namespace.
    assert page.locator('a[*|href*="evil.example"]').count() == 0
    assert page.locator('a[href*="evil.example"]').count() == 0
    assert page.locator(".chart svg a").count() == 0  # no chart draws a link of its own


def _legend_texts(page: Any, chart_id: str) -> list[str]:
    return page.eval_on_selector_all(f"#chart-{chart_id} .legendtext", "els => els.map(e => e.textContent)")


def test_markup_in_an_offering_name_is_text_in_the_design_and_share_charts(
    page: Any, browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.services import share_link_create

    user = _setup(django_user_model)
    design = _evil_design(user)
    sign_in(page, live_server.url, then=f"/designs/{design.pk}/")
    _assert_no_injected_link(page, COST_CHARTS)
    for chart_id in COST_CHARTS:
        assert EVIL_OPTION in _legend_texts(page, chart_id), chart_id
    assert page.inner_text("h1").startswith(EVIL_NAME)
    screenshot(page, "chart-markup-design")
    assert page.js_errors == []

    _, token = share_link_create(design=design, user=user, label="finance")
    signed_out = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    signed_out.goto(f"{live_server.url}/share/{token}/")
    _assert_no_injected_link(signed_out, COST_CHARTS)
    for chart_id in COST_CHARTS:
        assert EVIL_OPTION in _legend_texts(signed_out, chart_id), chart_id
    screenshot(signed_out, "chart-markup-share")
    signed_out.context.close()


def test_markup_in_a_design_name_is_text_in_the_compare_charts(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design

    user = _setup(django_user_model)
    design = _evil_design(user)
    other = Design.objects.filter(is_demo=True).order_by("id").first()
    sign_in(page, live_server.url, then=f"/compare/?ids={design.pk},{other.pk}")
    _assert_no_injected_link(page, ("compare-bars", "compare-pareto"))
    # A long name wraps under its bar (clusterdesigner.charts.wrapped): Plotly draws each line as a
    # tspan.line; the name is the lines joined by the spaces the wrapping replaced.
    ticks = page.eval_on_selector_all(
        "#chart-compare-bars .xtick text",
        "els => els.map(e => { const l = e.querySelectorAll('tspan.line');"
        " return l.length ? Array.from(l).map(t => t.textContent).join(' ') : e.textContent; })",
    )
    assert EVIL_NAME in ticks
    screenshot(page, "chart-markup-compare")
    assert page.js_errors == []
