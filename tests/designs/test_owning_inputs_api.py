"""The owning inputs of issue 31 as a user reaches them: through the design API (spec.costs.network, the
finance lines under spec.costs.on_prem, spec.costs.spot_capacity_nodes, the colocation basis) and on the
design page (the finding that names placeholder network prices). Bad values are a 400 naming the field and
save nothing."""

from __future__ import annotations

import copy
import html
from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design
from apps.designs.services import design_create, design_evaluate
from clusterdesigner.engine.cost import defaults

OFFERING = "aws-p5-48xlarge"


def _spec(**costs: Any) -> dict[str, Any]:
    spec = defaults.design_spec()
    spec["cluster"]["nodes"] = 16
    spec["workload"]["model"] = {"preset": "llama3-8b"}
    spec["costs"].update(costs)
    return spec


def _evaluate(user: Any, spec: dict[str, Any]) -> dict[str, Any]:
    design = design_create(owner=user, name="owning inputs", spec=spec)
    return dict(design_evaluate(version=design.current).result)


@pytest.mark.django_db
def test_network_prices_and_finance_lines_are_spec_fields_the_evaluation_uses(
    user_client: Any, catalog: Any
) -> None:
    spec = _spec(
        network={"switch_usd": 24_000, "cable_usd": 100, "transceiver_usd": 900},
        on_prem={"software_usd_per_gpu_year": 4_500, "insurance_fraction_per_year": 0.01},
        colocation={"basis": "drawn_kw"},
    )
    created = user_client.post("/api/v1/designs/", {"name": "priced", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    result = _evaluate(user_client.user, created.json()["spec"])
    cost = result["costs"][OFFERING]
    used = {a["name"]: a for a in cost["assumptions"]}
    for name, value in (("switch_usd", 24_000), ("cable_usd", 100), ("transceiver_usd", 900)):
        assert used[f"network.{name}"]["value"] == value and used[f"network.{name}"]["source"] == "request"
    # 16 nodes × 8 GPUs × $4,500 = $576,000 a year of licences; insurance 0.01 × capex.
    assert cost["on_prem"]["annual"]["software"]["usd"] == pytest.approx(576_000)
    assert cost["on_prem"]["annual"]["insurance"]["usd"] == pytest.approx(0.01 * cost["on_prem"]["capex_usd"])
    assert "kW drawn" in cost["on_prem"]["annual"]["colocation"]["formula"]
    # Every price given: no placeholder finding.
    assert "placeholder_prices" not in {f["code"] for f in result["findings"]}


@pytest.mark.django_db
def test_a_network_in_the_server_quote_adds_no_network_capex_through_the_api(
    user_client: Any, catalog: Any
) -> None:
    result = _evaluate(user_client.user, _spec(network={"included_in_server": True}))
    cost = result["costs"][OFFERING]
    assert cost["network"]["capex_usd"] == 0.0 and cost["network"]["counted_capex_usd"] > 0
    assert cost["on_prem"]["capex_parts"]["network"]["usd"] == 0.0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("costs", "field"),
    [
        ({"network": {"switch_usd": -1}}, "spec.costs.network.switch_usd"),
        ({"network": {"routers": 3}}, "spec.costs.network.routers"),
        ({"on_prem": {"spares_fraction": -0.1}}, "spec.costs.on_prem.spares_fraction"),
        ({"on_prem": {"facility_capex_usd_per_mw": "lots"}}, "spec.costs.on_prem.facility_capex_usd_per_mw"),
        ({"spot_capacity_nodes": 2.5}, "spec.costs.spot_capacity_nodes"),
    ],
)
def test_a_bad_owning_input_is_a_400_naming_the_field_and_saves_nothing(
    user_client: Any, catalog: Any, costs: dict[str, Any], field: str
) -> None:
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": _spec(**costs)}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"]
    assert not Design.objects.exists()


@pytest.mark.django_db
def test_spot_is_offered_up_to_the_capacity_the_design_states(user_client: Any, catalog: Any) -> None:
    cloud = [
        {"offering": OFFERING, "pricing_models": ["on_demand", "spot"], "usd_per_node_hour": {"spot": 20.0}}
    ]
    capped = _evaluate(user_client.user, _spec(cloud=copy.deepcopy(cloud)))["costs"][OFFERING]
    # 16 nodes above the default 8 obtainable: spot is left out, and says why.
    assert "spot" not in capped["cloud"]
    assert capped["cloud_unavailable"]["spot"].startswith("spot cannot supply 16 nodes: 8 obtainable")
    stated = _evaluate(user_client.user, _spec(cloud=copy.deepcopy(cloud), spot_capacity_nodes=16))
    assert "spot" in stated["costs"][OFFERING]["cloud"]


@pytest.mark.django_db
def test_the_design_page_names_the_placeholder_network_prices(user_client: Any, catalog: Any) -> None:
    design = design_create(owner=user_client.user, name="placeholders", spec=_spec())
    result = design_evaluate(version=design.current).result
    finding = next(f for f in result["findings"] if f["code"] == "placeholder_prices")
    client = Client()
    client.force_login(user_client.user)
    body = client.get(f"/designs/{design.pk}/").content.decode()
    assert html.escape(finding["message"]) in body
    assert "network.switch_usd (30,000)" in body


@pytest.mark.django_db
def test_the_editor_offers_the_network_prices_and_the_new_owning_lines(
    user_client: Any, catalog: Any
) -> None:
    client = Client()
    client.force_login(user_client.user)
    body = client.get("/designs/new/").content.decode()
    for path in ("network.switch_usd", "network.cable_usd", "network.transceiver_usd", "network.capex_usd"):
        assert f'data-field="spec.costs.{path}"' in body, path
    assert 'placeholder="30000"' in body  # the switch placeholder price, with its source beside it
    for key in (
        "software_usd_per_gpu_year",
        "insurance_fraction_per_year",
        "spares_fraction",
        "nodes_per_fte",
    ):
        assert f'data-field="spec.costs.on_prem.{key}"' in body, key
    assert 'value="drawn_kw"' in body  # the colocation basis is a choice
