"""A design review walked in the browser (issue #36). The owner (engineer) makes a design in the editor and
saves v1 with "Save version" and a message, moves it into a team with a reviewer as the team's viewer and
sends v1 for review; the reviewer comments on the review page, with a script tag and a javascript: link in
the comment, which show as text (no element injected); the owner changes two inputs in the editor
(utilization 0.7 → 0.5, the owning server price $322,500 → $280,000 a node), which makes a draft evaluated
as they type and no version, then saves v2 with "Save version" and a message; v2's review state is draft;
the owner sends v2 for review, approves it and resolves the comment; a share
link made on the design page to follow the approved version then shows v2 as approved, by whom and when, to
a reader who is not signed in; the diff page shows the two inputs and the attribution's total, the change in
the verdict's NPV difference between the two versions' evaluations, to the dollar."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.browser.test_dashboard import PASSWORD, _setup, sign_in
from tests.conftest import screenshot
from tests.designs.test_stale_prices import SPEC

pytestmark = pytest.mark.browser

PAYLOAD = "Why 0.7? <script>alert(1)</script> [see](javascript:alert(1)) and [the paper](https://arxiv.org/abs/2104.04473)"


def _status(page: Any, prefix: str) -> None:
    page.wait_for_function(
        "text => document.getElementById('save-status').textContent.startsWith(text)",
        arg=prefix,
        timeout=60000,
    )


def _new_design_url() -> str:
    """The new-design editor prefilled with the review's design (tests/designs/test_stale_prices.py's SPEC:
    Llama 3 8B on 4 × 8 H100, its fixed layout, on-demand p5 to compare)."""
    query = {
        "accelerator": SPEC["cluster"]["accelerator"],
        "nodes": SPEC["cluster"]["nodes"],
        "gpus_per_node": SPEC["cluster"]["gpus_per_node"],
        "preset": SPEC["workload"]["model"]["preset"],
        "tokens": int(SPEC["workload"]["training"]["tokens"]),
        "layout": json.dumps(SPEC["parallelism"]),
        "offering": "aws-p5-48xlarge",
        "pricing": "on_demand",
    }
    return f"/designs/new/?{urlencode(query)}"


def _money(value: float) -> str:
    return f"-${abs(value):,.0f}" if value < 0 else f"${value:,.0f}"


def _reviewer_comments(browser: Any, base: str, design_id: int) -> None:
    """The reviewer, in a browser of their own, comments on v1 and sees the payload as text."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    sign_in(page, base, username="reviewer", then=f"/designs/{design_id}/review/")
    assert page.inner_text("#review-state-badge") == "In review"
    assert page.locator("#review-form").count() == 0  # a viewer comments; they do not decide
    page.fill("#comment-body", PAYLOAD)
    page.click("#add-comment")
    page.wait_for_selector(".comment")
    comments = page.locator("#comments")
    assert comments.locator("script").count() == 0 and comments.locator("script:not([src])").count() == 0
    assert comments.locator("a[href^=javascript]").count() == 0 and comments.locator("img").count() == 0
    body = comments.locator(".comment-body").inner_text()
    assert "<script>alert(1)</script>" in body and "[see](javascript:alert(1))" in body
    link = comments.locator(".comment-body a")
    assert link.count() == 1 and link.get_attribute("href") == "https://arxiv.org/abs/2104.04473"
    assert link.get_attribute("rel") == "nofollow noopener"
    shot = screenshot(page, "review-reviewer-comment")
    comments.screenshot(path=str(shot.with_name("review-comments.png")))
    assert errors == []
    context.close()


def test_review_walk(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any, browser: Any
) -> None:
    from apps.designs.models import Design, DesignDraft
    from apps.designs.services import design_evaluate
    from apps.teams.services import member_add, owned_move, team_create

    owner = _setup(django_user_model)
    django_user_model.objects.create_user("reviewer", password=PASSWORD)
    team = team_create(user=owner, name="Cluster review board")
    member_add(team=team, identifier="reviewer", role="viewer")
    base = live_server.url

    # v1 made in the editor with "Save version" and a message.
    sign_in(page, base)
    page.goto(f"{base}{_new_design_url()}")
    page.fill("#f-name", "H100 pod <i>review</i>")
    page.fill("#f-server", "322500")
    page.fill("#f-util", "0.7")
    page.fill("#version-message", "First estimate: 4 × 8 H100, 70 % busy")
    page.click("#save-design")
    _status(page, "Saved version 1 and evaluated.")
    design = Design.objects.get(name="H100 pod <i>review</i>")
    assert design.current.message == "First estimate: 4 × 8 H100, 70 % busy"
    assert design.current.spec["costs"]["on_prem"]["server_usd"] == 322_500
    design = owned_move(user=owner, obj=design, team_id=team.pk)

    page.goto(f"{base}/designs/{design.pk}/")
    page.click("#versions-panel summary")
    page.click("#review-link")
    page.wait_for_selector("#review-form")
    page.click("#review-to-in_review")  # the owner asks for a review of v1
    page.wait_for_selector("#review-state-badge:text('In review')")

    _reviewer_comments(browser, base, design.pk)

    # The owner changes two inputs in the editor: a draft, evaluated as they type, and no version yet.
    page.goto(f"{base}/designs/{design.pk}/edit/")
    page.fill("#f-util", "0.5")
    page.fill("#f-server", "280000")
    page.locator("#f-server").blur()
    page.wait_for_function(
        "() => document.getElementById('draft-banner').hidden === false"
        " && document.getElementById('save-status').textContent.startsWith('Draft based on version 1')",
        timeout=60000,
    )
    assert page.inner_text("#draft-state") == "Unsaved draft, based on v1"
    assert Design.objects.get(pk=design.pk).version == 1
    page.fill("#version-message", "50 % busy; servers at the $280k quote")
    page.click("#save-design")
    _status(page, "Saved version 2 and evaluated.")
    assert page.is_hidden("#draft-banner") and not DesignDraft.objects.exists()
    v2 = Design.objects.get(pk=design.pk).current
    assert (v2.number, v2.message) == (2, "50 % busy; servers at the $280k quote")
    assert (v2.spec["costs"]["utilization"], v2.spec["costs"]["on_prem"]["server_usd"]) == (0.5, 280_000)

    page.goto(f"{base}/designs/{design.pk}/review/")
    assert page.inner_text("#review-state-badge") == "Draft"  # v2 is a new draft
    assert page.inner_text("#version-message") == "“50 % busy; servers at the $280k quote”"
    comment = page.locator("#comments .comment")
    assert comment.count() == 1 and "reviewer on v1" in comment.locator(".caption").first.inner_text()
    page.click("#review-to-in_review")
    page.wait_for_selector("#review-to-approved")
    page.fill("#review-note", "Cheaper at 50 % busy: go.")
    page.click("#review-to-approved")
    page.wait_for_selector("#review-state-badge:text('Approved')")
    assert "approved by engineer" in page.inner_text("#review-approved")
    page.locator(".resolve-comment").click()  # the owner (an editor too) resolves the reviewer's comment
    page.wait_for_selector("#no-comments")
    top = screenshot(page, "review-approved-v2").with_name("review-approved-v2-top.png")
    page.screenshot(path=str(top), clip={"x": 0, "y": 0, "width": 1280, "height": 1400})

    # A share link that follows the approved version, made on the design page.
    page.goto(f"{base}/designs/{design.pk}/")
    page.click("#share-panel summary")
    page.check("#share-follow-approved")
    page.click("#create-share-link")
    page.wait_for_selector("#share-url")
    url = page.input_value("#share-url")
    reader = browser.new_context(viewport={"width": 1280, "height": 800})
    shared = reader.new_page()
    shared.goto(url)
    text = shared.inner_text("#share-approved")
    from apps.reviews.models import VersionReview

    day = VersionReview.objects.get(version__design=design, version__number=2).reviewed_at.strftime(
        "%Y-%m-%d"
    )
    assert text.startswith(f"Approved version v2, approved by engineer on {day}: “Cheaper at 50 % busy: go.”")
    assert shared.locator("h1 i").count() == 0 and "<i>review</i>" in shared.inner_text("h1")
    top = screenshot(shared, "review-share-approved").with_name("review-share-approved-top.png")
    shared.screenshot(path=str(top), clip={"x": 0, "y": 0, "width": 1280, "height": 900})
    reader.close()

    # The diff of v1 → v2 on the diff page: the two inputs, and the attribution summing to the change.
    old, new = (
        design_evaluate(version=design.versions.get(number=n)).result["design_verdict"]["saving_usd"]
        for n in (1, 2)
    )
    page.goto(f"{base}/designs/{design.pk}/diff/?from=1&to=2")
    # The stated default order: the changed paths sorted (the same on every database).
    assert page.locator("#diff-inputs tbody tr th").all_inner_texts() == [
        "costs.on_prem.server_usd",
        "costs.utilization",
    ]
    assert page.inner_text("#attribution-total-usd") == _money(new - old)
    # The steps (the API's, unrounded) sum to the change between the two evaluations to the dollar, and the
    # page shows each one.
    found = page.evaluate(
        "url => window.ClusterApi.request('GET', url).then(r => r.data.attribution)",
        f"/api/v1/designs/{design.pk}/diff/?from=1&to=2",
    )
    steps = [s["delta_usd"] for s in found["steps"]]
    assert len(steps) == 2 and abs(sum(steps) - (new - old)) < 0.5
    assert page.locator("#attribution-steps tbody tr td:nth-child(3)").all_inner_texts() == [
        _money(s) for s in steps
    ]
    messages = page.inner_text("#diff-messages")
    assert "First estimate: 4 × 8 H100, 70 % busy" in messages and "$280k quote" in messages
    assert page.js_errors == []
