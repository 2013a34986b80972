"""Memory levers beyond the parallel layout (issue 19 item 3): per-module selective recompute, activation
offload, optimizer offload and LoRA fine-tuning. Their bytes and FLOPs, from the activation and parameter
terms the engine already has (``memory.activation_bytes_per_layer``, ``model.ModelShape``).

Sources: Megatron-Core's --recompute-modules (megatron/core/transformer/transformer_config.py at
NVIDIA/Megatron-LM d98e8a64: core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts; "moe_act",
"layernorm" and "mla_up_proj" discard their output and recompute it, the others checkpoint the submodule and
keep only its input), --cpu-offloading-num-layers (model_parallel_config.py there: activations of that many
layers go to host memory; transformer_config.py refuses it with pp > 1 or with recompute), LoRA (Hu et al.
2021, arXiv:2106.09685: frozen W, trained B·A of rank r; Sec. 4.2, no gradients or optimizer states for the
frozen weights, 25 % faster than full fine-tuning on GPT-3 175B) and NeMo / Megatron-Bridge's LoRA default
targets linear_qkv, linear_proj, linear_fc1, linear_fc2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clusterdesigner.engine.errors import InputError
from clusterdesigner.engine.model import (
    RECOMPUTE_FULL,
    RECOMPUTE_SELECTIVE,
    ModelShape,
    op_checkpoint_flops_fwd_per_token,
)
from clusterdesigner.engine.workload import Assumption, Training

RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
DEFAULT_RECOMPUTE_MODULES = ("core_attn",)
LORA_MODULES = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")

LEVER_ASSUMPTIONS = (
    Assumption(
        "lora_frozen_backward_factor",
        1.0,
        "× forward matmul FLOPs",
        "LoRA (Hu et al. 2021, arXiv:2106.09685) Sec. 4.2: a frozen weight needs the input gradient only "
        "(one GEMM, 1× forward) where a trained one also needs its weight gradient (2× forward)",
    ),
)


def check_recompute_modules(model: ModelShape, modules: tuple[str, ...]) -> None:
    """Megatron-Core's checks (transformer_config.py __post_init__): known names; mla_up_proj needs MLA."""
    field = "training.recompute_modules"
    for name in modules:
        if name not in RECOMPUTE_MODULES:
            raise InputError(f"unknown module {name!r}; use {', '.join(RECOMPUTE_MODULES)}", field=field)
    if "mla_up_proj" in modules and not model.is_mla:
        raise InputError("mla_up_proj needs multi-head latent attention (kv_lora_rank)", field=field)


def _moe_share(model: ModelShape) -> float:
    return model.moe_layers / model.layers if model.is_moe else 0.0


def recompute_savings_per_layer(
    model: ModelShape, training: Training, *, tokens: Any, tp: Any, sp_div: Any
) -> Any:
    """Bytes per layer and micro-batch that selective recompute of ``training.recompute_modules`` does not
    store beyond the attention scores (core_attn, which ``memory.activation_bytes_per_layer`` drops itself),
    on that function's terms (its dense and MoE layers averaged):

    - layernorm: the two norm outputs (the QKV and MLP inputs), 2 × 2·t·h/sp; in FP8 the linears keep their
      own 1-byte casts, which the discarded norm output does not free, so nothing;
    - mla_up_proj: the Q, K and V the up-projections write, 2·t·(q + k + v)/tp;
    - mlp: a dense layer's MLP intermediates (6f for SwiGLU, 4f for GeLU, the FP8 cast of the activation
      output 1 B), on the dense layers' share;
    - moe: the whole MoE block's intermediates, (top_k + shared)·f_e wide; shared_experts: the shared
      experts' part; moe_act: the activation output of the routed and shared experts, 2 B (FP8: 1 B)
      per element — each on the MoE layers' share, and never twice (moe covers the other two).
    """
    mods = set(training.recompute_modules)
    fp8 = 1.0 if training.precision == "fp8" else 0.0
    factor = (6.0 if model.gated_mlp else 4.0) - fp8
    share = _moe_share(model)
    saved: Any = 0.0
    if "layernorm" in mods:
        saved = saved + (1.0 - fp8) * 4.0 * tokens * model.hidden / sp_div
    if "mla_up_proj" in mods:
        saved = saved + 2.0 * tokens * (model.q_width + model.k_width + model.v_width) / tp
    if "mlp" in mods:
        saved = saved + (1.0 - share) * factor * tokens * model.ffn_hidden / tp
    if share:
        routed, shared = model.top_k * model.expert_ffn_hidden, model.shared_experts * model.expert_ffn_hidden
        if "moe" in mods:
            moe = factor * (routed + shared)
        else:
            moe = (factor * shared if "shared_experts" in mods else 0.0) + (
                (2.0 - fp8) * (routed + (0.0 if "shared_experts" in mods else shared))
                if "moe_act" in mods
                else 0.0
            )
        saved = saved + share * moe * tokens / tp
    return saved


def recompute_flops_fwd_per_token(model: ModelShape, modules: tuple[str, ...]) -> float:
    """Forward FLOPs per token that selective recompute of ``modules`` runs again, over all layers: the
    attention core (core_attn, Korthikanti 2022 Sec. 5), the dense MLPs (mlp), the routed and shared experts
    and router (moe), the shared experts (shared_experts), the MLA up-projections (mla_up_proj). The norms and
    the activation function are element-wise (no matmul FLOPs); the MTP modules are not recomputed."""
    mods = set(modules)
    flops = model.attention_core_flops_fwd_per_token if "core_attn" in mods else 0.0
    if "mlp" in mods:
        flops += 2.0 * model.dense_layers * model.dense_mlp_params
    if model.is_moe and "moe" in mods:
        per_layer = (model.top_k + model.shared_experts) * model.expert_params + model.hidden * model.experts
        flops += 2.0 * model.moe_layers * per_layer
    elif model.is_moe and "shared_experts" in mods:
        flops += 2.0 * model.moe_layers * model.shared_experts * model.expert_params
    if model.is_mla and "mla_up_proj" in mods:
        up = model.q_lora_rank * model.q_width if model.q_lora_rank else 0
        up += model.kv_lora_rank * model.heads * (model.qk_nope_head_dim + model.v_head_dim)
        flops += 2.0 * model.layers * up
    return flops


def lora_layer_params(model: ModelShape, training: Training) -> tuple[float, float]:
    """(non-expert, routed-expert) adapter parameters of one average layer: per targeted linear of input d_in
    and output d_out, r·(d_in + d_out) (A is d_in × r, B is r × d_out). linear_qkv h → q + k + v,
    linear_proj attention output → h, linear_fc1 h → f (2f gated), linear_fc2 f → h; in MoE layers fc1 and
    fc2 once per routed and shared expert (of width f_e)."""
    if not training.lora_rank:
        return 0.0, 0.0
    r, h, mods = float(training.lora_rank), model.hidden, set(training.lora_modules)
    gate = 2 if model.gated_mlp else 1
    attn = 0.0
    if "linear_qkv" in mods:
        attn += r * (h + model.q_width + model.k_width + model.v_width)
    if "linear_proj" in mods:
        attn += r * (model.attn_out_width + h)

    def mlp(width: int) -> float:
        return r * (
            (h + gate * width if "linear_fc1" in mods else 0) + (width + h if "linear_fc2" in mods else 0)
        )

    share = _moe_share(model)
    dense = attn + (1.0 - share) * mlp(model.ffn_hidden)
    if share:
        dense += share * model.shared_experts * mlp(model.expert_ffn_hidden)
        return dense, share * model.experts * mlp(model.expert_ffn_hidden)
    return dense, 0.0


def lora_active_params_per_token(model: ModelShape, training: Training) -> float:
    """Adapter parameters one token multiplies by over all layers (top_k of the routed experts' adapters)."""
    dense, expert = lora_layer_params(model, training)
    routed = expert * model.top_k / model.experts if model.is_moe else 0.0
    return model.layers * (dense + routed)


def training_flops_per_token(model: ModelShape, training: Training) -> float:
    """Model FLOPs per token of the run: ``model_flops_per_token`` (3 × forward); under LoRA the frozen
    matmuls (layers and output layer) take 1× forward in backward instead of 2×, the attention core keeps
    its 2×, and the adapters add 3 × 2 FLOPs per active adapter parameter (Hu et al. 2021 Sec. 4.2)."""
    if not training.lora_rank:
        return model.model_flops_per_token
    adapters = 2.0 * lora_active_params_per_token(model, training)
    return (
        2.0 * (model.layer_matmul_flops_fwd_per_token + model.output_flops_fwd_per_token)
        + 3.0 * model.attention_core_flops_fwd_per_token
        + 3.0 * adapters
    )


def full_recompute_share(training: Training, *, n_stage: Any, vpp: Any) -> Any:
    """Share of a stage's layers that full recompute recomputes (numpy-friendly): 1.0, or with
    ``training.recompute_num_layers`` N, Megatron-Core's --recompute-granularity full --recompute-method
    block --recompute-num-layers N: each model chunk (a pipeline stage's ``n_stage`` / vpp layers)
    checkpoints the input of its first N layers and recomputes them in backward, and runs the rest as
    without recompute (megatron/core/recompute.py ``checkpointed_forward`` at NVIDIA/Megatron-LM d98e8a64,
    once transformer_block.py ``_checkpointed_forward``: ``use_checkpoint = layer_idx <
    recompute_num_layers`` over ``num_layers_per_pipeline_rank``, the chunk's layers), so N·vpp of the
    stage's layers, at most all of them. A stage lightened by an uneven split is charged the full stage's
    share (its memory slightly over)."""
    if not training.recompute_num_layers:
        return 1.0
    return np.minimum(1.0, training.recompute_num_layers * np.asarray(vpp, dtype=np.float64) / n_stage)


def hardware_flops(model: ModelShape, training: Training, recompute: Any, *, full_share: Any = 1.0) -> Any:
    """``training_flops_per_token`` plus the recompute pass (numpy-friendly in the mode index): full
    recomputes every layer's forward (matmuls, attention core, adapters), selective the modules'
    (``recompute_flops_fwd_per_token``), or under PyTorch's op-level checkpointing (``training.
    selective_recompute == "op"``, the FSDP2 stacks) ``model.op_checkpoint_flops_fwd_per_token``; full
    recompute of only some layers (``full_recompute_share``) the ``full_share`` of the layers."""
    rc = np.asarray(recompute)
    full = (
        model.layer_matmul_flops_fwd_per_token
        + model.attention_core_flops_fwd_per_token
        + 2.0 * lora_active_params_per_token(model, training)
    )
    if training.selective_recompute == "op":
        selective = op_checkpoint_flops_fwd_per_token(model)
    else:
        selective = recompute_flops_fwd_per_token(model, training.recompute_modules)
    extra = np.where(
        rc == RECOMPUTE_FULL, full * full_share, np.where(rc == RECOMPUTE_SELECTIVE, selective, 0.0)
    )
    return training_flops_per_token(model, training) + extra
