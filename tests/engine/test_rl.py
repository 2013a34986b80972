"""RL post-training engine (issue 39): hand calculations for the step's parts and the placements."""

from __future__ import annotations

import math
from typing import Any

import pytest

from clusterdesigner.engine.core.errors import InputError, UnknownReferenceError
from clusterdesigner.engine.rl import rl
from clusterdesigner.engine.rl.rl_request import parse_rl
from tests.engine.specs import ACCELERATORS, FABRICS, H100_SXM

RL_8B = {
    "prompts_per_step": 512,
    "group_size": 16,
    "prompt_tokens": 512,
    "response_tokens_mean": 2048,
    "response_tokens_max": 8192,
    "steps": 500,
}


def _request(preset: str, nodes: int, **rl_fields: Any) -> dict[str, Any]:
    return {
        "model": {"preset": preset},
        "training": {"precision": "bf16"},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": nodes, "fabric": "ib-ndr400"},
        "rl": {**RL_8B, **rl_fields},
    }


def test_tokens_per_step_by_hand() -> None:
    # 512 prompts × 16 samples = 8,192 responses; × 2,048 mean response tokens = 16,777,216 decoded tokens;
    # the trainer sees 8,192 × (512 + 2,048) = 20,971,520 tokens.
    wl = parse_rl(RL_8B)
    assert wl.samples_per_step == 8192
    assert wl.rollout_tokens_per_step == 16_777_216
    assert wl.train_tokens_per_step == 20_971_520
    assert wl.algorithm == "grpo" and not wl.critic and wl.mode == "sync" and wl.off_policy_steps == 0


def test_weight_sync_8b_bf16_over_400_gbps_by_hand() -> None:
    # Llama 3 8B: 8,030,261,248 params × 2 bytes (BF16) = 16,060,522,496 bytes.
    # Wire: 16,060,522,496 × 8 / 400e9 = 0.321210 s (efficiency 1 given).
    # Buckets: ceil(16,060,522,496 / 536,870,912) = 30, each 0.0602132 s (slime: (7 − 61,064,220,672 /
    # 450e9) / 114 = 6.864302 / 114) → 1.806396 s. Total 2.127606 s.
    assert rl.SYNC_BUCKET_OVERHEAD_S == pytest.approx(0.0602132, rel=1e-5)
    seconds = rl.weight_sync_s(
        sync_bytes=8_030_261_248 * 2.0,
        colocated=False,
        accelerator=H100_SXM,
        nic_gbps=400.0,
        fabric_efficiency=1.0,
    )
    assert seconds == pytest.approx(0.321210 + 1.806396, rel=1e-5)
    # Colocated over NVLink 4 at 450 GB/s: 16,060,522,496 / 450e9 = 0.035690 s on the wire.
    co = rl.weight_sync_s(
        sync_bytes=8_030_261_248 * 2.0,
        colocated=True,
        accelerator=H100_SXM,
        nic_gbps=400.0,
        fabric_efficiency=1.0,
    )
    assert co == pytest.approx(0.035690 + 1.806396, rel=1e-5)


def test_synchronous_disaggregated_idle_shares_by_hand() -> None:
    # rollout 100 s, sync 10 s, train 50 s: step 160 s; the rollout pool idles through training (50/160),
    # the trainer through the rollout (100/160).
    step = rl.compose_step(placement="disaggregated", mode="sync", rollout_s=100.0, sync_s=10.0, train_s=50.0)
    assert step.seconds == 160.0
    assert step.rollout_idle_share == pytest.approx(0.3125)
    assert step.trainer_idle_share == pytest.approx(0.625)


def test_asynchronous_step_is_the_slower_side_plus_sync() -> None:
    # max(100, 50) + 10 = 110 s; the trainer waits 50 of them, the rollout none.
    step = rl.compose_step(
        placement="disaggregated", mode="async", rollout_s=100.0, sync_s=10.0, train_s=50.0
    )
    assert step.seconds == 110.0
    assert step.rollout_idle_share == 0.0
    assert step.trainer_idle_share == pytest.approx(50.0 / 110.0)
    slow_trainer = rl.compose_step(
        placement="disaggregated", mode="async", rollout_s=30.0, sync_s=10.0, train_s=50.0
    )
    assert slow_trainer.seconds == 60.0 and slow_trainer.rollout_idle_share == pytest.approx(20.0 / 60.0)


def test_colocated_step_adds_every_part_and_never_idles() -> None:
    step = rl.compose_step(
        placement="colocated", mode="sync", rollout_s=100.0, sync_s=2.0, train_s=50.0, offload_s=3.0
    )
    assert step.seconds == 155.0
    assert step.rollout_idle_share == step.trainer_idle_share == 0.0


def test_the_longest_response_holds_the_rollout() -> None:
    # The tail is (max − mean) decode steps at batch 1: raising the max by 1,000 tokens adds 1,000 × TPOT(1)
    # and changes neither the prefill nor the bulk decode.
    wl = parse_rl(RL_8B)
    longer = parse_rl({**RL_8B, "response_tokens_max": 9192})
    model = rl.training.parse_problem(
        rl.training_request(_request("llama3-8b", 4), wl), accelerators=ACCELERATORS, fabrics=FABRICS
    ).model
    inp = rl.serving_input(wl, model, H100_SXM, 8)
    a = rl.rollout_time(inp, wl, gpus=32)
    b = rl.rollout_time(inp, longer, gpus=32)
    assert a is not None and b is not None and (a.tp, a.pp) == (b.tp, b.pp)
    tpot_1 = float(rl.decode_step_s(inp, batch=1, tp=a.tp, pp=a.pp))
    assert b.tail_s - a.tail_s == pytest.approx(1000 * tpot_1)
    assert (b.prefill_s, b.decode_s) == (a.prefill_s, a.decode_s)
    # Every sample is generated: replicas × sequences per replica cover the 8,192 samples.
    assert a.replicas * math.ceil(8192 / a.replicas) >= 8192


def test_forward_passes_cost_a_third_of_an_update_each() -> None:
    result = rl.estimate(_request("llama3-8b", 4), accelerators=ACCELERATORS, fabrics=FABRICS)
    train = result.chosen.train
    # GRPO with a reference model: old log-probs + reference = 2 forward passes → t × (1 + 2/3).
    assert train.critic_update_s == 0.0
    assert train.forward_passes_s == pytest.approx(2.0 / 3.0 * train.policy_update_s)
    ppo = rl.estimate(
        _request("llama3-8b", 4, algorithm="ppo", reward_model=True, placement="colocated"),
        accelerators=ACCELERATORS,
        fabrics=FABRICS,
    ).chosen.train
    # PPO with reference and reward model: critic update t; passes: log-probs, reference, values, reward.
    assert ppo.critic_update_s == ppo.policy_update_s
    assert ppo.seconds == pytest.approx(ppo.policy_update_s * (2.0 + 4.0 / 3.0))


def test_split_search_picks_the_fewest_days_of_the_points_it_reports() -> None:
    result = rl.estimate(_request("llama3-70b", 16), accelerators=ACCELERATORS, fabrics=FABRICS)
    days = [s.days for s in result.splits if s.days is not None]
    assert result.chosen.days == pytest.approx(min(days))
    assert {o.placement for o in result.options} == {"colocated", "disaggregated"}
    disagg = next(o for o in result.options if o.placement == "disaggregated")
    assert disagg.rollout_gpus + disagg.trainer_gpus == 128
    assert disagg.rollout_gpus % 8 == 0
    # days = steps × step seconds / 86,400; GPU-hours = steps × step × GPUs / 3,600
    assert disagg.days == pytest.approx(500 * disagg.step.seconds / 86_400)
    assert disagg.gpu_hours == pytest.approx(500 * disagg.step.seconds * 128 / 3600)


def test_async_disaggregated_overlaps_rollout_and_training() -> None:
    sync = rl.estimate(
        _request("llama3-8b", 4, placement="disaggregated"), accelerators=ACCELERATORS, fabrics=FABRICS
    )
    async_ = rl.estimate(
        _request("llama3-8b", 4, placement="disaggregated", mode="async", off_policy_steps=1),
        accelerators=ACCELERATORS,
        fabrics=FABRICS,
    )
    step = async_.chosen.step
    assert step.seconds == pytest.approx(max(step.rollout_s, step.train_s) + step.weight_sync_s)
    assert async_.chosen.days < sync.chosen.days


def test_split_candidates_are_node_counts_leaving_both_pools_a_node() -> None:
    assert rl.split_candidates(1) == []
    assert rl.split_candidates(4) == [1, 2, 3]
    many = rl.split_candidates(64)
    assert len(many) == rl.MAX_SPLITS and many[0] == 1 and many[-1] == 63


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"response_tokens_max": 100}, "rl.response_tokens_max", "at least response_tokens_mean"),
        ({"mode": "async", "placement": "colocated"}, "rl.placement", "cannot overlap"),
        ({"mode": "async", "off_policy_steps": 0}, "rl.off_policy_steps", "at least 1 step"),
        ({"off_policy_steps": 2}, "rl.off_policy_steps", "on-policy"),
        ({"algorithm": "dpo"}, "rl.algorithm", "not a valid choice"),
        ({"group": 8}, "rl.group", "unknown field"),
        ({"steps": 0}, "rl.steps", "whole number"),
    ],
)
def test_rejects_bad_rl_fields_naming_them(fields: dict[str, Any], field: str, reason: str) -> None:
    with pytest.raises(InputError) as info:
        parse_rl({**RL_8B, **fields})
    assert info.value.field == field
    assert reason in info.value.message


def test_rejects_disaggregated_on_one_node() -> None:
    with pytest.raises(InputError) as info:
        rl.estimate(
            _request("llama3-8b", 1, placement="disaggregated"), accelerators=ACCELERATORS, fabrics=FABRICS
        )
    assert info.value.field == "cluster.nodes"


def test_an_rl_spec_trains_the_policy_on_the_runs_sequences_and_batches() -> None:
    from clusterdesigner.engine.design import spec as design_spec

    spec = design_spec.parse_design_spec(
        {
            "workload": {"model": {"preset": "llama3-8b"}},
            "cluster": {"accelerator": "h100-sxm", "nodes": 4, "fabric": "ib-ndr400"},
            "rl": RL_8B,
        }
    ).json
    # seq_len 512 + 2,048 = 2,560 (the preset's 8,192 is the pre-training context); 500 steps × 20,971,520.
    request = design_spec.training_request(spec)
    assert request["model"] == {"preset": "llama3-8b", "seq_len": 2560}
    assert request["training"]["tokens"] == 500 * 20_971_520
    assert request["training"]["global_batch_seqs"] == 8192
    rl_req = design_spec.rl_request(spec)
    assert rl_req is not None and rl_req["rl"]["algorithm"] == "grpo" and "parallelism" not in rl_req
    assert design_spec.rl_request({k: v for k, v in spec.items() if k != "rl"}) is None


def test_a_tie_goes_to_colocated() -> None:
    # Same GPUs and days within 0.1 %: the single pool wins; outside 0.1 % the fewer days win.
    step = rl.compose_step(placement="colocated", mode="sync", rollout_s=1.0, sync_s=0.0, train_s=1.0)
    parts = (rl.RolloutTime(1.0, 0.0, 1.0, 0.0, 1, 1, 8, 1), rl.TrainTime(1.0, 1.0, 0.0, 0.0, "tp 1", 1.0))

    def option(placement: str, days: float) -> rl.RLPlacement:
        gpus = (32, 32) if placement == "colocated" else (16, 16)
        return rl.RLPlacement(placement, "sync", *gpus, step, *parts, 1.0, days, days * 24 * 32)

    assert rl._pick([option("disaggregated", 1.0), option("colocated", 1.0005)]).placement == "colocated"
    assert rl._pick([option("disaggregated", 1.0), option("colocated", 1.01)]).placement == "disaggregated"


# --- mixed fleets: a rollout pool of its own part -----------------------------------------------------------


def _mixed(rollout: dict[str, Any], **rl_fields: Any) -> dict[str, Any]:
    request = _request("llama3-8b", 2, **rl_fields)
    # The trainers' NICs are 800 Gb/s per GPU, faster than the fabric's 400 Gb/s ports the rollout GPUs
    # hang off: the broadcast runs at the slower end.
    request["cluster"]["scaleout_gbps_per_gpu"] = 800.0
    request["rl"]["rollout"] = rollout
    return request


def test_mixed_fleet_times_the_rollout_on_its_own_part_and_syncs_over_the_fabric_by_hand() -> None:
    result = rl.estimate(
        _mixed({"accelerator": "a100-80gb", "nodes": 2}), accelerators=ACCELERATORS, fabrics=FABRICS
    )
    chosen = result.chosen
    assert chosen.placement == "disaggregated"
    assert (chosen.rollout_accelerator, chosen.trainer_accelerator) == ("a100-80gb", "h100-sxm")
    assert (chosen.rollout_gpus, chosen.trainer_gpus) == (16, 16)
    # The one split given, not searched: 2 rollout nodes beside the design's 2 trainer nodes.
    assert [(s.rollout_nodes, s.trainer_nodes) for s in result.splits] == [(2, 2)]
    # Rollout timed by the serving engine on 16 A100-80GB (not on the trainers' H100).
    wl = parse_rl(RL_8B)
    model = rl.training.parse_problem(
        rl.training_request(_request("llama3-8b", 2), wl), accelerators=ACCELERATORS, fabrics=FABRICS
    ).model
    a100 = rl.rollout_time(
        rl.serving_input(wl, model, ACCELERATORS["a100-80gb"], 8), wl, gpus=16, factor=rl.FRAMEWORK_FACTOR
    )
    h100 = rl.rollout_time(rl.serving_input(wl, model, H100_SXM, 8), wl, gpus=16, factor=rl.FRAMEWORK_FACTOR)
    assert a100 is not None and h100 is not None
    assert chosen.rollout.seconds == pytest.approx(a100.seconds) and a100.seconds > h100.seconds
    # Weight sync, by hand: Llama 3 8B, 8,030,261,248 params × 2 bytes = 16,060,522,496 bytes, from the
    # trainer's single pipeline stage (layout "pp 1"), over min(800, 400) = 400 Gb/s at the fabric's
    # collective efficiency 0.96: 16,060,522,496 × 8 / (400e9 × 0.96) = 0.334594 s; plus 30 buckets of
    # 512 MiB × 0.0602132 s = 1.806396 s. Total 2.140990 s.
    assert "pp 1" in chosen.train.layout
    assert chosen.weight_sync_bytes == 16_060_522_496
    assert chosen.step.weight_sync_s == pytest.approx(0.334594 + 1.806396, rel=1e-5)
    # Each pool's GPU-hours: 500 steps × the step's seconds × 16 GPUs / 3600, the pools' sum the run's.
    hours = 500 * chosen.step.seconds * 16 / 3600
    assert chosen.rollout_gpu_hours == pytest.approx(hours)
    assert chosen.trainer_gpu_hours == pytest.approx(hours)
    assert chosen.gpu_hours == pytest.approx(2 * hours)


def test_mixed_fleet_refuses_colocated_and_an_unknown_rollout_part() -> None:
    with pytest.raises(InputError) as colocated:
        parse_rl({**RL_8B, "placement": "colocated", "rollout": {"nodes": 1}})
    assert colocated.value.field == "rl.placement"
    with pytest.raises(InputError) as missing:
        parse_rl({**RL_8B, "rollout": {"accelerator": "a100-80gb"}})
    assert missing.value.field == "rl.rollout.nodes"
    with pytest.raises(UnknownReferenceError) as unknown:
        rl.estimate(_mixed({"accelerator": "tpu-v9", "nodes": 1}), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert unknown.value.field == "rl.rollout.accelerator"


def test_a_rollout_pool_of_the_trainers_part_defaults_to_it() -> None:
    result = rl.estimate(_mixed({"nodes": 1}), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert result.chosen.rollout_accelerator == result.chosen.trainer_accelerator == "h100-sxm"
    assert (result.chosen.rollout_gpus, result.chosen.trainer_gpus) == (8, 16)


def test_a_pool_size_searched_once_is_not_searched_again_until_its_part_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dataclasses

    searched: list[int] = []
    search = rl.training.estimate_problem

    def counting(parsed: Any) -> Any:
        searched.append(parsed.problem.cluster.nodes)
        return search(parsed)

    monkeypatch.setattr(rl.training, "estimate_problem", counting)
    monkeypatch.setattr(rl, "_SEARCHED", rl.OrderedDict())
    request = _request("llama3-8b", 4, steps=123)
    first = rl.estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    # Colocated on 4 nodes, then trainer pools of 3, 2 and 1 nodes beside rollout pools of 1, 2 and 3.
    assert sorted(searched) == [1, 2, 3, 4]
    again = rl.estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert again == first and len(searched) == 4
    # A catalog edit to the part (more HBM) is another search.
    bigger = {**ACCELERATORS, "h100-sxm": dataclasses.replace(H100_SXM, memory_gib=96)}
    rl.estimate(request, accelerators=bigger, fabrics=FABRICS)
    assert len(searched) == 8
