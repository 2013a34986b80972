"""training.framework through the API: an unknown stack is a 400 naming spec.workload.training.framework, and
the launch export of a PyTorch FSDP2 design is a torchtitan command with no Megatron flags."""

from __future__ import annotations

from typing import Any

import pytest

NO_CLOUD = {"horizon_years": 3, "utilization": 0.7, "cloud": []}
MEGATRON_FLAGS = ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "pretrain_gpt.py")


def _spec(framework: str) -> dict[str, Any]:
    return {
        "workload": {
            "model": {"preset": "llama3-8b"},
            "training": {"tokens": 1e12, "global_batch_tokens": 524288, "framework": framework},
        },
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 1, "fabric": "ib-ndr400"},
        "parallelism": {"tp": 2, "pp": 1, "micro_batch": 1, "recompute": "selective", "sharding": "zero3"},
        "costs": NO_CLOUD,
    }


def test_an_unknown_framework_is_a_400_naming_the_spec_field(user_client: Any, catalog: Any) -> None:
    response = user_client.post("/api/v1/designs/", {"name": "x", "spec": _spec("jax")}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == ["spec.workload.training.framework"]


def test_an_fsdp2_design_exports_a_torchtitan_launch(user_client: Any, catalog: Any) -> None:
    created = user_client.post(
        "/api/v1/designs/", {"name": "8B FSDP2", "spec": _spec("fsdp2")}, format="json"
    )
    assert created.status_code == 201, created.content
    response = user_client.get(f"/api/v1/designs/{created.json()['id']}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:300]
    text = response.content.decode()
    assert "-m torchtitan.train" in text
    # tp 2 on 8 GPUs: FSDP over the dp 4 ranks; local batch 64 / 4 = 16; op-level selective checkpointing.
    for flag in (
        "--parallelism.tensor_parallel_degree 2",
        "--parallelism.data_parallel_shard_degree 4",
        "--training.local_batch_size 16",
        "--activation_checkpoint.selective_ac_option op",
    ):
        assert flag in text
    assert not [f for f in MEGATRON_FLAGS if f in text]


@pytest.mark.parametrize("framework", ["deepspeed-zero-2021", "nemo-automodel"])
def test_a_stack_without_a_launch_export_is_a_400_on_format(
    user_client: Any, catalog: Any, framework: str
) -> None:
    spec = _spec(framework)
    spec["parallelism"] = {"tp": 1, "pp": 1, "micro_batch": 1, "recompute": "full", "sharding": "zero3"}
    created = user_client.post("/api/v1/designs/", {"name": framework, "spec": spec}, format="json")
    assert created.status_code == 201, created.content
    response = user_client.get(f"/api/v1/designs/{created.json()['id']}/export/?format=torchrun")
    assert response.status_code == 400
    assert "no launch export for" in response.json()["error"]["fields"]["format"][0]
