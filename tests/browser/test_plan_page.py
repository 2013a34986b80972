"""The capacity plan pages in headless Chromium: pick a demo design as a training run in the new-plan form,
create the plan, and see its three charts drawn with their traces."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.crawl import TITLES_CUT_JS
from tests.browser.test_dashboard import PASSWORD, sign_in_by_cookie
from tests.conftest import screenshot

pytestmark = pytest.mark.browser

PLAN_CHARTS = {
    "capacity": {"Owned", "On-demand", "Demand, mean", "Demand, peak hour"},
    "cost": {"Owned", "On-demand"},
    "utilization": {"Owned fleet"},
}


def _assert_titles_whole(page: Any) -> None:
    """Every chart drawn, then no title or subtitle past its chart's edge (the crawl's check)."""
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-chart]')].every(el => el.dataset.rendered === '1')",
        timeout=15000,
    )
    assert page.evaluate(TITLES_CUT_JS) == []


def test_a_plan_from_a_demo_design_draws_its_capacity_cost_and_utilization_charts(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.demo import demo_load
    from tests.conftest import seed_catalog

    seed_catalog()
    demo = demo_load()[0]
    django_user_model.objects.create_user("engineer", password=PASSWORD)
    sign_in_by_cookie(page, live_server.url, then="/plans/")
    page.check(f"input[name=design][value='{demo.pk}']")
    page.fill(f"#deadline-{demo.pk}", "2")
    page.fill("#p-name", "Browser plan")
    page.click("#create-plan")
    page.wait_for_selector("#plan-total")
    for chart_id, names in PLAN_CHARTS.items():
        page.wait_for_selector(f"#chart-{chart_id} svg.main-svg", timeout=15000)
        drawn = set(page.eval_on_selector(f"#chart-{chart_id}", "el => el.data.map(t => t.name)"))
        assert names <= drawn, chart_id
    assert demo.name in page.inner_text("#plan-runs")
    # Issue #31, one basis: the mix is the one of lowest NPV of its monthly cash flows, stated first, and the
    # undiscounted cash out is labelled as such.
    summary = page.inner_text("#plan-summary")
    assert summary.startswith("Cheapest mix: NPV of its monthly cash flows at 8 % a year")
    assert "Cash out, undiscounted" in summary and page.inner_text("#plan-npv").startswith("$")
    # Each chart's title and subtitle are drawn whole inside their half-page chart: the cost chart's title
    # once ran past its right edge, cutting off why its last month is negative (the resale).
    _assert_titles_whole(page)
    cost_title = page.eval_on_selector("#chart-cost", "el => el.querySelector('.gtitle').textContent")
    assert cost_title == "Cash out by capacity layer and month, undiscounted"
    assert page.eval_on_selector("#chart-cost", "el => el.querySelector('.gtitle-subtitle').textContent") == (
        "owned: capex when it arrives, resale in the last month"
    )
    assert page.js_errors == []
    screenshot(page, "capacity-plan")


def test_a_plan_share_link_is_made_with_an_expiry_listed_and_revoked_from_the_plan_page(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.plans.models import PlanShareLink
    from apps.plans.services import plan_create
    from apps.plans.views import EXAMPLE_SPEC

    user = django_user_model.objects.create_user("engineer", password=PASSWORD)
    plan = plan_create(owner=user, name="Shared plan", spec=EXAMPLE_SPEC)
    sign_in_by_cookie(page, live_server.url, then=f"/plans/{plan.pk}/")
    page.wait_for_selector("#plan-total")
    assert "No share links yet." in page.inner_text("#plan-share-links")
    page.select_option("#share-expiry", "7")
    page.click("#share-plan")
    share_url = page.inner_text("#share-url code")
    link = PlanShareLink.objects.get()
    assert link.expires_at is not None
    row = f"#share-link-{link.pk}"
    assert "active" in page.inner_text(row) and link.expires_at.strftime("%Y-%m-%d") in page.inner_text(row)
    screenshot(page, "capacity-plan-share-links")
    page.click(f"{row} button.revoke-share-link")
    page.wait_for_selector(f"{row} .badge.bad")
    assert "revoked" in page.inner_text(row) and page.locator(f"{row} button").count() == 0
    assert page.request.get(share_url).status == 404
    assert page.js_errors == []


def test_inference_in_tokens_per_day_shows_its_serving_sizing_on_the_plan_page(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.plans.services import plan_create
    from apps.plans.views import EXAMPLE_SPEC
    from tests.conftest import seed_catalog
    from tests.plans.test_api import TOKENS_CHAT

    seed_catalog()
    user = django_user_model.objects.create_user("engineer", password=PASSWORD)
    plan = plan_create(owner=user, name="Tokens plan", spec={**EXAMPLE_SPEC, "inference": [TOKENS_CHAT]})
    sign_in_by_cookie(page, live_server.url, then=f"/plans/{plan.pk}/")
    page.wait_for_selector("#plan-inference-sizing")
    row = page.inner_text("#plan-inference-sizing tbody tr")
    # tests/plans/test_api.py's hand check: 9 replicas of tp2 pp1 at batch 114 = 18 GPUs at the peak.
    assert "Llama" in row and "h100-sxm" in row and "tp2 pp1, batch 114" in row and "\t18\t" in row
    page.wait_for_selector("#chart-capacity svg.main-svg", timeout=15000)
    assert page.js_errors == []
    screenshot(page, "capacity-plan-inference-sizing")


def test_a_plan_of_two_node_types_shows_each_type_its_capacity_chart_and_purchases(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    """Issue 39: a mixed RL design (trainer pool on H100, rollout pool on H200) planned in one plan of two
    node types, with inference on the H100 nodes."""
    import copy

    from apps.designs.services import design_create
    from apps.plans.services import plan_create
    from tests.conftest import seed_catalog
    from tests.designs.test_rl_mixed_fleet_api import MIXED
    from tests.plans.test_plan_node_types import two_types

    seed_catalog()
    user = django_user_model.objects.create_user("engineer", password=PASSWORD)
    design = design_create(owner=user, name="mixed GRPO", spec=copy.deepcopy(MIXED))
    spec = two_types([{"design_id": design.pk, "deadline_month": 1}])
    spec["inference"] = [
        {"name": "chat", "peak_gpus": 32, "offpeak_fraction": 0.5, "node_type": "h100-sxm"},
        {"name": "evals", "peak_gpus": 16, "offpeak_fraction": 0.25, "node_type": "h200"},
    ]
    plan = plan_create(owner=user, name="RL fleet plan", spec=spec)
    sign_in_by_cookie(page, live_server.url, then=f"/plans/{plan.pk}/")
    page.wait_for_selector("#plan-node-types")
    rows = [page.inner_text(f"#plan-node-types tr[data-accelerator='{a}']") for a in ("h100-sxm", "h200")]
    assert rows[0].startswith("h100-sxm\t8\t$") and rows[1].startswith("h200\t8\t$")
    runs = page.inner_text("#plan-runs")
    assert "mixed GRPO (trainer pool, h100-sxm)" in runs and "mixed GRPO (rollout pool, h200)" in runs
    assert "h100-sxm: On-demand" in page.inner_text("#plan-prices")
    assert "h200: On-demand" in page.inner_text("#plan-prices")
    for chart_id, accelerator in (("capacity-0", "h100-sxm"), ("capacity-1", "h200")):
        page.wait_for_selector(f"#chart-{chart_id} svg.main-svg", timeout=15000)
        drawn = set(page.eval_on_selector(f"#chart-{chart_id}", "el => el.data.map(t => t.name)"))
        assert {"On-demand", "Demand, mean"} <= drawn, chart_id
        assert page.inner_text(f"#chart-{chart_id}").startswith(
            accelerator
        ) or accelerator in page.inner_text(f"#chart-{chart_id}")
    page.wait_for_selector("#chart-cost svg.main-svg", timeout=15000)
    _assert_titles_whole(page)
    assert page.js_errors == []
    screenshot(page, "capacity-plan-two-node-types")
