"""The capacity plan pages in headless Chromium: pick a demo design as a training run in the new-plan form,
create the plan, and see its three charts drawn with their traces."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import PASSWORD, sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser

PLAN_CHARTS = {
    "capacity": {"Owned", "On-demand", "Demand, mean", "Demand, peak hour"},
    "cost": {"Owned", "On-demand"},
    "utilization": {"Owned fleet"},
}


def test_a_plan_from_a_demo_design_draws_its_capacity_cost_and_utilization_charts(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.catalog.services import catalog_load_seed
    from apps.designs.demo import demo_load

    catalog_load_seed()
    demo = demo_load()[0]
    django_user_model.objects.create_user("engineer", password=PASSWORD)
    sign_in(page, live_server.url, then="/plans/")
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
    assert page.js_errors == []
    screenshot(page, "capacity-plan")
