"""The design editor with the keyboard alone, in headless Chromium: every field has a label and takes focus in
order with a visible ring, cloud rows are added and removed from the keyboard, and Enter saves the design."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.test_dashboard import sign_in
from tests.conftest import screenshot

pytestmark = pytest.mark.browser

FOCUSED = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  const labelled = el.id ? Array.from(document.querySelectorAll('label[for="' + el.id + '"]'))
                               .map(l => l.textContent.trim()).filter(Boolean) : [];
  return {id: el.id, tag: el.tagName.toLowerCase(), type: el.type || "", inForm: !!el.closest("#design-form"),
          label: labelled.join(" ") || el.getAttribute("aria-label") || "",
          outline: style.outlineStyle, outlineWidth: parseFloat(style.outlineWidth) || 0};
}"""
VISIBLE_CONTROLS = """() => Array.from(document.querySelectorAll(
    "#design-form input, #design-form select, #design-form textarea"))
  .filter(el => el.type !== "hidden" && el.offsetParent !== null && !el.closest("details:not([open])"))
  .map(el => ({id: el.id, name: el.name, type: el.type, disabled: el.disabled,
               label: (el.id && document.querySelector('label[for="' + el.id + '"]')?.textContent.trim())
                      || el.getAttribute("aria-label") || ""}))"""


def _tab_until(page: Any, element_id: str, limit: int = 80) -> list[dict[str, Any]]:
    stops = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        stop = page.evaluate(FOCUSED)
        stops.append(stop)
        if stop["id"] == element_id:
            return stops
    raise AssertionError(f"#{element_id} never took focus; stops: {[s['id'] or s['tag'] for s in stops]}")


def test_editor_fields_are_labelled_reachable_by_tab_and_the_form_submits_with_enter(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design
    from tests.conftest import seed_catalog

    seed_catalog()
    django_user_model.objects.create_user("engineer", password="pw-engineer-123")
    sign_in(page, live_server.url, then="/designs/new/")

    # Every visible control has a non-empty label, through label[for] or aria-label.
    controls = page.evaluate(VISIBLE_CONTROLS)
    assert len(controls) >= 25
    unlabelled = [c for c in controls if not c["label"]]
    assert unlabelled == []
    assert all(c["id"] for c in controls), [c for c in controls if not c["id"]]

    # From the top of the page, Tab reaches the first field, then every control in the form in order,
    # each with a visible focus ring (an outline at least 2 px wide).
    page.keyboard.press("Tab")
    assert (
        page.evaluate(FOCUSED)["id"] == ""
        and page.evaluate("document.activeElement.className") == "skip-link"
    )
    _tab_until(page, "f-name")
    stops = [page.evaluate(FOCUSED)] + _tab_until(page, "auto-refresh")
    reached = {s["id"] for s in stops}
    # A radio group is one tab stop (arrows move within it): only its checked radio is reached.
    # A disabled control (a pricing model with no catalog price, until a price is typed) takes no focus.
    expected = {c["id"] for c in controls if c["type"] != "radio" and not c["disabled"]} | {"f-layout-search"}
    assert expected - reached == set()
    no_ring = [s["id"] for s in stops if s["outline"] == "none" or s["outlineWidth"] < 2]
    assert no_ring == []
    assert [s for s in stops if s["tag"] in ("input", "select", "textarea") and not s["label"]] == []
    order = [s["id"] for s in stops]
    assert (
        order.index("f-name")
        < order.index("f-preset")
        < order.index("f-accelerator")
        < order.index("f-cloud-0-offering")
        < order.index("f-cloud-0-price-spot")
        < order.index("add-cloud")
        < order.index("save-design")
        < order.index("auto-refresh")
    )

    # Enter on "Owning assumptions" opens the section; its fields (hidden while closed) join the tab order.
    page.focus("#owning-assumptions > summary")
    page.keyboard.press("Enter")
    assert page.is_visible("#f-pue")
    page.keyboard.press("Tab")
    focused = page.evaluate(FOCUSED)
    assert focused["id"] == "f-pue" and focused["label"].startswith("PUE")

    # Arrow keys switch the layout mode; the fixed-layout fields appear and join the tab order.
    page.focus("#f-layout-search")
    page.keyboard.press("ArrowRight")
    assert page.is_checked("#f-layout-fixed")
    assert page.is_visible("#f-tp")
    page.keyboard.press("ArrowLeft")
    assert page.is_checked("#f-layout-search")
    assert page.is_hidden("#f-tp")

    # Add a cloud row with Enter: focus lands on its offering picker. Remove it with Space: focus stays in the
    # section, on the row before it.
    page.focus("#add-cloud")
    page.keyboard.press("Enter")
    assert page.locator(".cloud-row").count() == 2
    assert page.evaluate(FOCUSED)["id"] == "f-cloud-1-offering"
    for _ in range(20):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('remove-cloud')"):
            break
    assert page.evaluate("document.activeElement.closest('.cloud-row').id") == "cloud-row-1"
    assert page.evaluate(FOCUSED)["label"] == "Remove cloud offering 2"
    page.keyboard.press("Space")
    assert page.locator(".cloud-row").count() == 1
    assert page.evaluate(FOCUSED)["id"] == "f-cloud-0-offering"
    screenshot(page, "editor-keyboard")

    # Type a name and press Enter in the field: the design is created and evaluated, no mouse involved.
    page.focus("#f-name")
    page.keyboard.press("Control+A")
    page.keyboard.type("Typed with the keyboard")
    page.keyboard.press("Enter")
    page.wait_for_url("**/designs/*/edit/", timeout=20000)
    page.wait_for_function(
        "() => document.getElementById('save-status').textContent.endsWith('and evaluated.')"
    )
    design = Design.objects.get(name="Typed with the keyboard")
    assert page.url.endswith(f"/designs/{design.pk}/edit/")
    assert page.locator("#results .card").count() >= 3
    assert page.js_errors == []
