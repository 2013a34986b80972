"""The editor's precision and optimizer selects in headless Chromium: NVFP4 on the H100 demo is refused
beside the precision field with nothing saved; NVFP4 with Muon on the B200 demo is saved, evaluated and
its results say the error band is the widest of the Blackwell family (no measured NVFP4 run)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_editor_goals import _save
from tests.conftest import ROOT, screenshot

pytestmark = pytest.mark.browser
SHOTS = ROOT / "artifacts" / "screenshots"


def _workload(page: Any) -> Any:
    """The editor's Workload fieldset (precision and optimizer selects), for a readable screenshot."""
    return page.locator("#f-precision").locator("xpath=ancestor::fieldset[1]")


def test_precision_recipe_and_optimizer_are_chosen_saved_and_evaluated(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.demo import DEMOS
    from apps.designs.models import Design
    from apps.designs.services import design_create

    user = _setup(django_user_model)
    hopper = design_create(owner=user, name="70B on H100", spec=copy.deepcopy(DEMOS[0]["spec"]))
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{hopper.pk}/edit/")
    labels = page.eval_on_selector_all("#f-precision option", "os => os.map(o => o.value)")
    assert labels == ["bf16", "fp8", "fp8_current", "fp8_blockwise", "mxfp8", "nvfp4"]
    assert page.input_value("#f-optimizer") == ""  # blank keeps Adam

    # H100 has no FP4 tensor cores: refused beside the precision field, nothing saved.
    page.select_option("#f-precision", "nvfp4")
    _save(page, "Not saved")
    error = page.inner_text('[data-error-for="spec.workload.training.precision"]')
    assert "no hardware support for NVFP4" in error
    assert Design.objects.get(pk=hopper.pk).version == 1
    screenshot(page, "editor-precision-refused")
    _workload(page).screenshot(path=str(SHOTS / "editor-precision-refused-workload.png"))

    blackwell = design_create(owner=user, name="70B on B200", spec=copy.deepcopy(DEMOS[1]["spec"]))
    page.goto(f"{live_server.url}/designs/{blackwell.pk}/edit/")
    page.select_option("#f-precision", "nvfp4")
    page.select_option("#f-optimizer", "muon")
    _save(page, "Saved version 2 and evaluated")
    training = Design.objects.get(pk=blackwell.pk).current.spec["workload"]["training"]
    assert (training["precision"], training["optimizer"]) == ("nvfp4", "muon")
    page.wait_for_selector("#results-container #error-band")
    band = page.inner_text("#results-container #error-band")
    assert "no measured nvfp4 run: the widest band of the blackwell family" in band
    screenshot(page, "editor-precision-nvfp4-muon")
    _workload(page).screenshot(path=str(SHOTS / "editor-precision-nvfp4-workload.png"))
    page.locator("#days-to-train").screenshot(path=str(SHOTS / "editor-precision-nvfp4-days.png"))

    # Reopened, the editor shows the saved recipe and optimizer.
    page.goto(f"{live_server.url}/designs/{blackwell.pk}/edit/")
    assert page.input_value("#f-precision") == "nvfp4" and page.input_value("#f-optimizer") == "muon"
    assert page.js_errors == []
