"""RL runs in the capacity plan (issue 39) through the plan API and page: an RL design, each pool of a mixed
fleet in a plan of its part, and an inline RL block, each priced and planned by the MILP."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.designs.selectors import evaluation_read
from apps.designs.services import design_create, design_evaluate
from tests.designs.test_rl_api import SPEC_8B
from tests.designs.test_rl_mixed_fleet_api import MIXED
from tests.plans.test_api import SPEC

URL = "/api/v1/capacity-plans/"
pytestmark = pytest.mark.django_db


def _plan(training: list[dict[str, Any]], offering: str) -> dict[str, Any]:
    """12 months of 8-GPU nodes, rented on demand from a catalog offering (its newest price) or owned at the
    plan API test's owning costs."""
    return {
        "horizon_months": 12,
        "gpus_per_node": 8,
        "training": training,
        "supply": {"owned": copy.deepcopy(SPEC["supply"]["owned"]), "on_demand": {"offering": offering}},
    }


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _solved(client: APIClient, spec: dict[str, Any]) -> dict[str, Any]:
    created = client.post(URL, {"name": "RL plan", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    solved = client.post(f"{URL}{created.json()['id']}/solve/")
    assert solved.status_code == 200, solved.json()
    return {"id": created.json()["id"], **solved.json()["result"]}


def test_an_rl_design_is_a_plan_run_of_its_gpus_for_the_rl_days(catalog: Any, alice: Any) -> None:
    design = design_create(owner=alice, name="GRPO 8B", spec=copy.deepcopy(SPEC_8B))
    evaluation = evaluation_read(result=design_evaluate(version=design.current).result)
    assert evaluation.rl is not None
    days = evaluation.expected_days
    # The design's expected days are the RL run's (its cost results price the RL days), with failures.
    assert days == pytest.approx(evaluation.rl.chosen.days, rel=0.02) and days >= evaluation.rl.chosen.days
    result = _solved(
        _client(alice), _plan([{"design_id": design.pk, "deadline_month": 2}], "coreweave-8x-h100-node")
    )
    run = result["runs"][0]
    # 4 nodes × 8 GPUs = 32 GPUs × 24 h × the expected days, in node-hours on 8-GPU nodes.
    assert sum(run["node_hours_by_layer"].values()) == pytest.approx(32 * 24 * days / 8, rel=1e-9)
    assert result["total_usd"] > 0


def test_each_pool_of_a_mixed_fleet_is_planned_in_a_plan_of_its_part(catalog: Any, alice: Any) -> None:
    design = design_create(owner=alice, name="mixed GRPO", spec=copy.deepcopy(MIXED))
    fleet = evaluation_read(result=design_evaluate(version=design.current).result).rl_fleet
    assert fleet is not None
    trainer, rollout = fleet.pools
    client = _client(alice)
    by_pool = {}
    for pool, offering in (("trainer", "coreweave-8x-h100-node"), ("rollout", "coreweave-8x-h200-node")):
        item = {"design_id": design.pk, "pool": pool, "deadline_month": 1}
        by_pool[pool] = _solved(client, _plan([item], offering))
    # Each pool's GPU-hours as the design priced them: its effective days × 24 × 16 GPUs, in node-hours.
    for pool, figures in (("trainer", trainer), ("rollout", rollout)):
        run = by_pool[pool]["runs"][0]
        assert run["name"] == f"mixed GRPO ({pool} pool, {figures.accelerator})"
        assert sum(run["node_hours_by_layer"].values()) == pytest.approx(figures.gpu_hours / 8, rel=1e-9)
        assert by_pool[pool]["total_usd"] > 0
    # A short run: rented on demand, each at its own part's price (CoreWeave $49.24 and $50.44 a node-hour).
    t_run, r_run = by_pool["trainer"]["runs"][0], by_pool["rollout"]["runs"][0]
    assert t_run["node_hours_by_layer"].get("on_demand") == pytest.approx(trainer.gpu_hours / 8)
    assert r_run["node_hours_by_layer"].get("on_demand") == pytest.approx(rollout.gpu_hours / 8)

    # Both pools in one plan: two parts at one node type's prices, refused naming the second.
    both = _plan(
        [
            {"design_id": design.pk, "pool": "trainer", "deadline_month": 1},
            {"design_id": design.pk, "pool": "rollout", "deadline_month": 1},
        ],
        "coreweave-8x-h100-node",
    )
    response = client.post(URL, {"name": "x", "spec": both}, format="json")
    assert response.status_code == 400
    assert "one node type" in response.json()["error"]["fields"]["spec.training.1.pool"][0]
    # The mixed design without a pool: which one is not guessed.
    whole = _plan([{"design_id": design.pk, "deadline_month": 1}], "coreweave-8x-h100-node")
    response = client.post(URL, {"name": "x", "spec": whole}, format="json")
    assert list(response.json()["error"]["fields"]) == ["spec.training.0.pool"]
    # The rollout pool's plan may not take the trainers' prices from the design.
    borrowed = _plan(
        [{"design_id": design.pk, "pool": "rollout", "deadline_month": 1}], "coreweave-8x-h200-node"
    )
    borrowed["supply"] = {"from_design": {"design_id": design.pk}}
    response = client.post(URL, {"name": "x", "spec": borrowed}, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["spec.supply.from_design.design_id"]

    # The plan page lists the pool's run.
    page = Client()
    page.force_login(alice)
    body = page.get(f"/plans/{by_pool['rollout']['id']}/").content.decode()
    assert "mixed GRPO (rollout pool, h200)" in body and 'id="plan-total"' in body


def inline_block() -> tuple[dict[str, Any], Any]:
    """The mixed design's sections as an inline RL block, and the RL engine's chosen placement for it."""
    from apps.catalog.selectors import engine_catalog
    from clusterdesigner.engine.design import spec as design_spec
    from clusterdesigner.engine.rl import rl

    block = {k: copy.deepcopy(MIXED[k]) for k in ("workload", "cluster", "rl")}
    request = design_spec.rl_request(
        dict(design_spec.parse_design_spec(design_spec.with_defaults(block)).json)
    )
    assert request is not None
    return block, rl.estimate(request, **engine_catalog().training_kwargs()).chosen


def test_an_inline_rl_block_is_sized_by_the_rl_engine(catalog: Any, alice: Any) -> None:
    block, chosen = inline_block()
    client = _client(alice)
    result = _solved(
        client, _plan([{"rl": block, "pool": "rollout", "deadline_month": 1}], "coreweave-8x-h200-node")
    )
    run = result["runs"][0]
    # The rollout pool's failure-free GPU-hours: steps × step seconds × 16 GPUs / 3600.
    assert chosen.rollout_gpu_hours == pytest.approx(100 * chosen.step.seconds * 16 / 3600)
    assert sum(run["node_hours_by_layer"].values()) == pytest.approx(chosen.rollout_gpu_hours / 8, rel=1e-9)
    assert run["name"] == "RL disaggregated (rollout pool, h200)"
    # A bad field in the block is named under the run.
    bad = copy.deepcopy(block)
    bad["rl"]["steps"] = 0
    spec = _plan([{"rl": bad, "pool": "rollout", "deadline_month": 1}], "coreweave-8x-h200-node")
    response = client.post(URL, {"name": "x", "spec": spec}, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["spec.training.0.rl.rl.steps"]
