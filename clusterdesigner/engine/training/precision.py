"""Training precision recipes: the values of ``training.precision`` and what each one costs.

A recipe says at which dense peak the linear layers' GEMMs run (``matmul_precision``), what a quantized
GEMM input weighs once its scale factors are counted (``element_bytes``), how many memory-bound passes its
quantize kernels add (``cast_passes``), which share of the linear layers it keeps in BF16
(``bf16_layer_fraction``) and which accelerator families have the hardware for it. What every recipe
keeps in higher precision: the attention core (scores, softmax: timed at the BF16 rate,
``timing._attention``), the router, the embedding and the output layer (BF16 GEMMs), the norms, and the
optimizer's FP32 master weights and moments (``memory.OPTIMIZER_BYTES``). Sources:

- Transformer Engine recipes (NVIDIA/TransformerEngine transformer_engine/common/recipe/__init__.py at
  d0067d0d, 2026-08-22): DelayedScaling (per-tensor scale from the amax history), Float8CurrentScaling
  (per-tensor scale from this tensor's amax), Float8BlockScaling (1×128 tiles for activations and
  gradients, 128×128 blocks for weights, FP32 scale containers; the tensor and its transpose quantized
  separately from the high-precision input), MXFP8BlockScaling (E4M3, one E8M0 scale per 32 elements),
  NVFP4BlockScaling (E2M1, one E4M3 scale per 16 elements plus one FP32 scale per tensor; 16×16 2-D blocks
  for weights, 16×16 random Hadamard transforms on the wgrad inputs, stochastic rounding of gradients).
- Hardware support, TE's checks (transformer_engine/pytorch/quantization.py at d0067d0d): FP8 needs
  compute capability ≥ 8.9 (Ada, Hopper, Blackwell); FP8 block scaling ≥ 9.0 with CUDA ≥ 12.9 (Hopper,
  Blackwell); MXFP8 10.x (data-centre Blackwell; "not supported on 12.0+ yet"); NVFP4 ≥ 10.0 (Blackwell).
  AMD CDNA 4 (MI355X, MI350X) runs MX formats in its matrix cores: its MFMA instructions take FP8, FP6 and
  FP4 operands with E8M0 block-exponent (microscaling) scales, which CDNA 3 lacks (AMD ROCm blog "Matrix
  Core Programming on AMD CDNA3 and CDNA4 architecture"; AMD CDNA 4 architecture white paper); NVFP4 is
  NVIDIA's format. CDNA 3 (MI300X, MI325X) has per-tensor FP8 only. Hopper has no MX or NVFP4 hardware.
- NVFP4 pre-training (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv:2509.25149, Sec. 4):
  only the linear layers' Fprop, Dgrad and Wgrad GEMMs run in NVFP4; about 16 % of the linear layers,
  mostly the final ones, stay in BF16 for stability in the 12B run; embeddings, the output head, norms,
  attention and the optimizer stay in BF16/FP32.
- Megatron-LM flags (megatron/core/transformer/transformer_config.py at d98e8a64): ``--fp8-format
  e4m3|hybrid``, ``--fp8-recipe tensorwise|delayed|mxfp8|blockwise``, ``--fp4-format e2m1 --fp4-recipe
  nvfp4``, ``--first-last-layers-bf16 --num-layers-at-start-in-bf16 N --num-layers-at-end-in-bf16 N``.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.hardware import AcceleratorSpec
from clusterdesigner.engine.training.workload import Assumption

FIELD = "training.precision"
# A quantize kernel's memory-bound passes over s·b·h (2-byte reads and writes) per layer forward: the amax
# and cast of the GEMM inputs (QKV, projection and fc1 inputs, read once and written with the transpose),
# the engine's standing assumption (timing.FP8_CAST_PASSES). Delayed scaling casts with the scale of earlier
# steps and updates the amax inside the same cast kernel; the block-scaled recipes compute their scales
# inside the cast kernel too and write them with it (``element_bytes``): TE's MXFP8Quantizer::quantize is one
# nvte_quantize_v2 call (NVIDIA/TransformerEngine transformer_engine/pytorch/csrc/quantizer.cpp at d0067d0d).
CAST_PASSES_DELAYED = 6.0
# The GEMM inputs of width h those passes count per layer (QKV, projection, fc1): a recipe's passes per
# quantized input are cast_passes / CAST_INPUTS_PER_LAYER (2 for delayed scaling: read 2 B, write 1 B and
# its 1 B transpose), what timing._moe_expert_input_casts charges each routed expert input.
CAST_INPUTS_PER_LAYER = 3.0
# Current scaling needs the tensor's own amax before it can cast: Float8CurrentScalingQuantizer::quantize_impl
# (same file) runs nvte_compute_amax_with_config, a kernel that reads the whole input, then the scale, then
# nvte_quantize_v2, which reads it again. One more read of each of the three quantized GEMM inputs per layer
# forward: 3 passes over s·b·h (the backward's gradient casts follow at the engine's 2× of the forward's
# element-wise passes). Counted from the code, not fitted. Before issue 33 the current-scaling rows were timed
# as delayed scaling and this pass sat inside the fitted FP8 factors.
CURRENT_SCALING_AMAX_PASSES = 3.0
CAST_PASSES_CURRENT = CAST_PASSES_DELAYED + CURRENT_SCALING_AMAX_PASSES
# The transpose copy a per-tensor FP8 cast writes (1 B per element of each of the three inputs: 1.5 passes of
# 2 B) is written only where the FP8 GEMMs take the TN layout alone (Hopper, Ada). On data-centre Blackwell
# and after (compute capability 10.x-11.x and >= 13.0) any FP8 GEMM layout runs, and Transformer Engine's
# Float8Quantizer::create_tensor makes no transpose (with_transpose = columnwise_usage &&
# !nvte_is_non_tn_fp8_gemm_supported(): transformer_engine/pytorch/csrc/quantizer.cpp and
# common/transformer_engine.cpp at d0067d0d). The block-scaled recipes write both orientations everywhere:
# their scales run along the GEMM's K, so the column-wise copy is quantized on its own.
PER_TENSOR_TRANSPOSE_PASSES = 1.5
NON_TN_FP8_FAMILIES = ("blackwell", "rubin")
# NVFP4's BF16 share of the linear layers (arXiv:2509.25149 Sec. 4: "~16 %" of the 12B model's).
NVFP4_BF16_LAYER_FRACTION = 0.16


@dataclass(frozen=True)
class PrecisionRecipe:
    """One ``training.precision`` value.

    ``matmul_precision`` is the dense peak the quantized GEMMs run at (an ``AcceleratorSpec.dense_tflops``
    key); ``calibration_precision`` the regime whose fitted factor (``timing.REGIME_EFFICIENCY``) stands
    for the kernels' share of the achievable rate; ``element_bytes`` what one quantized element of a saved
    GEMM input weighs with its scales (MXFP8 1 + 1/32: one E8M0 byte per 32; FP8 blockwise 1 + 4/128: one
    FP32 scale per 1×128 tile; NVFP4 0.5 + 1/16: one E4M3 byte per 16, the per-tensor FP32 negligible);
    ``cast_passes`` the quantize kernels' memory-bound passes (CAST_PASSES_DELAYED, CAST_PASSES_CURRENT for
    current scaling's separate amax read);
    ``bf16_layer_fraction`` the share of linear layers kept in BF16; ``families`` the accelerator families
    with the hardware (empty: any accelerator with a dense peak at ``matmul_precision``); ``measured``
    whether calibration rows of this recipe exist (its runs sit among ``calibration_precision``'s rows; if
    none, the estimate's error band is the widest of its family, ``error_band.band_for``); ``megatron_args``
    the Megatron-LM flags that select it, (flag, value) with "" for a switch."""

    name: str
    label: str
    matmul_precision: str
    calibration_precision: str
    element_bytes: float
    cast_passes: float
    bf16_layer_fraction: float
    families: tuple[str, ...]
    measured: bool
    megatron_args: tuple[tuple[str, str], ...]
    source: str

    @property
    def quantized(self) -> bool:
        return self.matmul_precision != "bf16"

    @property
    def saved_bytes_less(self) -> float:
        """Bytes per element a saved GEMM input weighs less than its 2-byte BF16 copy, averaged over the
        linear layers: (2 − element_bytes) · (1 − bf16_layer_fraction); 0 in BF16, exactly 1 in FP8."""
        if not self.quantized:
            return 0.0
        return (2.0 - self.element_bytes) * (1.0 - self.bf16_layer_fraction)

    @property
    def per_tensor(self) -> bool:
        """One FP8 scale per tensor (delayed or current scaling), not per block."""
        return self.matmul_precision == "fp8" and self.element_bytes == 1.0

    def cast_passes_on(self, family: str) -> float:
        """``cast_passes`` on an accelerator family: a per-tensor recipe writes no transpose copy where the
        FP8 GEMMs take every layout (NON_TN_FP8_FAMILIES, PER_TENSOR_TRANSPOSE_PASSES less)."""
        if self.per_tensor and family in NON_TN_FP8_FAMILIES:
            return self.cast_passes - PER_TENSOR_TRANSPOSE_PASSES
        return self.cast_passes

    @property
    def gemm_input_bytes(self) -> float:
        """Bytes per element a GEMM reads of its inputs, 2 − ``saved_bytes_less``."""
        return 2.0 - self.saved_bytes_less


_TE = "NVIDIA/TransformerEngine transformer_engine/common/recipe/__init__.py at d0067d0d"
_HW = "TE quantization.py at d0067d0d"
RECIPES: dict[str, PrecisionRecipe] = {
    r.name: r
    for r in (
        PrecisionRecipe(
            "bf16", "BF16 mixed precision", "bf16", "bf16", 2.0, 0.0, 0.0, (), True, (), "BF16 GEMMs"
        ),
        PrecisionRecipe(
            "fp8",
            "FP8 per-tensor, delayed scaling",
            "fp8",
            "fp8",
            1.0,
            CAST_PASSES_DELAYED,
            0.0,
            (),
            True,
            (("--fp8-format", "hybrid"), ("--fp8-recipe", "delayed")),
            f"DelayedScaling, E4M3 forward / E5M2 gradients (HYBRID) ({_TE})",
        ),
        PrecisionRecipe(
            "fp8_current",
            "FP8 per-tensor, current scaling",
            "fp8",
            "fp8",
            1.0,
            CAST_PASSES_CURRENT,
            0.0,
            (),
            True,
            (("--fp8-format", "hybrid"), ("--fp8-recipe", "tensorwise")),
            f"Float8CurrentScaling ({_TE}), its amax read before the cast (quantizer.cpp at d0067d0d); "
            "measured: the NeMo 25.04-25.11 current-scaling rows of runs_frontier.csv are among the FP8 rows "
            "the FP8 factors and error bands rest on",
        ),
        PrecisionRecipe(
            "fp8_blockwise",
            "FP8 blockwise (1x128 / 128x128, DeepSeek-V3 style)",
            "fp8",
            "fp8",
            1.0 + 4.0 / 128.0,
            CAST_PASSES_DELAYED,
            0.0,
            ("hopper", "blackwell", "rubin"),
            False,
            (("--fp8-format", "e4m3"), ("--fp8-recipe", "blockwise")),
            f"Float8BlockScaling: FP32 scale per 1x128 tile, 128x128 for weights ({_TE}; compute capability "
            f">= 9.0, {_HW}; DeepSeek-V3, arXiv:2412.19437 Sec. 3.3)",
        ),
        PrecisionRecipe(
            "mxfp8",
            "MXFP8 (E4M3, E8M0 scale per 32)",
            "fp8",
            "fp8",
            1.0 + 1.0 / 32.0,
            CAST_PASSES_DELAYED,
            0.0,
            ("blackwell", "rubin", "cdna4"),
            False,
            (("--fp8-format", "e4m3"), ("--fp8-recipe", "mxfp8")),
            f"MXFP8BlockScaling at the FP8 dense rate ({_TE}; Blackwell compute capability 10.x, {_HW}; "
            "AMD CDNA 4 MFMA takes E8M0 block scales, ROCm blog 'Matrix Core Programming on AMD CDNA3 and "
            "CDNA4')",
        ),
        PrecisionRecipe(
            "nvfp4",
            "NVFP4 (E2M1, E4M3 scale per 16 + FP32 per tensor)",
            "fp4",
            "fp8",
            0.5 + 1.0 / 16.0,
            CAST_PASSES_DELAYED,
            NVFP4_BF16_LAYER_FRACTION,
            ("blackwell", "rubin"),
            False,
            (("--fp4-format", "e2m1"), ("--fp4-recipe", "nvfp4"), ("--first-last-layers-bf16", "")),
            f"NVFP4BlockScaling at the FP4 dense rate ({_TE}; compute capability >= 10.0, {_HW}); "
            f"{NVFP4_BF16_LAYER_FRACTION:.0%} of linear layers in BF16 (arXiv:2509.25149 Sec. 4)",
        ),
    )
}
PRECISIONS = tuple(RECIPES)
# Recipes whose GEMMs read 8-bit inputs: what FP8 weights and FP8 MoE dispatch go with.
FP8_RECIPES = tuple(r.name for r in RECIPES.values() if r.matmul_precision == "fp8")


def bf16_layers(recipe: PrecisionRecipe, layers: int) -> tuple[int, int]:
    """(first, last) transformer layers a recipe keeps in BF16, for Megatron-LM's
    --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16: round(fraction × layers), at least one,
    a fifth of them first and the rest last. The NVFP4 report keeps about 16 % of the linear layers in BF16,
    mostly the final ones (arXiv:2509.25149 Sec. 4); the 1:4 split is this engine's assumption, not the
    report's, and the timing uses the fraction only. (0, 0) for a recipe that quantizes every layer."""
    if not recipe.bf16_layer_fraction:
        return 0, 0
    total = min(layers, max(1, round(recipe.bf16_layer_fraction * layers)))
    first = round(total / 5)
    return first, total - first


def recipe_for(precision: str) -> PrecisionRecipe:
    """The recipe of a ``training.precision`` value; an error naming the field for an unknown one."""
    try:
        return RECIPES[precision]
    except KeyError:
        raise InputError(
            f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}", field=FIELD
        ) from None


def check_supported(recipe: PrecisionRecipe, accelerator: AcceleratorSpec, *, field: str = FIELD) -> None:
    """Refuse a recipe the accelerator has no hardware for: its family is not among ``recipe.families``
    (Hopper has no MXFP8 or NVFP4 units; CDNA has no NVFP4) or it has no dense peak at the recipe's matmul
    precision (nor at BF16, for a recipe that keeps layers in BF16). The error names ``field``, where the
    precision sits in what the user sent."""
    if recipe.families and accelerator.family not in recipe.families:
        raise InputError(
            f"{accelerator.name} ({accelerator.family or 'unknown family'}) has no hardware support for "
            f"{recipe.label}; it runs on {', '.join(recipe.families)} accelerators",
            field=field,
        )
    for precision in (recipe.matmul_precision, *(("bf16",) if recipe.bf16_layer_fraction else ())):
        if precision not in accelerator.dense_tflops:
            have = ", ".join(sorted(accelerator.dense_tflops))
            raise InputError(
                f"{accelerator.name} has no dense {precision} peak (it supports {have})", field=field
            )


def _cast_passes_source(recipe: PrecisionRecipe, family: str) -> str:
    parts = [f"the delayed-scaling cast's {CAST_PASSES_DELAYED:g}"]
    if recipe.cast_passes != CAST_PASSES_DELAYED:
        parts.append(
            f"{CURRENT_SCALING_AMAX_PASSES:g} reads of the QKV, projection and fc1 inputs by the amax kernel "
            "current scaling runs before its cast (Float8CurrentScalingQuantizer::quantize_impl)"
        )
    if recipe.cast_passes_on(family) != recipe.cast_passes:
        parts.append(
            f"less the {PER_TENSOR_TRANSPOSE_PASSES:g} of the transpose copies {family}'s FP8 GEMMs do not "
            "need (nvte_is_non_tn_fp8_gemm_supported)"
        )
    return "; ".join(parts) + " (TE quantizer.cpp at d0067d0d); counted, not fitted"


def recipe_assumptions(recipe: PrecisionRecipe, family: str = "") -> tuple[Assumption, ...]:
    """What a recipe other than BF16 and FP8 delayed scaling adds to an estimate's assumptions: a measured
    recipe its quantize passes on ``family`` where they differ from delayed scaling's on Hopper (current
    scaling's amax read, the transpose copy Blackwell's per-tensor casts skip), an unmeasured one its
    quantized element's bytes, its quantize passes and its BF16 share of linear layers."""
    if recipe.measured:
        passes = recipe.cast_passes_on(family)
        if passes == CAST_PASSES_DELAYED or not recipe.quantized:
            return ()
        return (
            Assumption(
                f"precision_recipe[{recipe.name}].cast_passes",
                passes,
                "reads+writes of s·b·h per layer fwd",
                _cast_passes_source(recipe, family),
            ),
        )
    return (
        Assumption(
            f"precision_recipe[{recipe.name}].element_bytes",
            recipe.element_bytes,
            "B per quantized GEMM-input element, scales included",
            recipe.source,
        ),
        Assumption(
            f"precision_recipe[{recipe.name}].cast_passes",
            recipe.cast_passes,
            "reads+writes of s·b·h per layer fwd",
            "quantize kernels: amax and cast of the QKV, projection and fc1 inputs, as FP8's (the block "
            "scales are computed in the cast kernel); an assumption, not measured for this recipe",
        ),
        Assumption(
            f"precision_recipe[{recipe.name}].bf16_layer_fraction",
            recipe.bf16_layer_fraction,
            "of linear layers kept in BF16",
            "NVFP4: arXiv:2509.25149 Sec. 4 (about 16 % of the 12B model's linear layers)"
            if recipe.bf16_layer_fraction
            else "none: every linear layer quantized (TE's default)",
        ),
    )
