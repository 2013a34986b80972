"""Issue 19: the design page shows the error band of the training estimate, carried to expected days."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_design_page_shows_the_days_and_tokens_ranges_of_the_error_band(
    alice_client: Client, demos: list[Any]
) -> None:
    demo = demos[0]  # 64 H100 nodes on-demand
    result = alice_client.post(f"/api/v1/designs/{demo.pk}/evaluate/").json()
    training = result["training"]
    band = training["error_band"]
    free = training["time_to_train_days"]
    assert band["days_low"] < free < band["days_high"]
    expected = next(o["days"] for o in result["options"] if o["pricing_model"] != "spot")
    body = alice_client.get(f"/designs/{demo.pk}/").content.decode()
    shown = body.split('id="error-band">')[1].split("</span>")[0]
    assert f"{band['rows']} measured runs, {band['basis']}" in shown
    assert f"{band['days_low']:,.1f}–{band['days_high']:,.1f} days failure-free" in shown
    # Expected days (with failures and restarts) scale by the same ratios as the failure-free days.
    low, high = expected * band["days_low"] / free, expected * band["days_high"] / free
    assert f"{low:,.1f}–{high:,.1f} days expected" in shown
    assert low < expected < high


def test_each_option_card_shows_its_run_cost_range_from_the_cost_engine(
    alice_client: Client, demos: list[Any]
) -> None:
    demo = demos[0]
    result = alice_client.post(f"/api/v1/designs/{demo.pk}/evaluate/").json()
    band = result["training"]["error_band"]
    ratio_low = band["days_low"] / result["training"]["time_to_train_days"]
    page = alice_client.get(f"/designs/{demo.pk}/").content.decode()
    body = page.split('id="ranked-options"')[1]
    for option in result["options"]:
        if option["run_cost_usd"] is None:
            continue
        # The cost engine scales each run cost by the band's day ratios (cost._per_run_band).
        assert option["run_cost_usd_low"] == pytest.approx(option["run_cost_usd"] * ratio_low)
        card = body.split(f'data-option="{option["key"]}">')[1].split("</div></div>")[0]
        low, high = option["run_cost_usd_low"], option["run_cost_usd_high"]
        assert f"one run ${low:,.0f}–${high:,.0f}" in card
