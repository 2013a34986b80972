"""Shapes beyond hidden / heads attention (issue 19 item 3): head_dim, multi-head latent attention,
multi-token prediction and explicit pipeline layouts. Every count is worked by hand next to its test from
the model's released config.json."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.model import ModelShape, model_from_dict
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.design.spec import SpecError, parse_design_spec
from clusterdesigner.engine.training.training import estimate
from clusterdesigner.engine.training.workload import parse_pipeline_layout

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


def _qwen3_request() -> dict[str, Any]:
    """Qwen3-30B-A3B on one 8-GPU H100 node, experts over the 8 GPUs."""
    layout = {"tp": 1, "pp": 1, "ep": 8, "micro_batch": 1, "recompute": "none", "sharding": "zero1"}
    return {
        "model": QWEN3_30B,
        "training": {"tokens": 1e12, "global_batch_seqs": 64},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 1},
        "parallelism": layout,
    }


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
    assert (
        exc.value.field == "heads"
    )  # the shape names its own field; its parser, the user's path (model_from_dict at=)
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
    request = _qwen3_request()
    wide = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    narrow_model = {**QWEN3_30B, "head_dim": 64}
    narrow = estimate({**request, "model": narrow_model}, accelerators=ACCELERATORS, fabrics=FABRICS)
    # Twice the Q/O width and twice the attention core: more time and more activation memory.
    assert wide["step_time_s"]["compute"] > narrow["step_time_s"]["compute"]
    assert wide["memory_per_gpu_gib"]["activations"] > narrow["memory_per_gpu_gib"]["activations"]


# ---- multi-head latent attention ------------------------------------------------------------------------
# deepseek-ai/DeepSeek-V3 config.json: hidden_size 7168, num_hidden_layers 61, first_k_dense_replace 3,
# n_routed_experts 256, n_shared_experts 1, num_experts_per_tok 8, moe_intermediate_size 2048,
# intermediate_size 18432, vocab_size 129280, num_attention_heads 128, q_lora_rank 1536, kv_lora_rank 512,
# qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, num_nextn_predict_layers 1, untied.
DEEPSEEK_V3 = {
    "layers": 61,
    "hidden": 7168,
    "ffn_hidden": 18432,
    "heads": 128,
    "vocab": 129280,
    "seq_len": 4096,
    "gated_mlp": True,
    "dropout": False,
    "experts": 256,
    "top_k": 8,
    "expert_ffn_hidden": 2048,
    "shared_experts": 1,
    "moe_layers": 58,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
}


def _deepseek_request(**training: Any) -> dict[str, Any]:
    """DeepSeek-V3 on 1,024 H100 (128 nodes): tp 2, pp 16, ep 32, full recompute."""
    layout = {"tp": 2, "pp": 16, "ep": 32, "micro_batch": 1, "recompute": "full", "sharding": "zero1"}
    return {
        "model": DEEPSEEK_V3,
        "training": {"tokens": 1e12, "global_batch_seqs": 1024, **training},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 128, "fabric": "ib-ndr400"},
        "parallelism": layout,
    }


def test_mla_counts_deepseek_v3_by_hand() -> None:
    m = model_from_dict(DEEPSEEK_V3, presets=PRESETS)
    # MLA per layer: q_a 7168×1536 = 11,010,048; q_b 1536×(128·192) = 37,748,736; kv_a 7168×(512+64)
    #   = 4,128,768; kv_b 512×(128·(128+128)) = 16,777,216; o (128·128)×7168 = 117,440,512 → 187,105,280
    #   (HF shapes q_a_proj [1536, 7168], q_b_proj [24576, 1536], kv_a_proj_with_mqa [576, 7168],
    #   kv_b_proj [32768, 512], o_proj [7168, 16384]).
    assert m.attention_params == 187_105_280
    # Norms per layer 2 × 7168 + 1536 + 512 = 16,384.
    assert m.layer_norm_params == 16_384
    # 61 × (187,105,280 + 16,384) = 61 × 187,121,664 = 11,414,421,504
    # + 3 dense MLPs × 3 × 7168 × 18432 = 1,189,085,184
    # + 58 MoE layers × (257 × 3 × 7168 × 2048 + 7168 × 256) = 58 × 11,320,164,352 = 656,569,532,416
    # + embedding and output 2 × 129,280 × 7168 = 1,853,358,080 + final norm 7,168
    # = 671,026,404,352: the report's 671B main-model parameters (MTP counted apart).
    assert m.total_params == 671_026_404_352
    # Active: 61 × 187,105,280 = 11,413,422,080 + 1,189,085,184 + 58 × (9 × 44,040,192 + 1,835,008)
    #   = 23,095,410,688 + output 926,679,040 + embedding 926,679,040 = 37,551,276,032 (report: 37B).
    assert m.active_params == 37_551_276_032


def test_mla_attention_core_is_2_9_times_what_hidden_over_heads_gives() -> None:
    m = model_from_dict(DEEPSEEK_V3, presets=PRESETS)
    # QKᵀ over 192-wide heads and AV over 128: 2 · s · 128 · (192 + 128) · 61 per token, against the
    # 4 · s · 7168 · 61 of full attention hidden wide: 40,960 / 14,336 = 2.857.
    assert m.attention_core_flops_fwd_per_token == 2.0 * 4096 * 128 * 320 * 61
    assert m.attention_core_flops_fwd_per_token / (4.0 * 4096 * 7168 * 61) == pytest.approx(2.857, abs=1e-3)
    # DeepSeek-V2 (arXiv:2405.04434) Table 1: MLA caches (d_c + d_h^R) = 512 + 64 = 576 elements a layer.
    assert m.kv_cache_elements_per_token_layer == 576


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kv_lora_rank": 0}, "model.kv_lora_rank"),
        ({"v_head_dim": 0}, "model.v_head_dim"),
        ({"kv_heads": 8}, "model.kv_heads"),
        ({"head_dim": 128}, "model.head_dim"),
    ],
)
def test_an_incomplete_mla_shape_is_refused_naming_the_field(change: dict[str, int], field: str) -> None:
    shape = {**DEEPSEEK_V3, **change}
    with pytest.raises(InputError) as exc:
        model_from_dict(shape, presets=PRESETS)
    assert exc.value.field == field


def test_a_bad_mla_field_is_named_by_its_spec_path() -> None:
    with pytest.raises(SpecError) as caught:
        parse_design_spec(_spec_with_model({**DEEPSEEK_V3, "kv_lora_rank": 0}))
    assert caught.value.field == "spec.workload.model.kv_lora_rank"


def test_mla_step_time_and_memory_follow_its_widths() -> None:
    request = _deepseek_request()
    mla = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    # The same model as full multi-head attention hidden wide (the preset's former approximation).
    mha = {k: v for k, v in DEEPSEEK_V3.items() if not k.endswith(("_rank", "_head_dim"))}
    approx = estimate({**request, "model": mha}, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert mla["step_time_s"]["compute"] > approx["step_time_s"]["compute"]
    assert (
        mla["summary"]["model"]["model_flops_per_token"] > approx["summary"]["model"]["model_flops_per_token"]
    )


def test_mla_and_head_dim_are_in_the_assumptions_with_sources() -> None:
    request = _qwen3_request()
    names = {
        a["name"]: a for a in estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["assumptions"]
    }
    assert names["head_dim"]["value"] == 128.0
    request["model"] = DEEPSEEK_V3
    request["cluster"] = {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 64, "fabric": "ib-ndr400"}
    request["parallelism"] = {
        "tp": 1,
        "pp": 16,
        "ep": 32,
        "micro_batch": 1,
        "recompute": "full",
        "sharding": "zero1",
    }
    names = {
        a["name"]: a for a in estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["assumptions"]
    }
    assert names["mla_attention_core_width"]["value"] == 320.0
    assert "arXiv:2412.19437" in names["mla_attention_core_width"]["source"]
    assert names["mla_kv_cache_elements_per_token_layer"]["value"] == 576.0


# ---- multi-token prediction -------------------------------------------------------------------------
def test_mtp_params_and_flops_of_deepseek_v3_by_hand() -> None:
    m = model_from_dict({**DEEPSEEK_V3, "mtp_depth": 1}, presets=PRESETS)
    # One module: eh_proj 2 × 7168 × 7168 = 102,760,448; enorm, hnorm, head norm 3 × 7168 = 21,504;
    # one MoE layer with MLA 187,105,280 + 16,384 + 11,320,164,352 = 11,507,286,016 → 11,610,067,968.
    assert m.mtp_params == 11_610_067_968
    assert m.total_params == 671_026_404_352  # the main model, as the report counts its 671B
    base = model_from_dict(DEEPSEEK_V3, presets=PRESETS)
    # Extra forward FLOPs per token: 2 × (eh_proj 102,760,448 + attention 187,105,280 + 9 experts
    # 396,361,728 + router 1,835,008) = 1,376,124,928; the attention core of one more layer
    # 2 × 4096 × 128 × 320 = 335,544,320; the shared head again 2 × 926,679,040 = 1,853,358,080.
    extra_fwd = 2 * (102_760_448 + 187_105_280 + 396_361_728 + 1_835_008) + 335_544_320 + 1_853_358_080
    assert m.model_flops_per_token - base.model_flops_per_token == pytest.approx(3 * extra_fwd, rel=1e-12)


def test_mtp_costs_time_and_memory_on_the_last_stage() -> None:
    request = _deepseek_request()
    without = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    with_mtp = estimate(
        {**request, "model": {**DEEPSEEK_V3, "mtp_depth": 1}}, accelerators=ACCELERATORS, fabrics=FABRICS
    )
    # 61 layers on 16 stages: the heaviest holds 4, the last 3 (balanced split); with the MTP layer and
    # a second head the last stage is the slowest.
    assert with_mtp["step_time_s"]["total"] > without["step_time_s"]["total"]
    assert with_mtp["memory_per_gpu_gib"]["weights"] > without["memory_per_gpu_gib"]["weights"]
    names = {a["name"] for a in with_mtp["assumptions"]}
    assert "mtp_depth" in names


def test_a_bad_mtp_depth_is_named_by_its_spec_path() -> None:
    with pytest.raises(SpecError) as caught:
        parse_design_spec(_spec_with_model({**DEEPSEEK_V3, "mtp_depth": -1}))
    assert caught.value.field == "spec.workload.model.mtp_depth"


# ---- explicit pipeline layouts --------------------------------------------------------------------------
def test_megatron_layout_string_places_deepseek_v3_as_its_docs_table() -> None:
    # Megatron-Core docs, "Custom Pipeline Model Parallel Layout": DeepSeek-V3 (61 layers + 1 MTP) on
    # PP 16 × VPP 2 as "Et*3|(tt|)*29,m|L": rank 0 holds the embedding + 3 layers and 2 more in its
    # second chunk, ranks 1-13 two chunks of 2, rank 14 two layers and the MTP module, rank 15 two layers
    # and the loss.
    layout = parse_pipeline_layout("Et*3|(tt|)*29,m|L", layers=61, mtp_depth=1)
    assert layout.stages == 32
    layers, loss, mtp = layout.per_rank(16)
    assert layers.tolist() == [5] + [4] * 13 + [2, 2]
    assert loss.tolist() == [0] * 15 + [1]
    assert mtp.tolist() == [0] * 14 + [1, 0]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Et*3|(tt|)*28,m|L", "holds 59 transformer layers, the model has 61"),
        ("Et*3|(tt|)*29|L", "holds 0 MTP modules, the model has 1"),
        ("t*3|E(tt|)*29,m|L", "embedding (E) once, on the first stage"),
        ("Et*3|(tx|)*29,m|L", "unknown letter(s) 'x'"),
        ([4] * 15, "holds 60 transformer layers"),
        ([4] * 15 + [-1], "whole number of layers"),
        (16, "layout string"),
    ],
)
def test_a_bad_pipeline_layout_is_refused_naming_the_field(value: Any, message: str) -> None:
    request = _deepseek_request(pipeline_layout=value)
    request["model"] = {**DEEPSEEK_V3, "mtp_depth": 1}
    with pytest.raises(InputError) as exc:
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert exc.value.field == "training.pipeline_layout"
    assert message in exc.value.message


def test_a_layout_that_pp_times_vpp_does_not_cover_is_refused_on_vpp() -> None:
    request = _deepseek_request(pipeline_layout="Et*3|(tt|)*29,|L")  # an empty 31st stage
    request["parallelism"] = {**request["parallelism"], "vpp": 4}
    with pytest.raises(InputError) as exc:
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert exc.value.field == "parallelism.vpp"
    assert "pipeline_layout has 32 stages; pp 16 × vpp 4 = 64" in exc.value.message


def test_an_even_layout_list_gives_the_same_estimate_as_no_layout() -> None:
    # 64 layers on 16 stages: 4 each either way, the embedding on the first, the loss on the last.
    model = {**DEEPSEEK_V3, "layers": 64, "moe_layers": 61}
    plain = _deepseek_request()
    plain["model"] = model
    listed = _deepseek_request(pipeline_layout=[4] * 16)
    listed["model"] = model
    a = estimate(plain, accelerators=ACCELERATORS, fabrics=FABRICS)
    b = estimate(listed, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert b["step_time_s"]["total"] == pytest.approx(a["step_time_s"]["total"], rel=1e-12)
    assert b["memory_per_gpu_gib"]["total"] == pytest.approx(a["memory_per_gpu_gib"]["total"], rel=1e-12)


def test_deepseek_v3_interleaves_over_its_layout_where_pp_times_vpp_divides_neither_61_nor_63() -> None:
    request = _deepseek_request(pipeline_layout="Et*3|(tt|)*29,m|L")
    request["model"] = {**DEEPSEEK_V3, "mtp_depth": 1}
    with_layout = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert with_layout["parallelism"]["vpp"] == 2  # the layout's 32 stages over pp 16
    # The slowest rank is a 4-layer middle one; rank 0 holds 5 layers' states (the heaviest memory).
    plain = estimate(
        {**request, "training": {"tokens": 1e12, "global_batch_seqs": 1024}},
        accelerators=ACCELERATORS,
        fabrics=FABRICS,
    )
    # Without it, 61 layers over pp 16 cannot interleave and MTP and loss share the last stage: slower.
    assert with_layout["step_time_s"]["total"] < plain["step_time_s"]["total"]
    assert with_layout["step_time_s"]["pp_bubble"] < plain["step_time_s"]["pp_bubble"]


def test_a_search_with_a_layout_only_tries_pp_times_vpp_equal_to_its_stages() -> None:
    request = _deepseek_request(pipeline_layout="Et*3|(tt|)*29,m|L")
    request["model"] = {**DEEPSEEK_V3, "mtp_depth": 1}
    del request["parallelism"]
    result = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    for row in result["candidates"]:
        p = row["parallelism"]
        assert p["pp"] * p["vpp"] == 32 and p["pp"] > 1


@pytest.mark.parametrize(
    ("value", "path"),
    [(16, "spec.workload.training.pipeline_layout"), ([4, -1], "spec.workload.training.pipeline_layout.1")],
)
def test_a_bad_pipeline_layout_is_named_by_its_spec_path(value: Any, path: str) -> None:
    spec = defaults.design_spec()
    spec["workload"]["training"]["pipeline_layout"] = value
    with pytest.raises(SpecError) as caught:
        parse_design_spec(spec)
    assert caught.value.field == path


def test_a_pipeline_layout_is_in_the_assumptions() -> None:
    request = _deepseek_request(pipeline_layout=[4] * 15 + [1])
    names = {
        a["name"]: a for a in estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["assumptions"]
    }
    layout = names["pipeline_layout[4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,1]"]
    assert layout["value"] == 16.0 and "Megatron-Core" in layout["source"]


# ---- presets --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("slug", "total", "active"),
    [
        # Worked by hand above (test_mla_counts_deepseek_v3_by_hand, test_head_dim_apart_...).
        ("deepseek-v3", 671_026_404_352, 37_551_276_032),
        ("qwen3-30b-a3b", 30_532_110_336, 3_352_821_760),
        # Qwen/Qwen3-235B-A22B config.json: hidden 4096, 94 layers, 64 heads of 128, 4 KV heads, 128 experts
        # of 1536, top-8, vocab 151936, untied. Attention 4096 × 8192 × 2 + 4096 × 512 × 2 = 71,303,168;
        # experts 128 × 3 × 4096 × 1536 = 2,415,919,104; router 524,288; norms 8,192 → 2,487,754,752 a
        # layer × 94 = 233,848,946,688 + 2 × 151,936 × 4096 + 4096 = 235,093,610,496 (card: 235B).
        # Active: 94 × (71,303,168 + 8 × 18,874,368 + 524,288) + 1,244,659,712 = 22,189,965,312 (card: 22B).
        ("qwen3-235b-a22b", 235_093_610_496, 22_189_965_312),
    ],
)
def test_presets_hold_the_true_shapes(slug: str, total: int, active: int) -> None:
    assert (PRESETS[slug].total_params, PRESETS[slug].active_params) == (total, active)


@pytest.mark.parametrize(
    ("slug", "tflops", "tokens"),
    [
        # NeMo 25.09 performance summary (tests/engine/data/runs_frontier.csv): DeepSeek-V3 on 256 GB200,
        # 899 model TFLOP/s/GPU at 3,454 tokens/s/GPU; Qwen3 235B-A22B on 64 GB200, 659 at 4,452.
        ("deepseek-v3", 899, 3454),
        ("qwen3-235b-a22b", 659, 4452),
    ],
)
def test_model_flops_match_nemo_once_attention_is_counted_causal(slug: str, tflops: int, tokens: int) -> None:
    # NeMo's formula counts the causal half of the s² attention core; the engine the full square
    # (Narayanan's convention). DeepSeek-V3: 291.85 GFLOP/token − half of 3 × 2 × 4096 × 128 × 320 × 62
    # (61 layers + the MTP layer) = 260.65, against 899e12 / 3454 = 260.28 (the TFLOP/s rounded to a
    # whole number: ±0.06 %). Qwen3 235B: 167.26 − half of 3 × 4 × 4096 × 64 × 128 × 94 = 148.33 vs 148.02.
    assert PRESETS[slug].causal_model_flops_per_token == pytest.approx(tflops * 1e12 / tokens, rel=3e-3)
