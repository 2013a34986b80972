"""The editor's owning assumptions and goals in headless Chromium: a bad PUE is refused beside its field, a
good one is saved and used, and the verdict on the deadline and budget is shown first on the results."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def _save(page: Any, expect: str) -> None:
    page.click("#save-design")
    status = "text => document.getElementById('save-status').textContent.startsWith(text)"
    page.wait_for_function(status, arg=expect, timeout=20000)


def test_owning_assumptions_and_goals_are_edited_saved_and_judged(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.demo import DEMOS
    from apps.designs.models import Design
    from apps.designs.services import design_create, design_evaluate, share_link_create
    from clusterdesigner.engine.cost.cost import DEFAULTS

    user = _setup(django_user_model)
    design = design_create(owner=user, name="8 × 8 H200 with goals", spec=copy.deepcopy(DEMOS[3]["spec"]))
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")
    # Changes write a draft (no version); each "Save version" below makes one version (issue #36).

    # The section starts closed (nothing set); opened, each input shows the engine's default and its source.
    assert not page.is_visible("#f-pue")
    page.click("#owning-assumptions > summary")
    pue = DEFAULTS["on_prem.pue"]
    assert page.get_attribute("#f-pue", "placeholder") == f"{pue.value:g}"
    assert page.inner_text("#f-pue-default") == f"Default {pue.value:g} {pue.unit} · {pue.source}"
    assert page.get_attribute("#f-discount-rate", "placeholder") == "0.08"
    assert page.inner_text("#f-discount-rate-default").startswith("Default 0.08 = 8 % per year · ")

    # An out-of-range PUE: the engine refuses it, the message sits beside PUE and reopens the closed section.
    page.fill("#f-pue", "0.5")
    page.click("#owning-assumptions > summary")
    assert not page.is_visible("#f-pue")
    _save(page, "Not saved")
    assert page.is_visible("#f-pue")
    assert page.inner_text('[data-error-for="spec.costs.on_prem.pue"]') == "must be 1 or more, got 0.5"
    assert page.get_attribute("#f-pue", "aria-invalid") == "true"
    assert page.inner_text('[data-error-for="spec.costs.on_prem.discount_rate"]') == ""
    screenshot(page, "editor-owning-error")
    assert Design.objects.get(pk=design.pk).version == 1

    # PUE 1.5, a 10 % discount rate, a 20-day deadline and a $50,000 budget (owning costs ~$94k per run at
    # ENGINE_VERSION 19, $100k+ before the Hopper refit: the budget stays well below it): saved and evaluated.
    page.fill("#f-pue", "1.5")
    page.fill("#f-discount-rate", "0.1")
    page.fill("#f-deadline", "20")
    page.fill("#f-budget", "50000")
    page.fill("#f-budget-npv", "1000000")  # a horizon budget on NPV, far below owning's (issue #31)
    _save(page, "Saved version 2 and evaluated")
    spec = Design.objects.get(pk=design.pk).current.spec
    assert spec["costs"]["on_prem"] == {
        "server_usd": 230000,
        "node_power_kw": 10.2,
        "usd_per_kwh": 0.08,
        "pue": 1.5,
        "discount_rate": 0.1,
    }
    assert spec["goals"] == {"deadline_days": 20, "budget_usd": 50000, "budget_npv_usd": 1000000}
    result = design_evaluate(version=Design.objects.get(pk=design.pk).current).result
    used = {a["name"]: a for a in result["assumptions"]}
    assert (used["on_prem.pue"]["value"], used["on_prem.pue"]["source"]) == (1.5, "request")
    assert used["on_prem.discount_rate"]["value"] == 0.1

    # The verdict comes first in the results the editor swapped in.
    page.wait_for_selector("#results-container #verdict")
    verdict = page.inner_text("#verdict")
    assert "Misses the 20-day deadline: 8 nodes give" in verdict and "16 nodes give" in verdict
    assert "Over the $50k budget by $" in verdict
    assert "Over the $1.0M budget over the horizon by $" in verdict and "(NPV of its cash out over" in verdict
    assert result["verdict"]["budget_npv"]["status"] == "misses"
    assert result["verdict"]["messages"][0] in verdict
    screenshot(page, "editor-goals")

    # The design page shows the same verdict above the summary.
    page.goto(f"{live_server.url}/designs/{design.pk}/")
    page.wait_for_selector("#verdict")
    for message in result["verdict"]["messages"]:
        assert message in page.inner_text("#verdict")
    # The answers open the results, before the summary: the design's rent-or-own verdict for finance
    # (issue #31), the cash flows behind it (issue 15), then the verdict on the design's own goals.
    top = page.eval_on_selector("#results", "el => [...el.children].slice(0, 3).map(c => c.id)")
    assert top == ["finance-summary", "rent-or-own", "verdict"]
    screenshot(page, "design-verdict")

    # The share view's assumptions table shows PUE 1.5 from the request.
    _, token = share_link_create(design=Design.objects.get(pk=design.pk), user=user)
    page.goto(f"{live_server.url}/share/{token}/")
    row = page.locator("#assumptions tbody tr", has=page.locator("td", has_text="on_prem.pue"))
    assert row.locator("td").nth(1).inner_text() == "1.5"
    assert row.locator("td").nth(3).inner_text() == "request"
    assert "Misses the 20-day deadline" in page.inner_text("#verdict")
    assert page.js_errors == []
