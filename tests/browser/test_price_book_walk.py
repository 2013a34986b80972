"""Issue #35's done-when walk in headless Chromium: a new user creates a team, adds a second user as a
viewer, imports the team's price book from an XLSX holding six kinds of entry (server quote, network quote,
cloud discount, private reserved rate, power, colocation), picks a site, and sees the design's verdict change
at each step with every figure's source shown; the viewer sees it all and can change nothing; a third user
gets 404.

The design: 64 nodes × 8 H100 SXM (tests.designs.test_api.SPEC), 2 years at 30 % utilization, against AWS
p5.48xlarge on-demand and reserved 3-year. Hand calculations of the figures asserted:

- the catalog alone: owning's NPV $19.86M against on-demand's $17.13M, so it rents (owning breaks even at
  35.9 % utilization);
- with the book: servers 64 × $240,000 = $15,360,000; the network 24 switches × $20,000 (the quote) +
  1,024 cables × $150 + 1,024 transceivers × $1,200 (the catalog's placeholders) = $480,000 + $153,600 +
  $1,228,800 = $1,862,400; on-demand $55.04 × (1 − 0.10) = $49.536 a node-hour; reserved 3-year the private
  $20 a node-hour; power $0.06/kWh; colocation $120/kW-month drawn. Owning's NPV falls to $15.01M, under
  on-demand's $15.42M: it owns;
- at the site (power $0.15/kWh, colocation $250/kW-month, PUE 1.5 air-cooled), the site's figures win over the
  book's (a design's own values come first): owning's NPV rises to $17.39M, so it rents again.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest

from tests.browser.test_dashboard import PASSWORD, sign_in
from tests.conftest import ROOT, screenshot, seed_catalog
from tests.designs.test_api import SPEC
from tests.sites.test_api import SITE

pytestmark = pytest.mark.browser

P5 = "aws-p5-48xlarge"
RENT = "Rent AWS p5.48xlarge on-demand."
BOOK = [
    {"kind": "server_quote", "accelerator": "h100-sxm", "gpus_per_node": 8, "value": 240_000,
     "network_included": False, "support_years": 3, "source": "Dell quote Q-2026-114",
     "attachment_name": "q114.pdf"},
    {"kind": "network_quote", "network_item": "switch", "switch_model": "ib-ndr-64", "value": 20_000,
     "source": "NVIDIA partner quote N-77"},
    {"kind": "cloud_discount", "offering": P5, "value": 0.1, "source": "AWS private pricing"},
    {"kind": "private_rate", "offering": P5, "pricing_model": "reserved_3y", "value": 20, "source": "PPA"},
    {"kind": "power", "value": 0.06, "source": "utility PPA 2026"},
    {"kind": "colocation", "value": 120, "colocation_basis": "drawn_kw", "source": "colo MSA"},
]  # fmt: skip
COLUMNS = ["kind", "accelerator", "gpus_per_node", "offering", "pricing_model", "value", "network_included",
           "support_years", "network_item", "switch_model", "colocation_basis", "valid_from", "source",
           "attachment_name"]  # fmt: skip


def _xlsx() -> bytes:
    import datetime as dt

    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(COLUMNS)
    for row in BOOK:
        sheet.append([{**row, "valid_from": dt.date(2026, 1, 1)}.get(c) for c in COLUMNS])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _shot(page: Any, name: str) -> None:
    """The whole page, and the verdict and the Prices table alone (readable at full size)."""
    screenshot(page, name)
    for part in ("#design-verdict", "#price-sources"):
        if page.locator(part).count():
            path = ROOT / "artifacts" / "screenshots" / f"{name}-{part[1:]}.png"
            page.locator(part).screenshot(path=str(path))


def _verdict(page: Any) -> str:
    return str(page.inner_text("#design-verdict strong"))


def _sources(page: Any) -> dict[str, tuple[str, str]]:
    """The Prices table: figure → (value, where it came from)."""
    rows = page.eval_on_selector_all(
        "#price-sources tbody tr",
        "rows => rows.map(r => [...r.querySelectorAll('td')].map(c => c.innerText.trim()))",
    )
    return {row[0]: (row[1], row[3]) for row in rows}


def test_a_team_imports_its_price_book_picks_a_site_and_sees_the_verdict_move(
    page: Any, browser: Any, live_server: Any, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.designs.models import Design
    from apps.designs.services import design_create, design_evaluate
    from apps.pricebook.models import PriceEntry
    from apps.sites.services import site_create
    from apps.teams.models import Membership, Team

    seed_catalog()  # catalog_load_seed's rows (tests/conftest.py), in bulk after the process's first load
    olivia = django_user_model.objects.create_user("olivia", password=PASSWORD)
    django_user_model.objects.create_user("vera", password=PASSWORD)
    django_user_model.objects.create_user("oscar", password=PASSWORD)
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = 0.3
    spec["costs"]["cloud"][0]["pricing_models"] = ["on_demand", "reserved_3y"]
    design = design_create(owner=olivia, name="70B on 64 H100", spec=spec)
    site = site_create(
        owner=olivia,
        data={**SITE, "power_usd_per_kwh": 0.15, "colocation_usd_per_kw_month": 250, "pue": {"air": 1.5},
              "cooling": ["air"]},
    )  # fmt: skip
    base = live_server.url

    # 1. The new user creates a team and adds vera as a viewer.
    sign_in(page, base, username="olivia", then="/teams/")
    page.fill("#team-name", "Training infra")
    page.click("#create-team")
    team = Team.objects.get(name="Training infra")
    page.wait_for_selector(f"#member-{team.pk}")
    page.fill(f"#member-{team.pk}", "vera")
    page.select_option(f"#member-role-{team.pk}", "viewer")
    page.click(f"#team-{team.pk} button[value=add-member]")
    page.wait_for_function("() => document.body.innerText.includes('vera')")
    assert Membership.objects.get(team=team, user__username="vera").role == "viewer"

    # 2. The design, moved into the team, rents on the catalog's prices.
    page.goto(f"{base}/designs/{design.pk}/")
    page.select_option("#move-team", str(team.pk))
    page.click("#move-design-submit")
    page.wait_for_selector("#design-team >> text=Training infra")
    assert _verdict(page) == RENT
    sources = _sources(page)
    assert sources["on_prem.server_usd"] == ("322,500", "public catalog of 2025-03-03")
    assert sources[f"cloud.{P5}.on_demand"] == ("55.04", "public catalog of 2026-09-01")
    _shot(page, "price-book-1-catalog")

    # 3. The team's price book, from the Workspace menu, imported from the XLSX.
    page.click("nav summary:has-text('Workspace')")
    page.click("#nav-price-book")
    page.wait_for_url(f"{base}/price-book/")
    page.click("#books a:has-text('Training infra')")
    page.wait_for_url(f"{base}/price-book/teams/{team.pk}/")
    page.set_input_files("#import-file", files=[{"name": "book.xlsx", "mimeType": "application/octet-stream",
                                                 "buffer": _xlsx()}])  # fmt: skip
    page.click("#import-submit")
    page.wait_for_selector("text=Imported 6 entries.")
    entries = {e.kind: e for e in PriceEntry.objects.filter(team=team)}
    assert len(entries) == 6 and all(e.owner == olivia for e in entries.values())
    assert page.locator("#entries tbody tr").count() == 6
    screenshot(page, "price-book-2-imported")

    # 4. The design now owns, each figure from its entry, with the entry's date.
    page.goto(f"{base}/designs/{design.pk}/")
    assert _verdict(page) == "Own."
    sources = _sources(page)
    book = "price book entry {} of 2026-01-01"
    assert sources["on_prem.server_usd"] == ("240,000", book.format(entries["server_quote"].pk))
    assert sources["network.switch_usd"] == ("20,000", book.format(entries["network_quote"].pk))
    assert sources["network.cable_usd"] == ("150", "engine default (no catalog figure)")
    assert sources[f"cloud.{P5}.on_demand"] == ("49.536", book.format(entries["cloud_discount"].pk))
    assert sources[f"cloud.{P5}.reserved_3y"] == ("20", book.format(entries["private_rate"].pk))
    assert sources["on_prem.usd_per_kwh"] == ("0.06", book.format(entries["power"].pk))
    assert sources["on_prem.colo_usd_per_kw_month"] == ("120", book.format(entries["colocation"].pk))
    result = design_evaluate(version=Design.objects.get(pk=design.pk).current).result
    parts = result["costs"][P5]["on_prem"]["capex_parts"]
    assert parts["servers"]["usd"] == 15_360_000  # 64 × $240,000
    assert parts["network"]["usd"] == 1_862_400  # 24 × $20,000 + 1,024 × $150 + 1,024 × $1,200
    _shot(page, "price-book-3-book")

    # 5. Picking the site: its power and colocation are the design's own, so they win; renting wins again.
    page.goto(f"{base}/designs/{design.pk}/edit/")
    page.uncheck("#auto-refresh")
    page.select_option("#f-site", str(site.pk))
    page.click("#save-design")
    status = "() => document.getElementById('save-status').textContent.startsWith('Saved version 2')"
    page.wait_for_function(status, timeout=30000)
    page.goto(f"{base}/designs/{design.pk}/")
    assert _verdict(page) == RENT
    sources = _sources(page)
    assert sources["on_prem.usd_per_kwh"] == ("0.15", "design value")
    assert sources["on_prem.colo_usd_per_kw_month"] == ("250", "design value")
    assert sources["on_prem.server_usd"] == ("240,000", book.format(entries["server_quote"].pk))
    assert "the design's site Ashburn A" in page.inner_text(
        "#price-sources tr[data-name='prices.on_prem.usd_per_kwh']"
    )
    _shot(page, "price-book-4-site")
    assert page.js_errors == []

    # 6. The viewer sees the design and the book, and can change neither.
    viewer = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(viewer, base, username="vera", then=f"/designs/{design.pk}/")
    assert _verdict(viewer) == RENT and _sources(viewer) == sources
    assert viewer.locator("#edit-design").count() == 0
    assert viewer.goto(f"{base}/designs/{design.pk}/edit/").status == 404
    viewer.goto(f"{base}/price-book/teams/{team.pk}/")
    assert viewer.locator("#read-only").count() == 1 and viewer.locator("#entry-form").count() == 0
    assert viewer.locator("#import-form").count() == 0 and viewer.locator("#entries tbody tr").count() == 6
    screenshot(viewer, "price-book-5-viewer")
    viewer.context.close()

    # 7. Someone outside the team: 404 for the design and the book.
    outsider = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    sign_in(outsider, base, username="oscar", then="/price-book/")
    assert outsider.goto(f"{base}/designs/{design.pk}/").status == 404
    assert outsider.goto(f"{base}/price-book/teams/{team.pk}/").status == 404
    outsider.context.close()
