"""Attention data parallelism with wide expert parallelism (issue #37 item 4, DeepSeek-style DEP): memory per
GPU, the all-to-all that replaces the tensor-parallel all-reduces, and the search over both attention layouts.
Hand calculations beside each test; DeepSeek-V3 (preset) and the seed catalog's H200 (141 GiB, 4.8 TB/s, 450
GB/s scale-up link, 8 GPUs in its NVLink domain)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving
from clusterdesigner.engine.serving_cost import serving_cost

SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"
CATALOG = specs_from_records(json.loads(SEED.read_text()))
V3 = PRESETS["deepseek-v3"]


def _inp(**kw):
    base = {
        "model": V3,
        "accelerator": CATALOG.accelerators["h200"],
        "input_tokens": 1024,
        "output_tokens": 512,
        "requests_per_s": 10.0,
        "efficiency": serving.STACKS["tensorrt-llm-2025"],
    }
    return serving.ServingInput(**{**base, **kw})


def test_weights_per_gpu_keep_the_non_expert_weights_whole_and_spread_the_routed_experts() -> None:
    # DeepSeek-V3: 671,026,404,352 parameters, of which the routed experts are 58 MoE layers × 256 experts
    # × 44,040,192 (3 × 7,168 × 2,048) = 653,908,770,816. FP8 (1 byte), tp 8:
    # tensor-parallel: 671,026,404,352 / 8 = 83,878,300,544 B;
    # attention-DP: (671,026,404,352 − 653,908,770,816) + 653,908,770,816 / 8 = 17,117,633,536 +
    # 81,738,596,352 = 98,856,229,888 B (attention, shared experts and embeddings whole on every GPU)
    assert serving.routed_expert_params(V3) == 58 * 256 * 44_040_192 == 653_908_770_816
    tp = serving.weight_bytes_per_gpu(model=V3, precision="fp8", tp=8, pp=1)
    adp = serving.weight_bytes_per_gpu(model=V3, precision="fp8", tp=8, pp=1, attention_dp=True)
    assert float(tp) == 83_878_300_544 and float(adp) == 98_856_229_888


def test_the_mla_latent_is_not_copied_to_every_gpu_under_attention_dp() -> None:
    # KV a token a GPU, FP8: 61 layers × 576 latent elements × 1 B = 35,136 B on every tensor-parallel rank
    # (the latent is one head every rank needs); under attention DP each sequence lives on one GPU: 35,136 /
    # 8 = 4,392 B a token on average over the replica's GPUs
    tp = serving.kv_bytes_per_token_per_gpu(model=V3, precision="fp8", tp=8, pp=1)
    adp = serving.kv_bytes_per_token_per_gpu(model=V3, precision="fp8", tp=8, pp=1, attention_dp=True)
    assert float(tp) == 61 * 576 == 35_136 and float(adp) == 4_392
    # so a replica of 8 H200 holds about 7× the sequences: free memory 141 GiB × 0.9 − weights over the KV
    # of the 1,024 + 512 = 1,536 tokens tensorrt-llm-2025 reserves a sequence: 141 × 2^30 × 0.9 =
    # 136,257,837,465.6 B − 98,856,229,888 = 37,401,607,577.6 B / (4,392 × 1,536 = 6,746,112 B) = 5,544.1
    inp = _inp(attention_dp=True)
    held = inp.reserved_context_tokens
    assert held == 1536
    free_adp = 141 * 2**30 * 0.9 - 98_856_229_888
    free_tp = 141 * 2**30 * 0.9 - 83_878_300_544
    assert int(serving.batch_that_fits(inp, tp=8, pp=1)) == int(free_adp // (4_392 * 1536)) == 5_544
    assert int(serving.batch_that_fits(_inp(attention_dp=False), tp=8, pp=1)) == int(
        free_tp // (35_136 * 1536)
    )


def test_the_all_to_all_replaces_the_tensor_parallel_all_reduces() -> None:
    # 64 tokens on a replica of 8 GPUs (8 a GPU), top-8 of 256 experts spread 8 ways: each token reaches
    # 8 · (1 − (7/8)^8) = 5.2511 distinct GPUs, 7/8 of them remote: 4.5947 copies of 7,168 × 2 B. A GPU
    # sends 8 × 14,336 × 4.5947 = 526,961 B a dispatch (and as much a combine) over 450 GB/s, plus the
    # stack's 8 µs latency, in each of the 58 MoE layers: 2 × 58 × (526,961 / 450e9 + 8e-6) = 1.0638 ms
    inp = _inp(attention_dp=True)
    copies = 8 * (1 - (7 / 8) ** 8) * 7 / 8
    one = 8 * 7168 * 2 * copies / 450e9 + 8e-6
    assert float(serving._allreduce_s(inp, tokens=64, tp=8, pp=1)) == pytest.approx(2 * 58 * one, rel=1e-12)
    assert 2 * 58 * one == pytest.approx(1.0638e-3, rel=1e-4)
    assert float(serving._allreduce_s(inp, tokens=64, tp=1, pp=1)) == 0.0  # one GPU: nothing to send


def test_a_decode_step_reads_the_non_expert_weights_whole_on_every_gpu() -> None:
    # batch 1: one token touches 8 of 256 routed experts, so a GPU reads 17,117,633,536 B of non-expert
    # weights plus 81,738,596,352 × (1 − (1 − 8/256)^1) = 2,554,331,136 B of its experts
    inp = _inp(attention_dp=True)
    eff = inp.efficiency
    hbm = 4.8e12 * eff.bandwidth_efficiency
    read = (17_117_633_536 + 81_738_596_352 * 8 / 256) / hbm
    plain = replace(inp, efficiency=replace(eff, collective_latency_us=0.0))
    step = float(serving.decode_step_s(plain, batch=1, tp=8, pp=1))
    attention_and_a2a = step - read
    assert read < step and attention_and_a2a < 0.1 * read  # the read dominates a batch-1 step


def test_the_search_weighs_both_attention_layouts_of_an_moe_model_and_a_fixed_one_alone() -> None:
    request = {
        "model": {"preset": "deepseek-v3"},
        "accelerator": "h200",
        "input_tokens": 1024,
        "output_tokens": 512,
        "stack": "tensorrt-llm-2025",
        "targets": {"ttft_s": 2.0, "tpot_s": 0.1},
        "demand": {"requests_per_s": 10},
    }
    searched = serving_cost.estimate(request, catalog=CATALOG)
    kinds = {r.attention_dp for r in searched.layouts}
    assert kinds == {True, False}
    adp = [r for r in searched.layouts if r.attention_dp]
    assert all(r.ep == r.tp > 1 for r in adp)
    # the replicated latent caps the tensor-parallel tp8 layout's batch far below the attention-DP one's
    tp8 = [r for r in searched.layouts if not r.attention_dp and r.tp == 8 and r.pp == 1]
    dp8 = [r for r in adp if r.tp == 8 and r.pp == 1]
    assert dp8[0].batch_fits > 5 * tp8[0].batch_fits
    fixed = serving_cost.estimate({**request, "layout": {"attention_dp": False}}, catalog=CATALOG)
    assert not any(r.attention_dp for r in fixed.layouts)
    only = serving_cost.estimate({**request, "layout": {"attention_dp": True}}, catalog=CATALOG)
    assert all(r.attention_dp for r in only.layouts) and only.best.attention_dp


@pytest.mark.parametrize(
    ("layout", "model", "field"),
    [
        ({"attention_dp": True}, "llama3-70b", "layout.attention_dp"),
        ({"attention_dp": "yes"}, "deepseek-v3", "layout.attention_dp"),
        ({"attention_dp": True, "tp": 8, "ep": 4}, "deepseek-v3", "layout.ep"),
        ({"attention_dp": True, "tp": 1}, "deepseek-v3", "layout.attention_dp"),
    ],
)
def test_an_attention_dp_layout_that_cannot_be_is_refused_naming_the_field(
    layout: dict, model: str, field: str
) -> None:
    request = {
        "model": {"preset": model},
        "accelerator": "h200",
        "layout": layout,
        "demand": {"requests_per_s": 1},
    }
    with pytest.raises(InputError) as err:
        serving_cost.estimate(request, catalog=CATALOG)
    assert err.value.field == field
