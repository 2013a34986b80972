"""A capacity plan of two node types (issue 39) through the plan API, as users call it: a mixed RL design
(trainer pool on H100, rollout pool on H200) is one workload, both its pools planned together, each on its
own part's prices; bad input is a 400 naming the field, with nothing saved; the XLSX has each type."""

from __future__ import annotations

import copy
import io
from typing import Any

import openpyxl
import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.designs.selectors import evaluation_read
from apps.designs.services import design_create, design_evaluate
from apps.plans.models import CapacityPlan
from tests.designs.test_rl_mixed_fleet_api import MIXED
from tests.plans.test_api import SPEC

URL = "/api/v1/capacity-plans/"
pytestmark = pytest.mark.django_db


def two_types(training: list[dict[str, Any]]) -> dict[str, Any]:
    """12 months; H100 nodes owned (the plan API test's owning costs) or rented on demand from CoreWeave,
    H200 nodes rented on demand from CoreWeave (the seed catalog's newest prices)."""
    return {
        "horizon_months": 12,
        "node_types": [
            {
                "accelerator": "h100-sxm",
                "gpus_per_node": 8,
                "supply": {
                    "owned": copy.deepcopy(SPEC["supply"]["owned"]),
                    "on_demand": {"offering": "coreweave-8x-h100-node"},
                },
            },
            {
                "accelerator": "h200",
                "gpus_per_node": 8,
                "supply": {"on_demand": {"offering": "coreweave-8x-h200-node"}},
            },
        ],
        "training": training,
    }


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _mixed(alice: Any) -> tuple[Any, Any]:
    design = design_create(owner=alice, name="mixed GRPO", spec=copy.deepcopy(MIXED))
    fleet = evaluation_read(result=design_evaluate(version=design.current).result).rl_fleet
    assert fleet is not None
    return design, fleet


def test_a_mixed_rl_design_is_planned_in_one_plan_of_two_node_types(catalog: Any, alice: Any) -> None:
    design, fleet = _mixed(alice)
    trainer, rollout = fleet.pools
    client = _client(alice)
    created = client.post(
        URL,
        {"name": "RL fleet", "spec": two_types([{"design_id": design.pk, "deadline_month": 1}])},
        format="json",
    )
    assert created.status_code == 201, created.json()
    solved = client.post(f"{URL}{created.json()['id']}/solve/")
    assert solved.status_code == 200, solved.json()
    body = solved.json()
    result = body["result"]
    prices = {row["name"]: row["value"] for row in body["prices"]}
    # Each type's on-demand price from its own offering: CoreWeave $49.24 (H100), $50.44 (H200) a node-hour.
    assert prices["node_types.0.supply.on_demand"] == pytest.approx(49.24)
    assert prices["node_types.1.supply.on_demand"] == pytest.approx(50.44)
    h100, h200 = result["node_types"]
    assert (h100["accelerator"], h200["accelerator"]) == ("h100-sxm", "h200")
    (t_run,) = h100["result"]["runs"]
    (r_run,) = h200["result"]["runs"]
    assert t_run["name"] == "mixed GRPO (trainer pool, h100-sxm)"
    assert r_run["name"] == "mixed GRPO (rollout pool, h200)"
    # Hand calculation: a run this short is rented (owning a node for the rest of the 12 months costs more),
    # each pool at its part's price, at a zero rate: NPV = trainer GPU-hours / 8 × 49.24 + rollout GPU-hours
    # / 8 × 50.44, each pool's GPU-hours as the design priced them (its effective days × 24 × 16 GPUs).
    assert t_run["node_hours_by_layer"] == {"on_demand": pytest.approx(trainer.gpu_hours / 8)}
    assert r_run["node_hours_by_layer"] == {"on_demand": pytest.approx(rollout.gpu_hours / 8)}
    by_hand = trainer.gpu_hours / 8 * 49.24 + rollout.gpu_hours / 8 * 50.44
    assert result["npv_usd"] == pytest.approx(by_hand, rel=1e-6)
    assert h100["result"]["npv_usd"] + h200["result"]["npv_usd"] == pytest.approx(result["npv_usd"])
    assert result["total_usd"] == pytest.approx(h100["result"]["total_usd"] + h200["result"]["total_usd"])
    # Coupled: each pool does the same share of its work in each month.
    t_share = [h / (trainer.gpu_hours / 8) for h in t_run["node_hours_by_month"]]
    r_share = [h / (rollout.gpu_hours / 8) for h in r_run["node_hours_by_month"]]
    assert t_share == pytest.approx(r_share, abs=1e-6)
    assert [r["name"] for r in result["runs"]] == [t_run["name"], r_run["name"]]
    # Notes of one type only are named by it: the H100 owning costs were given without a capital share.
    assert any(n.startswith("h100-sxm: No cash view") for n in result["notes"])
    # The read-only share page (for finance) shows each node type as the plan page does.
    link = client.post(f"{URL}{created.json()['id']}/share-links/", {}, format="json")
    assert link.status_code == 201, link.json()
    shared = Client().get(link.json()["url"])
    assert shared.status_code == 200
    page = shared.content.decode()
    assert 'id="plan-node-types"' in page and 'data-accelerator="h200"' in page and "chart-capacity-1" in page
    # GET gives the plan as sent; solving again returns the stored solution, the same.
    got = client.get(f"{URL}{created.json()['id']}/")
    assert got.status_code == 200 and got.json()["spec"]["node_types"][1]["accelerator"] == "h200"
    again = client.post(f"{URL}{created.json()['id']}/solve/").json()
    assert again["input_hash"] == body["input_hash"] and again["result"] == result


def test_the_xlsx_of_a_plan_of_two_node_types_lists_each_type(catalog: Any, alice: Any) -> None:
    design, _ = _mixed(alice)
    client = _client(alice)
    spec = two_types([{"design_id": design.pk, "deadline_month": 1}])
    plan = client.post(URL, {"name": "RL fleet", "spec": spec}, format="json").json()
    result = client.post(f"{URL}{plan['id']}/solve/").json()["result"]
    response = client.get(f"{URL}{plan['id']}/xlsx/")
    assert response.status_code == 200
    book = openpyxl.load_workbook(io.BytesIO(response.content))
    types = list(book["Node types"].iter_rows(values_only=True))
    assert types[0][:5] == (
        "accelerator",
        "GPUs a node",
        "NPV (USD)",
        "cash out, undiscounted (USD)",
        "capex (USD)",
    )
    assert [(row[0], row[1]) for row in types[1:]] == [("h100-sxm", 8), ("h200", 8)]
    assert [row[2] for row in types[1:]] == pytest.approx(
        [t["result"]["npv_usd"] for t in result["node_types"]]
    )
    assert "Months 1 h100-sxm" in book.sheetnames and "Months 2 h200" in book.sheetnames
    assert next(book["Purchases"].iter_rows(values_only=True))[0] == "node type"


def _refused(client: APIClient, spec: dict[str, Any]) -> dict[str, Any]:
    before = CapacityPlan.objects.count()
    response = client.post(URL, {"name": "x", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    assert CapacityPlan.objects.count() == before  # nothing half-saved
    return dict(response.json()["error"]["fields"])


def test_bad_input_of_a_plan_of_node_types_is_a_400_naming_the_field(catalog: Any, alice: Any) -> None:
    design, _ = _mixed(alice)
    client = _client(alice)
    run = {"design_id": design.pk, "deadline_month": 1}

    # The rollout pool's part (h200) is not one of the plan's node types: no price for it.
    spec = two_types([run])
    spec["node_types"][1]["accelerator"] = "a100-80gb"
    spec["node_types"][1]["supply"] = {"on_demand": {"usd_per_node_hour": 30.0}}
    fields = _refused(client, spec)
    assert list(fields) == ["spec.training.0.design_id"]
    assert "rollout pool runs on h200" in fields["spec.training.0.design_id"][0]

    # A node type that offers no capacity (no price of any option).
    spec = two_types([run])
    spec["node_types"][1]["supply"] = {}
    assert list(_refused(client, spec)) == ["spec.node_types.1.supply"]

    # An offering of another part than its node type's.
    spec = two_types([run])
    spec["node_types"][1]["supply"] = {"on_demand": {"offering": "coreweave-8x-h100-node"}}
    fields = _refused(client, spec)
    assert list(fields) == ["spec.node_types.1.supply.on_demand.offering"]
    assert "rents h100-sxm" in fields["spec.node_types.1.supply.on_demand.offering"][0]

    # A run given in GPU-hours must say its node type; an unknown one is named too.
    spec = two_types([run, {"name": "sft", "gpu_hours": 1000, "gpus": 8, "deadline_month": 3}])
    assert list(_refused(client, spec)) == ["spec.training.1.node_type"]
    spec["training"][1]["node_type"] = "mi300x"
    assert "not one of the plan's node types" in _refused(client, spec)["spec.training.1.node_type"][0]

    # The node size and supply are per type; a type is listed once; a part the catalog has not is refused.
    spec = {**two_types([run]), "gpus_per_node": 8}
    assert list(_refused(client, spec)) == ["spec.gpus_per_node"]
    spec = two_types([run])
    spec["node_types"][1]["accelerator"] = "h100-sxm"
    assert list(_refused(client, spec)) == ["spec.node_types.1.accelerator"]
    spec["node_types"][1]["accelerator"] = "no-such-gpu"
    assert list(_refused(client, spec)) == ["spec.node_types.1.accelerator"]

    # An error inside one type's plan is named where it was sent: the second run, the type's own price.
    spec = two_types([run, {"gpu_hours": -5, "gpus": 8, "deadline_month": 3, "node_type": "h200"}])
    assert "spec.training.1.gpu_hours" in _refused(client, spec)
    spec = two_types([run])
    spec["node_types"][0]["supply"]["owned"]["capex_usd_per_node"] = -1
    assert list(_refused(client, spec)) == ["spec.node_types.0.supply.owned.capex_usd_per_node"]


def test_a_plain_run_and_inference_go_to_the_node_type_they_name(catalog: Any, alice: Any) -> None:
    client = _client(alice)
    spec = two_types(
        [{"name": "sft", "gpu_hours": 8 * 100, "gpus": 8, "deadline_month": 0, "node_type": "h200"}]
    )
    spec["inference"] = [{"name": "chat", "peak_gpus": 8, "node_type": "h100-sxm"}]
    plan = client.post(URL, {"name": "two", "spec": spec}, format="json")
    assert plan.status_code == 201, plan.json()
    result = client.post(f"{URL}{plan.json()['id']}/solve/").json()["result"]
    h100, h200 = result["node_types"]
    assert [r["name"] for r in h200["result"]["runs"]] == ["sft"]
    assert h100["result"]["runs"] == [] and "chat" in h100["result"]["demand_mean_gpus_by_workload"]
    # 100 node-hours of H200 on demand at $50.44 (no owned H200 is offered).
    assert h200["result"]["npv_usd"] == pytest.approx(100 * 50.44)


def test_an_inline_mixed_rl_block_is_both_its_pools_coupled(catalog: Any, alice: Any) -> None:
    from tests.plans.test_rl_runs import inline_block

    block, chosen = inline_block()
    client = _client(alice)
    plan = client.post(
        URL, {"name": "inline", "spec": two_types([{"rl": block, "deadline_month": 1}])}, format="json"
    )
    assert plan.status_code == 201, plan.json()
    result = client.post(f"{URL}{plan.json()['id']}/solve/").json()["result"]
    h100, h200 = result["node_types"]
    (t_run,), (r_run,) = h100["result"]["runs"], h200["result"]["runs"]
    assert (t_run["name"], r_run["name"]) == (
        "RL disaggregated (trainer pool, h100-sxm)",
        "RL disaggregated (rollout pool, h200)",
    )
    # Each pool's failure-free GPU-hours from the RL engine, in 8-GPU node-hours.
    assert sum(t_run["node_hours_by_layer"].values()) == pytest.approx(chosen.trainer_gpu_hours / 8, rel=1e-9)
    assert sum(r_run["node_hours_by_layer"].values()) == pytest.approx(chosen.rollout_gpu_hours / 8, rel=1e-9)
    # A block whose rollout part is no node type of the plan is refused on the block.
    other = copy.deepcopy(block)
    other["rl"]["rollout"]["accelerator"] = "a100-80gb"
    fields = _refused(client, two_types([{"rl": other, "deadline_month": 1}]))
    assert (
        list(fields) == ["spec.training.0.rl"]
        and "rollout pool runs on a100-80gb" in fields["spec.training.0.rl"][0]
    )


@pytest.mark.parametrize(
    ("node_types", "training", "field"),  # None: the two_types node types
    [
        ("h100", [], "spec.node_types"),
        ([1, 2], [], "spec.node_types.0"),
        ([{}, {}], [], "spec.node_types.0.accelerator"),
        (
            [{"accelerator": "h100-sxm", "gpus_per_node": 8, "supply": {}, "extra": 1}, {}],
            [],
            "spec.node_types.0.extra",
        ),
        (None, "x", "spec.training"),
        (None, [7], "spec.training.0"),
        (None, [{"design_id": "a", "deadline_month": 1}], "spec.training.0.design_id"),
        (None, [{"design_id": 10**9, "deadline_month": 1}], "spec.training.0.design_id"),
        (None, [{"rl": "x", "deadline_month": 1}], "spec.training.0.rl"),
    ],
)
def test_malformed_node_types_and_runs_are_400s_never_500s(
    catalog: Any, alice: Any, node_types: Any, training: Any, field: str
) -> None:
    spec = two_types([])
    if node_types is not None:
        spec["node_types"] = node_types
    spec["training"] = training
    fields = _refused(_client(alice), spec)
    assert field in fields, fields


def test_a_plan_of_two_node_types_weighs_each_types_dispatch_for_the_worker(catalog: Any, alice: Any) -> None:
    from apps.plans.services import plan_size, plan_spec_resolve
    from clusterdesigner.engine.capacity.capacity_fleet import FleetPlan

    design, _ = _mixed(alice)
    plan = plan_spec_resolve(spec=two_types([{"design_id": design.pk, "deadline_month": 1}]), user=alice)
    assert isinstance(plan, FleetPlan) and plan.couplings[0].runs == ((0, 0), (1, 0))
    # 12 months × (2 runs, the two pools, + 2 types' steady dispatch) = 48, solved in the request (≤ 100).
    assert plan_size(plan=plan) == 12 * (2 + 2)
