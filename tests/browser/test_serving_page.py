"""The Serving page in headless Chromium: the form submits, the three charts draw, the targets are drawn."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_serving_page_draws_latency_cost_and_layout_charts(
    page: Any, live_server: Any, transactional_db: Any
) -> None:
    from tests.conftest import seed_catalog

    seed_catalog()
    page.goto(f"{live_server.url}/serving/")
    page.select_option("#f-accelerator", "h200")
    page.fill("#f-rps", "40")
    page.click("#estimate-serving")
    page.wait_for_url("**accelerator=h200**")
    for chart in ("serving-latency", "serving-cost", "serving-layouts", "serving-pareto"):
        page.wait_for_selector(f"#chart-{chart}[data-rendered='1'] svg.main-svg")
    pareto = page.locator("#chart-serving-pareto .legendtext").evaluate_all(
        "els => els.map(e => e.textContent)"
    )
    assert "chosen" in pareto and "meets the targets" in pareto
    assert page.locator("#serving-vllm").inner_text().startswith("vllm serve ")
    assert "kind: Deployment" in page.locator("#serving-k8s").inner_text()
    legend = page.locator("#chart-serving-latency .legendtext").evaluate_all(
        "els => els.map(e => e.textContent)"
    )
    assert "TTFT target" in legend and "TPOT target" in legend
    assert int(page.locator("#serving-gpus").inner_text()) >= 1
    assert page.locator("#serving-costs tbody tr").count() >= 2
    path = screenshot(page, "serving")
    page.locator("#chart-serving-pareto").screenshot(path=str(path.with_name("serving-pareto.png")))
    assert page.js_errors == []


def test_a_design_with_serving_shows_it_and_links_to_the_planner(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    import copy

    from apps.designs import services
    from apps.designs.demo import DEMOS
    from tests.browser.test_dashboard import PASSWORD, sign_in
    from tests.conftest import seed_catalog

    seed_catalog()
    user = django_user_model.objects.create_user("engineer", password=PASSWORD)
    spec = copy.deepcopy(DEMOS[0]["spec"])
    spec["serving"] = {"output_tokens": 256, "demand": {"requests_per_s": 10}, "targets": {"tpot_s": 0.05}}
    design = services.design_create(owner=user, name="served design", spec=spec)
    sign_in(page, live_server.url, then=f"/designs/{design.pk}/")
    page.wait_for_selector("#design-serving")
    assert "GPUs at the peak" in page.locator("#design-serving").inner_text()
    screenshot(page, "design-serving")
    page.click("#serving-link")
    page.wait_for_url(f"**/serving/?design={design.pk}")
    page.wait_for_selector("#chart-serving-latency[data-rendered='1'] svg.main-svg")
    accelerator = spec["cluster"]["accelerator"]
    assert page.locator("#f-accelerator").input_value() == accelerator
    assert page.js_errors == []
