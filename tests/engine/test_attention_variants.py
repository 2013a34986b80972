"""Local attention (issue #32): sliding-window and chunked layers and attention sinks, in FLOPs, time, memory
and KV, with the GPT-OSS, Llama 4 and Kimi K2 presets' parameter counts against their published totals."""

from __future__ import annotations

import dataclasses

import pytest

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.model import ModelShape, model_from_dict
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving.serving import kv_bytes_per_token, prefill_attention_flops

GPT_OSS = PRESETS["gpt-oss-120b"]


def test_a_sliding_window_layers_attention_flops_by_hand() -> None:
    # Window 128, sequence 4,096, causal. Entries the mask keeps: Σ_{i=1..4096} min(i, 128) = 128·129/2 +
    # (4096 − 128)·128 = 8,256 + 507,904 = 516,160; a full causal layer keeps 4096·4097/2 = 8,390,656. On the
    # engine's full-matrix scale (a full layer scores all 4,096 keys) the window scores 2 · 516,160 / 4,097 =
    # 251.9697 keys, 6.15 % of the full layer's.
    model = dataclasses.replace(GPT_OSS, seq_len=4096)
    assert model.local_keys_per_query(4096) == pytest.approx(2 * 516_160 / 4097, rel=1e-12)
    assert model.local_keys_per_query(4096) / 4096 == pytest.approx(516_160 / 8_390_656, rel=1e-12)
    # Forward attention-core FLOPs a token, 64 heads of 64: full layer 4·64·64·4,096 = 67,108,864; windowed
    # layer 4·64·64·251.9697 = 4,128,296.3. GPT-OSS-120B: 18 of each → 1,282,268,882 against 36 full layers'
    # 2,415,919,104 (0.531×).
    windowed = 4 * 64 * 64 * 2 * 516_160 / 4097
    assert model.attention_core_flops_fwd_per_token == pytest.approx(18 * (67_108_864 + windowed), rel=1e-12)
    full = dataclasses.replace(model, sliding_window=0, local_layers=0)
    assert full.attention_core_flops_fwd_per_token == 36 * 67_108_864
    # Model FLOPs (fwd + bwd = 3 × fwd) fall by exactly 3 × 18 × the difference per layer.
    drop = full.model_flops_per_token - model.model_flops_per_token
    assert drop == pytest.approx(3 * 18 * (67_108_864 - windowed), rel=1e-12)


def test_chunked_layers_cost_one_chunk_per_query_and_nothing_less_when_the_sequence_fits_a_chunk() -> None:
    scout = PRESETS["llama4-scout"]
    # Sequence 8,192 in chunks of 8,192: a chunked layer is a full causal layer.
    assert scout.local_keys_per_query(8192) == pytest.approx(8192, rel=1e-12)
    # 32,768 in 4 chunks: 4 · 8192·8193/2 = 134,234,112 entries against 32768·32769/2 = 536,887,296.
    keys = scout.local_keys_per_query(32768)
    assert keys == pytest.approx(2 * 134_234_112 / 32769, rel=1e-12)
    assert scout.attention_keys(32768) == pytest.approx(12 * 32768 + 36 * keys, rel=1e-12)


def test_prefill_attention_of_a_windowed_model_is_the_causal_half_of_its_keys() -> None:
    # A 4,096-token prompt on GPT-OSS-120B: 2 · n · (18 · 4,096 + 18 · 251.97) · 64 · 64 FLOPs.
    n = 4096
    expected = 2.0 * n * (18 * 4096 + 18 * 2 * 516_160 / 4097) * 64 * 64
    assert prefill_attention_flops(GPT_OSS, n) == pytest.approx(expected, rel=1e-12)
    full = dataclasses.replace(GPT_OSS, sliding_window=0, local_layers=0)
    assert prefill_attention_flops(full, n) == 2.0 * n * n * 64 * 64 * 36  # unchanged formula


def test_sliding_window_layers_keep_only_the_window_in_the_kv_cache() -> None:
    # 8 KV heads of 64, K and V, BF16: 2,048 B a token a layer. At a context of 8,192 the 18 full layers keep
    # every token, the 18 windowed ones the last 128: 18 + 18 · 128/8192 = 18.28125 layers' worth per token
    # = 37,440 B, against 36 · 2,048 = 73,728 B without the window.
    assert kv_bytes_per_token(model=GPT_OSS, precision="bf16", context_tokens=8192) == pytest.approx(37_440)
    assert kv_bytes_per_token(model=GPT_OSS, precision="bf16") == 73_728  # no context: every layer
    assert kv_bytes_per_token(model=GPT_OSS, precision="bf16", context_tokens=100) == 73_728


def test_attention_sinks_add_one_logit_per_head_per_layer() -> None:
    no_sinks = dataclasses.replace(GPT_OSS, attention_sinks=False)
    assert GPT_OSS.total_params - no_sinks.total_params == 36 * 64
    assert GPT_OSS.model_flops_per_token == no_sinks.model_flops_per_token


@pytest.mark.parametrize(
    ("slug", "published_total", "tolerance", "why"),
    [
        # OpenAI model card Table 1: 116.83B and 20.91B; the engine ignores the attention and expert biases.
        ("gpt-oss-120b", 116.83e9, 0.001, "biases not counted"),
        ("gpt-oss-20b", 20.91e9, 0.001, "biases not counted"),
        # Meta: 109B and 400B total; the totals include the vision encoder, the text shape does not.
        ("llama4-scout", 109e9, 0.015, "vision encoder not counted"),
        ("llama4-maverick", 400e9, 0.005, ""),
        # Kimi K2 report: 1.04T total; the shape gives 1.026T (1.3 % less, not explained by the config).
        ("kimi-k2", 1.04e12, 0.015, "1.3 % short of the report"),
    ],
)
def test_preset_parameter_count_matches_its_published_total(
    slug: str, published_total: float, tolerance: float, why: str
) -> None:
    assert PRESETS[slug].total_params == pytest.approx(published_total, rel=tolerance), why


@pytest.mark.parametrize(
    ("slug", "published_active"),
    [("gpt-oss-120b", 5.13e9), ("gpt-oss-20b", 3.61e9), ("llama4-scout", 17e9), ("llama4-maverick", 17e9)],
)
def test_preset_active_parameters_match_the_published_figure(slug: str, published_active: float) -> None:
    # OpenAI counts active parameters without the embedding (5.13B / 3.61B: the engine's matmul weights);
    # Meta's "17B active" includes the embedding and output layer (17.17B here).
    model = PRESETS[slug]
    active = model.active_matmul_params if slug.startswith("gpt-oss") else model.active_params
    assert active == pytest.approx(published_active, rel=0.011)


def test_local_attention_needs_one_kind_and_a_layer_count_in_range() -> None:
    with pytest.raises(InputError) as both:
        dataclasses.replace(GPT_OSS, attention_chunk=8192)
    assert (
        both.value.field == "attention_chunk"
    )  # the shape's own field (model_from_dict names it under its at)
    with pytest.raises(InputError) as too_many:
        dataclasses.replace(GPT_OSS, local_layers=37)
    assert too_many.value.field == "local_layers"
    with pytest.raises(InputError) as no_window:
        ModelShape(
            layers=4, hidden=64, ffn_hidden=256, heads=4, kv_heads=4, vocab=100, seq_len=64, local_layers=2
        )
    assert no_window.value.field == "local_layers"


def test_a_custom_window_defaults_to_every_layer_local() -> None:
    # Gemma-style local/global mixes give local_layers; a bare window makes every layer local.
    shape = model_from_dict({"preset": "llama3-8b", "sliding_window": 4096}, presets=PRESETS)
    assert shape.local_layers == 32
    gemma_like = model_from_dict(
        {"preset": "llama3-8b", "sliding_window": 1024, "local_layers": 26}, presets=PRESETS
    )
    assert gemma_like.attention_keys(8192) == pytest.approx(
        6 * 8192 + 26 * (2 * 8192 * 1024 - 1024**2 + 1024) / 8193, rel=1e-12
    )


def _step_compute_s(window: int) -> float:
    from clusterdesigner.engine.training.training import estimate
    from tests.engine.specs import ACCELERATORS, FABRICS

    request = {
        "model": {"preset": "gpt-oss-20b", "sliding_window": window},
        "training": {"tokens": 1e11, "global_batch_seqs": 256, "precision": "bf16"},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8, "fabric": "ib-ndr400"},
        "parallelism": {"tp": 1, "pp": 1, "dp": 64, "ep": 8, "micro_batch": 1, "recompute": "none"},
    }
    result = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    return float(result["step_time_s"]["compute"])


def test_attention_time_falls_in_proportion_to_the_keys_a_window_leaves() -> None:
    # The attention core's time is linear in the keys a query scores, the rest of a layer is not touched by
    # the window, so the step's compute differences keep the ratio of the key differences: window 4,096 is
    # full attention at seq 4,096 (12 full + 12 local layers either way).
    model = PRESETS["gpt-oss-20b"]
    keys = {w: dataclasses.replace(model, sliding_window=w).attention_keys(4096) for w in (128, 2048, 4096)}
    compute = {w: _step_compute_s(w) for w in keys}
    assert compute[128] < compute[2048] < compute[4096]
    expected = (keys[4096] - keys[128]) / (keys[4096] - keys[2048])
    assert (compute[4096] - compute[128]) / (compute[4096] - compute[2048]) == pytest.approx(
        expected, rel=1e-9
    )
