"""The editor's site select in headless Chromium: the user's saved sites are offered (not another user's);
picking one saves the design with the site's fields inline, the owning cost takes the site's PUE and
colocation (the design's own electricity price still wins), and the results show where the racks go."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in_by_cookie
from tests.browser.test_editor_goals import _save
from tests.conftest import screenshot
from tests.sites.test_api import SITE

pytestmark = pytest.mark.browser


def test_a_saved_site_is_picked_saved_and_used(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.demo import DEMOS
    from apps.designs.models import Design
    from apps.designs.services import design_create, design_evaluate
    from apps.sites.services import site_create

    user = _setup(django_user_model)
    other = django_user_model.objects.create_user("carol", password="pw-carol-123")
    site = site_create(owner=user, data={**SITE, "pue": {"air": 1.5}, "cooling": ["air"]})
    site_create(owner=other, data={**SITE, "name": "Carol's site"})
    design = design_create(owner=user, name="8 × 8 H200 sited", spec=copy.deepcopy(DEMOS[3]["spec"]))
    sign_in_by_cookie(page, live_server.url, then=f"/designs/{design.pk}/edit/")

    options = page.locator("#f-site option").all_inner_texts()
    assert options == ["none: the default owning prices", "Ashburn A"]
    page.select_option("#f-site", str(site.pk))
    _save(page, "Saved version 2 and evaluated")
    current = Design.objects.get(pk=design.pk).current
    assert current.spec["site"]["id"] == site.pk
    assert current.spec["site"]["max_kw_per_rack"] == 40
    used = {a["name"]: a for a in design_evaluate(version=current).result["assumptions"]}
    assert (used["on_prem.pue"]["value"], used["on_prem.pue"]["source"]) == (
        1.5,
        f"site Ashburn A (saved site {site.pk}), air cooling",
    )
    assert used["on_prem.colo_usd_per_kw_month"]["value"] == 200
    assert used["on_prem.usd_per_kwh"]["source"] == "request"  # the demo's own $0.08 wins over the site's

    # 8 nodes at the demo's 10.2 kW: ⌊40 / 10.2⌋ = 3 a rack, ⌈8 / 3⌉ = 3 racks.
    page.wait_for_selector("#results-container")
    page.wait_for_function("() => document.body.innerText.includes('Site Ashburn A: 3 racks')", timeout=20000)
    screenshot(page, "editor-site")

    # Back to none: the site leaves the spec.
    page.select_option("#f-site", "")
    _save(page, "Saved version 3 and evaluated")
    assert "site" not in Design.objects.get(pk=design.pk).current.spec
