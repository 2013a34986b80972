"""Expert tensor parallelism (``training.etp``, Megatron-Core's --expert-tensor-parallel-size; issue 19
item 2).

Megatron-Core lays the experts out on a grid of their own: etp · ep · edp = tp · cp · dp per pipeline stage
(megatron/core/parallel_state.py, initialize_model_parallel: expert_data_parallel_size = world_size //
(etp · ep · pp)), the ep ranks etp apart. Without ``training.etp`` the engine keeps its earlier layout
(experts split ep × tp, ep dividing dp × cp), so every estimate that does not give it is unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import EngineError, InputError
from clusterdesigner.engine.training.training import estimate

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}
GIB = 2.0**30
# NVLink 4 busbw inside an HGX H100 node, 450 GB/s × 0.80; ring step latency (timing.py).
NVLINK4_BUSBW = 360e9
STEP_S = 15e-6


def _mixtral(layout: dict[str, Any], **training: Any) -> dict[str, Any]:
    """Mixtral 8x7B (32 layers, hidden 4,096, 8 experts of 3 × 4,096 × 14,336 = 176,160,768 parameters,
    top 2) on 64 HGX H100 nodes, 1,024 sequences of 4,096 tokens, with a fixed layout."""
    base = {"pp": 1, "cp": 1, "vpp": 1, "micro_batch": 1, "recompute": "none", "sharding": "zero1"}
    return {
        "model": {"preset": "mixtral-8x7b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 1024, **training},
        "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
        "parallelism": {**base, "sequence_parallel": layout.get("tp", 1) > 1, **layout},
    }


def test_ep_spanning_the_tensor_parallel_ranks_needs_etp() -> None:
    # tp4 pp32 dp4 ep8 (the shape of Megatron-MoE-ModelZoo's Qwen3 tp2 pp32 dp4 ep8 row): ep 8 > dp 4, so
    # with experts split by tp the layout is refused; with etp 1 the 8 ep ranks lie over tp × dp = 16.
    layout = {"tp": 4, "pp": 32, "dp": 4, "ep": 8}
    with pytest.raises(InputError) as error:
        estimate(_mixtral(layout), **SPECS)
    assert error.value.field == "parallelism.ep"
    assert "dp × cp 4" in error.value.message
    response = estimate(_mixtral(layout, etp=1), **SPECS)
    assert response["parallelism"]["ep"] == 8
    names = {a["name"]: a["value"] for a in response["assumptions"]}
    assert names["expert_tensor_parallel_size"] == 1.0
    # ep × etp must divide tp × dp × cp: etp 4 × ep 8 = 32 > 16.
    with pytest.raises(InputError) as error:
        estimate(_mixtral(layout, etp=4), **SPECS)
    assert error.value.field == "parallelism.ep"
    assert "ep × etp = 32" in error.value.message and "16 ranks" in error.value.message


def test_etp_splits_each_expert_ep_times_etp_ways() -> None:
    # tp2 dp256 ep8, ZeRO-1 (weights not sharded): each GPU holds 32 layers × 8 experts × 176,160,768 /
    # (ep 8 × etp) expert parameters at 2 B. From etp 2 to etp 1 the weights grow by
    # 2 × 32 × 8 × 176,160,768 × (1/8 − 1/16) = 5,637,144,576 B = 5.25 GiB.
    layout = {"tp": 2, "dp": 256, "ep": 8}
    etp2 = estimate(_mixtral(layout, etp=2), **SPECS)["memory_per_gpu_gib"]["weights"]
    etp1 = estimate(_mixtral(layout, etp=1), **SPECS)["memory_per_gpu_gib"]["weights"]
    assert etp1 - etp2 == pytest.approx(5.25, abs=2e-3)
    # Without etp the experts split by tp = 2: the same bytes as etp 2.
    assert estimate(_mixtral(layout), **SPECS)["memory_per_gpu_gib"]["weights"] == pytest.approx(etp2)


def test_etp1_keeps_the_all_to_all_inside_the_node() -> None:
    # tp2 dp256 ep8 with etp 1: the ep ranks are consecutive (the expert grid orders tp-ep-dp), so all 8
    # share a node and every copy moves over NVLink: top 2 × 7/8 copies of a micro-batch's 4,096 × 4,096
    # / 2 (SP) elements, four all-to-alls at 2 B each, per layer and micro-batch; 4 micro-batches × 32
    # layers. No expert-TP gather at etp 1. (With experts split by tp the ranks sit 2 apart, the group
    # spans 2 nodes and the NIC binds: 0.179 s, test_moe_timing.py.)
    copy_bytes = 8 * 4096 * 4096 / 2
    expected = 4 * 32 * 2 * 7 / 8 * copy_bytes / NVLINK4_BUSBW
    assert expected == pytest.approx(0.0418, abs=1e-4)
    # Balanced routing: the mean rank's traffic (dropless adds the busiest rank's excess, test_moe_timing).
    layout = {"tp": 2, "dp": 256, "ep": 8}
    parts = estimate(_mixtral(layout, etp=1, moe_load_balance="balanced"), **SPECS)["step_time_s"]
    assert parts["moe_all_to_all"] == pytest.approx(expected, rel=1e-9)


def test_etp_above_one_all_gathers_the_routed_tokens() -> None:
    # etp 2 given at tp2 dp256 ep8: the ep ranks 2 apart (4 to a node, as without etp), plus per layer and
    # micro-batch four collectives over the 2 consecutive etp ranks of a buffer of etp 2 × top 2 × 4,096
    # / 2 tokens × 4,096 × 2 B = 67,108,864 B: ring (2−1)/2 × B / NVLink + 1 ring step each.
    layout = {"tp": 2, "dp": 256, "ep": 8}
    without = estimate(_mixtral(layout), **SPECS)["step_time_s"]["moe_all_to_all"]
    given = estimate(_mixtral(layout, etp=2), **SPECS)["step_time_s"]["moe_all_to_all"]
    one = 0.5 * 67_108_864 / NVLINK4_BUSBW + STEP_S
    assert given - without == pytest.approx(4 * 32 * 4 * one, rel=1e-9)


@pytest.mark.parametrize(
    ("model", "etp", "message"),
    [
        ({"preset": "llama3-8b"}, 1, "etp needs a mixture-of-experts model"),
        ({"preset": "mixtral-8x7b"}, 3, "etp 3 does not divide expert_ffn_hidden 14336"),
        ({"preset": "mixtral-8x7b"}, 0, "must be at least 1"),
    ],
)
def test_bad_etp_is_an_input_error_on_training_etp(model: dict[str, Any], etp: int, message: str) -> None:
    request = _mixtral({"tp": 2, "dp": 256, "ep": 8}, etp=etp)
    request["model"] = model
    with pytest.raises(InputError) as error:
        estimate(request, **SPECS)
    assert error.value.field == "training.etp"
    assert message in error.value.message


def test_search_with_etp1_may_place_ep_across_the_tensor_parallel_ranks() -> None:
    # tp 4, pp 32, cp 1, vpp 1 and ep 8 fixed, the rest searched (dp = 4): ep 8 does not divide dp × cp
    # = 4, so without etp no layout is valid; with etp 1 the 8 ep ranks span tp × dp = 16 and the search
    # finds one.
    request = _mixtral({"tp": 4, "pp": 32, "cp": 1, "ep": 8}, etp=1)
    request["parallelism"] = {k: request["parallelism"][k] for k in ("tp", "pp", "cp", "ep", "vpp")}
    best = estimate(request, **SPECS)["parallelism"]
    assert (best["tp"], best["dp"], best["ep"]) == (4, 4, 8)
    del request["training"]["etp"]
    with pytest.raises(EngineError) as error:
        estimate(request, **SPECS)
    assert error.value.field == "parallelism.ep"
    assert "ep 8 must divide 8 experts and dp × cp 4" in error.value.message


def test_the_experts_fc1_inputs_are_kept_for_backward() -> None:
    # memory.routed_token_bytes: each rank keeps its grouped FC1's input, etp × top_k × its sequence shard
    # of tokens × h at 2 B. Mixtral tp2 dp256 ep8, SP: the shard is 4,096 / 2 = 2,048 tokens, 32 MoE
    # layers, no pipeline (one micro-batch in flight), × 1.1 allocator. etp 1 → 2 adds
    # 32 × 2 × 2 × 2,048 × 4,096 × (2 − 1) × 1.1 = 1,181,116,006 B = 1.1 GiB of activations.
    layout = {"tp": 2, "dp": 256, "ep": 8}
    etp1 = estimate(_mixtral(layout, etp=1), **SPECS)["memory_per_gpu_gib"]["activations"]
    etp2 = estimate(_mixtral(layout, etp=2), **SPECS)["memory_per_gpu_gib"]["activations"]
    assert (etp2 - etp1) * GIB == pytest.approx(32 * 2 * 2 * 2048 * 4096 * 1.1, rel=1e-5)
    # Under full recompute only the layer inputs stay (the copies are rebuilt with the layer).
    full = {**layout, "recompute": "full"}
    a = estimate(_mixtral(full, etp=1), **SPECS)["memory_per_gpu_gib"]["activations"]
    b = estimate(_mixtral(full, etp=2), **SPECS)["memory_per_gpu_gib"]["activations"]
    assert b - a < 0.5 * (etp2 - etp1)
