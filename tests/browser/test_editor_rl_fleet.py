"""Issue 39's done-when in headless Chromium: through the editor, a GRPO run of a 70B-class and of an 8B
policy is estimated with the placement searched (colocated and every disaggregated split), and the page shows
the step breakdown, the split chosen, days and dollars; then a mixed fleet (a rollout pool of H200 beside
H100 trainers) is entered in the editor's rollout-pool fields and shown pool by pool with its parts."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_editor_goals import _save
from tests.conftest import screenshot
from tests.designs.test_rl_api import SPEC_8B, SPEC_70B

pytestmark = pytest.mark.browser

FIELDS = (
    ("#f-rl-prompts", "512"),
    ("#f-rl-group", "16"),
    ("#f-rl-prompt", "512"),
    ("#f-rl-mean", "2048"),
    ("#f-rl-max", "8192"),
    ("#f-rl-steps", "400"),
)


def _section_shot(page: Any, selector: str, name: str) -> None:
    """The viewport from ``selector`` down (the full page is too tall to read the section in)."""
    from tests.conftest import ROOT

    page.eval_on_selector(selector, "el => el.scrollIntoView()")
    path = ROOT / "artifacts" / "screenshots" / f"{name}.png"
    page.screenshot(path=str(path))


def _design_without_rl(user: Any, spec: dict[str, Any], name: str) -> Any:
    from apps.designs.services import design_create

    spec = copy.deepcopy(spec)
    del spec["rl"]
    spec["workload"]["training"] = {"tokens": 1e10, "global_batch_seqs": 512, "precision": "bf16"}
    return design_create(owner=user, name=name, spec=spec)


@pytest.mark.parametrize(("spec", "name"), [(SPEC_70B, "70B on 16 × 8 H100"), (SPEC_8B, "8B on 4 × 8 H100")])
def test_a_grpo_run_entered_in_the_editor_searches_both_placements_and_shows_days_and_dollars(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any, spec: Any, name: str
) -> None:
    from apps.designs.models import Design
    from apps.designs.services import design_evaluate

    user = _setup(django_user_model)
    design = _design_without_rl(user, spec, name)
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")
    page.uncheck("#auto-refresh")
    for selector, value in FIELDS:
        page.fill(selector, value)
    _save(page, "Saved version 2 and evaluated")
    current = Design.objects.get(pk=design.pk).current
    assert current.spec["rl"]["placement"] == "search"  # the select left on its default
    result = design_evaluate(version=current).result
    run = result["rl"]
    # Both placements were evaluated; the chosen one is the fastest of the splits the search reports.
    assert {o["placement"] for o in run["options"]} == {"colocated", "disaggregated"}
    assert run["splits"][0]["rollout_nodes"] == 0 and len(run["splits"]) > 1
    chosen = run["chosen"]
    assert chosen["days"] == pytest.approx(min(s["days"] for s in run["splits"] if s["days"] is not None))
    page.wait_for_selector('#results-container [data-chart="chart-data-rl-timeline"] svg.main-svg')
    page.wait_for_selector('#results-container [data-chart="chart-data-rl-split"] svg.main-svg')
    cards = page.inner_text("#results-container #design-rl")
    assert chosen["placement"] in cards
    step = chosen["step"]
    assert f"rollout {step['rollout_s']:.1f} s · sync {step['weight_sync_s']:.1f} s" in cards
    assert f"training {step['train_s']:.1f} s" in cards
    assert f"{chosen['days']:.2f}" in cards and "Days for 400 steps" in cards
    # Dollars: the options ranked by cost, each with a dollar figure, for the RL run's days.
    ranked = page.inner_text("#results-container #ranked-options")
    assert "$" in ranked
    # ... priced for the RL run's days (not a pre-training estimate's), owning and renting alike.
    assert result["costs"]["aws-p5-48xlarge"]["per_run"]["days"] == pytest.approx(chosen["days"])
    assert {o["key"] for o in result["options"]} == {"own", "aws-p5-48xlarge:on_demand"}
    assert all(o["run_cost_usd"] > 0 for o in result["options"])
    # The split chart plots colocated (0 rollout nodes) and every split tried, in days.
    traces = page.eval_on_selector(
        '#results-container [data-chart="chart-data-rl-split"]', "el => el.data.map(t => t.x.length)"
    )
    assert sum(traces) >= len([s for s in run["splits"] if s["days"] is not None])
    screenshot(page, f"editor-rl-search-{'70b' if '70B' in name else '8b'}")
    _section_shot(
        page, "#results-container #rl-section", f"editor-rl-search-{'70b' if '70B' in name else '8b'}-rl"
    )
    assert page.js_errors == []


def test_a_mixed_fleet_is_entered_in_the_editor_and_shown_pool_by_pool(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design

    user = _setup(django_user_model)
    spec = copy.deepcopy(SPEC_8B)
    spec["costs"]["cloud"] = [{"offering": "coreweave-8x-h100-node", "pricing_models": ["on_demand"]}]
    design = _design_without_rl(user, spec, "8B trainers on H100, rollouts on H200")
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")
    page.uncheck("#auto-refresh")
    for selector, value in (*FIELDS[:5], ("#f-rl-steps", "100")):
        page.fill(selector, value)
    page.fill("#f-rl-ro-nodes", "2")
    page.select_option("#f-rl-ro-acc", "h200")
    # The design rents H100 trainers: an H200 pool without an offering of its own is refused beside it.
    _save(page, "Not saved")
    assert "rollout pool's h200" in page.inner_text('[data-error-for="spec.rl.rollout.cloud"]')
    page.select_option("#f-rl-ro-offer", "coreweave-8x-h200-node")
    _save(page, "Saved version 2 and evaluated")
    pool = Design.objects.get(pk=design.pk).current.spec["rl"]["rollout"]
    assert pool["nodes"] == 2 and pool["accelerator"] == "h200"
    assert pool["cloud"][0]["offering"] == "coreweave-8x-h200-node"
    page.wait_for_selector("#results-container #rl-fleet-pools")
    cards = page.inner_text("#results-container #design-rl")
    assert "16 rollout GPUs (h200)" in cards and "32 trainer GPUs (h100-sxm)" in cards
    pools = page.inner_text("#results-container #rl-fleet-pools")
    assert "h200" in pools and "h100-sxm" in pools and "coreweave-8x-h200-node:on_demand" in pools
    kinds = page.inner_text("#results-container #rl-fleet-combinations")
    for kind in ("own both", "rent both", "own trainers, rent rollouts", "rent trainers, own rollouts"):
        assert kind in kinds
    assert "(cheapest)" in kinds
    screenshot(page, "editor-rl-mixed-fleet")
    _section_shot(page, "#results-container #rl-section", "editor-rl-mixed-fleet-pools")
    # Reopened, the editor shows the pool; blanking its nodes removes it.
    page.goto(f"{live_server.url}/designs/{design.pk}/edit/")
    page.uncheck("#auto-refresh")
    assert page.input_value("#f-rl-ro-nodes") == "2" and page.input_value("#f-rl-ro-acc") == "h200"
    assert page.input_value("#f-rl-ro-offer") == "coreweave-8x-h200-node"
    page.fill("#f-rl-ro-nodes", "")
    _save(page, "Saved version 3 and evaluated")
    assert "rollout" not in Design.objects.get(pk=design.pk).current.spec["rl"]
    assert page.js_errors == []
