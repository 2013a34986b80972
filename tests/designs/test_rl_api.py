"""RL post-training designs through the API (issue 39): a GRPO run of a 70B-class and of an 8B policy,
colocated and disaggregated, evaluated with the step breakdown, the split, days and dollars."""

from __future__ import annotations

import copy
from typing import Any

import pytest

GRPO = {
    "prompts_per_step": 512,
    "group_size": 16,
    "prompt_tokens": 512,
    "response_tokens_mean": 2048,
    "response_tokens_max": 8192,
    "steps": 400,
}


def _spec(preset: str, nodes: int, layout: dict[str, Any], **rl: Any) -> dict[str, Any]:
    return {
        "workload": {"model": {"preset": preset}, "training": {"precision": "bf16"}},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": nodes, "fabric": "ib-ndr400"},
        "parallelism": {"micro_batch": 1, "recompute": "selective", "sharding": "zero1", **layout},
        "costs": {
            "horizon_years": 2,
            "utilization": 0.7,
            "cloud": [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}],
        },
        "rl": {**GRPO, **rl},
    }


SPEC_70B = _spec("llama3-70b", 16, {"tp": 8, "pp": 2})
SPEC_8B = _spec("llama3-8b", 4, {"tp": 2, "pp": 1})


def _evaluate(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    created = client.post("/api/v1/designs/", {"name": "GRPO", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    response = client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200, response.json()
    return response.json()


def _check_step(chosen: dict[str, Any], steps: int) -> None:
    step = chosen["step"]
    parts = step["rollout_s"] + step["weight_sync_s"] + step["train_s"] + step["offload_s"]
    if chosen["mode"] == "async":
        parts = max(step["rollout_s"], step["train_s"]) + step["weight_sync_s"]
    assert step["seconds"] == pytest.approx(parts)
    assert chosen["days"] == pytest.approx(steps * step["seconds"] / 86_400)
    gpus = chosen["rollout_gpus"] + (chosen["trainer_gpus"] if chosen["placement"] == "disaggregated" else 0)
    assert chosen["gpu_hours"] == pytest.approx(steps * step["seconds"] * gpus / 3600)


@pytest.mark.parametrize(
    ("spec", "gpus", "params"),
    [(SPEC_70B, 128, 70_553_706_496), (SPEC_8B, 32, 8_030_261_248)],
    ids=["llama3-70b", "llama3-8b"],
)
@pytest.mark.parametrize("placement", ["colocated", "disaggregated"])
def test_grpo_design_evaluates_in_each_placement(
    user_client: Any, catalog: Any, spec: dict[str, Any], gpus: int, params: int, placement: str
) -> None:
    spec = copy.deepcopy(spec)
    spec["rl"]["placement"] = placement
    result = _evaluate(user_client, spec)
    run = result["rl"]
    # 512 prompts × 16 = 8,192 samples; × 2,048 = 16,777,216 response tokens; × 2,560 = 20,971,520 trained.
    assert (run["samples_per_step"], run["rollout_tokens_per_step"]) == (8192, 16_777_216)
    assert run["train_tokens_per_step"] == 20_971_520
    chosen = run["chosen"]
    assert chosen["placement"] == placement
    _check_step(chosen, 400)
    assert chosen["weight_sync_bytes"] == params * 2  # BF16 rollout weights
    if placement == "disaggregated":
        assert chosen["rollout_gpus"] + chosen["trainer_gpus"] == gpus
        assert chosen["rollout_gpus"] % 8 == 0 and chosen["trainer_gpus"] % 8 == 0
        # The chosen split is the fastest of those the search reports.
        days = [s["days"] for s in run["splits"] if s["days"] is not None]
        assert chosen["days"] == pytest.approx(min(days))
        assert 0 < chosen["step"]["rollout_idle_share"] < 1 and 0 < chosen["step"]["trainer_idle_share"] < 1
    else:
        assert chosen["rollout_gpus"] == chosen["trainer_gpus"] == gpus
    # The cost engine prices the RL run's days (not a pre-training estimate's) on the design's nodes.
    per_run = result["costs"]["aws-p5-48xlarge"]["per_run"]
    assert per_run["source"] == "run.days"
    assert per_run["days"] == pytest.approx(chosen["days"])
    cloud = next(o for o in result["options"] if o["kind"] == "cloud")
    rate = result["costs"]["aws-p5-48xlarge"]["cloud"]["on_demand"]["usd_per_node_hour"]
    assert cloud["run_cost_usd"] == pytest.approx(per_run["effective_days"] * 24 * gpus / 8 * rate, rel=1e-6)


def test_search_chooses_the_faster_placement_and_reports_the_splits(user_client: Any, catalog: Any) -> None:
    result = _evaluate(user_client, SPEC_70B)
    run = result["rl"]
    assert {o["placement"] for o in run["options"]} == {"colocated", "disaggregated"}
    fastest = min(run["options"], key=lambda o: o["days"])
    assert run["chosen"] == fastest
    # Colocated first (rollout_nodes 0), then rollout pools of 1 … 15 nodes of the 16.
    assert [s["rollout_nodes"] for s in run["splits"]] == list(range(16))
    assert all(s["rollout_nodes"] + s["trainer_nodes"] == 16 for s in run["splits"])


def test_async_disaggregated_design_overlaps_the_pools(user_client: Any, catalog: Any) -> None:
    spec = copy.deepcopy(SPEC_8B)
    spec["rl"].update(mode="async", off_policy_steps=1)
    chosen = _evaluate(user_client, spec)["rl"]["chosen"]
    assert (chosen["placement"], chosen["mode"]) == ("disaggregated", "async")
    _check_step(chosen, 400)


@pytest.mark.parametrize(
    ("rl", "field", "reason"),
    [
        ({"response_tokens_max": 10}, "spec.rl.response_tokens_max", "at least response_tokens_mean"),
        ({"mode": "async", "placement": "colocated"}, "spec.rl.placement", "cannot overlap"),
        ({"group_size": 0}, "spec.rl.group_size", "whole number"),
        ({"critic": True}, "spec.rl.critic", "unknown field"),
        ({"steps": None}, "spec.rl.steps", "whole number"),
        (
            {"steps": 10_000_000, "response_tokens_mean": 1_000_000, "response_tokens_max": 1_000_000},
            "spec.rl.steps",
            "at most 1e+16",
        ),
    ],
)
def test_bad_rl_fields_answer_400_naming_them_and_save_nothing(
    user_client: Any, catalog: Any, rl: dict[str, Any], field: str, reason: str
) -> None:
    from apps.designs.models import Design

    spec = copy.deepcopy(SPEC_8B)
    spec["rl"].update(rl)
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    fields = response.json()["error"]["fields"]
    assert field in fields, fields
    assert any(reason in message for message in fields[field])
    assert not Design.objects.exists()


def test_rl_design_without_a_training_section_takes_the_runs_batches(user_client: Any, catalog: Any) -> None:
    spec = copy.deepcopy(SPEC_8B)
    del spec["workload"]["training"]
    created = user_client.post("/api/v1/designs/", {"name": "GRPO", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    training = created.json()["spec"]["workload"]["training"]
    # 400 steps × 20,971,520 tokens = 8,388,608,000 tokens in batches of 8,192 sequences.
    assert training["tokens"] == 8_388_608_000 and training["global_batch_seqs"] == 8192


def test_a_one_node_disaggregated_design_is_refused_naming_the_nodes(user_client: Any, catalog: Any) -> None:
    spec = copy.deepcopy(SPEC_8B)
    spec["cluster"]["nodes"] = 1
    spec["parallelism"] = {"tp": 1, "pp": 1, "micro_batch": 1, "recompute": "full", "sharding": "zero3"}
    spec["rl"]["placement"] = "disaggregated"
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    assert "spec.cluster.nodes" in response.json()["error"]["fields"]
