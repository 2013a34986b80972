"""MoE decode physics of the serving engine (issue #37, h8): the routed experts' rows padded to the grouped
GEMM's tile, the busiest expert-parallel rank's load, and the tiles' fixed work on short reductions.

Golden numbers are hand calculations written beside each assertion; the model shapes are the presets'
(Llama 4 Maverick: 128 experts, top-1, 24 MoE layers, h 5,120, f 8,192; Qwen3 235B-A22B: 128 experts,
top-8, 94 MoE layers, h 4,096, f 1,536; Qwen3 30B-A3B: h 2,048, f 768).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving

MAVERICK = PRESETS["llama4-maverick"]
QWEN_235B = PRESETS["qwen3-235b-a22b"]
QWEN_30B = PRESETS["qwen3-30b-a3b"]
SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"
H100 = specs_from_records(json.loads(SEED.read_text())).accelerators["h100-sxm"]


def test_the_tile_is_deepgemms_contiguous_layout_alignment() -> None:
    # deepseek-ai/DeepGEMM csrc/utils/layout.hpp: get_mk_alignment_for_contiguous_layout() returns 128
    assert serving.MOE_TILE_ROWS == 128


def test_a_decode_batch_pads_each_touched_expert_to_a_whole_tile() -> None:
    # 2,048 tokens, top-1 of 128 experts: every expert is touched (1 − (127/128)^2,048 = 1 − 1.06e-7) with
    # 2,048 / 128 = 16 tokens, padded to one 128-row tile: 128 × 128 × (1 − 1.06e-7) = 16,383.998 rows,
    # 8× the 2,048 the tokens need
    padded = float(serving.routed_expert_rows(MAVERICK, tokens=2048, ep=1, padded=True))
    assert padded == pytest.approx(128 * 128 * (1 - (127 / 128) ** 2048), rel=1e-12)
    assert padded == pytest.approx(16_383.998, abs=1e-3)
    assert float(serving.routed_expert_rows(MAVERICK, tokens=2048, ep=1, padded=False)) == 2048.0


def test_full_tiles_are_not_padded_and_one_row_over_takes_a_second_tile() -> None:
    # 32,768 tokens: 256 an expert, exactly two tiles, so the rows are the tokens' own
    assert float(serving.routed_expert_rows(MAVERICK, tokens=32_768, ep=1, padded=True)) == 32_768.0
    # 128 × 129 tokens: 129 an expert, two tiles of 128 each: 128 × 256 = 32,768 rows for 16,512 tokens
    assert float(serving.routed_expert_rows(MAVERICK, tokens=128 * 129, ep=1, padded=True)) == 32_768.0


def test_the_busiest_expert_parallel_rank_sets_the_rows() -> None:
    # 1,024 tokens, top-8: 8,192 assignments over ep 8, 1,024 a rank; the largest of 8 ranks exceeds the
    # mean by √(2 ln 8) standard deviations of √(1,024 × 7/8): share 1 + √(2 ln 8 × 7/8 × 8 / 8,192)
    # = 1 + √0.0035537 = 1.059613, so 8,192 × 1.059613 = 8,680.35 rows
    share = 1 + math.sqrt(2 * math.log(8) * (7 / 8) * 8 / 8192)
    assert share == pytest.approx(1.059613, abs=1e-6)
    rows = float(serving.routed_expert_rows(QWEN_235B, tokens=1024, ep=8, padded=False))
    assert rows == pytest.approx(8192 * share, rel=1e-12) == pytest.approx(8680.35, abs=0.01)
    # one rank: no imbalance
    assert float(serving.routed_expert_rows(QWEN_235B, tokens=1024, ep=1, padded=False)) == 8192.0


def test_short_reductions_stretch_the_grouped_gemms_by_the_tiles_fixed_work() -> None:
    eff = replace(serving.STACKS["tensorrt-llm-2025"], moe_tile_overhead_k=2048.0)
    # Qwen3 30B-A3B: up projections of reduction h = 2,048 (two matrices), down of f = 768:
    # (2 × (2,048 + 2,048) + (768 + 2,048) × 2,048 / 768) / (3 × 2,048) = (8,192 + 7,509.33) / 6,144 = 2.5556
    assert serving._tile_stretch(QWEN_30B, eff) == pytest.approx(15_701.333 / 6144, rel=1e-6)
    # Llama 4 (h 5,120, f 8,192): (2 × 7,168 + 10,240 × 5,120 / 8,192) / 15,360 = 20,736 / 15,360 = 1.35
    assert serving._tile_stretch(MAVERICK, eff) == pytest.approx(1.35, rel=1e-12)
    assert serving._tile_stretch(MAVERICK, replace(eff, moe_tile_overhead_k=0.0)) == 1.0


def test_decode_flops_count_the_padded_rows_and_prefill_flops_do_not() -> None:
    inp = serving.ServingInput(
        model=MAVERICK,
        accelerator=H100,
        input_tokens=1000,
        output_tokens=1000,
        requests_per_s=1.0,
        efficiency=replace(serving.ServingEfficiency(), moe_compute_scale=1.0, moe_tile_overhead_k=0.0),
        attention_dp=False,
    )
    padded = float(serving.matmul_flops(inp, tokens=2048, tp=8, padded=True))
    plain = float(serving.matmul_flops(inp, tokens=2048, tp=8, padded=False))
    # unpadded, the FLOPs are 2 × tokens × the active matmul weights: 2 × 2,048 × 16,149,708,800
    assert plain == pytest.approx(2 * 2048 * 16_149_708_800, rel=1e-12)
    # padded, the routed experts add 2 × 24 layers × 125,829,120 × (16,383.998 − 2,048) rows
    extra = 2 * 24 * 125_829_120 * (128 * 128 * (1 - (127 / 128) ** 2048) - 2048)
    assert padded - plain == pytest.approx(extra, rel=1e-9)


def test_a_dense_model_has_no_routed_rows() -> None:
    assert float(serving.routed_expert_rows(PRESETS["llama3-70b"], tokens=512, ep=1, padded=True)) == 0.0


def test_a_negative_tile_overhead_is_refused_by_name() -> None:
    with pytest.raises(InputError) as err:
        serving.ServingEfficiency(moe_tile_overhead_k=-1.0)
    assert err.value.field == "efficiency.moe_tile_overhead_k"


def test_the_tile_overhead_is_an_efficiency_override_of_a_request() -> None:
    request = {
        **serving.EXAMPLE_REQUEST,
        "model": {"preset": "qwen3-235b-a22b"},
        "stack": "tensorrt-llm-2025",
        "efficiency": {"moe_tile_overhead_k": 0},
    }
    inp, _ = serving.parse_request(request, accelerators={"h100-sxm": H100})
    assert inp.efficiency.moe_tile_overhead_k == 0
    assert serving.STACKS["tensorrt-llm-2025"].moe_tile_overhead_k == 2048.0
