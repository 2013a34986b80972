"""The cash-flow chart in headless Chromium: drawn as SVG on the design page and on the anonymous share view,
one trace per option with the engine's cumulative monthly cash, and owning's payback month marked."""

from __future__ import annotations

from typing import Any

import pytest

from clusterdesigner.charts import PRICING_LABELS
from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def _expected(evaluation: dict[str, Any]) -> tuple[dict[str, float], int | None]:
    """Each drawn option's last cumulative figure (the engine's undiscounted total) and the payback month."""
    cash = next(iter(evaluation["costs"].values()))["cashflow"]
    chosen = set(evaluation["spec"]["costs"]["cloud"][0]["pricing_models"])
    ends = {"Own (on-prem)": sum(cash["own"]["monthly_usd"])}
    for row in cash["rent"]:
        if row["name"] in chosen:
            ends[f"Cloud {PRICING_LABELS[row['name']]}"] = sum(row["monthly_usd"])
    return ends, cash["payback_month"]


def _check_chart(page: Any, evaluation: dict[str, Any]) -> None:
    page.wait_for_selector("#chart-cash-flow svg.main-svg", timeout=15000)
    drawn = page.eval_on_selector(
        "#chart-cash-flow", "el => el.data.map(t => [t.name, t.x.length, t.y[t.y.length - 1]])"
    )
    ends, payback = _expected(evaluation)
    months = round(float(evaluation["spec"]["costs"]["horizon_years"]) * 12)
    assert {name for name, _, _ in drawn} == set(ends)
    for name, points, last in drawn:
        assert points == months + 1, name  # month 0 (the start) to the horizon's last month
        assert last == pytest.approx(ends[name], rel=1e-9), name
    shapes = page.eval_on_selector("#chart-cash-flow", "el => (el.layout.shapes || []).map(s => s.x0)")
    assert shapes == ([payback] if payback is not None else [])
    title = page.eval_on_selector("#chart-cash-flow", "el => el.layout.title.text")
    assert title.startswith("Cumulative cash by month")
    assert (
        page.eval_on_selector("#chart-cash-flow", "el => el.layout.xaxis.title.text")
        == "Month of the horizon"
    )
    assert "(USD)" in page.eval_on_selector("#chart-cash-flow", "el => el.layout.yaxis.title.text")
    for name in ends:
        assert page.locator("#chart-cash-flow .legendtext", has_text=name).count() >= 1, name


def test_cash_flow_chart_on_the_design_page_and_the_share_view(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design
    from apps.designs.services import design_evaluate, share_link_create

    user = _setup(django_user_model)
    demo = Design.objects.filter(is_demo=True).order_by("id")[3]  # 8 × 8 H200 owned vs AWS reserved
    evaluation = design_evaluate(version=demo.current).result
    _, token = share_link_create(design=demo, user=user)

    page.goto(f"{live_server.url}/share/{token}/")  # signed out
    _check_chart(page, evaluation)
    page.locator("#chart-cash-flow").screenshot(
        path=str(screenshot(page, "share-full").parent / "cash-flow.png")
    )

    # The option cards are ranked over the horizon, the first badged so.
    first = page.locator("#ranked-options .card").first
    assert "cheapest over the horizon" in first.inner_text()
    shots = screenshot(page, "share-full").parent
    first.locator("xpath=..").screenshot(path=str(shots / "ranked-options.png"))

    sign_in(page, live_server.url, then=f"/designs/{demo.pk}/")
    _check_chart(page, evaluation)
    assert page.js_errors == []
