"""A node larger than its accelerator's NVLink domain is refused beside GPUs per node (headless Chromium,
live server): 16 H100 per node was saved silently before and timed as if one NVLink domain held them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_review_paths import _wait_for_status
from tests.conftest import screenshot

pytestmark = pytest.mark.browser


def test_sixteen_h100_per_node_are_refused_beside_gpus_per_node(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design

    _setup(django_user_model)
    sign_in_by_cookie(page, live_server.url, then="/designs/new/")
    page.select_option("#f-accelerator", "h100-sxm")
    page.fill("#f-gpn", "16")
    page.click("#save-design")
    _wait_for_status(page, "Not saved")
    beside = page.inner_text('[data-error-for="spec.cluster.gpus_per_node"]')
    assert "at most 8 GPUs in one NVLink 4 (NVSwitch gen3) domain" in beside, beside
    assert "a node of 16 GPUs does not exist" in beside
    assert not Design.objects.filter(owner__username="engineer").exists()
    screenshot(page, "editor-gpus-per-node-beyond-domain")

    page.fill("#f-gpn", "8")
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=60000)
    _wait_for_status(page, "Saved version 1 and evaluated")
    assert page.js_errors == []
