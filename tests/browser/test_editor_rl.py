"""The editor's RL fields in headless Chromium: a longest response below the mean is refused beside its
field, a GRPO run is saved as ``spec.rl`` and the results swapped in draw the step timeline and the split;
blanking the fields removes the section again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_editor_goals import _save
from tests.conftest import screenshot
from tests.designs.test_rl_api import SPEC_8B

pytestmark = pytest.mark.browser


def test_rl_fields_are_saved_estimated_and_drawn(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design
    from apps.designs.services import design_create, design_evaluate

    user = _setup(django_user_model)
    spec = copy.deepcopy(SPEC_8B)
    del spec["rl"]
    spec["workload"]["training"] = {"tokens": 1e10, "global_batch_seqs": 512, "precision": "bf16"}
    design = design_create(owner=user, name="8B on 4 × 8 H100", spec=spec)
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")

    # A longest response shorter than the mean: refused beside its field, nothing saved.
    for selector, value in (
        ("#f-rl-prompts", "64"),
        ("#f-rl-group", "8"),
        ("#f-rl-prompt", "256"),
        ("#f-rl-mean", "1024"),
        ("#f-rl-max", "512"),
        ("#f-rl-steps", "100"),
    ):
        page.fill(selector, value)
    _save(page, "Not saved")
    assert "at least response_tokens_mean" in page.inner_text(
        '[data-error-for="spec.rl.response_tokens_max"]'
    )
    assert Design.objects.get(pk=design.pk).version == 1

    # Fixed, colocated: saved as the spec's rl section and drawn in the results.
    page.fill("#f-rl-max", "4096")
    page.select_option("#f-rl-place", "colocated")
    _save(page, "Saved version 2 and evaluated")
    current = Design.objects.get(pk=design.pk).current
    assert current.spec["rl"]["prompts_per_step"] == 64 and current.spec["rl"]["placement"] == "colocated"
    # 100 steps × 64 × 8 samples × (256 + 1,024) tokens = 65,536,000 tokens in batches of 512 sequences.
    assert current.spec["workload"]["training"]["tokens"] == 65_536_000
    run = design_evaluate(version=current).result["rl"]
    assert run["chosen"]["placement"] == "colocated"
    page.wait_for_selector('#results-container [data-chart="chart-data-rl-timeline"] svg.main-svg')
    page.wait_for_selector('#results-container [data-chart="chart-data-rl-split"] svg.main-svg')
    title = page.inner_text('#results-container [data-chart="chart-data-rl-timeline"]')
    assert f"{run['chosen']['step']['seconds']:,.1f} s per step (colocated)" in title
    screenshot(page, "editor-rl")

    # Reopened, the editor shows the saved values; all blank again removes the section.
    page.goto(f"{live_server.url}/designs/{design.pk}/edit/")
    assert page.input_value("#f-rl-prompts") == "64" and page.input_value("#f-rl-place") == "colocated"
    for selector in (
        "#f-rl-prompts",
        "#f-rl-group",
        "#f-rl-prompt",
        "#f-rl-mean",
        "#f-rl-max",
        "#f-rl-steps",
    ):
        page.fill(selector, "")
    page.select_option("#f-rl-place", "")
    _save(page, "Saved version 3 and evaluated")
    assert "rl" not in Design.objects.get(pk=design.pk).current.spec
    assert page.js_errors == []
