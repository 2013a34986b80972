"""The dashboard in headless Chromium against the live server: sign in, create a design through the editor and
see its charts drawn, open a share link signed out, download the XLSX and read its numbers back."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.browser

PASSWORD = "pw-engineer-123"
DESIGN_CHARTS = {
    "memory": {"Weights", "Activations", "Capacity 141 GiB"},
    "step-time": {"Step time"},
    "cost-utilization": {"Own (on-prem)", "Cloud on-demand", "Break-even"},
    "cumulative-cost": {"Own (on-prem)", "Cloud on-demand"},
    "capex-opex": {"Capex: servers", "Opex: energy"},
    "sensitivity": {"Input −25%", "Input +25%"},
    "network": set(),  # one unnamed-legend bar trace
}


def _setup(django_user_model: Any) -> Any:
    from apps.catalog.services import catalog_load_seed
    from apps.designs.demo import demo_load

    catalog_load_seed()
    demo_load()
    return django_user_model.objects.create_user("engineer", password=PASSWORD)


def _sign_in(page: Any, base: str) -> None:
    page.goto(f"{base}/accounts/login/?next=/")
    page.fill("input[name=username]", "engineer")
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit], form input[type=submit]")
    page.wait_for_url(f"{base}/")


def _legend_names(page: Any, chart_id: str) -> set[str]:
    return set(page.eval_on_selector(f"#chart-{chart_id}", "el => el.data.map(t => t.name)"))


def _assert_charts_drawn(page: Any) -> None:
    for chart_id, names in DESIGN_CHARTS.items():
        page.wait_for_selector(f"#chart-{chart_id} svg.main-svg", timeout=15000)
        assert names <= _legend_names(page, chart_id), chart_id
        # A drawn legend shows the trace names as text in the SVG (one-trace charts hide their legend).
        if page.eval_on_selector(f"#chart-{chart_id}", "el => el.layout.showlegend") is False:
            continue
        for name in names:
            assert page.locator(f"#chart-{chart_id} .legendtext", has_text=name).count() >= 1, (
                chart_id,
                name,
            )


def test_create_a_design_through_the_editor_and_see_its_charts(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    _setup(django_user_model)
    _sign_in(page, live_server.url)
    assert page.locator("#demo-designs li").count() == 4
    screenshot(page, "home")

    page.click("text=New design")
    page.wait_for_selector("#design-form")
    page.fill("#f-name", "Browser 8B on 8 × 8 H200")
    page.select_option("#f-preset", "llama3-8b")
    page.select_option("#f-accelerator", "h200")
    page.fill("#f-nodes", "8")
    page.fill("#f-tokens", "1500000000000")
    page.check('input[name="layout-mode"][value="fixed"]')
    for field, value in (("#f-tp", "1"), ("#f-pp", "1"), ("#f-dp", "64"), ("#f-mb", "2")):
        page.fill(field, value)
    page.select_option("#f-recompute", "none")
    page.uncheck("#f-sp")
    page.fill("#f-horizon", "2")
    page.fill("#f-util", "0.6")
    page.fill("#f-server", "230000")
    page.select_option("#f-offering", "aws-p5en-48xlarge")
    page.check('input[name="pricing"][value="on_demand"]')
    page.uncheck('input[name="pricing"][value="spot"]')
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=15000)
    _assert_charts_drawn(page)
    screenshot(page, "editor")

    # A bad value comes back in the error envelope and shows beside its field; the page is not reloaded.
    page.fill("#f-tp", "3")
    page.click("#save-design")
    page.wait_for_function("() => document.getElementById('save-status').textContent.startsWith('Not saved')")
    # The engine names the layout's product: TP 3 × PP 1 × DP 64 × CP 1 = 192 GPUs on a 64-GPU cluster.
    assert "64 GPUs" in page.inner_text('[data-error-for="spec.parallelism.dp"]')
    assert page.get_attribute("#f-dp", "aria-invalid") == "true"
    screenshot(page, "editor-error")

    design_url = page.url.replace("/edit/", "/")
    page.goto(design_url)
    _assert_charts_drawn(page)
    assert "Break-even utilization" in page.inner_text("#results")
    screenshot(page, "design")
    assert page.js_errors == []


def test_share_link_signed_out_is_read_only_and_the_xlsx_reads_back(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    import openpyxl

    from apps.designs.models import Design
    from apps.designs.services import design_evaluate, share_link_create

    user = _setup(django_user_model)
    demo = Design.objects.filter(is_demo=True).order_by("id")[3]  # 8 × 8 H200 owned vs AWS reserved
    _, token = share_link_create(design=demo, user=user)
    evaluation = design_evaluate(version=demo.current).result

    page.goto(f"{live_server.url}/share/{token}/")  # a fresh context: nobody is signed in
    assert "Sign in" in page.inner_text("header")
    for control in (
        "#edit-design",
        "#create-share-link",
        "#design-form",
        "a[href$='/edit/']",
        "form[method=post]",
    ):
        assert page.locator(control).count() == 0, control
    _assert_charts_drawn(page)
    assert page.locator("#assumptions tbody tr").count() == len(evaluation["assumptions"])
    screenshot(page, "share")
    page.emulate_media(media="print")
    screenshot(page, "share-print")
    assert page.locator(".site-header").is_hidden()
    page.emulate_media(media="screen")

    with page.expect_download() as info:
        page.click("text=Download XLSX")
    download = info.value
    assert download.suggested_filename.endswith(".xlsx")
    workbook = openpyxl.load_workbook(io.BytesIO(open(download.path(), "rb").read()), data_only=True)
    numbers = [
        cell
        for sheet in workbook.worksheets
        for row in sheet.iter_rows(values_only=True)
        for cell in row
        if isinstance(cell, (int, float)) and not isinstance(cell, bool)
    ]
    own = evaluation["costs"]["aws-p5e-48xlarge"]["on_prem"]
    best = evaluation["options"][0]
    # Owning's 2-year total, the cheapest option's run cost and the days to train read back as numbers.
    assert any(abs(n - own["total_usd"]) < 1 for n in numbers), own["total_usd"]
    assert any(abs(n - best["run_cost_usd"]) < 1 for n in numbers), best["run_cost_usd"]
    assert any(abs(n - evaluation["training"]["time_to_train_days"]) < 0.01 for n in numbers)
    assert page.js_errors == []
