"""The cost engine's money-over-time inputs through the design spec (spec.costs.cashflow, .uncertainty,
.colocation, .storage): given, they reach the engine and its assumptions say "request"; left out, the engine's
default with its source is used; a bad one is a 400 naming the spec field."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.designs.test_stale_prices import SPEC


def _spec(**sections: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    spec["costs"].update(sections)
    return spec


def _create(client: Any, spec: dict[str, Any]) -> Any:
    return client.post("/api/v1/designs/", {"name": "money", "spec": spec}, format="json")


def _assumptions(client: Any, spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    created = _create(client, spec)
    assert created.status_code == 201, created.json()
    result = client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/").json()
    return {a["name"]: a for a in result["assumptions"]}, result


GIVEN = {
    "cashflow": {
        "financing": "loan",
        "loan_rate": 0.06,
        "loan_months": 48,
        "tax_rate": 0.21,
        "cloud_price_change_per_year": -0.1,
        "lead_time_months": 3,
    },
    "uncertainty": {"spread": 0.0, "samples": 50},
    "colocation": {"pricing": "all_in"},
    "storage": {"mb_s_per_tib": 125},
}


def test_given_inputs_reach_the_engine_and_are_named_as_the_request(user_client: Any, catalog: Any) -> None:
    used, result = _assumptions(user_client, _spec(**GIVEN))
    for section, values in GIVEN.items():
        for key, value in values.items():
            row = used[f"{section}.{key}"]
            assert (row["value"], row["source"]) == (value, "request"), (section, key)
    cash = result["costs"]["aws-p5-48xlarge"]["cashflow"]
    # A loan's payment is Excel's PMT(6 %/12, 48, −capex); capex from the result itself.
    capex = result["costs"]["aws-p5-48xlarge"]["on_prem"]["capex_usd"]
    i = 0.06 / 12
    assert cash["loan_payment_usd"] == pytest.approx(capex * i / (1 - (1 + i) ** -48), rel=1e-9)
    # Zero spread: every draw is the deterministic figure, so P50 equals it.
    assert cash["uncertainty"]["p50_usd"] == pytest.approx(cash["npv_difference_usd"], rel=1e-9)


def test_left_out_inputs_take_the_engine_default_with_its_source(user_client: Any, catalog: Any) -> None:
    used, _ = _assumptions(user_client, _spec())
    assert used["cashflow.financing"]["value"] == "cash"
    assert used["colocation.pricing"]["value"] == "space_only"
    assert used["uncertainty.spread"]["value"] == 0.25
    assert all(used[n]["source"] and used[n]["source"] != "request" for n in ("cashflow.financing",))


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"cashflow": {"financing": "barter"}}, "spec.costs.cashflow.financing"),
        ({"cashflow": {"loan_rate": -0.01}}, "spec.costs.cashflow.loan_rate"),
        ({"cashflow": {"lead_time_months": 2.5}}, "spec.costs.cashflow.lead_time_months"),
        (
            {"cashflow": {"cloud_price_change_per_year": -1.5}},
            "spec.costs.cashflow.cloud_price_change_per_year",
        ),
        ({"cashflow": {"tax_shield": True}}, "spec.costs.cashflow.tax_shield"),
        ({"uncertainty": {"spread": 1.5}}, "spec.costs.uncertainty.spread"),
        ({"colocation": {"pricing": "free"}}, "spec.costs.colocation.pricing"),
        ({"storage": {"mb_s_per_tib": 0}}, "spec.costs.storage.mb_s_per_tib"),
    ],
)
def test_a_bad_input_is_a_400_naming_the_spec_field(
    user_client: Any, catalog: Any, sections: dict[str, Any], field: str
) -> None:
    response = _create(user_client, _spec(**sections))
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert list(error["fields"]) == [field], error
