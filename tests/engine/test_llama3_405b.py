"""Llama 3 405B pre-training, predicted with Meta's own layouts and compared with what Meta measured.

Source: Llama Team, "The Llama 3 Herd of Models" (arXiv:2407.21783), Table 4 ("Scaling configurations and
MFU for each stage of Llama 3 405B pre-training"): GPUs, TP, CP, PP, DP, sequence length, batch per DP
rank, 16M tokens per batch, TFLOP/s per GPU and BF16 MFU. The GPU, TP/CP/PP, tokens-per-batch and TFLOP/s
columns also stand on a slide by P. Balaji (SC'24, "Herding Llamas"), transcribed at
glennklockwood.com/garden/llama-3.1; DP, batch per rank and MFU are from the paper's table as recalled,
not re-read here. Hardware (Sec. 3.3.1): H100 80GB HBM3 at 700 W, 8 per server on NVLink, 400 Gb/s RoCE
per GPU, full bisection inside a 3,072-GPU pod (shared/reference network.csv).

What the table does not give is taken from the paper's text (Sec. 3.3.2):
- an interleaved schedule whose first chunk on the first stage holds only the embedding and whose last
  chunk on the last stage holds only the output layer and loss, after one layer each was taken from the
  first and last stages: 126 layers + 2 = 128 chunks of one layer over 16 stages, so vpp = 8;
- no activation checkpointing for 8K-token sequences (recompute none), micro-batch 1;
- FSDP that shards optimizer states and gradients but keeps parameters gathered between forward and
  backward (ZeRO-2 in this engine's terms);
- FlashAttention-2 kernels (``training.attention_kernel: flash2``): Meta's own PyTorch stack, whose runs
  predate FlashAttention-3 (Shah et al., arXiv:2407.08608, July 2024); the engine's default under the
  Megatron-Core profile is Transformer Engine's fused attention, which Meta did not run.
"""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.training import estimate

# (GPUs, tp, cp, pp, dp, seq_len, measured TFLOP/s per GPU, measured BF16 MFU)
TABLE_4 = [
    (8192, 8, 1, 16, 64, 8192, 430, 0.43),
    (16384, 8, 1, 16, 128, 8192, 400, 0.41),
    (16384, 8, 16, 16, 8, 131072, 380, 0.38),
]
TOKENS_PER_BATCH = 16 * 2**20


def _request(
    gpus: int, tp: int, cp: int, pp: int, dp: int, seq_len: int, **parallelism: Any
) -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-405b", "seq_len": seq_len},
        "training": {
            "tokens": 15.6e12,
            "global_batch_tokens": TOKENS_PER_BATCH,
            "precision": "bf16",
            "attention_kernel": "flash2",
        },
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": gpus // 8, "fabric": "ib-ndr400"},
        "parallelism": {"tp": tp, "cp": cp, "pp": pp, "dp": dp, **parallelism},
    }


MEASURED_LAYOUT = {
    "vpp": 8,
    "micro_batch": 1,
    "recompute": "none",
    "sharding": "zero2",
    "sequence_parallel": True,
}


def _predict(row: tuple[int, int, int, int, int, int, float, float], **layout: Any) -> dict[str, Any]:
    gpus, tp, cp, pp, dp, seq_len, _, _ = row
    request = _request(gpus, tp, cp, pp, dp, seq_len, **{**MEASURED_LAYOUT, **layout})
    return estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)


# The 131K-token row misses since an Ampere-design flash2 kernel on H100 runs at its A100 rate x FA2's
# measured H100 speedup (timing.AMPERE_KERNEL_SPEEDUP): 282 TFLOP/s, −25.7 %. Attention is most of that
# step, so Meta's kernel, which the paper does not name, ran well above FA2's measured H100 rate; since ZeRO-2
# reduce-scatters every micro-batch's gradients (timing._zero2_reduce_scatter_per_mb): 278.2, −26.8 %; since
# FlashAttention-2 runs at its published H100 rates, no longer derated by the family factor (engine version
# 23, with the Hopper factor refitted 0.81 -> 0.79): 295.4, −22.3 %.
# The two 8K-token rows missed on the fast side after the joint refit (Hopper family factor 0.75 -> 0.81):
# 470.0 TFLOP/s (+9.3 %) and 441.2 (+10.3 %), strict xfails. ZeRO-2 keeps only its shard of the gradients
# (memory: 0.09 GiB here), so each of the 32 (16) micro-batches reduce-scatters its gradients, where the
# engine had timed one reduction per step: 415.4 TFLOP/s, MFU 42.0 % (−3.4 %; Meta 430, 43 %) and 388.6,
# 39.3 % (−2.9 %; Meta 400, 41 %). Gradients kept whole over the micro-batches (ZeRO-1) would need 82.7 GiB at
# 8,192 GPUs, over the 80 GB Meta trained on. The paper's FP32 reduce-scatter (Sec. 3.3.2, numerical
# stability) is not applied (grad_dtype stays bf16): at 4 B per parameter every micro-batch the engine gives
# 343.0 and 312.2 (−20 %, −22 %): Meta hid more of it than the backward of each micro-batch that the engine
# overlaps it with, or reduced otherwise; the paper does not say which.
# Issue 33 (c1), what the miss is not. Context parallelism: the engine charges Transformer Engine's ring,
# 15 x 4.19 MB of K and V per layer and micro-batch (2 · 2 B · 8,192 tokens · 1,024 / tp 8) at the 48 GB/s
# the 128-GPU span gets, 1.31 ms forward and twice that backward, under the attention: cp_comm 0.10 s of the
# 20.04 s step (before ZeRO-2 reduced every micro-batch). Meta all-gathers K and V and leaves the gather
# exposed (Sec. 3.3.2): 1.31 ms forward plus a reduce-scatter of dK, dV backward, x about 8 layers x 16 micro-
# batches = 0.34 s, 1.2 % slower (−24.7 %):
# not the cause. Load balancing: Meta's 2 x CP chunks per rank balance the causal work, as the engine
# assumes. The kernel: flash2 is timed on the full s x s count at FA2's (non-causal) rates, i.e. the causal
# half at half FA2's causal rate; that fits llm-foundry's Triton kernel (the rows it was set by), which its
# header puts slightly below FlashAttention-1's CUDA kernel (llmfoundry/models/layers/flash_attn_triton.py at
# llm-foundry v0.3.0, copied from flash-attention eff9fe6b) while FlashAttention-2 is about 2x
# FlashAttention-1 (Dao 2023, abstract). FA2 itself on the causal count (335 TFLOP/s forward at 16K, Shah
# et al. 2024 Fig. 5) would halve the attention: about +18 % on this row and +18-19 % on the 8K rows, so
# Meta's attention ran between the two.
THROUGHPUT_ROWS = [
    TABLE_4[0],
    TABLE_4[1],
    pytest.param(TABLE_4[2], marks=pytest.mark.xfail(strict=True, reason="flash2 on H100 at FA2's speedup")),
]


@pytest.mark.parametrize("row", THROUGHPUT_ROWS, ids=["8192gpus-cp1", "16384gpus-cp1", "16384gpus-cp16"])
def test_llama3_405b_throughput_is_within_ten_percent_of_meta_measurement(row: Any) -> None:
    r = _predict(row)
    # Predicted here: 458.0, 429.7 and 373.7 TFLOP/s (+6.5 %, +7.4 %, −1.7 %) before timing.
    # AMPERE_KERNEL_SPEEDUP; the first two move little (attention is a small share at 8K tokens). Since the
    # joint refit after the merge: 470.0, 441.2 and 289.6 (+9.3 %, +10.3 %, −23.8 %); since ZeRO-2's
    # per-micro-batch reduce-scatter: 415.4, 388.6 and 278.2 (−3.4 %, −2.9 %, −26.8 %); since engine version
    # 23 (FlashAttention-2 at its published rates, Hopper 0.81 -> 0.79): 411.2, 384.5 and 295.4 (−4.4 %,
    # −3.9 %, −22.3 %).
    assert r["model_tflops_per_gpu"] == pytest.approx(row[6], rel=0.10)
    assert r["mfu"] == pytest.approx(row[7], abs=0.04)


@pytest.mark.parametrize("row", TABLE_4, ids=lambda r: f"{r[0]}gpus-cp{r[2]}")
def test_llama3_405b_fits_in_80_gib_without_activation_checkpointing(row: Any) -> None:
    # Meta trained each of these on 80 GB H100s. Balanced end stages (7 layers + embedding, 7 + output),
    # no dropout masks (Llama trains without dropout) and all 16 or 32 micro-batches of the first stage in
    # flight: 77.1 GiB at 8K GPUs (32 micro-batches), 69.6 GiB at 16K.
    r = _predict(row)
    assert r["fits"], r["memory_per_gpu_gib"]
    assert 60 < r["memory_per_gpu_gib"]["total"] < 80


def test_search_over_the_free_fields_finds_meta_interleaved_schedule_at_16k_gpus() -> None:
    # Only TP, CP and PP fixed, as in the example: the search lands on Meta's schedule (vpp 8,
    # micro-batch 1, no recompute), without a memory headroom. At 16,384 GPUs (16 micro-batches) the whole
    # gradients fit (ZeRO-1, 76.3 GiB of 80), and one reduction per step (436.5 TFLOP/s; 441.2 before engine
    # version 23) beats ZeRO-2's reduce-scatter of every micro-batch (Meta's sharding, 70.4 GiB: 384.5; 388.6
    # before); at 8,192 GPUs ZeRO-1 would need 82.7 GiB.
    request = _request(16384, 8, 1, 16, 128, 8192)
    del request["parallelism"]["dp"]
    request["training"]["memory_headroom"] = 0.0
    r = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    best = r["parallelism"]
    assert (best["vpp"], best["micro_batch"], best["recompute"], best["sharding"]) == (8, 1, "none", "zero1")
    assert r["model_tflops_per_gpu"] == pytest.approx(436.5, abs=0.1)
    assert r["memory_per_gpu_gib"]["total"] == pytest.approx(76.3, abs=0.05)
    assert _predict(TABLE_4[1])["model_tflops_per_gpu"] == pytest.approx(384.5, abs=0.1)
    zero1_8k = _predict(TABLE_4[0], sharding="zero1")
    assert not zero1_8k["fits"] and zero1_8k["memory_per_gpu_gib"]["total"] == pytest.approx(82.7, abs=0.05)


def test_the_default_memory_headroom_trades_meta_layout_for_full_recompute() -> None:
    # The default headroom keeps 14.1 % of 80 GiB free (68.7 GiB usable; engine/training/error_band.py):
    # Meta's 70.4 GiB layout is inside it, so the search pays a recompute pass (about a third more FLOPs per
    # token) for 19.6 GiB. The headroom comes from the BLOOM memory rows; this measured run fit within it.
    request = _request(16384, 8, 1, 16, 128, 8192)
    del request["parallelism"]["dp"]
    r = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert r["summary"]["training"]["memory_headroom"] == pytest.approx(0.141)
    assert r["parallelism"]["recompute"] == "full"
    assert r["memory_per_gpu_gib"]["total"] <= 80 * (1 - 0.141)
    assert r["model_tflops_per_gpu"] < 400 * 0.9


def test_interleaving_without_the_embedding_and_loss_split_is_refused_with_the_reason() -> None:
    # 126 layers over 16 × 3 chunks: neither 126 nor 128 divides by 48.
    with pytest.raises(InputError, match="vpp 3 × pp 16 divides neither 126 layers nor 128"):
        _predict(TABLE_4[1], vpp=3)


def test_non_interleaved_16_stage_schedule_pays_the_bubble_meta_avoided() -> None:
    # vpp 1 with 16 micro-batches on 16 stages: bubble (p − 1)/m = 15/16 of the work, so far below 400. The
    # work includes ZeRO-2's per-micro-batch reduce-scatters (fsdp_comm_exposed), which the bubble's idle
    # slots last as long as.
    r = _predict(TABLE_4[1], vpp=1)
    t = r["step_time_s"]
    parts = ("compute", "recompute", "tp_comm", "cp_comm", "moe_all_to_all", "pp_p2p", "fsdp_comm_exposed")
    work = sum(t[k] for k in parts)
    assert t["pp_bubble"] / work == pytest.approx(15 / 16, rel=1e-6)
    assert r["model_tflops_per_gpu"] < 300
