"""The design page and its share view state the rent-or-own answer first: the verdict composed from the
numbers, capex, cash, NPV, payback, the Monte Carlo and the yearly cash flows."""

from __future__ import annotations

import html
import io
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook

from apps.designs.services import share_link_create

pytestmark = pytest.mark.django_db


def _cost(client: Client, design_id: int) -> dict[str, Any]:
    response = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert response.status_code == 200
    return next(iter(response.json()["costs"].values()))


@pytest.mark.parametrize("index", range(4))
@pytest.mark.parametrize("where", ["design page", "share view"])
def test_the_rent_or_own_answer_comes_first(
    alice_client: Client, demos: list[Any], where: str, index: int
) -> None:
    assert len(demos) == 4  # every demo design: H100 on-demand, B200 spot, H100 reserved, H200 owned
    demo = demos[index]
    if where == "design page":
        body = alice_client.get(f"/designs/{demo.pk}/").content.decode()
    else:
        _, token = share_link_create(design=demo, user=demo.owner)
        body = Client().get(f"/share/{token}/").content.decode()
    cost = _cost(alice_client, demo.pk)
    start = body.index('id="rent-or-own"')
    assert start < body.index("<h2>Summary</h2>")
    section = html.unescape(body[start : body.index("</table>", start)])
    assert cost["verdict"]["sentence"] in section
    for card in ('id="capex"', 'id="cash-own"', 'id="npv-own"', 'id="npv-saving"', 'id="payback"'):
        assert card in section
    assert f"${cost['on_prem']['capex_usd']:,.0f}" in section
    assert f"${cost['cashflow']['own']['total_usd']:,.0f}" in section
    assert f"${cost['cashflow']['own']['npv_usd']:,.0f}" in section
    assert section.count("<tr data-option=") == 1 + len(cost["cashflow"]["rent"])


@pytest.mark.parametrize("index", range(4))
def test_every_demo_xlsx_states_the_verdict_capex_cash_and_npv(
    alice_client: Client, demos: list[Any], index: int
) -> None:
    demo = demos[index]
    response = alice_client.get(f"/api/v1/designs/{demo.pk}/export/?format=xlsx")
    assert response.status_code == 200
    summary = {
        row[0].value: row[1].value
        # The cached values of the Summary's formulas (tests/designs/test_xlsx_recalculates.py)
        for row in load_workbook(io.BytesIO(response.content), data_only=True)["Summary"].iter_rows()
    }
    cost = _cost(alice_client, demo.pk)
    rival = cost["verdict"]["cheapest_rent"]
    assert summary["Cheapest rent option (by NPV)"] == rival
    assert summary["Verdict"].startswith(f"Over {cost['cashflow']['inputs']['months']} months at")
    saving = cost["verdict"]["saving_usd"]
    assert summary["Verdict"].count(
        f"owning saves ${saving:,.0f} against {rival}"
        if saving >= 0
        else f"renting {rival} saves ${-saving:,.0f}"
    )
    assert summary["Capex (owning)"] == pytest.approx(cost["on_prem"]["capex_usd"])
    assert summary["Cash out over the horizon (owning)"] == pytest.approx(
        cost["cashflow"]["own"]["total_usd"]
    )
    assert summary["NPV of owning"] == pytest.approx(cost["cashflow"]["own"]["npv_usd"])
    assert summary["NPV saving of owning (rent − own)"] == pytest.approx(
        cost["cashflow"]["npv_difference_usd"]
    )
