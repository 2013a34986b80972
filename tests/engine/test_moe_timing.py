"""Mixture-of-experts communication in the training timing (issue 19 items 1 and 2).

Item 1: under ZeRO-3/HSDP the expert weights are sharded over the expert-data-parallel group
(dp·cp/ep ranks spaced tp·ep apart, Megatron-Core's expert_data_parallel_size), so each micro-batch
gathers them twice and reduce-scatters their gradients, like the dense weights. Before, only the dense
and embedding weights were gathered, and the search preferred EP 1 with ZeRO-3 for Mixtral on 512 GPUs.
"""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.training import estimate

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
    request["parallelism"] = {
        "tp": 4,
        "pp": 1,
        "dp": 128,
        "cp": 1,
        "ep": 1,
        "vpp": 1,
        "micro_batch": 8,
        "recompute": "none",
        "sharding": "zero3",
        "sequence_parallel": True,
    }
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
