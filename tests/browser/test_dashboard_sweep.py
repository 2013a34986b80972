"""The sweep page in headless Chromium with a real Celery worker: start a sweep from the form, watch the
progress bar move to 100 %, see the heatmaps and the Pareto chart drawn, and click a point to open it as a
design."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tests.browser.test_dashboard import sign_in
from tests.conftest import WorkerProcess, screenshot

pytestmark = pytest.mark.browser

PASSWORD = "pw-sweeper-123"
ACCELERATORS = ["h100-sxm", "h200", "b200"]
NODES = [8, 16, 32, 64]
PRICING = ["on_demand", "spot"]

# Every value the progress bar takes, in order (a <progress> reflects its value property in its attribute).
RECORD_PROGRESS = """
window.__progressSeen = [];
new MutationObserver(function () {
  var bar = document.getElementById("progress-bar");
  if (!bar) return;
  if (!bar.__watched) {
    bar.__watched = true;
    new MutationObserver(function () { window.__progressSeen.push(Number(bar.value)); })
      .observe(bar, { attributes: true, attributeFilter: ["value"] });
  }
}).observe(document, { childList: true, subtree: true });
"""


def _set_checked(page: Any, name: str, wanted: list[str]) -> None:
    for box in page.locator(f'#sweep-form input[name="{name}"]').all():
        box.set_checked(box.get_attribute("value") in wanted)


def test_sweep_with_a_real_worker_moves_the_progress_bar_then_draws_heatmaps_and_opens_a_point(
    worker_env: dict[str, str], page: Any, live_server: Any, django_user_model: Any
) -> None:
    from apps.analysis.models import Analysis
    from tests.conftest import seed_catalog

    seed_catalog()
    django_user_model.objects.create_user("sweeper", password=PASSWORD)
    worker = WorkerProcess(worker_env, "browser-sweep")
    try:
        worker.wait_ready()
        page.add_init_script(RECORD_PROGRESS)
        sign_in(page, live_server.url, username="sweeper", password=PASSWORD, then="/sweep/")
        page.select_option("#s-preset", "llama3-70b")
        page.fill("#s-tokens", "1000000000000")
        _set_checked(page, "accelerators", ACCELERATORS)
        page.fill("#s-nodes", ", ".join(str(n) for n in NODES))
        _set_checked(page, "pricing", PRICING)
        page.click("#start-sweep")
        page.wait_for_url("**/sweep/*/", timeout=15000)
        screenshot_taken = False
        # Keep a picture of the bar part-way, the moment it shows a value strictly between 0 and 100.
        for _ in range(600):
            seen = page.evaluate("window.__progressSeen")
            if not screenshot_taken and any(0 < v < 100 for v in seen):
                screenshot(page, "sweep-progress")
                screenshot_taken = True
            if 100 in seen:
                break
            page.wait_for_timeout(100)
        page.wait_for_selector("#sweep-result", timeout=30000)
        seen = page.evaluate("window.__progressSeen")
    finally:
        worker.stop()

    analysis = Analysis.objects.get(owner__username="sweeper")
    assert analysis.status == "succeeded", analysis.error
    # 3 accelerators × 4 node counts × 2 pricing models, in chunks of 4 groups (8 designs): 0, 33, 67, 100 %.
    assert analysis.progress_total == 24
    assert seen[-1] == 100, seen
    assert seen == sorted(seen), f"progress went backwards: {seen}"
    assert any(0 < v < 100 for v in seen), f"no intermediate progress seen (the sweep ran too fast): {seen}"
    assert page.inner_text("#progress-text") == "24 of 24 done (100 %)"
    assert page.get_attribute("#progress-bar", "value") == "100"
    assert page.inner_text("#sweep-status") == "succeeded"

    for chart_id, names in (
        ("sweep-days", {"Days"}),
        ("sweep-cost", {"Cost"}),
        ("sweep-pareto", {"Designs", "Pareto front"}),
    ):
        page.wait_for_selector(f"#chart-{chart_id} svg.main-svg", timeout=15000)
        assert set(page.eval_on_selector(f"#chart-{chart_id}", "el => el.data.map(t => t.name)")) == names
    # The heatmaps are accelerator × node count: one row per accelerator, one column per node count.
    days = page.eval_on_selector("#chart-sweep-days", "el => ({x: el.data[0].x, y: el.data[0].y})")
    assert sorted(days["y"]) == sorted(ACCELERATORS)
    assert days["x"] == [str(n) for n in NODES]
    assert page.locator("#chart-sweep-days .hm image, #chart-sweep-days .heatmaplayer image").count() >= 1
    assert page.locator("#pareto-table tbody tr").count() >= 1
    screenshot(page, "sweep")

    # Clicking a Pareto point opens the editor prefilled with the point's accelerator, node count and pricing.
    urls = page.eval_on_selector("#chart-sweep-pareto", "el => el.data[0].customdata")
    point = page.locator("#chart-sweep-pareto .scatterlayer .trace").first.locator("path.point").first
    point.scroll_into_view_if_needed()
    box = point.bounding_box()  # viewport coordinates: the mouse only reaches what is on screen
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(200)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url("**/designs/new/**", timeout=15000)
    opened = urlparse(page.url)
    assert f"{opened.path}?{opened.query}" in urls
    query = parse_qs(opened.query)
    assert page.input_value("#f-accelerator") == query["accelerator"][0]
    assert query["accelerator"][0] in ACCELERATORS
    assert page.input_value("#f-nodes") == query["nodes"][0]
    assert int(query["nodes"][0]) in NODES
    assert page.input_value("#f-preset") == "llama3-70b"
    assert page.input_value("#f-name").endswith(f"nodes ({query.get('pricing', ['own'])[0]})")
    if "pricing" in query:
        wanted = query["pricing"][0]
        assert page.is_checked(f'#cloud-row-0 input[data-pricing-model="{wanted}"]')
    screenshot(page, "sweep-opened-design")
    assert page.js_errors == []
