"""The measured-runs page in headless Chromium (issue 40): five runs of a team entered through the team's
page, one of them from a pasted Megatron-LM log excerpt whose parsed figures show before saving; the errors
and the team's summary; then the team's calibration switched on, and the team design's days, cost and band
change with the team calibration named; off again, the published figures come back."""

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


def _loo_band(ratios: list[float]) -> tuple[float, float]:
    """By hand (engine/training/user_calibration.py's estimator): run i's residual e_i = r_i / f(−i) − 1,
    f(−i) the geometric mean of the other ratios; the band's edges the 10th and 90th percentiles of the e_i,
    linear between order statistics (position (n − 1) q)."""
    logs = [math.log(r) for r in ratios]
    n = len(ratios)
    residuals = sorted(
        r / math.exp((sum(logs) - log) / (n - 1)) - 1 for r, log in zip(ratios, logs, strict=True)
    )

    def at(q: float) -> float:
        low = math.floor((n - 1) * q)
        return residuals[low] + (residuals[min(low + 1, n - 1)] - residuals[low]) * ((n - 1) * q - low)

    return at(0.1), at(0.9)


def _days_card(page: Any, base: str, design_id: int) -> str:
    page.goto(f"{base}/designs/{design_id}/")
    page.wait_for_selector("#days-to-train")
    return str(page.inner_text("#days-to-train"))


def test_five_runs_one_from_a_log_then_the_teams_calibration_moves_a_team_designs_days_cost_and_band(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.services import design_create, design_evaluate
    from apps.measurements.services import run_validate
    from apps.teams.services import owned_move, team_create
    from tests.conftest import seed_catalog
    from tests.designs.test_api import SPEC

    seed_catalog()
    user = django_user_model.objects.create_user("engineer", password=PASSWORD)
    team = team_create(user=user, name="Training infra")
    design = design_create(owner=user, name="70B on 512 H100", spec=SPEC)
    owned_move(user=user, obj=design, team_id=team.pk)
    estimated = {n: run_validate(data={**RUN, **_layout(n)})["step_time_s"]["total"] for n in (1, 2, 3)}
    published = design_evaluate(version=design.current).result
    sign_in(page, live_server.url, then=f"/designs/{design.pk}/")
    before = _days_card(page, live_server.url, design.pk)
    assert "Team calibration (team Training infra) not applied" in page.inner_text("#calibration-note")

    page.goto(f"{live_server.url}/measured-runs/")
    page.click(f"#holders a[data-team='{team.pk}']")  # the team's runs, summary and switch
    page.wait_for_selector("h1:has-text('Measured runs: team Training infra')")
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
    assert team.measured_runs.count() == 5 and not user.measured_runs.filter(team__isnull=True).exists()

    ratios = [r for _, r in entered] + [12.1004 / estimated[1]]
    factor = math.exp(sum(math.log(r) for r in ratios) / 5)  # the geometric mean of the five ratios
    assert page.inner_text(f"#factors tr[data-key='{KEY}'] .factor") == f"{factor:.3f}"
    errors = sorted(abs(r - 1) for r in ratios)  # error = estimated / measured tokens/s − 1 = ratio − 1
    assert page.inner_text("#summary tr[data-group='all runs'] .median") == f"{100 * errors[2]:.1f} %"
    p90 = errors[3] + 0.6 * (errors[4] - errors[3])  # position (5 − 1) × 0.9 = 3.6
    assert page.inner_text("#summary tr[data-group='all runs'] .p90") == f"{100 * p90:.1f} %"
    log_row = page.locator("#runs tbody tr").first  # the newest date: the run from the log
    assert log_row.locator(".error").inner_text() == f"{100 * (ratios[-1] - 1):+.1f} %".replace("-", "−")
    screenshot(page, "measured-runs")

    page.check("#calibration-enabled")
    page.click("#calibration-save")
    page.wait_for_selector("#calibration-state.good")
    after = _days_card(page, live_server.url, design.pk)
    note = page.inner_text("#calibration-note")
    assert f"Team calibration (team Training infra) applied: step time × {factor:.3f}, fitted on 5" in note
    assert f"leave-one-out residuals of 5 measured runs of team Training infra under {KEY}" in note
    days = published["training"]["time_to_train_days"] * factor
    assert f"{days:,.1f} days failure-free" in after and after != before
    assert f"5 measured runs, measured runs of team Training infra: {KEY}" in after  # the band's source
    # The band: the calibrated rate (published ÷ factor) over (1 + p90) … (1 + p10) of the runs' own
    # leave-one-out residuals.
    rate = published["training"]["tokens_per_second"] / factor
    p10, p90_band = _loo_band(ratios)
    band = f"{rate / (1 + p90_band):,.0f}–{rate / (1 + p10):,.0f} tokens/s"
    assert band in page.inner_text("#error-band"), page.inner_text("#error-band")
    # The cost: owning's one run costs its days' share of the yearly cost, so × factor.
    own = next(o for o in published["options"] if o["key"] == "own")
    assert f"one run ${own['run_cost_usd'] * factor:,.0f}" in page.inner_text(
        "#ranked-options [data-option='own']"
    )
    shots = screenshot(page, "design-calibrated").parent
    page.locator("#days-to-train").screenshot(path=str(shots / "design-calibrated-days.png"))

    page.goto(f"{live_server.url}/measured-runs/?team={team.pk}")
    page.uncheck("#calibration-enabled")
    page.click("#calibration-save")
    page.wait_for_selector("#calibration-state.warn")
    assert _days_card(page, live_server.url, design.pk) == before
    assert page.js_errors == []
