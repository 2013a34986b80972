"""training.precision recipes (engine/training/precision.py): the matmul rate, memory and cast passes of each,
the hardware that refuses them, and the error band of a recipe no calibration row ran."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import frontier_cases
import numpy as np
import pytest
from specs import FABRICS, GB200, H100_SXM

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.hardware import AcceleratorSpec
from clusterdesigner.engine.training.precision import RECIPES, recipe_for
from clusterdesigner.engine.training.timing import (
    _dp_bytes_per_param,
    _fsdp,
    _held,
    _shape,
    linear_matmul_rate_flops,
    matmul_rate_flops,
)
from clusterdesigner.engine.training.training import estimate, parse_problem
from clusterdesigner.engine.training.workload import SH_NONE, SH_ZERO1, SH_ZERO3, layouts

# GB200 with its FP4 dense peak: 10,000 TFLOP/s per GPU, twice its 5,000 FP8 (GB200 NVL72: 720 PFLOP/s dense
# FP4 over 72 GPUs, nvidia.com/en-us/data-center/gb200-nvl72/; apps/catalog/data/seed_catalog.json).
GB200_FP4 = replace(GB200, dense_tflops={**GB200.dense_tflops, "fp4": 10000.0})
# AMD parts by family only (their figures do not enter these tests): CDNA 3 has per-tensor FP8, CDNA 4 MX.
MI300X = AcceleratorSpec(
    slug="mi300x",
    name="MI300X",
    vendor="amd",
    family="cdna3",
    memory_gib=192,
    hbm_bandwidth_tbps=5.3,
    dense_tflops={"bf16": 1307.4, "fp8": 2614.9},
)
MI355X = replace(
    MI300X, slug="mi355x", name="MI355X", family="cdna4", dense_tflops={"bf16": 2516.6, "fp8": 5033.2}
)
ACCELERATORS = {a.slug: a for a in (H100_SXM, GB200_FP4, MI300X, MI355X)}


def _request(accelerator: str, precision: str, *, gpus_per_node: int = 4) -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 512, "precision": precision},
        "cluster": {
            "accelerator": accelerator,
            "nodes": 64 // gpus_per_node,
            "gpus_per_node": gpus_per_node,
            "fabric": "ib-ndr400",
        },
        "parallelism": {
            "tp": 4,
            "pp": 1,
            "cp": 1,
            "dp": 16,
            "micro_batch": 1,
            "recompute": "selective",
            "sharding": "zero1",
            "sequence_parallel": True,
        },
    }


def _estimate(accelerator: str, precision: str, **kw: Any) -> dict[str, Any]:
    return estimate(_request(accelerator, precision, **kw), accelerators=ACCELERATORS, fabrics=FABRICS)


@pytest.mark.parametrize(
    ("accelerator", "precision", "gpus_per_node"),
    [
        ("h100-sxm", "nvfp4", 8),  # Hopper: no FP4 tensor cores (TE: NVFP4 needs compute capability >= 10.0)
        ("h100-sxm", "mxfp8", 8),  # Hopper: no MX scaling (TE: MXFP8 needs compute capability 10.x)
        ("mi300x", "mxfp8", 8),  # CDNA 3: per-tensor FP8 only
        ("mi355x", "nvfp4", 8),  # NVFP4 is NVIDIA's format; CDNA 4 has MXFP4
        ("mi355x", "fp8_blockwise", 8),  # TE's FP8 block scaling: Hopper and Blackwell
    ],
)
def test_refuses_a_recipe_the_part_has_no_hardware_for(
    accelerator: str, precision: str, gpus_per_node: int
) -> None:
    with pytest.raises(InputError) as err:
        _estimate(accelerator, precision, gpus_per_node=gpus_per_node)
    assert err.value.field == "training.precision"
    assert RECIPES[precision].label in err.value.message


def test_accepts_mx_on_cdna4_and_blockwise_on_hopper() -> None:
    assert _estimate("mi355x", "mxfp8", gpus_per_node=8)["tokens_per_second"] > 0
    assert _estimate("h100-sxm", "fp8_blockwise", gpus_per_node=8)["tokens_per_second"] > 0


def test_fp8_keeps_the_calibrated_per_tensor_delayed_figures() -> None:
    # fp8 is today's recipe: 1-byte saved inputs (2 - 1 = 1 B less than BF16), 6 cast passes, no BF16 layers.
    fp8 = recipe_for("fp8")
    assert (fp8.saved_bytes_less, fp8.gemm_input_bytes, fp8.cast_passes) == (1.0, 1.0, 6.0)
    assert linear_matmul_rate_flops(H100_SXM, fp8) == matmul_rate_flops(H100_SXM, "fp8")


def test_mxfp8_runs_at_the_fp8_rate_and_nvfp4_at_the_fp4_rate_with_bf16_layers() -> None:
    # MXFP8 on GB200: the FP8 rate, 3,615.6 measured x 0.67 (Blackwell FP8 factor: 0.70 after the joint refit
    # after the ModelZoo causal count, 0.67 since each NeMo row is timed in its own FP8 recipe, issue 33 h6,
    # 0.68 since the joint refit after the DeepSeek-V3 rows' gated MLP, 0.67 since engine version 23's) =
    # 2,422.45 TFLOP/s.
    assert linear_matmul_rate_flops(GB200_FP4, recipe_for("mxfp8")) == pytest.approx(3615.6 * 0.67 * 1e12)
    # NVFP4: FP4 has no measured rate, so 0.80 x 10,000 = 8,000 x 0.67 = 5,360 TFLOP/s on 84 % of the linear
    # layers; BF16 on the other 16 %: 1,822 measured x 0.835 (Blackwell has no BF16 factor: the mean of
    # Ampere's 0.88 and Hopper's 0.79, engine version 23's joint refit) = 1,521.37 TFLOP/s. 0.16 / 1,521.37 =
    # 1.05168e-4, 0.84 / 5,360 = 1.56716e-4: 1 / 2.61884e-4 = 3,818.5 TFLOP/s (3,889.2 at 0.68 and 0.855
    # BF16).
    rate_bf16 = 1822.0 * 0.835
    expected = 1.0 / (0.16 / rate_bf16 + 0.84 / 5360.0)
    assert expected == pytest.approx(3818.5, abs=0.1)
    assert linear_matmul_rate_flops(GB200_FP4, recipe_for("nvfp4")) == pytest.approx(expected * 1e12)


def test_scale_factors_weigh_on_saved_inputs() -> None:
    # MXFP8: 1 + 1/32 B (one E8M0 per 32); NVFP4: 0.5 + 1/16 B (one E4M3 per 16), on 84 % of the layers:
    # (2 - 0.5625) x 0.84 = 1.2075 B less than BF16 per saved element.
    assert recipe_for("mxfp8").element_bytes == 1.03125
    assert recipe_for("fp8_blockwise").element_bytes == 1.03125  # FP32 per 1x128 tile: 1 + 4/128
    assert recipe_for("nvfp4").saved_bytes_less == pytest.approx(1.2075)
    fp8 = _estimate("gb200", "fp8")["memory_per_gpu_gib"]["activations"]
    mx = _estimate("gb200", "mxfp8")["memory_per_gpu_gib"]["activations"]
    fp4 = _estimate("gb200", "nvfp4")["memory_per_gpu_gib"]["activations"]
    bf16 = _estimate("gb200", "bf16")["memory_per_gpu_gib"]["activations"]
    assert fp4 < fp8 < mx < bf16


def test_nvfp4_is_faster_than_fp8_and_mxfp8_a_little_slower() -> None:
    fp8, mx, fp4, current = (
        _estimate("gb200", p)["tokens_per_second"] for p in ("fp8", "mxfp8", "nvfp4", "fp8_current")
    )
    assert fp4 > fp8
    # MXFP8: the same rate, 1/32 more bytes read per GEMM input: within 1 %.
    assert 0.99 * fp8 < mx < fp8
    # Current scaling: the same rate, plus the amax kernel's read of each quantized GEMM input before its
    # cast.
    assert 0.95 * fp8 < current < fp8


def test_current_scaling_adds_the_amax_read_of_the_three_gemm_inputs() -> None:
    # TE's Float8CurrentScalingQuantizer reads the input once for its amax, then casts (quantizer.cpp at
    # d0067d0d): 3 more passes over s·b·h per layer forward (QKV, projection and fc1 inputs), 2 B each, the
    # backward's at 2x, on HBM at 8.0 TB/s x 0.85. Llama 3 70B, 8,192 tokens, h 8,192, tp 4 with sequence
    # parallelism (s·h / 4 per GPU): 3 x 2 x 8,192 x 8,192 / 4 B / 6.8e12 B/s = 14.80 us a layer forward,
    # x 3 (forward + backward) x 80 layers x 32 micro-batches (512 / dp 16) = 0.11369 s more compute a step.
    fp8 = _estimate("gb200", "fp8")["step_time_s"]["compute"]
    current = _estimate("gb200", "fp8_current")
    assert current["step_time_s"]["compute"] - fp8 == pytest.approx(0.11369, rel=1e-4)
    named = {a["name"]: a for a in current["assumptions"]}
    # 6 + 3 less the 1.5 of the transpose copies GB200 does not write (next test): 7.5.
    assert named["precision_recipe[fp8_current].cast_passes"]["value"] == 7.5
    assert "Float8CurrentScalingQuantizer" in named["precision_recipe[fp8_current].cast_passes"]["source"]
    on_h100 = _estimate("h100-sxm", "fp8_current", gpus_per_node=8)["assumptions"]
    assert {a["name"]: a["value"] for a in on_h100}["precision_recipe[fp8_current].cast_passes"] == 9.0
    delayed = _estimate("h100-sxm", "fp8", gpus_per_node=8)["assumptions"]
    assert not any(a["name"].startswith("precision_recipe[") for a in delayed)


@pytest.mark.parametrize(
    ("precision", "hopper", "blackwell"),
    [
        # Per-tensor scaling on Hopper casts each of the three GEMM inputs (2 B read) to FP8 and its transpose
        # (1 B + 1 B written): 2 passes of 2 B each, 6 in all. Blackwell's FP8 GEMMs take every layout, so
        # TE writes no transpose (quantizer.cpp, nvte_is_non_tn_fp8_gemm_supported: compute capability
        # 10.x-11.x): 1.5 each, 4.5; current scaling's amax read adds 3 on both.
        ("fp8", 6.0, 4.5),
        ("fp8_current", 9.0, 7.5),
        # Block scales run along K: the column-wise copy is quantized on its own on every family.
        ("mxfp8", 6.0, 6.0),
        ("fp8_blockwise", 6.0, 6.0),
    ],
)
def test_per_tensor_casts_write_no_transpose_where_fp8_gemms_take_any_layout(
    precision: str, hopper: float, blackwell: float
) -> None:
    recipe = recipe_for(precision)
    assert (recipe.cast_passes_on("hopper"), recipe.cast_passes_on("blackwell")) == (hopper, blackwell)


def test_mxfp8_on_gb200_pays_the_transpose_per_tensor_fp8_skips() -> None:
    # Llama 3 70B on GB200 as above: MXFP8 writes 1.5 passes more of s·b·h / tp per layer forward than
    # per-tensor FP8, 1.5 x 2 B x 8,192 x 8,192 / 4 / 6.8e12 B/s = 7.40 us, x 3 x 80 layers x 32
    # micro-batches = 0.056845 s; and its GEMMs read 1/32 B more per input element (the E8M0 scales).
    fp8 = _estimate("gb200", "fp8")["step_time_s"]["compute"]
    mx = _estimate("gb200", "mxfp8")["step_time_s"]["compute"]
    casts = 80 * 32 * 3 * 1.5 * 2 * 8192 * 8192 / 4 / 6.8e12
    assert casts == pytest.approx(0.056845, abs=1e-6)
    assert mx - fp8 > casts
    assert mx - fp8 < casts * 1.5


def test_an_unmeasured_recipe_takes_the_widest_band_of_its_family_and_says_so() -> None:
    fp8 = _estimate("gb200", "fp8")["error_band"]
    fp4 = _estimate("gb200", "nvfp4")["error_band"]
    assert "no measured nvfp4 run: the widest band of the blackwell family" in fp4["basis"]
    assert fp4["basis"].startswith("blackwell/")
    width = {
        k: b["tokens_per_second_high"] / b["tokens_per_second_low"] for k, b in (("fp8", fp8), ("fp4", fp4))
    }
    assert width["fp4"] >= width["fp8"]


def test_current_scaling_takes_the_fp8_band_its_measured_runs_are_in() -> None:
    current = _estimate("gb200", "fp8_current")["error_band"]
    fp8 = _estimate("gb200", "fp8")["error_band"]
    assert current["regime"] == current["basis"] == fp8["basis"] == "blackwell/fp8/dense/lt32k/lt512"
    # The same band around its own (slower) estimate: the same ratio of high to low.
    assert current["tokens_per_second_high"] / current["tokens_per_second_low"] == pytest.approx(
        fp8["tokens_per_second_high"] / fp8["tokens_per_second_low"], rel=1e-12
    )


def test_unmeasured_recipe_lists_its_assumptions() -> None:
    names = {a["name"]: a for a in _estimate("gb200", "nvfp4")["assumptions"]}
    assert names["precision_recipe[nvfp4].bf16_layer_fraction"]["value"] == 0.16
    assert "arXiv:2509.25149" in names["precision_recipe[nvfp4].bf16_layer_fraction"]["source"]
    assert "stands in for NVFP4" in names["regime_efficiency[blackwell/fp8]"]["source"]


def test_the_measured_mxfp8_rows_estimate_in_their_recipe_within_a_percent_of_fp8() -> None:
    # runs_frontier.csv's two Qwen3 235B GB200 rows ran MXFP8 (Megatron-MoE-ModelZoo) and are estimated in
    # it (frontier_cases.recipe_of, issue 33 h6). Against the same rows entered as per-tensor fp8 (delayed
    # scaling), the 1/32 B scale per saved element differs, and MXFP8 writes a column-wise copy of each
    # quantized input that Blackwell's per-tensor cast does not (2 passes per input against 1.5), now over
    # the top_k routed copies of the experts' inputs too (timing._moe_expert_input_casts, issue 33 c2):
    # memory up, speed within 2 % (0.987 and 0.997 of fp8).
    rows = [r for r in frontier_cases.load_rows() if frontier_cases.recipe_of(r) == "mxfp8"]
    assert [r["run_id"] for r in rows] == ["moezoo_qwen3_gb200_2", "moezoo_qwen3_gb200_3"]
    specs = frontier_cases.catalog_specs()
    for row in rows:
        as_fp8 = frontier_cases.predict(row, specs, precision="fp8")
        as_mx = frontier_cases.predict(row, specs)
        assert frontier_cases.request_for(row)["training"]["precision"] == "mxfp8"
        assert as_fp8.predicted is not None and as_mx.predicted is not None
        assert 0.98 * as_fp8.predicted <= as_mx.predicted <= as_fp8.predicted


def _llama8b_64(sharding: str, **training: Any) -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 512, "precision": "fp8", **training},
        "cluster": {"accelerator": "h100-sxm", "nodes": 8, "gpus_per_node": 8, "fabric": "ib-ndr400"},
        "parallelism": {"tp": 1, "pp": 1, "cp": 1, "dp": 64, "micro_batch": 1, "sharding": sharding},
    }


@pytest.mark.parametrize(
    ("sharding", "training", "per_param"),
    [
        # Distributed optimizer: reduce-scatter of BF16 gradients (2 B) and all-gather of the FP8 weights
        # (1 B, --fp8-param-gather), each half of the all-reduce's traffic: (2 + 1) / 2 = 1.5 B a parameter.
        ("zero1", {"fp8_params": True}, 1.5),
        # FP32 gradient reduce (4 B) with FP8 gather: (4 + 1) / 2 = 2.5 B.
        ("zero1", {"fp8_params": True, "grad_dtype": "fp32"}, 2.5),
        # Without FP8 weights the all-reduce stays at the gradients' bytes, as before.
        ("zero1", {}, 2.0),
        # Plain DDP all-reduces gradients only; ZeRO-3 gathers its weights in _fsdp, not here.
        ("none", {"fp8_params": True}, 2.0),
        ("zero3", {"fp8_params": True}, 2.0),
        # LoRA all-reduces its BF16 adapters only, whatever the frozen base is stored in.
        ("zero1", {"fp8_params": True, "lora_rank": 16}, 2.0),
    ],
)
def test_the_dp_all_reduce_moves_fp8_weights_at_one_byte(
    sharding: str, training: dict[str, Any], per_param: float
) -> None:
    problem = parse_problem(_llama8b_64(sharding, **training), accelerators=ACCELERATORS, fabrics=FABRICS)
    code = {"none": SH_NONE, "zero1": SH_ZERO1, "zero3": SH_ZERO3}[sharding]
    assert _dp_bytes_per_param(problem.training, np.array([code])) == pytest.approx([per_param])


def test_fsdp_gathers_fp8_transformer_weights_at_one_byte() -> None:
    # Llama 3 8B on 64 H100 (8 nodes), ZeRO-3 over dp 64, nothing to hide the gathers under (compute 0): the
    # forward and backward all-gathers of the transformer layers' 32 x (41,943,040 + 176,160,768 + 8,192)
    # = 6,979,584,000 weights move 1 B each instead of 2 under training.fp8_params (the embedding and output
    # layer stay BF16). The engine's hierarchical ring (timing.ring_time), 8 GPUs a node over 8 nodes: 7/8 of
    # the bytes over NVLink at 450 GB/s x 0.80 = 360 GB/s, then 7/8 of them over the 8 NICs of a node at the
    # NDR 400 busbw of 48 GB/s each: 6,979,584,000 x (0.875 / 360e9 + 0.875 / 384e9) = 0.032868 s a gather,
    # two gathers (forward and backward) = 0.065736 s less a micro-batch, all of it exposed (no compute to
    # hide under), and x (1 + 1/32) for the first of the 32 layers' gathers, which nothing precedes.
    def fsdp_mb(**training: Any) -> float:
        problem = parse_problem(_llama8b_64("zero3", **training), accelerators=ACCELERATORS, fabrics=FABRICS)
        lay = layouts(
            tp=1,
            pp=1,
            dp=64,
            cp=1,
            ep=1,
            vpp=1,
            micro_batch=1,
            recompute=0,
            sharding=SH_ZERO3,
            sequence_parallel=0,
        )
        zero = np.zeros(1)
        mb, _ = _fsdp(
            _shape(problem, lay),
            _held(problem, lay),
            mb_fwd_bwd=zero,
            n_stage=np.full(1, 32.0),
            last_bwd=zero,
        )
        return float(mb[0])

    saved = 2 * 6_979_584_000 * (0.875 / 360e9 + 0.875 / (8 * 48e9))
    assert saved == pytest.approx(0.065736, abs=1e-6)
    assert fsdp_mb() - fsdp_mb(fp8_params=True) == pytest.approx(saved * (1 + 1 / 32), rel=1e-9)
