"""Framework profiles (issue 19): ``training.framework`` sets a stack's defaults and restricts its layouts;
without it the engine estimates exactly as before (the Megatron-Core profile)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.memory import activation_bytes_per_layer
from clusterdesigner.engine.training.training import estimate, parse_problem
from clusterdesigner.engine.training.workload import layouts
from tests.engine.specs import ACCELERATORS, FABRICS, GB200, GPT3_1024_A100

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}


def _request(preset: str, *, gpus: int, batch: int, par: dict[str, Any], **training: Any) -> dict[str, Any]:
    """FP8 on GB200, one NVL72 compute tray (4 GPUs) per node, as the NeMo 25.09 GB200 rows ran."""
    return {
        "model": {"preset": preset},
        "training": {"tokens": 1e12, "global_batch_seqs": batch, "precision": "fp8", **training},
        "cluster": {"accelerator": "gb200", "gpus_per_node": 4, "nodes": gpus // 4, "fabric": "ib-ndr400"},
        "parallelism": par,
    }


def test_megatron_core_is_the_default_to_the_byte() -> None:
    given = {**GPT3_1024_A100, "training": {**GPT3_1024_A100["training"], "framework": "megatron-core"}}
    assert json.dumps(estimate(given, **SPECS)) == json.dumps(estimate(GPT3_1024_A100, **SPECS))


def test_an_unknown_framework_is_refused_naming_the_field() -> None:
    request = {**GPT3_1024_A100, "training": {**GPT3_1024_A100["training"], "framework": "jax"}}
    with pytest.raises(InputError) as error:
        estimate(request, **SPECS)
    assert error.value.field == "training.framework"
    assert "megatron-core" in error.value.message and "fsdp2" in error.value.message


def test_a_profile_sets_defaults_a_request_may_override() -> None:
    base = _request("llama3-8b", gpus=8, batch=64, par={}, framework="deepspeed-zero-2021")
    training = parse_problem(base, **SPECS).training
    assert (training.fsdp_collectives_per_layer, training.fsdp_overlap, training.tp_comm_overlap) == (
        12,
        False,
        False,
    )
    base["training"]["fsdp_overlap"] = True
    assert parse_problem(base, **SPECS).training.fsdp_overlap is True


@pytest.mark.parametrize(
    ("par", "field"),
    [
        ({"cp": 2}, "parallelism.cp"),  # no context parallelism in 2021
        ({"pp": 2, "sharding": "zero3"}, "parallelism.sharding"),  # DeepSpeed's pipeline engine refuses it
        ({"tp": 2, "sequence_parallel": True}, "parallelism.sequence_parallel"),
        ({"recompute": "selective"}, "parallelism.recompute"),
    ],
)
def test_deepspeed_2021_refuses_a_layout_it_did_not_run(par: dict[str, Any], field: str) -> None:
    layout = {"tp": 1, "pp": 1, "micro_batch": 1, "recompute": "full", "sharding": "zero1", **par}
    request = _request("llama3-8b", gpus=8, batch=64, par=layout, framework="deepspeed-zero-2021")
    with pytest.raises(InputError) as error:
        estimate(request, **SPECS)
    assert error.value.field == field
    assert "DeepSpeed ZeRO (2021" in error.value.message


def test_each_profiles_search_keeps_to_its_stack() -> None:
    request = _request("llama3-70b", gpus=64, batch=128, par={}, framework="fsdp2")
    fsdp2 = estimate(request, **SPECS)["candidates"]
    assert fsdp2 and all(c["parallelism"]["sharding"] != "zero1" for c in fsdp2)
    assert all(c["parallelism"]["sequence_parallel"] for c in fsdp2 if c["parallelism"]["tp"] > 1)
    request["training"]["framework"] = "deepspeed-zero-2021"
    deepspeed = estimate(request, **SPECS)["candidates"]
    for c in (c["parallelism"] for c in deepspeed):
        assert (c["cp"], c["vpp"], c["sequence_parallel"], c["recompute"] != "selective") == (
            1,
            1,
            False,
            True,
        )
        assert c["pp"] == 1 or c["sharding"] in ("none", "zero1")


def test_op_level_selective_checkpointing_keeps_half_the_matmul_outputs() -> None:
    """Llama 3 70B (h 8192, 64 heads × 128, 8 KV heads: v 1024, SwiGLU f 28672), tp 1, micro-batch 1 of 8,192
    tokens. torchtitan's op policy keeps the layer input h, wq's output q, wv's output v, the attention
    output q, w1's output f and w2's output h: 2 B × 8,192 × (8192 + 8192 + 1024 + 8192 + 28672 + 8192)
    = 2 × 8,192 × 62,464 = 1,023,410,176 B per layer, against 2 × 8,192 × 8,192 = 134,217,728 B (the layer
    input alone) under full recompute."""
    request = _request("llama3-70b", gpus=64, batch=128, par={}, framework="fsdp2")
    problem = parse_problem(request, **SPECS)
    lay = layouts(
        tp=1, pp=1, dp=64, cp=1, ep=1, vpp=1, micro_batch=1, recompute=[1, 2], sharding=3, sequence_parallel=0
    )
    stored, _ = activation_bytes_per_layer(problem, lay)
    assert np.array_equal(stored, [1_023_410_176.0, 134_217_728.0])


# NVIDIA NeMo 25.09 performance summary, DGX-GB200, FP8 (tests/engine/data/runs_frontier.csv
# nemo2509_gb200_2): Llama 3 70B on 64 GPUs, GBS 128, FSDP 64 MBS 2: 3,986 tokens/s/GPU; the table's
# parenthesised alternative TP 2, PP 4, VP 5, MBS 1: 3,546. Measured FSDP ÷ PP = 1.124.
MEASURED_70B_FSDP_OVER_PP = 3986 / 3546
FSDP_70B = {"tp": 1, "pp": 1, "cp": 1, "sharding": "zero3"}
PP_70B = {"tp": 2, "pp": 4, "vpp": 5, "cp": 1, "micro_batch": 1}


def _ratio(framework: str) -> tuple[float, float]:
    """(engine FSDP ÷ PP tokens/s, the error band's high end ÷ estimate) for the 70B pair, each layout's free
    fields (micro-batch, recompute, sharding of the PP layout) searched within the profile."""
    fsdp = estimate(_request("llama3-70b", gpus=64, batch=128, par=FSDP_70B, framework=framework), **SPECS)
    pp = estimate(_request("llama3-70b", gpus=64, batch=128, par=PP_70B, framework=framework), **SPECS)
    high = fsdp["error_band"]["tokens_per_second_high"] / fsdp["tokens_per_second"]
    return fsdp["tokens_per_second"] / pp["tokens_per_second"], high


def test_fsdp2_lets_the_70b_fsdp_layout_keep_its_activations_selectively() -> None:
    fsdp = estimate(_request("llama3-70b", gpus=64, batch=128, par=FSDP_70B, framework="fsdp2"), **SPECS)
    assert fsdp["parallelism"]["recompute"] == "selective"
    core = estimate(_request("llama3-70b", gpus=64, batch=128, par=FSDP_70B), **SPECS)
    assert core["parallelism"]["recompute"] == "full"  # Megatron's selective saves nothing under flash


def test_fsdp2_brings_the_70b_fsdp_layout_level_with_the_pipeline() -> None:
    """Megatron-Core profile: 0.842 (FSDP forced into full recompute), the measured 1.124 outside its band;
    FSDP2 profile: 0.997, a tie (both layouts on FlashAttention-2, the FSDP2 profile's kernel); 1.039 since
    the pipeline layout's unsharded gradients are upcast and accumulated in FP32 every micro-batch
    (timing._pipeline_grad_upcast_per_mb: 0.214 s of its 5.30 s step); 1.023 since FSDP2 reduce-scatters
    in its reduce dtype, FP32 (timing.reduce_bytes: the FSDP layout's per-micro-batch reduce-scatters,
    0.344 -> 0.426 s exposed, and the pipeline's last one)."""
    core, core_high = _ratio("megatron-core")
    assert core == pytest.approx(0.842, abs=0.005)
    # Outside the band (high end +7.8 %) until the bands were built from check rows and widened on their
    # sources (issue 33): the blackwell/fp8/dense band reached +35.0 %, 0.842 × 1.350 = 1.137 ≥ 1.124; since
    # the MoE and scale physics (engine 13) its check residuals give 1 / (1 − 0.2789) = 1.387: 1.169; since
    # the slowest rank is Blom's expected maximum (STRAGGLER_CV 0.2 %) 1 / (1 − 0.277) = 1.383: 1.166; since
    # the joint refit after the ModelZoo causal count (Blackwell kernel 1.7 -> 1.6, FP8 0.69 -> 0.70)
    # 1 / (1 − 0.2706) = 1.371: 1.156; since the bands are random-effects prediction intervals (issue 33:
    # blackwell/fp8/dense from 3 sources, t on 1 degree of freedom) 1 / (1 − 0.3078) = 1.445: 1.216; since
    # the NeMo rows run their FP8 recipes (h6) and the joint refit after merging h5's alltoall re-sort (h8),
    # the Blackwell FP8 check rows' sources agree better: 1 / (1 − 0.2476) = 1.329: 1.119, outside again;
    # since the joint refit after the merge (Blackwell kernel 1.9 -> 1.7, Hopper family 0.75 -> 0.81, the
    # default factor 0.825 -> 0.855) 1 / (1 − 0.2241) = 1.289: 1.080; since the joint refit after the
    # DeepSeek-V3 rows' gated MLP (Blackwell kernel 1.7 -> 1.6, FP8 0.67 -> 0.68) 0.838 × 1 / (1 − 0.2275) =
    # 0.838 × 1.2945: 1.085; since NeMo's B200 long-sequence rows are predicted (frontier_cases.run_gpus:
    # 9 check rows in blackwell/fp8/dense/lt32k, 8 before, their sources closer) 0.838 × 1 / (1 − 0.1344)
    # = 0.838 × 1.1553: 0.968, outside again.
    assert core * core_high == pytest.approx(0.968, abs=0.005)
    fsdp2, _ = _ratio("fsdp2")
    assert fsdp2 == pytest.approx(1.023, abs=0.005)


def test_fsdp2_brings_the_measured_70b_fsdp_ratio_inside_the_error_band() -> None:
    # Met (0.999 × 1.146) until the Blackwell FP8 rows came closer (1.078: an xfail); met again since the
    # bands rest on check rows widened on their sources (issue 33), 0.997 × 1.350. NVIDIA's measured rows ran
    # Megatron-FSDP with activation offload, which the Megatron-Core recipe test above keeps inside its band.
    fsdp2, high = _ratio("fsdp2")
    assert fsdp2 * high >= MEASURED_70B_FSDP_OVER_PP


# The recipes NVIDIA ran for those rows (runs_frontier.csv nemo2509_gb200_2/3, citation column):
# Megatron-Bridge scripts/performance/configs llama3_70b / llama31_405b_llm_pretrain.yaml at fa0315ae2,
# GB200 fp8_cs: Megatron-FSDP (use_megatron_fsdp), no recompute, cpu_offloading_num_layers 40 of 80 (70B:
# tp 1, mbs 2 on 64 GPUs, GBS 128) and 95 of 126 (405B: tp 2, mbs 1 on 128 GPUs, GBS 64), activations only:
# Megatron-Core's own levers under the default profile. The pipeline alternatives are the tables'
# parenthesised layouts: 70B TP 2 PP 4 VP 5 GA 16 (mbs 1), 3,546 tok/s/GPU; 405B TP 4 PP 8 CP 2 VP 8 GA 32
# (mbs 1), 578. Their recompute and sharding are left to the engine's search. Caveat from the summary's
# note: the parenthesised figures ran another FP8 scaling granularity (32x32 blocks on GB200), so the
# measured ratios also hold the recipes' FP8 difference.
# Offload crosses NVLink-C2C: the seed catalog's gb200 host_link_gbps 225 (900 GB/s bidirectional per Grace
# superchip, NVIDIA GB200 NVL72 page, halved per direction and shared by its two GPUs).
GB200_C2C_SPECS = {**SPECS, "accelerators": {**ACCELERATORS, "gb200": replace(GB200, host_link_gbps=225.0)}}
MEASURED_405B_FSDP_OVER_PP = 729 / 578
FSDP_RECIPE_70B = {**FSDP_70B, "micro_batch": 2, "recompute": "none"}
FSDP_RECIPE_405B = {"tp": 2, "pp": 1, "cp": 1, "micro_batch": 1, "recompute": "none", "sharding": "zero3"}
PP_405B = {"tp": 4, "pp": 8, "vpp": 8, "cp": 2, "micro_batch": 1}


def _recipe_ratio(
    preset: str, *, gpus: int, batch: int, fsdp: dict[str, Any], offload_layers: int, pp: dict[str, Any]
) -> tuple[float, float, float]:
    """(engine FSDP + activation offload ÷ pipeline tokens/s, the FSDP estimate's error band low and high
    ends ÷ estimate), both under the default Megatron-Core profile."""
    fsdp_request = _request(
        preset, gpus=gpus, batch=batch, par=fsdp, activation_offload_layers=offload_layers
    )
    with_offload = estimate(fsdp_request, **GB200_C2C_SPECS)
    assert with_offload["fits"]
    pipeline = estimate(_request(preset, gpus=gpus, batch=batch, par=pp), **GB200_C2C_SPECS)
    band = with_offload["error_band"]
    tps = with_offload["tokens_per_second"]
    return (
        tps / pipeline["tokens_per_second"],
        band["tokens_per_second_low"] / tps,
        band["tokens_per_second_high"] / tps,
    )


def test_megatron_fsdp_with_offload_ranks_the_70b_fsdp_layout_above_the_pipeline_as_measured() -> None:
    """Engine: FSDP + 40 offloaded layers 3,832 tok/s/GPU (measured 3,986) ÷ TP 2 PP 4 VP 5 3,513 (measured
    3,546) = 1.090; measured 1.124 lies inside 1.090 × the blackwell/fp8 band [0.907, 1.152] = [0.989, 1.256].
    Without the offload the FSDP layout needs 330.9 GiB of 186 and only full recompute fits (0.842 above)."""
    ratio, low, high = _recipe_ratio(
        "llama3-70b", gpus=64, batch=128, fsdp=FSDP_RECIPE_70B, offload_layers=40, pp=PP_70B
    )
    assert ratio == pytest.approx(1.090, abs=0.005)
    assert ratio > 1.0
    assert ratio * low <= MEASURED_70B_FSDP_OVER_PP <= ratio * high


# Why the 405B pair stays an xfail: its measured 1.261 compares two FP8 recipes, not two layouts alone.
# Megatron-Bridge scripts/performance/configs/llama31/llama31_405b_llm_pretrain.yaml at fa0315ae2 (the 25.09
# summary's commit), perf_matrix gb200 num_gpus_128: fp8_cs (per-tensor current scaling) runs tp 2 pp 1
# use_megatron_fsdp with cpu_offloading_num_layers 95 (the 729), while the TP 4 PP 8 CP 2 VP 8 layout is
# configured only under bf16 and fp8_mx (MXFP8 block scaling, the summary note's "32x32"): the 578 is an
# MXFP8 run. The engine has no FP8-recipe input; what the recipe costs, measured in the same 25.09 summary at
# one layout: DGX-B200, this very TP 4 PP 8 CP 2 VP 8 layout, 664 per-tensor against 622 MXFP8 (0.937);
# Llama 3 8B on GB200 31,357 against 29,925 (0.954). And the GB200 MXFP8 pipeline run (578) is 7 % below
# B200's (622) at the same layout, recipe and release, although GB200 runs at least as fast as B200
# everywhere else in these tables (Llama 3 8B 1.045 per-tensor, 1.018 MXFP8 in 25.09; this 405B layout
# per-tensor 665 on GB200 in 25.04 against 664 on B200 in 25.09): a model that charges GB200 no more than
# B200 for any part of the step cannot reach 578 without contradicting the B200 rows. What GB200 does pay
# that B200 does not is its host: Megatron-LM docs/discussions/deepseek-v3-gb200-optimization (commit
# 1d9edcf8c7) found MXFP8 training on GB200 host-bound (the GPU finishes the quantization, scale-factor and
# swizzle kernels faster than Grace launches them), worth 10 % from NUMA binding of the host alone and more
# from CUDA graphs; TransformerEngine issue #2053 measures a TE Linear forward at 99.7 µs of CPU time per
# call on GB200 (PyTorch's Linear 37.1 µs there, 13.5 µs on a DGX H100's Xeon). The 405B recipe runs
# cuda_graphs false, and this layout's per-GPU layer work is a quarter of the FSDP layout's (4,096 tokens
# over tp 4 against 8,192 over tp 2), so launch cost weighs four times as much. The engine has no host-CPU
# or launch-overhead input and no fit row that would size one. Tried and set aside:
# charging the pipeline's one stage boundary that crosses between the two NVL72 racks at the NIC rate
# (the engine charges it at NVLink's) gives 699 tok/s/GPU for the pipeline, ratio 1.059, band high 1.214,
# still short of 1.261; it also moved a runs.csv H100 row (NeMo 24.07 Llama 2 13B, TP 1 PP 4 VP 10 on two
# nodes) from +0.6 % to −11.0 %, where Megatron's overlapped p2p evidently hides the cross-node sends, and it
# would refit the blackwell/fp8 factor 0.74 -> 0.78.
MEASURED_405B_B200_PIPELINE_PER_TENSOR = 664  # runs_frontier.csv nemo2509_b200_8
# The 25.09 DGX-B200 table's parenthesised figure for that row (docs/performance-summary.md at fa0315ae2).
MEASURED_405B_B200_PIPELINE_MXFP8 = 622
MEASURED_405B_GB200_PIPELINE_PER_TENSOR_2504 = 665  # runs_frontier.csv nemo2504_gb200_4, same layout


@pytest.mark.xfail(
    strict=True,
    reason="engine 0.996 (FSDP + 95 offloaded layers, measured 729 fp8_cs, ÷ TP 4 PP 8 CP 2 VP 8, "
    "measured 578); band [0.880, 1.078] misses the measured 1.261, whose pipeline figure is an MXFP8 run "
    "(fp8_mx, perf_matrix at fa0315ae2) 7 % below B200's MXFP8 run of the same layout (622); the engine "
    "has no FP8-recipe input",
)
def test_megatron_fsdp_with_offload_ranks_the_405b_fsdp_layout_above_the_pipeline_as_measured() -> None:
    ratio, low, high = _recipe_ratio(
        "llama3-405b", gpus=128, batch=64, fsdp=FSDP_RECIPE_405B, offload_layers=95, pp=PP_405B
    )
    assert ratio > 1.0
    assert ratio * low <= MEASURED_405B_FSDP_OVER_PP <= ratio * high


def test_the_405b_recipe_pair_is_estimated_as_a_tie() -> None:
    """The figures the xfail above records (a change to either layout's estimate shows here first)."""
    ratio, low, high = _recipe_ratio(
        "llama3-405b", gpus=128, batch=64, fsdp=FSDP_RECIPE_405B, offload_layers=95, pp=PP_405B
    )
    assert ratio == pytest.approx(0.993, abs=0.005)
    # The band was 0.892 … 1.146 until Blackwell timed its fused attention (Blackwell FP8 rows closer, the
    # blackwell/fp8/dense band narrower: 0.880 … 1.078); 0.823 … 1.350 since it rests on the check rows,
    # widened on their sources (issue 33): 1 / (1 + 0.215) and 1 / (1 − 0.259); since the MoE and scale
    # physics (engine 13) 1 / (1 + 0.2093) and 1 / (1 − 0.2789); since the slowest of N ranks is Blom's
    # expected maximum (STRAGGLER_CV 0.2 %, refitted) 1 / (1 + 0.2117) and 1 / (1 − 0.277); since the joint
    # refit after the ModelZoo causal count (Blackwell kernel 1.6, FP8 0.70) 1 / (1 + 0.2152) and
    # 1 / (1 − 0.2706); since the bands are random-effects prediction intervals (issue 33)
    # 1 / (1 + 0.5038) and 1 / (1 − 0.3078); since the NeMo rows run their FP8 recipes (h6) and the joint
    # refit after merging h5's alltoall re-sort (h8: MOE_ROUTED_PASSES 14 -> 13) 1 / (1 + 0.4076) and
    # 1 / (1 − 0.2476); since the joint refit after the merge (Blackwell kernel 1.9 -> 1.7, Hopper family
    # 0.75 -> 0.81) 1 / (1 + 0.3923) and 1 / (1 − 0.2241); since the joint refit after the DeepSeek-V3 rows'
    # gated MLP (Blackwell kernel 1.7 -> 1.6, FP8 0.67 -> 0.68; ratio 0.998 -> 0.993) 1 / (1 + 0.4040) and
    # 1 / (1 − 0.2275); since NeMo's B200 long-sequence rows are predicted (frontier_cases.run_gpus)
    # 1 / (1 + 0.2454) and 1 / (1 − 0.1344); since engine version 23's joint refit (FlashAttention-2 at its
    # published rates; Blackwell kernel 1.6 -> 1.8, FP8 0.68 -> 0.67) 1 / (1 + 0.2381) and 1 / (1 − 0.1322).
    assert (low, high) == (pytest.approx(0.808, abs=0.001), pytest.approx(1.152, abs=0.001))


def test_the_405b_pair_at_one_fp8_recipe_lies_inside_the_band() -> None:
    """Per-tensor FP8 on both sides: the FSDP recipe's 729 (NeMo 25.09) over the pipeline layout's 665 on
    GB200 (NeMo 25.04, the last table that ran it per-tensor on GB200) = 1.096, inside 0.997 × [0.892, 1.146]
    = [0.889, 1.142] (missed at 0.996 × [0.880, 1.078], held again at 0.996 × [0.823, 1.350] since issue
    33's bands). Two releases apart, so evidence rather than a measured pair: the MXFP8 recipe alone
    costs this layout 6.3 % on B200 within 25.09 (664 -> 622), and the 25.09 MXFP8 GB200 run sits a further
    7 % below B200's."""
    ratio, low, high = _recipe_ratio(
        "llama3-405b", gpus=128, batch=64, fsdp=FSDP_RECIPE_405B, offload_layers=95, pp=PP_405B
    )
    per_tensor = 729 / MEASURED_405B_GB200_PIPELINE_PER_TENSOR_2504
    assert ratio * low <= per_tensor <= ratio * high
    assert MEASURED_405B_B200_PIPELINE_MXFP8 / MEASURED_405B_B200_PIPELINE_PER_TENSOR == pytest.approx(
        0.937, abs=0.001
    )
    assert 578 / MEASURED_405B_B200_PIPELINE_MXFP8 == pytest.approx(0.929, abs=0.001)


def test_fsdp2_ranks_the_70b_fsdp_layout_above_the_pipeline_as_measured() -> None:
    # 0.999 (xfail) until the Blackwell FP8 factor was refitted 0.72 -> 0.74 with the MLPerf llama2_70b_lora
    # B200 row: 1.0004, FSDP ranked above by 0.04 %, a tie rather than NVIDIA's measured 12 %; 0.9974 since
    # the refit to 0.69 (xfail again; the Megatron-FSDP recipe with offload ranks it above, 1.094). 1.039
    # since FSDP2 upcasts and accumulates the pipeline layout's unsharded gradients in FP32 every micro-batch
    # (16 of them on 8.8 B parameters per GPU), a memory-bound pass the FSDP layout's sharded gradients skip;
    # 1.023 once every FSDP2 reduce-scatter moves FP32 gradients (torchtitan's reduce dtype).
    ratio = _ratio("fsdp2")[0]
    assert ratio > 1.0


# torchtitan docs/performance.md (commit 9dec370, 2024-12-26), Table 5: Llama 3.1 405B, 512 H100, FSDP 8,
# TP 8, PP 8, local batch 32, global 256, full activation checkpointing, Float8, AsyncTP: 1F1B 100 TPS/GPU,
# Interleaved 1F1B 128. torchtitan's defaults then: 2 stages per rank for a looped schedule
# (pipelining_utils.generate_split_points) and n_microbatches = the pipeline degree for either schedule
# (build_pipeline_schedule: pipeline_parallel_microbatches or pipeline_parallel_degree): 8 micro-batches of
# 4 sequences in both runs.
MEASURED_405B_INTERLEAVING_GAIN = 128 / 100


def test_torchtitan_405b_interleaving_gain_within_the_band() -> None:
    """Engine 1.299 at torchtitan's 8 micro-batches of 4 in both runs; measured 1.28. (The earlier strict
    xfail compared 16 micro-batches of 2 interleaved with 8 of 4, 1.52: not what torchtitan ran then.)"""

    def tps(vpp: int, micro_batch: int) -> float:
        request = {
            "model": {"preset": "llama3-405b"},
            "training": {
                "tokens": 1e12,
                "global_batch_seqs": 256,
                "precision": "fp8",
                "framework": "fsdp2",
                "tp_comm_overlap": True,
            },
            "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
            "parallelism": {
                "tp": 8,
                "pp": 8,
                "cp": 1,
                "vpp": vpp,
                "micro_batch": micro_batch,
                "recompute": "full",
                "sharding": "zero2",
            },
        }
        return float(estimate(request, **SPECS)["tokens_per_second"])

    gain = tps(2, 4) / tps(1, 4)
    assert gain == pytest.approx(1.299, abs=0.005)
    assert gain == pytest.approx(MEASURED_405B_INTERLEAVING_GAIN, rel=0.15)
