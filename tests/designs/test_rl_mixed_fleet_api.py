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


def test_explore(user_client: Any, catalog: Any) -> None:
    import json
    result = _evaluate(user_client, MIXED)
    print(json.dumps(result["rl"]["chosen"], indent=1))
    print(json.dumps(result["rl_fleet"], indent=1))
    assert 0
