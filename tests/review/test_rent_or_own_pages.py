"""The design page and its share view state the rent-or-own answer first: the verdict composed from the
numbers, capex, cash, NPV, payback, the Monte Carlo and the yearly cash flows."""

from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client

from apps.designs.services import share_link_create

pytestmark = pytest.mark.django_db


def _cost(client: Client, design_id: int) -> dict[str, Any]:
    response = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert response.status_code == 200
    return next(iter(response.json()["costs"].values()))


@pytest.mark.parametrize("where", ["design page", "share view"])
def test_the_rent_or_own_answer_comes_first(alice_client: Client, demos: list[Any], where: str) -> None:
    demo = demos[0]  # 64 × 8 H100 against AWS p5
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
    assert f"${cost['cashflow']['own']['npv_usd']:,.0f}" in section
    assert section.count("<tr data-option=") == 1 + len(cost["cashflow"]["rent"])
