"""training.framework through the API: an unknown stack is a 400 naming spec.workload.training.framework, and
the launch export of a PyTorch FSDP2 design is a torchtitan command with no Megatron flags."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

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


def _export(client: Any, spec: dict[str, Any], fmt: str) -> Any:
    created = client.post("/api/v1/designs/", {"name": "stack", "spec": spec}, format="json")
    assert created.status_code == 201, created.content
    return client.get(f"/api/v1/designs/{created.json()['id']}/export/?format={fmt}")


def _heredoc(text: str, name: str) -> str:
    """The text a launch script writes to ``name`` (its here-document)."""
    start = text.index(f"cat > {name} <<'CLUSTERDESIGNER_EOF'\n") + len(
        f"cat > {name} <<'CLUSTERDESIGNER_EOF'\n"
    )
    return text[start : text.index("\nCLUSTERDESIGNER_EOF\n", start)]


# llama3-8b (seq_len 8192) on 8 H100 with a global batch of 524,288 tokens = 64 sequences; tp 2 leaves dp 4.
# Micro-batch 2: gradient accumulation 64 / (2 × 4) = 8 steps, and 2 × 8 × 4 = 64 sequences per step.
# Iterations: ceil(1e12 / 524,288) = ceil(1,907,348.6) = 1,907,349.
DS_LAYOUT = {"tp": 2, "pp": 1, "micro_batch": 2, "recompute": "full", "sequence_parallel": False}


@pytest.mark.parametrize(("sharding", "stage"), [("zero1", 1), ("zero2", 2), ("zero3", 3)])
def test_a_deepspeed_design_exports_a_ds_config_matching_its_layout(
    user_client: Any, catalog: Any, sharding: str, stage: int
) -> None:
    spec = _spec("deepspeed-zero-2021")
    spec["parallelism"] = {**DS_LAYOUT, "sharding": sharding}
    response = _export(user_client, spec, "ds_config")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == "application/json"
    config = json.loads(response.content)
    assert config["zero_optimization"]["stage"] == stage
    assert config["train_micro_batch_size_per_gpu"] == 2
    assert config["gradient_accumulation_steps"] == 8
    assert config["train_batch_size"] == 2 * 8 * 4 == 64
    assert config["bf16"] == {"enabled": True}
    assert config["activation_checkpointing"]["partition_activations"] is False


def test_a_deepspeed_design_launches_megatron_deepspeed_with_the_deepspeed_launcher(
    user_client: Any, catalog: Any
) -> None:
    spec = _spec("deepspeed-zero-2021")
    spec["parallelism"] = {**DS_LAYOUT, "sharding": "zero2"}
    response = _export(user_client, spec, "torchrun")
    assert response.status_code == 200, response.content[:300]
    text = response.content.decode()
    assert "deepspeed \\\n  --num_nodes=1 \\\n  --num_gpus=8 \\\n  --hostfile=" in text
    assert "torchrun" not in text and "Megatron-DeepSpeed}/pretrain_gpt.py" in text
    for flag in (
        "--tensor-model-parallel-size 2",
        "--pipeline-model-parallel-size 1",
        "--no-pipeline-parallel",
        "--micro-batch-size 2",
        "--global-batch-size 64",
        "--train-iters 1907349",
        "--checkpoint-activations",
        "--deepspeed-activation-checkpointing",
        "--deepspeed_config ds_config.json",
        "--zero-stage 2",
        "--num-key-value-heads 8",
    ):
        assert flag in text, flag
    # No Megatron-Core flag the 2021 stack does not have.
    assert "--sequence-parallel" not in text and "--use-distributed-optimizer" not in text
    written = json.loads(_heredoc(text, "ds_config.json"))
    assert written["zero_optimization"]["stage"] == 2 and written["gradient_accumulation_steps"] == 8
    assert "NCCL_IB_HCA=mlx5" in _heredoc(text, ".deepspeed_env")


def test_the_slurm_job_of_a_deepspeed_design_writes_ds_config_and_runs_torchrun(
    user_client: Any, catalog: Any
) -> None:
    spec = _spec("deepspeed-zero-2021")
    spec["parallelism"] = {**DS_LAYOUT, "sharding": "zero1"}
    text = _export(user_client, spec, "sbatch").content.decode()
    assert json.loads(_heredoc(text, "ds_config.json"))["zero_optimization"]["stage"] == 1
    assert "srun --kill-on-bad-exit=1 --ntasks-per-node=1 torchrun" in text and "--zero-stage 1" in text


def test_a_ds_config_of_a_design_on_another_stack_or_in_fp8_is_a_400_saying_why(
    user_client: Any, catalog: Any
) -> None:
    response = _export(user_client, _spec("fsdp2"), "ds_config")
    assert response.status_code == 400
    message = response.json()["error"]["fields"]["format"][0]
    assert message.startswith(
        "the ds_config export is for DeepSpeed ZeRO (2021, Megatron-DeepSpeed) designs;"
    )
    assert "framework is PyTorch FSDP2 (torchtitan)" in message

    spec = _spec("deepspeed-zero-2021")
    spec["parallelism"] = {**DS_LAYOUT, "sharding": "zero1"}
    spec["workload"]["training"]["precision"] = "fp8"
    response = _export(user_client, spec, "ds_config")
    assert response.status_code == 400
    assert "the estimate assumed fp8" in response.json()["error"]["fields"]["format"][0]


AUTOMODEL_LAYOUT = {"tp": 2, "pp": 1, "micro_batch": 1, "recompute": "selective", "sharding": "zero3"}


def test_a_nemo_automodel_design_exports_a_recipe_with_its_layout(user_client: Any, catalog: Any) -> None:
    spec = _spec("nemo-automodel")
    spec["parallelism"] = dict(AUTOMODEL_LAYOUT)
    response = _export(user_client, spec, "automodel")
    assert response.status_code == 200, response.content[:300]
    recipe = yaml.safe_load(response.content)
    dist = recipe["distributed"]
    assert dist["strategy"] == "fsdp2" and dist["activation_checkpointing"] == "selective"
    # tp 2 × pp 1 × cp 1 × dp 4 = the 8 GPUs, as AutoModel checks world size.
    assert (dist["tp_size"], dist["pp_size"], dist["cp_size"], dist["dp_size"]) == (2, 1, 1, 4)
    assert "dp_replicate_size" not in dist and "pipeline" not in dist
    steps = recipe["step_scheduler"]
    # No pipeline: the local batch is the micro-batch (1); AutoModel accumulates 64 / (1 × 4) = 16 of them.
    assert (steps["global_batch_size"], steps["local_batch_size"], steps["max_steps"]) == (64, 1, 1907349)
    assert recipe["dataset"]["seq_len"] == 8192 and recipe["dataset"]["batch_size"] == 1


def test_an_hsdp_automodel_recipe_shards_inside_a_node_and_replicates_across(
    user_client: Any, catalog: Any
) -> None:
    # 2 nodes of 8 GPUs, tp 2: dp 8; a node holds 8 / 2 = 4 data-parallel ranks, the shard group, so the
    # 2 nodes are 8 / 4 = 2 replicas (dp_replicate_size divides dp_size and is smaller, as AutoModel checks).
    spec = _spec("nemo-automodel")
    spec["cluster"]["nodes"] = 2
    spec["parallelism"] = {**AUTOMODEL_LAYOUT, "sharding": "hsdp", "recompute": "full"}
    response = _export(user_client, spec, "automodel")
    assert response.status_code == 200, response.content[:300]
    dist = yaml.safe_load(response.content)["distributed"]
    assert (dist["dp_size"], dist["dp_replicate_size"], dist["tp_size"]) == (8, 2, 2)
    assert dist["activation_checkpointing"] is True


def test_a_nemo_automodel_design_launches_its_recipe_with_torchrun(user_client: Any, catalog: Any) -> None:
    spec = _spec("nemo-automodel")
    spec["parallelism"] = dict(AUTOMODEL_LAYOUT)
    text = _export(user_client, spec, "torchrun").content.decode()
    assert "examples/llm_pretrain/pretrain.py" in text and "--config automodel_recipe.yaml" in text
    assert yaml.safe_load(_heredoc(text, "automodel_recipe.yaml"))["distributed"]["tp_size"] == 2
    assert not [f for f in MEGATRON_FLAGS if f in text]
