"""Shapes beyond hidden / heads attention (issue 19 item 3): head_dim, multi-head latent attention,
multi-token prediction and explicit pipeline layouts. Every count is worked by hand next to its test from
the model's released config.json."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine import defaults
from clusterdesigner.engine.errors import InputError
from clusterdesigner.engine.model import ModelShape, model_from_dict
from clusterdesigner.engine.presets import PRESETS
from clusterdesigner.engine.spec import SpecError, parse_design_spec
from clusterdesigner.engine.training import estimate

# Qwen/Qwen3-30B-A3B config.json: hidden_size 2048, num_hidden_layers 48, num_attention_heads 32,
# num_key_value_heads 4, head_dim 128, num_experts 128, num_experts_per_tok 8, moe_intermediate_size 768,
# vocab_size 151936, tie_word_embeddings false; every layer is MoE (decoder_sparse_step 1, no
# mlp_only_layers).
QWEN3_30B = {
    "layers": 48,
    "hidden": 2048,
    "ffn_hidden": 6144,
    "heads": 32,
    "kv_heads": 4,
    "head_dim": 128,
    "vocab": 151936,
    "seq_len": 4096,
    "gated_mlp": True,
    "dropout": False,
    "experts": 128,
    "top_k": 8,
    "expert_ffn_hidden": 768,
    "moe_layers": 48,
}


def _spec_with_model(model: dict[str, Any]) -> dict[str, Any]:
    spec = defaults.design_spec()
    spec["workload"]["model"] = model
    return spec


# ---- head_dim -----------------------------------------------------------------------------------------
def test_head_dim_apart_from_hidden_counts_qwen3_30b_a3b_by_hand() -> None:
    m = model_from_dict(QWEN3_30B, presets=PRESETS)
    # Attention: Q 2048×(32·128) + K, V 2048×(4·128) each + O (32·128)×2048
    #   = 8,388,608 + 2 × 1,048,576 + 8,388,608 = 18,874,368 (HF q_proj [4096, 2048], k_proj [512, 2048]).
    assert m.attention_params == 18_874_368
    # Per layer: attention + 128 experts × 3 × 2048 × 768 (603,979,776) + router 2048 × 128 (262,144)
    #   + 2 norms × 2048 = 623,120,384; × 48 = 29,909,778,432; + embedding and untied output
    #   2 × 151,936 × 2,048 = 622,329,856; + final norm 2,048 → 30,532,110,336 (model card: 30.5B).
    assert m.total_params == 30_532_110_336
    # Active: 48 × (18,874,368 + 8 × 4,718,592 + 262,144) = 2,730,491,904 + 622,329,856 = 3,352,821,760
    # (model card: 3.3B activated).
    assert m.active_params == 3_352_821_760
    # Attention core 4·s·heads·head_dim·L: 4 × 4096 × 32 × 128 × 48, twice what hidden / heads = 64 gives.
    assert m.attention_core_flops_fwd_per_token == 4.0 * 4096 * 32 * 128 * 48


def test_head_dim_left_out_is_hidden_over_heads_and_dense_counts_do_not_move() -> None:
    gpt3 = PRESETS["gpt3-175b"]
    assert gpt3.head_dim == 128 and gpt3.q_width == 12288
    # Brown et al. 2020: 96 layers × 12·h² + embedding: 12 × 96 × 12288² = 173,946,175,488 + norms and V·h.
    assert gpt3.attention_params == 4 * 12288**2
    # A preset's derived width follows an override of hidden (it is not pinned at the preset's 128).
    wider = model_from_dict({"preset": "llama3-8b", "hidden": 8192, "heads": 32}, presets=PRESETS)
    assert wider.head_dim == 256


def test_hidden_not_a_multiple_of_heads_asks_for_head_dim() -> None:
    with pytest.raises(InputError) as exc:
        ModelShape(layers=2, hidden=100, ffn_hidden=256, heads=8, kv_heads=8, vocab=100, seq_len=16)
    assert exc.value.field == "model.heads"
    assert "head_dim" in exc.value.message
    shaped = ModelShape(
        layers=2, hidden=100, ffn_hidden=256, heads=8, kv_heads=8, vocab=100, seq_len=16, head_dim=16
    )
    assert shaped.q_width == 128


@pytest.mark.parametrize(
    ("value", "message"), [(0, "greater than or equal to 1"), ("128", "must be a number")]
)
def test_a_bad_head_dim_is_named_by_its_spec_path(value: Any, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_design_spec(_spec_with_model({"preset": "llama3-8b", "head_dim": value}))
    assert caught.value.field == "spec.workload.model.head_dim"
    assert message in caught.value.message


def test_head_dim_reaches_the_step_time_through_the_engine() -> None:
    request = {
        "model": QWEN3_30B,
        "training": {"tokens": 1e12, "global_batch_seqs": 64},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 1},
        "parallelism": {
            "tp": 1,
            "pp": 1,
            "ep": 8,
            "micro_batch": 1,
            "recompute": "none",
            "sharding": "zero1",
        },
    }
    wide = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    narrow_model = {**QWEN3_30B, "head_dim": 64}
    narrow = estimate({**request, "model": narrow_model}, accelerators=ACCELERATORS, fabrics=FABRICS)
    # Twice the Q/O width and twice the attention core: more time and more activation memory.
    assert wide["step_time_s"]["compute"] > narrow["step_time_s"]["compute"]
    assert wide["memory_per_gpu_gib"]["activations"] > narrow["memory_per_gpu_gib"]["activations"]
