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

Per-module activation offload: Megatron-Core's --fine-grained-activation-offloading --offload-modules
(transformer_config.py ``offload_modules`` and docs/source/api-guide/fine_grained_activation_offloading.md
at NVIDIA/Megatron-LM 5c209c35: attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act;
"each module offloads its input activation to CPU during forward and reloads it before backward", the
tensors autograd saves inside the module, copied on a side stream; attn_proj only with core_attn; not with
--cpu-offloading). SwiGLU input in FP8: Megatron-Core's activation_func_fp8_input_store ("Store the input
of MLP activation function in FP8 for backprop to save memory. The stored input is casted back to the
original precision before backprop computation", transformer_config.py; applied by bias_swiglu_impl in the
dense MLP, the shared and the routed experts).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.model import (
    RECOMPUTE_FULL,
    RECOMPUTE_SELECTIVE,
    ModelShape,
    op_checkpoint_flops_fwd_per_token,
)
from clusterdesigner.engine.training.precision import recipe_for
from clusterdesigner.engine.training.workload import Assumption, Training

RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")
DEFAULT_RECOMPUTE_MODULES = ("core_attn",)
LORA_MODULES = ("linear_qkv", "linear_proj", "linear_fc1", "linear_fc2")
OFFLOAD_MODULES = ("attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act")

LEVER_ASSUMPTIONS = (
    Assumption(
        "lora_frozen_backward_factor",
        1.0,
        "× forward matmul FLOPs",
        "LoRA (Hu et al. 2021, arXiv:2106.09685) Sec. 4.2: a frozen weight needs the input gradient only "
        "(one GEMM, 1× forward) where a trained one also needs its weight gradient (2× forward)",
    ),
)


def check_recompute_modules(
    model: ModelShape, modules: tuple[str, ...], *, field: str = "training.recompute_modules"
) -> None:
    """Megatron-Core's checks (transformer_config.py __post_init__): known names; mla_up_proj needs MLA.
    Errors name ``field``, where the list sits in what the user sent."""
    for name in modules:
        if name not in RECOMPUTE_MODULES:
            raise InputError(f"unknown module {name!r}; use {', '.join(RECOMPUTE_MODULES)}", field=field)
    if "mla_up_proj" in modules and not model.is_mla:
        raise InputError("mla_up_proj needs multi-head latent attention (kv_lora_rank)", field=field)


OFFLOAD_ASSUMPTION = Assumption(
    "activation_offload_modules_kept_layers",
    1.0,
    "layer per stage",
    "Megatron-Core fine-grained activation offloading (docs/source/api-guide/"
    "fine_grained_activation_offloading.md at NVIDIA/Megatron-LM 5c209c35): the modules' saved inputs go to "
    "pinned host memory on a side stream after each module's forward and come back before its backward; "
    "one layer's worth (the one being offloaded or reloaded; Megatron keeps its last groups on the GPU) is "
    "counted as held, an assumption",
)
FP8_INPUT_STORE_ASSUMPTION = Assumption(
    "activation_func_fp8_input_store_bytes",
    1.0,
    "B per SwiGLU input element",
    "Megatron-Core activation_func_fp8_input_store (transformer_config.py; bias_swiglu_impl stores its "
    "input as float8_e4m3fn and casts it back for backward): 1 B instead of 2; the cast is fused into the "
    "SwiGLU kernel, so no time is charged",
)


def check_offload_modules(
    model: ModelShape,
    modules: tuple[str, ...],
    *,
    offload_layers: int,
    field: str = "training.activation_offload_modules",
) -> None:
    """Megatron-Core's checks (transformer_config.py __post_init__): attn_proj only with core_attn, not with
    --cpu-offloading; expert_fc1 and moe_act are modules of a MoE layer's experts. Errors name ``field``."""
    if "attn_proj" in modules and "core_attn" not in modules:
        raise InputError("attn_proj is offloaded only together with core_attn", field=field)
    if modules and offload_layers:
        raise InputError(
            "per-module offload does not run with activation_offload_layers (Megatron-Core refuses "
            "--fine-grained-activation-offloading with --cpu-offloading)",
            field=field,
        )
    expert = [m for m in modules if m in ("expert_fc1", "moe_act")]
    if expert and not model.is_moe:
        raise InputError(f"{expert[0]} is a module of the experts; the model has none", field=field)


def check_fp8_input_store(
    model: ModelShape, store: bool, *, field: str = "training.activation_func_fp8_input_store"
) -> None:
    """activation_func_fp8_input_store acts on the SwiGLU kernel (bias_swiglu_impl) only (errors name
    ``field``)."""
    if store and not model.gated_mlp:
        raise InputError(
            "stores the SwiGLU input in FP8; this model's MLP is not gated (gated_mlp false)", field=field
        )


def _fc1_output_bytes(model: ModelShape, training: Training) -> float:
    """Bytes per token and unit of MLP width of the first linear layer's output, the activation function's
    saved input: 2f elements with a gate (SwiGLU) else f, at 2 B, or 1 B under
    activation_func_fp8_input_store."""
    element = 1.0 if training.activation_func_fp8_input_store else 2.0
    return (2.0 if model.gated_mlp else 1.0) * element


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
    fp8 = recipe_for(training.precision).saved_bytes_less
    # The MLP's intermediates: the activation's input (``_fc1_output_bytes``) and its output, 2 B (FP8: 1 B).
    factor = _fc1_output_bytes(model, training) + 2.0 - fp8
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


def fp8_input_store_savings_per_layer(model: ModelShape, training: Training, *, tokens: Any, tp: Any) -> Any:
    """Bytes per layer and micro-batch that activation_func_fp8_input_store saves: the SwiGLU input, 2f
    elements per token, kept at 1 B instead of 2, so 2f·t/tp less (the dense layers' f, the MoE layers'
    (top_k + shared)·f_e, averaged as ``memory.activation_bytes_per_layer``'s MLP width). What selective
    recompute drops anyway (``recompute_savings_per_layer``, which counts the input at 1 B under the store)
    is not subtracted twice."""
    if not training.activation_func_fp8_input_store:
        return 0.0
    share = _moe_share(model)
    width = (1.0 - share) * model.ffn_hidden
    if share:
        width += share * (model.top_k + model.shared_experts) * model.expert_ffn_hidden
    return 2.0 * width * tokens / tp


def offload_bytes_per_layer(
    model: ModelShape, training: Training, *, tokens: Any, tp: Any, sp_div: Any, routed: Any
) -> Any:
    """Bytes per layer and micro-batch that ``training.activation_offload_modules`` move to host memory (the
    saved inputs of each module, on ``memory.activation_bytes_per_layer``'s terms; ``routed``:
    ``memory.routed_token_bytes``):

    - attn_norm, mlp_norm: the norm's input, 2·t·h/sp each;
    - qkv_linear: its input (the norm output), 2·t·h/sp (FP8: its 1-byte cast), nothing when layernorm
      recompute already drops it;
    - core_attn: Q, K and V, 2·t·(q + k + v)/tp; attn_proj: the attention output, 2·t·q/tp (FP8: 1 B);
    - expert_fc1: the routed copies of the tokens, the experts' FC1 input (``routed``);
    - moe_act: the routed experts' FC1 output, the activation's input (``_fc1_output_bytes``·top_k·f_e·t/tp)
      — both on the MoE layers' share, nothing when moe recompute drops the block.

    With a TE fused LayerNormLinear (input_layernorm an IdentityOp, which attn_norm and mlp_norm then skip)
    the norm input and output are both the linear's, an approximation the split here ignores."""
    mods = set(training.activation_offload_modules)
    if not mods:
        return 0.0
    recomputed = set(training.recompute_modules)
    fp8 = recipe_for(training.precision).saved_bytes_less
    h = model.hidden
    out: Any = 0.0
    norms = ("attn_norm" in mods) + ("mlp_norm" in mods)
    if norms:
        out = out + norms * 2.0 * tokens * h / sp_div
    if "qkv_linear" in mods and not ("layernorm" in recomputed and not fp8):
        out = out + (2.0 - fp8) * tokens * h / sp_div
    if "core_attn" in mods:
        out = out + 2.0 * tokens * (model.q_width + model.k_width + model.v_width) / tp
    if "attn_proj" in mods:
        out = out + (2.0 - fp8) * tokens * model.attn_out_width / tp
    if model.is_moe and "moe" not in recomputed:
        if "expert_fc1" in mods:
            out = out + routed
        if "moe_act" in mods:
            act = _fc1_output_bytes(model, training) * model.top_k * model.expert_ffn_hidden
            out = out + _moe_share(model) * act * tokens / tp
    return out


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
    if training.checkpoint_early_stop:
        # The dense layers' MLP output projections, which the early stop does not rerun
        # (timing._early_stop_skipped).
        full = full - 2.0 * model.ffn_hidden * model.hidden * model.dense_layers
    if training.selective_recompute == "op":
        selective = op_checkpoint_flops_fwd_per_token(model)
    else:
        selective = recompute_flops_fwd_per_token(model, training.recompute_modules)
    extra = np.where(
        rc == RECOMPUTE_FULL, full * full_share, np.where(rc == RECOMPUTE_SELECTIVE, selective, 0.0)
    )
    return training_flops_per_token(model, training) + extra
