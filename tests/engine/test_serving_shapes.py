"""Serving engine on the training engine's newer shapes: multi-head latent attention (DeepSeek-V3) and a head
width apart from hidden / heads (Qwen3). Golden numbers by hand, written beside each test.

Shapes from the released config.json files (as test_model_shapes.py spells them): deepseek-ai/DeepSeek-V3
(61 layers, hidden 7168, 128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
qk_rope_head_dim 64, v_head_dim 128, 256 routed experts of 2048 + 1 shared, top-8, first 3 layers dense, one
MTP module) and Qwen/Qwen3-30B-A3B (48 layers, hidden 2048, 32 heads of head_dim 128, 4 KV heads, 128
experts of 768, top-8, untied). Not read from the presets, so that the tests do not move when a preset does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_model_shapes import DEEPSEEK_V3 as DEEPSEEK_V3_SHAPE
from test_model_shapes import QWEN3_30B

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.model import model_from_dict
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving
from clusterdesigner.engine.serving_cost import serving_cost

SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"
CATALOG = specs_from_records(json.loads(SEED.read_text()))

# The released configs, worked by hand in test_model_shapes.py (one copy of each shape).
DEEPSEEK_V3: dict[str, Any] = {**DEEPSEEK_V3_SHAPE, "mtp_depth": 1}
QWEN3_30B_A3B: dict[str, Any] = QWEN3_30B
DSV3 = model_from_dict(DEEPSEEK_V3, presets=PRESETS)
QWEN3 = model_from_dict(QWEN3_30B_A3B, presets=PRESETS)


def _input(model: dict[str, Any], **overrides: object) -> serving.ServingInput:
    request = {**serving.EXAMPLE_REQUEST, "model": model, "accelerator": "h200", **overrides}
    inp, _ = serving.parse_request(request, accelerators=CATALOG.accelerators)
    return inp


# ---- multi-head latent attention ---------------------------------------------------------------------------
def test_deepseek_v3_caches_the_576_element_latent_per_layer_about_70_kb_a_token_at_bf16() -> None:
    # DeepSeek-V2 (arXiv:2405.04434) Sec. 2.1.4: (d_c + d_h^R) · l elements a token, once for all heads.
    # DeepSeek-V3: (512 + 64) × 61 layers × 2 B = 576 × 61 × 2 = 70,272 B ≈ 70 KB at BF16; 35,136 B at FP8.
    # Full K and V for its 128 heads (192 + 128 wide) would be 61 × 128 × 320 × 2 B = 4,997,120 B, 71× more.
    assert serving.kv_bytes_per_token(model=DSV3, precision="bf16") == 70_272
    assert serving.kv_bytes_per_token(model=DSV3, precision="fp8") == 35_136
    assert serving.kv_bytes_per_token(model=DSV3, precision="bf16") * 71 < 61 * 128 * 320 * 2


def test_mla_latent_is_replicated_on_every_tensor_parallel_gpu_and_split_by_pipeline_stage() -> None:
    # The latent is one KV head every tp rank reads in full (vLLM's MLA backend, SGLang's DP-attention guide):
    # 61 × 576 × 1 B = 35,136 B per GPU at tp 1, 8 and 16 alike; pp 2 halves the layers a GPU holds.
    per_gpu = [
        float(serving.kv_bytes_per_token_per_gpu(model=DSV3, precision="fp8", tp=t, pp=1)) for t in (1, 8, 16)
    ]
    assert per_gpu == [35_136.0] * 3
    assert float(serving.kv_bytes_per_token_per_gpu(model=DSV3, precision="fp8", tp=8, pp=2)) == 17_568.0
    arrays = serving.kv_bytes_per_token_per_gpu(model=DSV3, precision="fp8", tp=[1, 8], pp=[1, 1])
    assert list(arrays) == [35_136.0, 35_136.0]  # numpy-friendly, as the layout search calls it


def test_batch_that_fits_deepseek_v3_on_eight_h200_counts_the_latent_not_full_heads() -> None:
    # H200 141 GiB × 0.9 (reserve 0.1) = 136,257,837,465.6 B; FP8 weights 671,026,404,352 / 8 =
    # 83,878,300,544 B; free 52,379,536,921.6 B; a sequence of 1,024 + 256/2 = 1,152 tokens holds
    # 1,152 × 35,136 = 40,476,672 B on each GPU → ⌊1,294.06⌋ = 1,294 sequences (full heads at head_dim 192
    # gave 121).
    inp = _input(DEEPSEEK_V3)
    assert inp.model.total_params == 671_026_404_352
    assert int(serving.batch_that_fits(inp, tp=8, pp=1)) == 1294


def test_mla_prefill_attention_is_multi_head_attention_of_192_wide_keys_and_128_wide_values() -> None:
    # Causal prefill of n = 1,024 tokens: n² · heads · (qk 192 + v 128) · L = 1,048,576 × 128 × 320 × 61
    # = 2,619,930,050,560 FLOPs (2 · n² · heads · 192 · L would count a 192-wide value: 3.14e12).
    assert serving.prefill_attention_flops(DSV3, 1024) == 2_619_930_050_560


def test_mla_decode_attention_is_compute_bound_at_tp1_and_memory_bound_at_tp8() -> None:
    # Absorbed decode (vLLM's MLA decode path): per head a 576-wide query/key and a 512-wide value over the
    # latent, 2 × 128 × (2 × 512 + 64) = 278,528 FLOPs per context token per layer, from 576 FP8 bytes.
    # H200, tensorrt-llm stack: 0.65 × 1,978.9 TFLOP/s = 1.286285e15 FLOP/s, 0.9 × 4.8 TB/s = 4.32e12 B/s.
    # Per context token of one sequence (61 layers):
    #   tp 1: FLOPs 278,528 × 61 / 1.286285e15 = 13.209 ns > bytes 35,136 / 4.32e12 = 8.133 ns: compute;
    #   tp 8: FLOPs / 8 = 1.651 ns < bytes 8.133 ns (the latent is read in full on every GPU): memory.
    # Only the attention term depends on the context, so doubling the prompt from 1,024 to 2,048 tokens
    # (context 1,152 → 2,176, +1,024) adds to a 64-sequence step 64 × 1,024 × 13.209 ns = 0.8656 ms at tp 1
    # and 64 × 1,024 × 8.133 ns = 0.5330 ms at tp 8.
    assert serving.mla_decode_attention_flops_per_context_token(DSV3) == 278_528
    short, long = _input(DEEPSEEK_V3), _input(DEEPSEEK_V3, input_tokens=2048)
    peak, hbm = 1978.9e12 * 0.65, 4.8e12 * 0.9
    for tp, per_token in ((1, 278_528 * 61 / peak), (8, 35_136 / hbm)):
        grown = float(serving.decode_step_s(long, batch=64, tp=tp, pp=1)) - float(
            serving.decode_step_s(short, batch=64, tp=tp, pp=1)
        )
        assert grown == pytest.approx(64 * 1024 * per_token, rel=1e-9)
    assert 64 * 1024 * 278_528 * 61 / peak == pytest.approx(0.8656e-3, rel=1e-3)
    assert 64 * 1024 * 35_136 / hbm == pytest.approx(0.5330e-3, rel=1e-3)


def test_deepseek_v3_estimate_reports_the_latent_and_states_its_assumptions() -> None:
    # The preset is the released shape (MLA widths and one MTP module), the same as DEEPSEEK_V3.
    preset = PRESETS["deepseek-v3"]
    assert {k: getattr(preset, k) for k in DEEPSEEK_V3} == DEEPSEEK_V3
    request = {**serving.EXAMPLE_REQUEST, "model": {"preset": "deepseek-v3"}, "accelerator": "h200"}
    result = serving_cost.estimate(request, catalog=CATALOG)
    assert result.kv_bytes_per_token == 35_136  # 61 × 576 × 1 B (FP8 KV)
    best = result.best
    assert best.tp * best.pp >= 8  # 671 GB of FP8 weights need a node of H200s
    notes = dict(result.assumptions)
    assert "512 + 64 = 576-element latent" in notes["multi_head_latent_attention"]
    assert "every tensor-parallel GPU" in notes["multi_head_latent_attention"]
    assert "not served" in notes["multi_token_prediction"]
    llama = serving_cost.estimate(dict(serving.EXAMPLE_REQUEST), catalog=CATALOG)
    assert "multi_head_latent_attention" not in dict(llama.assumptions)  # other models' are unchanged
    assert "multi_token_prediction" not in dict(llama.assumptions)


# ---- head_dim apart from hidden / heads (Qwen3) ------------------------------------------------------------
def test_qwen3_kv_and_attention_use_head_dim_128_not_hidden_over_heads_64() -> None:
    # Qwen3-30B-A3B: 2048 / 32 = 64, but its heads are 128 wide (config.json head_dim).
    # KV a token: 48 layers × 4 KV heads × 128 × 2 (K, V) × 2 B = 98,304 B at BF16 (49,152 B at FP8);
    # at tp 8 each of the 4 KV heads is replicated, ⌈4/8⌉ = 1 a GPU: 48 × 1 × 128 × 2 × 1 B = 12,288 B.
    # Prefill attention of 1,024 tokens: 2 × 1,024² × 32 × 128 × 48 = 412,316,860,416 FLOPs.
    assert QWEN3.head_dim == 128 and QWEN3.hidden // QWEN3.heads == 64
    assert serving.kv_bytes_per_token(model=QWEN3, precision="bf16") == 98_304
    assert float(serving.kv_bytes_per_token_per_gpu(model=QWEN3, precision="fp8", tp=8, pp=1)) == 12_288
    assert serving.prefill_attention_flops(QWEN3, 1024) == 412_316_860_416


def test_qwen3_decode_attention_reads_the_128_wide_kv_heads() -> None:
    # H200, tp 1, batch 32: per context token 49,152 B at 4.32e12 B/s = 11.378 ns, its 4 × 32 × 128 × 48 =
    # 786,432 FLOPs at 1.286285e15 = 0.611 ns: memory-bound. A prompt 1,024 tokens longer adds
    # 32 × 1,024 × 11.378 ns = 0.3728 ms to the step (with 64-wide heads it would be half).
    short, long = _input(QWEN3_30B_A3B), _input(QWEN3_30B_A3B, input_tokens=2048)
    grown = float(serving.decode_step_s(long, batch=32, tp=1, pp=1)) - float(
        serving.decode_step_s(short, batch=32, tp=1, pp=1)
    )
    assert grown == pytest.approx(32 * 1024 * 49_152 / 4.32e12, rel=1e-9)
    assert grown == pytest.approx(0.3728e-3, rel=1e-3)


def test_qwen3_prefill_time_counts_the_4096_wide_queries() -> None:
    # One 8,192-token prompt at tp 1: 2 · N_active · n + 2 · n² · 32 · 128 · 48 FLOPs; the attention term,
    # 2 × 8,192² × 196,608 = 26.39e12, is 4,096-wide (a hidden-wide count, 2048, would halve it).
    inp = _input(QWEN3_30B_A3B, input_tokens=8192)
    n = 8192
    flops = 2 * inp.model.active_matmul_params * n + 2 * n * n * 32 * 128 * 48
    compute = flops / (1978.9e12 * 0.65)
    assert float(serving.prefill_s(inp, tp=1, pp=1)) == pytest.approx(compute, rel=1e-9)
    assert 2 * n * n * 32 * 128 * 48 == pytest.approx(26.39e12, rel=1e-3)


def test_a_qwen3_estimate_reports_kv_of_its_128_wide_heads() -> None:
    preset = PRESETS["qwen3-30b-a3b"]  # the released shape, as QWEN3_30B_A3B
    assert {k: getattr(preset, k) for k in QWEN3_30B_A3B} == QWEN3_30B_A3B
    request = {**serving.EXAMPLE_REQUEST, "model": {"preset": "qwen3-30b-a3b"}, "accelerator": "h200"}
    result = serving_cost.estimate(request, catalog=CATALOG)
    assert result.kv_bytes_per_token == 49_152  # 48 × 4 × 128 × 2 × 1 B (FP8 KV)
    assert result.best.meets_targets


def test_disaggregated_pools_move_the_whole_latent_to_every_decode_gpu() -> None:
    # Each prefill GPU of a tp-8 replica holds the stage's whole latent and its decode counterpart needs it
    # all: 1,024 prompt tokens × 61 × 576 × 1 B = 35,979,264 B through one 50 GB/s NIC = 0.7196 ms (a
    # split cache, as for GQA, would send an eighth).
    request = {**serving.EXAMPLE_REQUEST, "model": {"preset": "deepseek-v3"}, "accelerator": "h200"}
    split = serving_cost.estimate(request, catalog=CATALOG).disaggregated
    assert split is not None and split.prefill_layout == "tp8 pp1"
    assert split.kv_transfer_s == pytest.approx(1024 * 61 * 576 / 50e9, rel=1e-12)
    assert split.kv_transfer_s == pytest.approx(0.7196e-3, rel=1e-4)
