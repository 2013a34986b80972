"""Issue 13 defects 2 and 4 as a reviewer meets them in the editor (headless Chromium, live server)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def _wait_for_status(page: Any, prefix: str) -> None:
    page.wait_for_function(
        f"() => document.getElementById('save-status').textContent.startsWith({prefix!r})", timeout=30000
    )


def test_a_model_that_fits_nowhere_is_refused_beside_nodes_with_the_memory_reason(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    """Editor → Llama 3 405B on 2 nodes of H100 → Create. Before: saved, the status line blamed vpp
    divisibility, and the design's pages answered 500. After: nothing is saved; beside Nodes the memory
    figures and the node count a layout fits from; above the form, words, not a dotted path."""
    from apps.designs.models import Design

    _setup(django_user_model)
    sign_in(page, live_server.url, then="/designs/new/")
    page.select_option("#f-preset", "llama3-405b")
    page.fill("#f-nodes", "2")
    page.click("#save-design")
    _wait_for_status(page, "Not saved")
    beside = page.inner_text('[data-error-for="spec.cluster.nodes"]')
    assert re.search(r"needs [\d.]+ GiB of 80 GiB per GPU", beside), beside
    fits_from = int(re.search(r"a layout fits from (\d+) nodes", beside).group(1))  # type: ignore[union-attr]
    assert 10 <= fits_from <= 32  # ≥ 76 GPUs for weights, gradients and Adam states alone (405e9 × 16 B)
    assert "spec." not in page.inner_text("#form-error")
    assert not Design.objects.filter(owner__username="engineer").exists()
    screenshot(page, "editor-fits-nowhere")

    page.fill("#f-nodes", str(fits_from))
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=60000)
    _wait_for_status(page, "Saved version 1 and evaluated")
    assert "Fits" in page.inner_text("#results")
    assert page.js_errors == []


def test_a_pricing_model_without_a_price_is_disabled_with_the_reason_until_one_is_typed(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    _setup(django_user_model)
    sign_in(page, live_server.url, then="/designs/new/")
    page.select_option("#f-preset", "llama3-8b")
    page.fill("#f-nodes", "8")
    page.select_option("#f-cloud-0-offering", "aws-p5-48xlarge")  # catalog: no reserved 1-year price
    assert page.is_enabled("#f-cloud-0-use-on_demand") and page.is_checked("#f-cloud-0-use-on_demand")
    assert page.is_disabled("#f-cloud-0-use-reserved_1y") and not page.is_checked(
        "#f-cloud-0-use-reserved_1y"
    )
    assert page.is_enabled("#f-cloud-0-use-spot")  # the catalog has a spot sample
    reason = page.inner_text("#f-cloud-0-use-reserved_1y + label + .unpriced")
    assert "no catalog price: enter one below" in reason
    page.fill("#f-cloud-0-price-reserved_1y", "30")
    assert page.is_enabled("#f-cloud-0-use-reserved_1y")
    page.check("#f-cloud-0-use-reserved_1y")
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=60000)
    _wait_for_status(page, "Saved version 1 and evaluated")
    assert page.locator('[data-option="aws-p5-48xlarge:reserved_1y"]').count() == 1
    # Another accelerator's offerings are not offered: B200 speed is never priced at H100 rates.
    page.select_option("#f-accelerator", "b200")
    assert (
        page.eval_on_selector('#f-cloud-0-offering option[value="aws-p6-b200-48xlarge"]', "o => o.disabled")
        is False
    )
    assert (
        page.eval_on_selector('#f-cloud-0-offering option[value="aws-p5-48xlarge"]', "o => o.disabled")
        is True
    )
    screenshot(page, "editor-unpriced-models")
    assert page.js_errors == []
