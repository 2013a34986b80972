"""The measured-runs page in headless Chromium (issue 40): five runs entered through the form, one of them
from a pasted Megatron-LM log excerpt whose parsed figures show before saving; the errors and the summary;
then the calibration switched on, and a design's days, cost and band change with the calibration named; off
again, the published figures come back."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tests.browser.test_dashboard import PASSWORD, sign_in
from tests.conftest import screenshot
from tests.measurements.conftest import RUN
from tests.measurements.test_log_parse import MEGATRON

pytestmark = pytest.mark.browser

KEY = "hopper/bf16/dense/lt32k/*"  # the design's regime's first key the runs (one to three nodes) fill


def _layout(nodes: int) -> dict[str, Any]:
    return {"nodes": nodes, "dp": 4 * nodes, "global_batch": 128 * nodes}


def _fill(page: Any, nodes: int, step: str) -> None:
    page.fill("#f-model", "llama3-8b")
    for field, value in {**_layout(nodes), "tp": 2, "seq_len": 8192}.items():
        page.fill(f"#f-{field}", str(value))
    page.fill("#f-recompute", "selective")
    page.fill("#f-sharding", "zero1")
    page.fill("#f-step_time_s", step)
    page.fill("#f-measured_on", "2026-11-02")


def _days_card(page: Any, base: str, design_id: int) -> str:
    page.goto(f"{base}/designs/{design_id}/")
    page.wait_for_selector("#days-to-train")
    return str(page.inner_text("#days-to-train"))


def test_five_runs_one_from_a_log_then_calibration_moves_a_designs_days_cost_and_band(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.catalog.services import catalog_load_seed
    from apps.designs.services import design_create, design_evaluate
    from apps.measurements.services import run_validate
    from tests.designs.test_api import SPEC

    catalog_load_seed()
    user = django_user_model.objects.create_user("engineer", password=PASSWORD)
    design = design_create(owner=user, name="70B on 512 H100", spec=SPEC)
    estimated = {n: run_validate(data={**RUN, **_layout(n)})["step_time_s"]["total"] for n in (1, 2, 3)}
    published = design_evaluate(version=design.current).result
    sign_in(page, live_server.url, then=f"/designs/{design.pk}/")
    before = _days_card(page, live_server.url, design.pk)
    assert "Your calibration not applied" in page.inner_text("#calibration-note")

    page.goto(f"{live_server.url}/measured-runs/")
    entered = [(1, 1.1), (2, 1.21), (3, 1.331), (2, 1.15)]
    for nodes, ratio in entered:
        _fill(page, nodes, f"{estimated[nodes] * ratio:.6f}")
        page.click("#add-run")
        page.wait_for_selector(f"#runs tbody tr:nth-child({entered.index((nodes, ratio)) + 1})")
    # The fifth from a log: its parsed figures are shown and filled in before anything is saved.
    _fill(page, 1, "")
    page.fill("#f-global_batch", "")
    page.fill("#log", MEGATRON)
    page.click("#parse-log")
    page.wait_for_selector("#parsed")
    assert page.inner_text("#parsed-ms") == "12100.4 ms" and page.inner_text("#parsed-tflops") == "408.0"
    assert page.input_value("#f-step_time_s") == "12.1004" and page.input_value("#f-global_batch") == "128"
    assert page.locator("#runs tbody tr").count() == 4  # nothing saved yet
    page.fill("#f-measured_on", "2026-11-03")
    page.click("#add-run")
    page.wait_for_selector("#runs tbody tr:nth-child(5)")

    ratios = [r for _, r in entered] + [12.1004 / estimated[1]]
    factor = math.exp(sum(math.log(r) for r in ratios) / 5)
    assert page.inner_text(f"#factors tr[data-key='{KEY}'] .factor") == f"{factor:.3f}"
    median = sorted(abs(r - 1) for r in ratios)[2]  # error = estimated / measured tokens/s − 1 = ratio − 1
    assert page.inner_text("#summary tr[data-group='all runs'] .median") == f"{100 * median:.1f} %"
    log_row = page.locator("#runs tbody tr").first  # the newest date: the run from the log
    assert log_row.locator(".error").inner_text() == f"{100 * (ratios[-1] - 1):+.1f} %".replace("-", "−")
    screenshot(page, "measured-runs")

    page.check("#calibration-enabled")
    page.click("#calibration-save")
    page.wait_for_selector("#calibration-state.good")
    after = _days_card(page, live_server.url, design.pk)
    note = page.inner_text("#calibration-note")
    assert f"step time × {factor:.3f}, fitted on 5 of your measured runs ({KEY})" in note
    assert f"leave-one-out residuals of your 5 measured runs under {KEY}" in note
    days = published["training"]["time_to_train_days"] * factor
    assert f"{days:,.1f} days failure-free" in after and after != before
    assert f"5 measured runs, your runs: {KEY}" in after  # the band's source
    shots = screenshot(page, "design-calibrated").parent
    page.locator("#days-to-train").screenshot(path=str(shots / "design-calibrated-days.png"))

    page.goto(f"{live_server.url}/measured-runs/")
    page.uncheck("#calibration-enabled")
    page.click("#calibration-save")
    page.wait_for_selector("#calibration-state.warn")
    assert _days_card(page, live_server.url, design.pk) == before
    assert page.js_errors == []
