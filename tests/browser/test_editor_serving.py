"""The editor's Serving fields in headless Chromium: a bad target is refused beside its field, a demand and
targets are saved as ``spec.serving`` and the results swapped in show the serving section with the engine's
own figures; blanking the fields removes the section again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_editor_goals import _save
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_serving_fields_are_saved_estimated_and_shown(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.demo import DEMOS
    from apps.designs.models import Design
    from apps.designs.services import design_create, design_evaluate

    user = _setup(django_user_model)
    design = design_create(owner=user, name="8 × 8 H200 served", spec=copy.deepcopy(DEMOS[3]["spec"]))
    assert "serving" not in design.current.spec
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")
    assert page.get_attribute("#f-sv-in", "placeholder") == "1024"  # the engine's defaults, as placeholders

    # A TPOT target no batch can meet: refused by the serving engine, shown beside TPOT, nothing saved.
    page.fill("#f-sv-rps", "10")
    page.fill("#f-sv-tpot", "0.000001")
    _save(page, "Not saved")
    assert page.inner_text('[data-error-for="spec.serving.targets.tpot_s"]') != ""
    assert page.get_attribute("#f-sv-tpot", "aria-invalid") == "true"
    assert Design.objects.get(pk=design.pk).version == 1

    # 10 requests/s, 512 output tokens, a 50 ms TPOT and FP8 weights: saved as the spec's serving section.
    page.fill("#f-sv-tpot", "0.05")
    page.fill("#f-sv-out", "512")
    page.select_option("#f-sv-wp", "fp8")
    _save(page, "Saved version 2 and evaluated")
    current = Design.objects.get(pk=design.pk).current
    assert current.spec["serving"] == {
        "demand": {"requests_per_s": 10},
        "targets": {"tpot_s": 0.05},
        "output_tokens": 512,
        "weight_precision": "fp8",
    }
    estimate = design_evaluate(version=current).result["serving"]
    assert estimate["best"]["tpot_s"] <= 0.05

    # The results the editor swapped in show the serving section with the stored estimate's GPU count.
    page.wait_for_selector("#results-container #design-serving")
    cards = page.inner_text("#design-serving")
    assert "GPUs at the peak (20 req/s)" in cards  # 10 req/s × the default peak ÷ mean of 2
    gpus = page.locator("#results-container #design-serving .card .value").first.inner_text()
    assert gpus == str(estimate["best"]["gpus"])
    screenshot(page, "editor-serving")

    # Reopened, the editor shows the saved values; the design page shows the section too.
    page.goto(f"{live_server.url}/designs/{design.pk}/edit/")
    assert page.input_value("#f-sv-rps") == "10" and page.input_value("#f-sv-out") == "512"
    assert page.input_value("#f-sv-wp") == "fp8" and page.input_value("#f-sv-kp") == ""
    page.goto(f"{live_server.url}/designs/{design.pk}/")
    page.wait_for_selector("#design-serving")

    # Every serving field blank again: the section is gone from the spec and from the results.
    page.goto(f"{live_server.url}/designs/{design.pk}/edit/")
    for field in ("#f-sv-rps", "#f-sv-tpot", "#f-sv-out"):
        page.fill(field, "")
    page.select_option("#f-sv-wp", "")
    _save(page, "Saved version 3 and evaluated")
    assert "serving" not in Design.objects.get(pk=design.pk).current.spec
    assert page.locator("#results-container #design-serving").count() == 0
    assert page.js_errors == []
