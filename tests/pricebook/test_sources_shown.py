"""Each resolved price says where it came from (issue #35) on every door: the API's prices.* assumptions
(their origin and entry), the design page and the share view (the "Prices and where each came from"
table) and the XLSX export (the Assumptions sheet's Source cell starts with the origin)."""

from __future__ import annotations

import io
import re
from typing import Any

import openpyxl
from django.test import Client

from tests.pricebook.test_resolution import _client, _design, _entry


def _cells(html: str, name: str) -> list[str]:
    row = re.search(rf'<tr data-name="prices\.{re.escape(name)}"[^>]*>(.*?)</tr>', html, re.S)
    assert row, name
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def test_the_page_share_view_and_xlsx_say_each_prices_origin(alice: Any, catalog: Any) -> None:
    api = _client(alice)
    design = _design(api)
    quote = _entry(api, kind="server_quote", accelerator="h100-sxm", gpus_per_node=8, value=250_000,
                   valid_from="2026-02-01", source="Dell quote Q-1")  # fmt: skip
    page = Client()
    page.force_login(alice)
    html = page.get(f"/designs/{design}/").content.decode()
    assert _cells(html, "on_prem.server_usd")[:4] == [
        "on_prem.server_usd",
        "250,000",
        "USD/server",
        f"price book entry {quote['id']} of 2026-02-01",
    ]
    assert _cells(html, "cloud.aws-p5-48xlarge.on_demand")[3] == "public catalog of 2026-09-01"
    assert _cells(html, "on_prem.usd_per_kwh")[3] == "engine default (no catalog figure)"

    link = api.post(f"/api/v1/designs/{design}/share-links/", {}, format="json").json()
    shared = Client().get(f"/share/{link['token']}/").content.decode()
    assert _cells(shared, "on_prem.server_usd")[3] == f"price book entry {quote['id']} of 2026-02-01"

    book = api.get(f"/api/v1/designs/{design}/export/?format=xlsx")
    assert book.status_code == 200
    sheet = openpyxl.load_workbook(io.BytesIO(book.content))["Assumptions"]
    sources = {row[0]: row[3] for row in sheet.iter_rows(min_row=2, values_only=True)}
    assert str(sources["prices.on_prem.server_usd"]).startswith(
        f"price book entry {quote['id']} of 2026-02-01: "
    )
    assert "Dell quote Q-1" in str(sources["prices.on_prem.server_usd"])
    assert str(sources["prices.cloud.aws-p5-48xlarge.on_demand"]).startswith("public catalog of 2026-09-01: ")
