"""Drafts in the editor (issue #36), in headless Chromium: a change writes the user's draft and evaluates it
(the results swapped in are the draft's) without making a version; leaving the page keeps the draft, shown
as "Unsaved draft, based on v1" in the editor and on the design page; "Save version" with a message makes v2
and clears the draft; a later draft is discarded with its button, leaving v2 as it was."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.browser.test_dashboard import _setup, sign_in
from tests.conftest import screenshot
from tests.designs.test_stale_prices import SPEC

pytestmark = pytest.mark.browser


def _status(page: Any, prefix: str) -> None:
    page.wait_for_function(
        "text => document.getElementById('save-status').textContent.startsWith(text)",
        arg=prefix,
        timeout=60000,
    )


def test_a_draft_evaluates_without_a_version_survives_leaving_and_is_saved_or_discarded(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.dashboard.templatetags.dashboard import duration
    from apps.designs.drafts import draft_evaluate_or_problem
    from apps.designs.models import Design, DesignDraft
    from apps.designs.selectors import evaluation_read
    from apps.designs.services import design_create, design_evaluate

    user = _setup(django_user_model)
    design = design_create(owner=user, name="Draft me", spec=copy.deepcopy(SPEC), message="as quoted")
    v1_days = evaluation_read(
        result=design_evaluate(version=design.current).result
    ).training.chosen.time_to_train_days
    base = live_server.url
    sign_in(page, base, then=f"/designs/{design.pk}/edit/")
    assert page.is_hidden("#draft-banner")
    assert page.inner_text("#save-design") == "Save version 2"

    # Twice the tokens: the draft is written and evaluated; no version is made.
    page.fill("#f-tokens", "200000000000")
    page.locator("#f-tokens").blur()
    _status(page, "Draft based on version 1 evaluated")
    assert page.inner_text("#draft-state") == "Unsaved draft, based on v1"
    assert Design.objects.get(pk=design.pk).version == 1
    draft = DesignDraft.objects.get()
    assert (draft.author, draft.base_number, draft.spec["workload"]["training"]["tokens"]) == (user, 1, 2e11)
    evaluation, _ = draft_evaluate_or_problem(draft=draft)
    draft_days = evaluation_read(result=evaluation.result).training.chosen.time_to_train_days
    assert draft_days == pytest.approx(2 * v1_days, rel=1e-6)  # same layout, twice the tokens: twice the days
    expected = duration(evaluation_read(result=evaluation.result).expected_days)
    assert expected in page.inner_text("#results-container #days-to-train")  # the draft's results are shown
    screenshot(page, "editor-draft")

    # Leave and come back: the draft is kept, on the design page and in the editor.
    page.goto(f"{base}/designs/{design.pk}/")
    assert page.inner_text("#draft-notice strong") == "Unsaved draft, based on v1"
    page.click("#continue-draft")
    page.wait_for_selector("#draft-banner:not([hidden])")
    assert page.input_value("#f-tokens") in ("200000000000", "2e+11", "200000000000.0")

    # Save version with a message: v2, the draft gone, the banner hidden, the message listed.
    page.fill("#version-message", "Twice the tokens")
    page.click("#save-design")
    _status(page, "Saved version 2 and evaluated.")
    assert page.is_hidden("#draft-banner") and page.inner_text("#save-design") == "Save version 3"
    saved = Design.objects.get(pk=design.pk)
    assert (saved.version, saved.current.message) == (2, "Twice the tokens")
    assert saved.current.spec["workload"]["training"]["tokens"] == 2e11
    assert not DesignDraft.objects.exists()
    page.goto(f"{base}/designs/{design.pk}/versions/")
    assert page.locator("#versions-table td.version-message").all_inner_texts() == [
        "Twice the tokens",
        "as quoted",
    ]

    # A new draft, discarded with its button: the editor shows v2 again and nothing was saved.
    page.goto(f"{base}/designs/{design.pk}/edit/")
    page.fill("#f-util", "0.3")
    page.locator("#f-util").blur()
    _status(page, "Draft based on version 2 evaluated")
    page.click("#discard-draft")
    page.wait_for_selector(".messages")
    assert "Discarded your unsaved draft" in page.inner_text(".messages")
    assert page.is_hidden("#draft-banner") and page.input_value("#f-util") == "0.7"
    assert not DesignDraft.objects.exists() and Design.objects.get(pk=design.pk).version == 2
    assert page.js_errors == []
