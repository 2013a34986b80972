"""The dashboard in headless Chromium against the live server: sign in, create a design through the editor and
see its charts drawn, open a share link signed out, download the XLSX and read its numbers back."""

from __future__ import annotations

import io
from typing import Any

import pytest

from tests.conftest import screenshot

pytestmark = pytest.mark.browser

PASSWORD = "pw-engineer-123"
NEGOTIATED_USD_PER_NODE_HOUR = 55.5
TWO_OFFERINGS = {"AWS p5en.48xlarge on-demand", "CoreWeave 8x H200 node on-demand"}
DESIGN_CHARTS = {
    "memory": {"Weights", "Activations", "Capacity 141 GiB"},
    "step-time": {"Step time"},
    "cost-utilization": {"Own (on-prem)", "Cloud on-demand", "Break-even"},
    "cumulative-cost": {"Own (on-prem)", "Cloud on-demand"},
    "cash-flow": {"Own (on-prem)", "Cloud on-demand"},
    "capex-opex": {"Capex: servers", "Opex: energy"},
    "sensitivity": {"Input −25%", "Input +25%"},
    "network": set(),  # one unnamed-legend bar trace
}


def _setup(django_user_model: Any) -> Any:
    from apps.designs.demo import demo_load
    from tests.conftest import seed_catalog

    seed_catalog()
    demo_load()
    return django_user_model.objects.create_user("engineer", password=PASSWORD)


def sign_in(
    page: Any, base: str, *, username: str = "engineer", password: str = PASSWORD, then: str = "/"
) -> None:
    page.goto(f"{base}/accounts/login/?next={then}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("form button[type=submit], form input[type=submit]")
    page.wait_for_url(f"{base}{then}")


def sign_in_by_cookie(page: Any, base: str, *, username: str = "engineer", then: str = "/") -> None:
    """Sign in without the form, for a test about another page: a session made by Django's test client
    (force_login, in the test database the live server reads) set as the page's cookie, then ``then`` opened.
    Two requests fewer than ``sign_in`` (the form's page and its post); the form itself is walked by
    sign_in: the first test here, the crawl, the account, review and price-book walks."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    name = settings.SESSION_COOKIE_NAME
    page.context.add_cookies([{"name": name, "value": client.cookies[name].value, "url": base}])
    page.goto(f"{base}{then}")
    page.wait_for_url(f"{base}{then}")  # not sent to the sign-in page


def _legend_names(page: Any, chart_id: str) -> set[str]:
    return set(page.eval_on_selector(f"#chart-{chart_id}", "el => el.data.map(t => t.name)"))


def _assert_charts_drawn(page: Any, *, cloud: set[str] | None = None) -> None:
    """Every design chart drawn with its traces; `cloud` names the cloud traces when a design compares several
    offerings (the legend then names each option, not "Cloud on-demand")."""
    for chart_id, names in DESIGN_CHARTS.items():
        if cloud and "Cloud on-demand" in names:
            names = (names - {"Cloud on-demand"}) | cloud
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


def _assert_negotiated_price_used(page: Any, *, nodes: int) -> None:
    """The negotiated on-demand option costs days × 24 h × nodes × the negotiated price, as its card shows."""
    from apps.dashboard.templatetags.dashboard import usd
    from apps.designs.models import Design
    from apps.designs.services import design_evaluate

    design = Design.objects.get(pk=int(page.url.rstrip("/").split("/")[-2]))
    options = {o["key"]: o for o in design_evaluate(version=design.current).result["options"]}
    option = options["aws-p5en-48xlarge:on_demand"]
    expected = option["days"] * 24 * nodes * NEGOTIATED_USD_PER_NODE_HOUR
    assert option["run_cost_usd"] == pytest.approx(expected, rel=1e-9)
    # Against the catalog's $63.296 it would be 14 % more: the negotiated price really replaced it.
    assert option["run_cost_usd"] < option["days"] * 24 * nodes * 63.296 * 0.9
    card = page.locator('[data-option="aws-p5en-48xlarge:on_demand"]').inner_text()
    assert usd(expected) in card
    # The price is stored with the design: the editor shows it again when the page is opened afresh.
    page.reload()
    assert float(page.input_value("#f-cloud-0-price-on_demand")) == NEGOTIATED_USD_PER_NODE_HOUR


def test_create_a_design_through_the_editor_and_see_its_charts(
    page: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    _setup(django_user_model)
    sign_in(page, live_server.url)
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
    # Cloud offering 1: AWS p5en on-demand at a negotiated $55.50 per node-hour (the catalog says $63.296).
    page.select_option("#f-cloud-0-offering", "aws-p5en-48xlarge")
    page.check("#f-cloud-0-use-on_demand")
    for model in ("reserved_1y", "reserved_3y", "spot"):
        page.uncheck(f"#f-cloud-0-use-{model}")
    assert page.get_attribute("#f-cloud-0-price-on_demand", "placeholder") == "catalog $63.30"
    page.fill("#f-cloud-0-price-on_demand", str(NEGOTIATED_USD_PER_NODE_HOUR))
    # Two more rows, then remove the middle one: the last row takes its place and its index.
    page.click("#add-cloud")
    page.select_option("#f-cloud-1-offering", "oci-bm-gpu-h200-8")
    page.click("#add-cloud")
    page.select_option("#f-cloud-2-offering", "coreweave-8x-h200-node")
    page.click("#cloud-row-1 .remove-cloud")
    assert page.locator(".cloud-row").count() == 2
    assert page.input_value("#f-cloud-1-offering") == "coreweave-8x-h200-node"
    assert page.is_checked("#f-cloud-1-use-on_demand")
    assert page.inner_text("#cloud-row-1 legend .row-number") == "2"
    page.click("#save-design")
    page.wait_for_url("**/designs/*/edit/", timeout=15000)
    _assert_charts_drawn(page, cloud=TWO_OFFERINGS)
    _assert_negotiated_price_used(page, nodes=8)
    assert page.locator('[data-option="coreweave-8x-h200-node:on_demand"]').count() == 1
    assert page.locator('[data-option^="oci-bm-gpu-h200-8"]').count() == 0
    screenshot(page, "editor")

    # A negative negotiated price is refused by the API, and the message sits beside that price's input.
    page.fill("#f-cloud-1-price-spot", "-5")
    page.click("#save-design")
    page.wait_for_function("() => document.getElementById('save-status').textContent.startsWith('Not saved')")
    assert "greater than or equal to 0" in page.inner_text("#e-cloud-1-price-spot")
    assert page.get_attribute("#f-cloud-1-price-spot", "aria-invalid") == "true"
    assert page.get_attribute("#f-cloud-1-price-spot", "aria-describedby") == "e-cloud-1-price-spot"
    assert page.inner_text("#e-cloud-0-price-on_demand") == ""
    page.fill("#f-cloud-1-price-spot", "")

    # A bad value comes back in the error envelope and shows beside its field; the page is not reloaded.
    page.fill("#f-tp", "3")
    page.click("#save-design")
    page.wait_for_function("() => document.getElementById('save-status').textContent.startsWith('Not saved')")
    # The engine names the first degree that cannot divide the cluster: TP 3 of 64 GPUs.
    assert (
        page.inner_text('[data-error-for="spec.parallelism.tp"]')
        == "tp 3 does not divide the cluster's 64 GPUs"
    )
    assert page.get_attribute("#f-tp", "aria-invalid") == "true"
    assert page.inner_text('[data-error-for="spec.parallelism.dp"]') == ""
    screenshot(page, "editor-error")

    design_url = page.url.replace("/edit/", "/")
    page.goto(design_url)
    _assert_charts_drawn(page, cloud=TWO_OFFERINGS)
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
