"""The editor's "Money over time" inputs in headless Chromium: each shows the cost engine's default and
source; a choice and a number entered are saved into spec.costs and reach the evaluation; a bad value comes
back as a 400 shown beside its input."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.conftest import screenshot
from tests.designs.test_stale_prices import SPEC

pytestmark = pytest.mark.browser


def test_money_inputs_save_into_the_spec_and_a_bad_one_shows_beside_its_field(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design
    from apps.designs.services import design_create
    from clusterdesigner.engine.cost import cost

    user = _setup(django_user_model)
    design = design_create(owner=user, name="money", spec=SPEC)
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")
    page.click("#money-assumptions summary")
    # The defaults beside the inputs are the engine's, with their sources.
    spread = cost.DEFAULTS["uncertainty.spread"]
    assert page.get_attribute("#f-uncertainty-spread", "placeholder") == f"{spread.value:g}"
    assert spread.source in page.inner_text("#f-uncertainty-spread-default")
    assert cost.DEFAULTS["cashflow.financing"].source in page.inner_text("#f-cashflow-financing-default")

    page.select_option("#f-cashflow-financing", "loan")
    page.fill("#f-cashflow-loan-rate", "0.06")
    page.select_option("#f-colocation-pricing", "all_in")
    page.fill("#f-cashflow-lead-time-months", "3")
    page.click("#save-design")
    page.wait_for_function(
        "() => document.getElementById('save-status').textContent.endsWith('and evaluated.')", timeout=30000
    )
    costs = Design.objects.get(pk=design.pk).current.spec["costs"]
    assert costs["cashflow"] == {"financing": "loan", "loan_rate": 0.06, "lead_time_months": 3}
    assert costs["colocation"] == {"pricing": "all_in"}
    assert "uncertainty" not in costs  # blank inputs leave the engine's default
    shot = screenshot(page, "editor-money")
    page.locator("#money-assumptions").screenshot(path=str(shot.parent / "editor-money-section.png"))

    page.fill("#f-uncertainty-spread", "1.5")
    page.click("#save-design")
    page.wait_for_function("() => document.getElementById('save-status').textContent.startsWith('Not saved')")
    assert "fraction in [0, 1)" in page.inner_text('[data-error-for="spec.costs.uncertainty.spread"]')
    assert page.js_errors == []
