"""Mixture-of-experts communication in the training timing (issue 19 items 1 and 2).

Item 1: under ZeRO-3/HSDP the expert weights are sharded over the expert-data-parallel group
(dp·cp/ep ranks spaced tp·ep apart, Megatron-Core's expert_data_parallel_size), so each micro-batch
gathers them twice and reduce-scatters their gradients, like the dense weights. Before, only the dense
and embedding weights were gathered, and the search preferred EP 1 with ZeRO-3 for Mixtral on 512 GPUs.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.timing import _fsdp, _held, _shape
from clusterdesigner.engine.training.training import estimate, parse_problem
from clusterdesigner.engine.training.workload import layouts

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}

# Busbw by hand: NVLink 4 at 450 GB/s × 0.80 = 360 GB/s inside an HGX node; NDR 400 Gb/s / 8 × 0.96
# collective efficiency = 48 GB/s per GPU beyond it; ring step 15 µs, fabric latency 5 µs.
NVLINK4_BUSBW = 360e9
NDR400_BUSBW = 48e9
STEP_S = 15e-6
FABRIC_S = 5e-6


def _mixtral_512(**overrides: Any) -> dict[str, Any]:
    training = {"tokens": 1e12, "global_batch_tokens": 4194304, **overrides}
    return {
        "model": {"preset": "mixtral-8x7b"},
        "training": training,
        "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
    }


def _layout(**fields: Any) -> dict[str, Any]:
    """A fixed layout: pp, cp, vpp and micro-batch 1, no recompute, ZeRO-1, unless given."""
    base = {"pp": 1, "cp": 1, "vpp": 1, "micro_batch": 1, "recompute": "none", "sharding": "zero1"}
    return {**base, "sequence_parallel": fields.get("tp", 1) > 1, **fields}


def _a2a_of(model: str, nodes: int, batch_seqs: int, layout: dict[str, Any], **training: Any) -> float:
    """The moe_all_to_all step part (s) of ``model`` on ``nodes`` HGX H100 nodes with a fixed layout;
    balanced routing unless given, so that the traffic is the mean rank's (``_moe_load_imbalance`` apart)."""
    training = {"moe_load_balance": "balanced", **training}
    request = {
        "model": {"preset": model},
        "training": {"tokens": 1e12, "global_batch_seqs": batch_seqs, **training},
        "cluster": {"accelerator": "h100-sxm", "nodes": nodes, "fabric": "ib-ndr400"},
        "parallelism": layout,
    }
    return float(estimate(request, **SPECS)["step_time_s"]["moe_all_to_all"])


def _ring_gather_s(nbytes: float, size: int, stride: int) -> float:
    """All-gather (or reduce-scatter) on a hierarchical ring over 8-GPU nodes, by hand."""
    j = max(1, min(8 // stride, size))
    k = -(-size // j)
    intra = (j - 1) / j * nbytes / NVLINK4_BUSBW + (size - k) * STEP_S
    inter = (k - 1) / k * nbytes / (j * NDR400_BUSBW) + (k - 1) * (STEP_S + FABRIC_S)
    return intra + inter


def test_expert_weights_are_gathered_and_reduce_scattered_under_zero3() -> None:
    # Mixtral 8x7B (32 layers, hidden 4096, 8 experts of 3 × 4096 × 14336 = 176,160,768 parameters, GQA
    # with 8 KV heads, vocab 32,000, untied) on tp4 pp1 dp128 ep1, ZeRO-3, micro-batch 8, gathers not
    # prefetched (fsdp_overlap false, so the whole collective time is on the critical path).
    request = _mixtral_512(fsdp_overlap=False)
    request["parallelism"] = _layout(tp=4, dp=128, ep=1, micro_batch=8, sharding="zero3")
    parts = estimate(request, **SPECS)["step_time_s"]
    # Per GPU (tp 4): experts 32 × 8 × 176,160,768 / 4 = 11,274,289,152 parameters; dense 32 × (attention
    # 41,943,040 / 4 + 2 norms × 4,096 + router 4,096 × 8) = 336,855,040, plus embedding and output layer
    # 2 × 131,072,000 / 4 = 65,536,000. Both shard over 128 ranks spaced 4 apart: 2 per node, 64 nodes.
    expert_bytes = 2.0 * 11_274_289_152
    dense_bytes = 2.0 * (336_855_040 + 65_536_000)
    expert_gather = _ring_gather_s(expert_bytes, 128, 4)
    assert expert_gather == pytest.approx(0.2648, abs=1e-4)  # 0.0313 NVLink + 0.2312 NIC + latency
    dense_gather = _ring_gather_s(dense_bytes, 128, 4)
    # One micro-batch per step (1,024 sequences / (128 × 8)): two gathers and one reduce-scatter (bf16
    # gradients, same bytes) of each, and 3 collectives × 32 layers × 127 ring steps of latency for the
    # dense unit and again for the expert unit.
    latency = 2 * 3 * 32 * 127 * STEP_S
    expected = 3 * dense_gather + 3 * expert_gather + latency
    assert expected == pytest.approx(1.1948, abs=1e-3)
    assert parts["fsdp_comm_exposed"] == pytest.approx(expected, rel=1e-6)
    # Without the experts (the defect), the same part was 3 × 0.0116 + 0.183 = 0.218 s.
    assert parts["fsdp_comm_exposed"] > 5 * (3 * dense_gather + latency / 2)


def test_search_no_longer_prefers_ep1_with_zero3_for_mixtral_on_512_h100() -> None:
    # On main before the fix the winner was tp4 dp128 ep1 mb8 ZeRO-3 at 1.487 s/step, its 45 B expert
    # parameters never gathered; its gathers now take 3 × 0.265 s per micro-batch.
    response = estimate(_mixtral_512(), **SPECS)
    best = response["parallelism"]
    assert not (best["ep"] == 1 and best["sharding"] in ("zero3", "hsdp")), best
    for candidate in response["candidates"][:10]:
        lay = candidate["parallelism"]
        assert not (lay["ep"] == 1 and lay["sharding"] == "zero3"), lay


# Item 2: the all-to-all. Mixtral 8x7B on tp2 ep8 dp256 (sequence parallel), 64 HGX H100 nodes, micro-batch
# 1 of 4,096 tokens, 1,024 sequences: m = 1,024 / 256 = 4 micro-batches of 32 MoE layers. The ep ranks are
# spaced tp = 2 apart, so 4 of them share a node and the group spans 2 nodes. One copy of a micro-batch's
# tokens is 4,096 × 4,096 / 2 (SP) = 8,388,608 elements; the four all-to-alls carry 4 × 2 B = 8 B each.
COPY_BYTES = 8 * 4096 * 4096 / 2
LAYER_MB = 4 * 32


def _a2a_s(**training: Any) -> float:
    return _a2a_of("mixtral-8x7b", 64, 1024, _layout(tp=2, dp=256, ep=8), **training)


def test_all_to_all_splits_between_nvlink_and_the_fabric() -> None:
    # NCCL all-to-all, one copy per routed expert (top 2 of 8 ranks): 2 × 3/8 copies to the 3 other ranks
    # of the node over NVLink, 2 × 4/8 over the NIC, concurrently; the NIC's 1.398 ms per layer binds.
    nic = 2 * 4 / 8 * COPY_BYTES / NDR400_BUSBW
    nvlink = 2 * 3 / 8 * COPY_BYTES / NVLINK4_BUSBW
    assert nic == pytest.approx(1.398e-3, rel=1e-3)
    assert _a2a_s() == pytest.approx(LAYER_MB * max(nic, nvlink), rel=1e-9)  # 0.179 s
    # Before, all 7/8 of the copies went over the NIC: 128 × 2 × 7/8 × 67.1 MB / 48 GB/s = 0.313 s.


def test_deepep_crosses_the_fabric_once_per_remote_node() -> None:
    # A token's 2 experts hit 2 × (1 − (1 − 1/2)²) = 1.5 of the 2 nodes on average, 0.75 of them remote;
    # NVLink carries one copy per destination GPU off its own (DeepEP's is_token_in_rank, Megatron-Core
    # fused_a2a.py): 8 × (1 − (7/8)²) = 1.875 GPUs hit, × 7/8 = 1.641 off the GPU (not 2 × 7/8 = 1.75, one
    # per expert). The NIC binds: 0.75 × 67.1 MB / 48 GB/s = 1.048 ms per layer.
    nic = 1.5 * 1 / 2 * COPY_BYTES / NDR400_BUSBW
    nvlink = 8 * (1 - (7 / 8) ** 2) * 7 / 8 * COPY_BYTES / NVLINK4_BUSBW
    assert _a2a_s(moe_dispatcher="deepep") == pytest.approx(LAYER_MB * max(nic, nvlink), rel=1e-9)  # 0.134 s
    # HybridEP (the flex dispatcher's hybridep backend) sends the same copies.
    assert _a2a_s(moe_dispatcher="hybridep") == pytest.approx(_a2a_s(moe_dispatcher="deepep"), rel=1e-12)


def test_deepep_inside_one_domain_sends_one_copy_per_destination_gpu() -> None:
    # DeepSeek-V3 on one HGX node, tp1 ep8 dp8: all 8 ep ranks on NVLink, no fabric. A token's top-8 experts
    # (of 256, 32 per rank) lie on 8 × (1 − (7/8)^8) = 5.251 distinct ranks, 4.595 of them off its GPU;
    # alltoall sends 8 × 7/8 = 7 copies, one per expert. So deepep / alltoall = 4.595 / 7 = 0.656.
    layout = _layout(tp=1, dp=8, ep=8)
    alltoall = _a2a_of("deepseek-v3", 1, 8, layout)
    deepep = _a2a_of("deepseek-v3", 1, 8, layout, moe_dispatcher="deepep")
    assert deepep / alltoall == pytest.approx(8 * (1 - (7 / 8) ** 8) * 7 / 8 / 7, rel=1e-9)


def _compute_s(model: str, layout: dict[str, Any], **training: Any) -> float:
    """The compute step part (s) of ``model`` on one HGX H100 node, 64 sequences, balanced routing."""
    request = {
        "model": {"preset": model},
        "training": {"tokens": 1e12, "global_batch_seqs": 64, "moe_load_balance": "balanced", **training},
        "cluster": {"accelerator": "h100-sxm", "nodes": 1, "fabric": "ib-ndr400"},
        "parallelism": layout,
    }
    return float(estimate(request, **SPECS)["step_time_s"]["compute"])


def test_alltoall_dispatcher_resorts_the_routed_copies_by_local_expert_and_back() -> None:
    # Qwen3 30B-A3B on one HGX H100 node, tp1 ep8 dp8: 16 local experts, so Megatron-Core's alltoall
    # dispatcher sorts what arrives by local expert and back (core_v0.14.0 token_dispatcher.py), 4 more
    # passes over the routed copies per layer forward than DeepEP, which permutes once. By hand: 8
    # micro-batches of 4,096 tokens × top 8 = 32,768 rows × 2,048 × 2 B = 134.2 MB a pass; 4 passes
    # forward, twice that backward (3 × 4 = 12), 48 layers: 12 × 48 × 8 × 134.2 MB / (3.35 TB/s × 0.85)
    # = 0.2172 s.
    layout = _layout(tp=1, dp=8, ep=8)
    extra = 12 * 48 * 8 * 32768 * 2048 * 2 / (3.35e12 * 0.85)
    assert extra == pytest.approx(0.2172, abs=1e-4)
    alltoall = _compute_s("qwen3-30b-a3b", layout)
    deepep = _compute_s("qwen3-30b-a3b", layout, moe_dispatcher="deepep")
    assert alltoall - deepep == pytest.approx(extra, rel=1e-9)
    # The allgather dispatcher permutes the gathered tokens once, as DeepEP does.
    assert deepep == pytest.approx(_compute_s("qwen3-30b-a3b", layout, moe_dispatcher="allgather"), rel=1e-12)
    # Mixtral 8x7B on ep 8 holds one expert per rank: nothing to sort, alltoall and DeepEP compute alike.
    mixtral = _compute_s("mixtral-8x7b", layout)
    assert mixtral == pytest.approx(_compute_s("mixtral-8x7b", layout, moe_dispatcher="deepep"), rel=1e-12)


def test_fp8_recipes_quantize_every_routed_copy_of_the_experts_inputs() -> None:
    # Qwen3 30B-A3B on one HGX H100 node, tp1 ep8 dp8 (8 micro-batches of 4,096 tokens, 48 MoE layers,
    # h 2,048, experts 768 wide, top 8, no shared expert). Transformer Engine's GroupedLinear quantizes each
    # local expert's slice of the fc1 input (32,768 rows × 2,048) and of the fc2 input (32,768 × 768)
    # (tex.split_quantize, TE v2.7), where the dense count holds one fc1 input of 4,096 × 2,048. Current
    # scaling reads each quantized input once more than delayed scaling (its amax kernel): 1 pass of 2 B
    # per input element more. By hand, per layer forward: dense casts 3 × 2 × 4,096 × 2,048 = 50.3 MB;
    # routed 2 × (32,768 × 2,816 − 4,096 × 2,048) = 167.8 MB; × 3 (forward and backward) × 48 layers × 8
    # micro-batches = 251.3 GB / (3.35 TB/s × 0.85) = 88.24 ms.
    layout = _layout(tp=1, dp=8, ep=8)
    dense = 3 * 2 * 4096 * 2048
    routed = 2 * (32768 * (2048 + 768) - 4096 * 2048)
    extra = (dense + routed) * 3 * 48 * 8 / (3.35e12 * 0.85)
    assert extra == pytest.approx(88.24e-3, abs=1e-5)
    delayed = _compute_s("qwen3-30b-a3b", layout, precision="fp8")
    current = _compute_s("qwen3-30b-a3b", layout, precision="fp8_current")
    assert current - delayed == pytest.approx(extra, rel=1e-9)
    # The routed copies outweigh the dense casts top_k-fold: most of the difference is theirs.
    assert routed > 3 * dense


def test_allgather_dispatcher_gathers_every_token_of_the_tp_ep_group() -> None:
    # Megatron-Core's allgather dispatcher on the Mixtral layout above (tp 2 × ep 8 = 16 consecutive ranks,
    # 8 per node over 2 nodes): four rings (all-gather and reduce-scatter, forward and backward) of a
    # 16 × 8,388,608-element BF16 buffer = 268.4 MB each: 7/8 × X / 360 GB/s + 8 × 15 µs inside the node,
    # 1/2 × X / (8 × 48 GB/s) + (15 + 5) µs across the two, per ring (hand ring_time, factor 1).
    x = 2.0 * 16 * 4096 * 4096 / 2
    ring = (
        7 / 8 * x / NVLINK4_BUSBW + (16 - 2) * STEP_S + 1 / 2 * x / (8 * NDR400_BUSBW) + (STEP_S + FABRIC_S)
    )
    assert ring == pytest.approx(1.2320e-3, rel=1e-3)  # 0.652 + 0.210 + 0.350 + 0.020 ms
    assert _a2a_s(moe_dispatcher="allgather") == pytest.approx(LAYER_MB * 4 * ring, rel=1e-9)  # 0.631 s
    # 3.5 times the alltoall's 0.179 s: the gather does not shrink with top_k / experts.
    assert _a2a_s(moe_dispatcher="allgather") > 2.9 * _a2a_s()


def test_dropless_routing_waits_for_the_busiest_expert_parallel_rank() -> None:
    # Mixtral on tp2 ep8: each rank routes 4,096 tokens × top 2 = 8,192 rows; the busiest of 8 ranks lies
    # E[max of 8 standard normals] ≈ Φ⁻¹(7.625 / 8.25) = 1.434 standard deviations (Blom; exact 1.424;
    # √8,192 = 90.5 rows) above the mean: factor 1 + 1.434 / 90.5 = 1.01585 on the all-to-all (and the
    # routed GEMMs); balanced routing (token drop padded to capacity, or forced balance) has none. (1.02253
    # with the Gumbel limit √(2 ln 8) = 2.039, which overstates the maximum of 8 draws by 43 %.)
    factor = 1 + NormalDist().inv_cdf(7.625 / 8.25) / np.sqrt(4096 * 2)
    assert factor == pytest.approx(1.01585, abs=1e-5)
    assert _a2a_s(moe_load_balance="dropless") == pytest.approx(_a2a_s() * factor, rel=1e-9)


def test_rejects_an_unknown_dispatcher_naming_the_field() -> None:
    with pytest.raises(InputError) as err:
        _a2a_s(moe_dispatcher="nccl")
    assert err.value.field == "training.moe_dispatcher"
    with pytest.raises(InputError) as err:
        _a2a_s(moe_load_balance="even")
    assert err.value.field == "training.moe_load_balance"


def test_fp8_dispatch_sends_the_forward_dispatch_and_backward_combine_in_fp8() -> None:
    # 2 × (1 + 1/32) + 2 × 2 = 6.0625 B per element instead of 8 (MXFP8 scale per 32 elements).
    bf16 = _a2a_s(precision="fp8")
    assert _a2a_s(precision="fp8", moe_fp8_dispatch=True) == pytest.approx(bf16 * 6.0625 / 8, rel=1e-9)


def test_fp8_dispatch_needs_fp8_training() -> None:
    with pytest.raises(InputError) as err:
        _a2a_s(moe_fp8_dispatch=True)
    assert err.value.field == "training.moe_fp8_dispatch"


def test_a2a_overlap_hides_the_paired_micro_batches() -> None:
    # Combined 1F1B without pipelining: the first forward and the last backward run alone, so 1 of the 4
    # micro-batches' all-to-alls stays exposed; the other 3/4 lie under the paired micro-batch's compute
    # (far longer), costing the 20 % overlap penalty.
    exposed = _a2a_s()
    assert _a2a_s(moe_a2a_overlap=True) == pytest.approx(exposed * (1 / 4 + 3 / 4 * 0.2), rel=1e-9)


def _deepseek_a2a_s(**training: Any) -> float:
    # DeepSeek-V3 (256 routed experts, top 8) on 1,024 H100 at tp1 pp16 ep64: 8 ranks per node, 8 nodes.
    return _a2a_of("deepseek-v3", 128, 4096, _layout(tp=1, pp=16, dp=64, ep=64), **training)


def test_node_limited_routing_caps_the_remote_nodes_per_token() -> None:
    # alltoall: 8 × 56/64 = 7 remote copies per token. deepep: 8 × (1 − (7/8)^8) = 5.251 nodes hit, 4.595
    # remote; with M = 4 (DeepSeek-V3), 4 × 7/8 = 3.5. The NIC binds each time (at most 7.4 NVLink copies,
    # one per destination GPU, at 360 GB/s take less than 3.5 at 48 GB/s).
    alltoall = _deepseek_a2a_s()
    deepep = _deepseek_a2a_s(moe_dispatcher="deepep")
    limited = _deepseek_a2a_s(moe_dispatcher="deepep", moe_max_domains_per_token=4)
    assert deepep / alltoall == pytest.approx(8 * (1 - (7 / 8) ** 8) * 7 / 8 / 7, rel=1e-9)
    assert limited / alltoall == pytest.approx(3.5 / 7, rel=1e-9)


def _mixtral_pp_a2a_s(vpp: int, recompute: str = "none", **training: Any) -> float:
    # Mixtral 8x7B on 512 H100: tp1 pp4 dp128 ep8, micro-batch 1, 4,096 sequences: m = 32.
    layout = _layout(tp=1, pp=4, dp=128, ep=8, vpp=vpp, recompute=recompute)
    return _a2a_of("mixtral-8x7b", 64, 4096, layout, **training)


def test_a2a_overlap_follows_megatron_core_conditions_and_warm_up() -> None:
    exposed = _mixtral_pp_a2a_s(2)
    # pp 4, vpp 2, m = 32 micro-batches: W = 2·3 + 1·4 + 1 = 11 of the 64 chunks run alone.
    overlapped = _mixtral_pp_a2a_s(2, moe_a2a_overlap=True)
    assert overlapped == pytest.approx(exposed * (11 / 64 + 53 / 64 * 0.2), rel=1e-9)
    # Megatron-Core refuses the overlap with pp > 1 and no interleaving, and with full recompute.
    assert _mixtral_pp_a2a_s(1, moe_a2a_overlap=True) == pytest.approx(_mixtral_pp_a2a_s(1))
    assert _mixtral_pp_a2a_s(2, "full", moe_a2a_overlap=True) == pytest.approx(_mixtral_pp_a2a_s(2, "full"))


def test_hsdp_all_reduces_the_expert_gradients_across_replicas() -> None:
    # Mixtral 8x7B on tp1 dp512 ep8 with HSDP: the dense weights shard over the node's 8 ranks, the experts
    # over max(1, 8 / ep 8) = 1 (each GPU holds its own experts whole), so their gradients are all-reduced
    # over the 512 / 8 = 64 expert-data-parallel ranks spaced tp·ep = 8 apart: one per node, 64 nodes.
    # Expert gradients per GPU: 32 layers × 8 experts / ep 8 × 176,160,768 × 2 B = 11.27 GB;
    # 2 × 63/64 × 11.27 GB / 48 GB/s + 2 × 63 × (15 + 5) µs = 0.4649 s. Before, only the dense all-reduce
    # (among the 64 node replicas of a 1/8 shard, 0.0153 s) was timed.
    problem = parse_problem(_mixtral_512(), **SPECS)
    lay = layouts(
        tp=1, pp=1, dp=512, cp=1, ep=8, vpp=1, micro_batch=1, recompute=0, sharding=4, sequence_parallel=0
    )
    c = _shape(problem, lay)
    zero = np.zeros(1)
    _, hsdp = _fsdp(c, _held(problem, lay), mb_fwd_bwd=zero, n_stage=np.full(1, 32.0), last_bwd=zero)
    expert_bytes = 2.0 * 32 * 8 / 8 * 176_160_768
    expert_ar = 2 * 63 / 64 * expert_bytes / NDR400_BUSBW + 2 * 63 * (STEP_S + FABRIC_S)
    # Dense: 32 × (41,943,040 + 8,192 + 32,768) + 2 × 131,072,000 = 1,605,632,000 parameters, 2 B, an
    # eighth each, all-reduced over 64 ranks spaced 8 apart.
    dense_ar = 2 * 63 / 64 * 2.0 * 1_605_632_000 / 8 / NDR400_BUSBW + 2 * 63 * (STEP_S + FABRIC_S)
    assert expert_ar == pytest.approx(0.4649, abs=1e-4)
    assert hsdp[0] == pytest.approx(expert_ar + dense_ar, rel=1e-9)


def test_a_fixed_layout_says_which_moe_settings_it_does_not_take() -> None:
    request = _mixtral_512(moe_a2a_overlap=True, moe_max_domains_per_token=2)
    request["parallelism"] = _layout(tp=1, pp=4, dp=128, ep=8)
    warnings = estimate(request, **SPECS)["warnings"]
    assert any(w.startswith("moe_a2a_overlap is not taken") for w in warnings)  # pp 4 without vpp
    assert any(w.startswith("moe_max_domains_per_token changes no traffic") for w in warnings)
    request["parallelism"] = _layout(tp=1, pp=4, dp=128, ep=8, vpp=2)
    request["training"]["moe_dispatcher"] = "deepep"
    assert not any(w.startswith("moe_") for w in estimate(request, **SPECS)["warnings"])


def test_shared_expert_overlap_hides_the_all_to_all_under_the_shared_expert() -> None:
    # DeepSeek-V3 on tp1 pp1 dp1024 ep64, 4,096 sequences: m = 4 micro-batches of 61 layers, 58 of them MoE
    # with one shared expert (gated, 2,048 wide, hidden 7,168). Its forward GEMMs on 4,096 tokens at H100's
    # 794.5 TFLOP/s mamf × 0.79 (hopper, refitted 0.75 -> 0.81 once flash2 runs at its measured H100 rate,
    # 0.81 -> 0.79 in engine version 23's joint refit) and 3.35 TB/s × 0.85 HBM (additive roofline, 16-bit
    # operands):
    rate, hbm = 794.5e12 * 0.79, 3.35e12 * 0.85
    tokens, h, f = 4096, 7168, 2048
    up = 2 * tokens * h * 2 * f / rate + (2 * (tokens * h + h * 2 * f) + 2 * tokens * 2 * f) / hbm
    down = 2 * tokens * f * h / rate + (2 * (tokens * f + f * h) + 2 * tokens * h) / hbm
    shared = 58 / 61 * (up + down)
    assert shared == pytest.approx(6.320e-4, rel=1e-3)
    # The all-to-all (7 fabric copies of 235 MB per layer, ~34 ms) is far longer than the shared expert's
    # forward + backward (3 × 0.63 ms), which it hides at the 20 % overlap penalty: 0.8 × 3 × shared less
    # per layer and micro-batch, on 62 layers: the preset's multi-token-prediction module runs one more
    # (an MoE layer, timed as the model's average layer) on the one stage.
    layout = _layout(tp=1, dp=1024, ep=64)
    exposed = _a2a_of("deepseek-v3", 128, 4096, layout)
    hidden = _a2a_of("deepseek-v3", 128, 4096, layout, moe_shared_expert_overlap=True)
    assert exposed - hidden == pytest.approx(4 * 62 * 0.8 * 3 * shared, rel=1e-9)  # 0.376 s


def test_full_recompute_reruns_the_forward_dispatch_and_combine() -> None:
    # Full recompute reruns each layer's forward in backward, its MoE token dispatcher included
    # (Megatron-Core recompute.py checkpointed_forward at d98e8a64): the forward dispatch and combine run
    # twice, 6 all-to-alls per layer and micro-batch instead of 4, factor 6 / 4 = 1.5 on every layer, as
    # selective recompute of the moe module already counted. Mixtral on tp1 pp4 ep8, vpp 1 (no overlap).
    plain = _mixtral_pp_a2a_s(1)
    assert _mixtral_pp_a2a_s(1, "full") == pytest.approx(plain * 6 / 4, rel=1e-9)
    # selective recompute without the moe module reruns no all-to-all
    assert _mixtral_pp_a2a_s(1, "selective", recompute_modules=["core_attn"]) == pytest.approx(
        plain, rel=1e-9
    )
