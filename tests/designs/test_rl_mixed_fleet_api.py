"""A mixed RL fleet through the API (issue 39): the rollout pool on another accelerator with its own
server and offering, the trainer pool the design's cluster; each pool priced on its own part."""

from __future__ import annotations

import copy
from typing import Any

import pytest

GRPO_8B = {
    "prompts_per_step": 64,
    "group_size": 8,
    "prompt_tokens": 512,
    "response_tokens_mean": 1024,
    "response_tokens_max": 4096,
    "steps": 100,
}
# Trainers: 2 × DGX H100 rented from CoreWeave or owned; rollouts: 2 nodes of 8 × H200 (141 GB each, the
# inference-sized part) rented from CoreWeave or owned as the catalog's DGX H200.
MIXED = {
    "workload": {"model": {"preset": "llama3-8b"}, "training": {"precision": "bf16"}},
    "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 2, "fabric": "ib-ndr400"},
    "parallelism": {"tp": 2, "pp": 1, "micro_batch": 1, "recompute": "selective", "sharding": "zero1"},
    "costs": {
        "horizon_years": 2,
        "utilization": 0.7,
        "cloud": [{"offering": "coreweave-8x-h100-node", "pricing_models": ["on_demand"]}],
    },
    "rl": {
        **GRPO_8B,
        "rollout": {
            "accelerator": "h200",
            "nodes": 2,
            "cloud": [{"offering": "coreweave-8x-h200-node", "pricing_models": ["on_demand"]}],
        },
    },
}


def _create(client: Any, spec: dict[str, Any]) -> Any:
    return client.post("/api/v1/designs/", {"name": "mixed GRPO", "spec": spec}, format="json")


def _evaluate(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    created = _create(client, spec)
    assert created.status_code == 201, created.json()
    response = client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_mixed_fleet_design_prices_each_pool_on_its_own_part(user_client: Any, catalog: Any) -> None:
    result = _evaluate(user_client, MIXED)
    chosen = result["rl"]["chosen"]
    assert chosen["placement"] == "disaggregated"
    assert (chosen["trainer_accelerator"], chosen["rollout_accelerator"]) == ("h100-sxm", "h200")
    assert (chosen["trainer_gpus"], chosen["rollout_gpus"]) == (16, 16)
    # Weight sync: 8,030,261,248 × 2 bytes over the ib-ndr400 port (400 Gb/s, collective efficiency 0.95 in
    # the seed catalog's row): 16,060,522,496 × 8 / (400e9 × 0.95) = 0.338116 s + 30 buckets × 0.0602132 s.
    assert chosen["step"]["weight_sync_s"] == pytest.approx(0.338116 + 1.806396, rel=1e-5)
    trainer, rollout = result["rl_fleet"]["pools"]
    assert (trainer["pool"], trainer["accelerator"], rollout["pool"], rollout["accelerator"]) == (
        "trainer",
        "h100-sxm",
        "rollout",
        "h200",
    )
    # Each pool's GPU-hours: its effective days (the RL run's days with its own failures) × 24 × 16 GPUs.
    for pool in (trainer, rollout):
        assert pool["effective_days"] == pytest.approx(chosen["days"], rel=0.01)
        assert pool["gpu_hours"] == pytest.approx(pool["effective_days"] * 24 * 16)
    # Each pool rented at its own part's catalog price: CoreWeave 8 × H100 $49.24 and 8 × H200 $50.44 a
    # node-hour (seed catalog, as of 2026-09-01), 2 nodes each, no managed overhead.
    t_rent = {o["key"]: o["usd"] for o in trainer["options"]}["coreweave-8x-h100-node:on_demand"]
    r_rent = {o["key"]: o["usd"] for o in rollout["options"]}["coreweave-8x-h200-node:on_demand"]
    assert t_rent == pytest.approx(trainer["effective_days"] * 24 * 2 * 49.24)
    assert r_rent == pytest.approx(rollout["effective_days"] * 24 * 2 * 50.44)
    # Owned on each part's own server: DGX H100 $322,500 and DGX H200 $450,000 (catalog), so an owned H200
    # GPU-hour costs more than an owned H100 one.
    t_own = {o["key"]: o["usd"] for o in trainer["options"]}["own"]
    r_own = {o["key"]: o["usd"] for o in rollout["options"]}["own"]
    assert r_own / rollout["gpu_hours"] > t_own / trainer["gpu_hours"]
    # The trainer pool's options are the design's own (its cluster is the trainer pool).
    design = {o["key"]: o["run_cost_usd"] for o in result["options"]}
    assert design["own"] == pytest.approx(t_own)
    assert design["coreweave-8x-h100-node:on_demand"] == pytest.approx(t_rent)
    kinds = {c["kind"]: c for c in result["rl_fleet"]["combinations"]}
    assert kinds["own both"]["usd"] == pytest.approx(t_own + r_own)
    assert kinds["rent both"]["usd"] == pytest.approx(t_rent + r_rent)
    assert kinds["own trainers, rent rollouts"]["usd"] == pytest.approx(t_own + r_rent)
    assert kinds["rent trainers, own rollouts"]["usd"] == pytest.approx(t_rent + r_own)
    assert result["rl_fleet"]["cheapest"]["usd"] == pytest.approx(min(c["usd"] for c in kinds.values()))


def _refused(client: Any, change: Any) -> dict[str, Any]:
    spec = copy.deepcopy(MIXED)
    change(spec)
    response = _create(client, spec)
    assert response.status_code == 400, response.json()
    return response.json()["error"]["fields"]


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        # The design rents its H100 trainers: the H200 pool must name its own offerings.
        (lambda s: s["rl"]["rollout"].pop("cloud"), "spec.rl.rollout.cloud", "rollout pool's h200"),
        # An offering of the trainers' part is not a price for the rollout's.
        (
            lambda s: s["rl"]["rollout"].update(cloud=[{"offering": "coreweave-8x-h100-node"}]),
            "spec.rl.rollout.cloud.0.offering",
            "choose an offering of h200",
        ),
        # B300 servers have no price in the catalog; the trainers' server price is not taken for them.
        (
            lambda s: (
                s["costs"].update(on_prem={"server_usd": 400_000}),
                s["rl"]["rollout"].update(accelerator="b300", cloud=[]),
            ),
            "spec.rl.rollout.on_prem.server_usd",
            "no price for b300 servers",
        ),
        (lambda s: s["rl"].update(placement="colocated"), "spec.rl.placement", "disaggregated"),
        (lambda s: s["rl"]["rollout"].update(accelerator="tpu-v9"), "spec.rl.rollout.accelerator", "tpu-v9"),
        (lambda s: s["rl"]["rollout"].update(nodes=0), "spec.rl.rollout.nodes", "whole number"),
    ],
    ids=[
        "no-rollout-offering",
        "trainer-offering",
        "no-rollout-server-price",
        "colocated",
        "unknown",
        "nodes",
    ],
)
def test_a_mixed_fleet_without_a_price_of_its_own_is_refused_naming_the_field(
    user_client: Any, catalog: Any, change: Any, field: str, reason: str
) -> None:
    fields = _refused(user_client, change)
    assert field in fields, fields
    assert reason in fields[field][0]


def test_a_rollout_pool_of_the_trainers_part_takes_the_designs_offerings(
    user_client: Any, catalog: Any
) -> None:
    spec = copy.deepcopy(MIXED)
    spec["rl"]["rollout"] = {"nodes": 1}
    result = _evaluate(user_client, spec)
    trainer, rollout = result["rl_fleet"]["pools"]
    assert rollout["accelerator"] == "h100-sxm" and rollout["gpus"] == 8
    rent = {o["key"]: o["usd"] for o in rollout["options"]}["coreweave-8x-h100-node:on_demand"]
    assert rent == pytest.approx(rollout["effective_days"] * 24 * 1 * 49.24)


def test_the_design_page_and_the_spreadsheet_show_both_pools_with_their_parts(
    user_client: Any, catalog: Any
) -> None:
    import io

    import openpyxl
    from django.test import Client

    created = _create(user_client, MIXED)
    design_id = created.json()["id"]
    result = user_client.post(f"/api/v1/designs/{design_id}/evaluate/").json()
    fleet = result["rl_fleet"]
    page = Client()
    page.force_login(user_client.user)
    body = page.get(f"/designs/{design_id}/").content.decode()
    assert 'id="rl-fleet-pools"' in body and 'id="rl-fleet-combinations"' in body
    assert "16 rollout GPUs (h200) · 16 trainer GPUs (h100-sxm)" in body
    assert 'data-pool="rollout" data-option="coreweave-8x-h200-node:on_demand"' in body
    cheapest = fleet["cheapest"]
    assert f"{cheapest['kind']} (cheapest)" in body

    sheet = user_client.get(f"/api/v1/designs/{design_id}/export/?format=xlsx")
    assert sheet.status_code == 200
    rows = {
        r[0]: r[1]
        for r in openpyxl.load_workbook(io.BytesIO(sheet.content))["Summary"].iter_rows(values_only=True)
    }
    assert rows["RL: rollout pool"] == "16 × h200" and rows["RL: trainer pool"] == "16 × h100-sxm"
    rollout = fleet["pools"][1]
    assert rows["RL fleet: rollout pool GPU-hours (h200)"] == pytest.approx(rollout["gpu_hours"])
    on_demand = {o["key"]: o["usd"] for o in rollout["options"]}["coreweave-8x-h200-node:on_demand"]
    assert rows["RL fleet: rollout pool, coreweave-8x-h200-node:on_demand"] == pytest.approx(on_demand)
    both = next(c for c in fleet["combinations"] if c["kind"] == "rent both")
    assert rows[f"RL fleet: rent both ({both['trainer']} + {both['rollout']})"] == pytest.approx(both["usd"])
