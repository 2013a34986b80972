"""The versions view and the diff page (issue #36): a design saved as v1 and edited to v2 in two inputs
(utilization 0.7 → 0.5, the owning server price $322,500 → $280,000 a node). From the design page's versions
panel to the versions list, then "Show what changed": the diff page lists exactly the two inputs, its total
is the change in the verdict's NPV difference between the two versions' stored evaluations, the steps sum to
it, and the waterfall is drawn."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot
from tests.designs.test_stale_prices import SPEC

pytestmark = pytest.mark.browser


def _money(value: float) -> str:
    return f"-${abs(value):,.0f}" if value < 0 else f"${value:,.0f}"


def test_diff_page_shows_the_two_inputs_and_the_attributed_total(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.services import design_create, design_evaluate, design_update

    user = _setup(django_user_model)
    design = design_create(owner=user, name="Review <b>me</b>", spec=copy.deepcopy(SPEC))
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = 0.5
    spec["costs"]["on_prem"]["server_usd"] = 280_000
    design = design_update(design=design, user=user, base_version=1, spec=spec)
    old, new = (
        design_evaluate(version=design.versions.get(number=n)).result["design_verdict"]["saving_usd"]
        for n in (1, 2)
    )

    sign_in(page, live_server.url, then=f"/designs/{design.pk}/")
    page.click("#versions-panel summary")
    page.click("#all-versions")
    page.wait_for_selector("#versions-table")
    assert page.locator("#versions-table tbody tr").count() == 2
    page.click("#diff-submit")
    page.wait_for_selector("#chart-attribution svg.main-svg")

    rows = page.locator("#diff-inputs tbody tr")
    assert rows.count() == 2
    # In the stated order: the changed paths sorted (the same on every database).
    assert [rows.nth(i).locator("th").inner_text() for i in range(2)] == [
        "costs.on_prem.server_usd",
        "costs.utilization",
    ]
    assert rows.nth(0).locator("td").all_inner_texts()[1:] == ["$322,500", "$280,000"]
    assert rows.nth(1).locator("td").all_inner_texts()[1:] == ["70.0 %", "50.0 %"]
    assert page.inner_text("#attribution-total-usd") == _money(new - old)
    steps = page.locator("#attribution-steps tbody tr")
    assert steps.count() == 2
    deltas = [steps.nth(i).locator("td").nth(1).inner_text() for i in range(2)]
    parsed = [float(d.replace("$", "").replace(",", "")) for d in deltas]
    assert abs(sum(parsed) - (new - old)) <= 2  # two figures each rounded to the dollar
    traces = page.eval_on_selector("#chart-attribution", "el => el.data.map(t => t.type)")
    assert traces == ["waterfall"]
    # The design's name is text, not markup.
    assert page.locator("h1 b").count() == 0 and "<b>me</b>" in page.inner_text("h1")
    screenshot(page, "version-diff")
    assert page.js_errors == []
