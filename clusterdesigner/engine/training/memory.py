"""Memory per GPU, in bytes, for a batch of layouts (numpy arrays, one element per layout).

Model states follow the ZeRO paper (Rajbhandari et al. 2020, arXiv:1910.02054, Sec. 3.1 and Fig. 1):
mixed-precision Adam keeps 2 bytes of half-precision weights, ``grad_bytes`` of gradients and K = 12 bytes
of fp32 master weights, momentum and variance per parameter; ZeRO-1 divides the 12 by the sharding
degree, ZeRO-2 also the gradients, ZeRO-3 (FSDP full shard) everything; HSDP shards within a node.
Activations follow Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4, generalised to grouped-query
attention and gated MLPs, held for the micro-batches in flight on a pipeline stage under 1F1B.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from clusterdesigner.engine.core.model import RECOMPUTE_FULL, RECOMPUTE_NONE, ModelShape
from clusterdesigner.engine.training.levers import (
    fp8_input_store_savings_per_layer,
    full_recompute_share,
    lora_layer_params,
    offload_bytes_per_layer,
    recompute_savings_per_layer,
)
from clusterdesigner.engine.training.optimizer import ADAM_STATE_BYTES
from clusterdesigner.engine.training.precision import recipe_for
from clusterdesigner.engine.training.workload import (
    GIB,
    SH_HSDP,
    SH_NONE,
    SH_ZERO2,
    SH_ZERO3,
    Assumption,
    FloatArray,
    IntArray,
    PipelineLayout,
    Problem,
    Training,
)

WEIGHT_BYTES = 2.0
OPTIMIZER_BYTES = 12.0
LOGITS_BYTES_PER_ELEMENT = 6.0
FUSED_LOGITS_BYTES_PER_ELEMENT = 4.0
UPCAST_LOGITS_BYTES_PER_ELEMENT = 12.0

MEMORY_ASSUMPTIONS = (
    Assumption(
        "weight_bytes_per_param",
        WEIGHT_BYTES,
        "B",
        "ZeRO (Rajbhandari et al. 2020) Sec. 3.1: fp16/bf16 weights",
    ),
    Assumption(
        "optimizer_bytes_per_param",
        OPTIMIZER_BYTES,
        "B",
        "ZeRO Sec. 3.1: mixed-precision Adam K = 12 (fp32 master 4 + momentum 4 + variance 4)",
    ),
    Assumption(
        "framework_reserve_gib",
        2.5,
        "GiB",
        "CUDA context ~1.5 GiB on A100 (bigscience chronicles-prequel) + NCCL/cuBLAS workspaces ~1 GiB",
    ),
    Assumption(
        "allocator_fragmentation",
        0.10,
        "fraction of activations",
        "PyTorch caching allocator; assumption, checked against BLOOM measured memory (tests/engine)",
    ),
    Assumption(
        "logits_bytes_per_element",
        LOGITS_BYTES_PER_ELEMENT,
        "B",
        "Korthikanti 2022 Sec. 4.3: fp32 logits 4·s·b·V/t, plus the bf16 output-layer result",
    ),
    Assumption(
        "fused_logits_bytes_per_element",
        FUSED_LOGITS_BYTES_PER_ELEMENT,
        "B",
        "fused cross-entropy (flash-attn xentropy, llm-foundry's default loss_fn): the bf16 logits kept for "
        "backward plus their bf16 gradient; no fp32 copy",
    ),
    Assumption(
        "upcast_logits_bytes_per_element",
        UPCAST_LOGITS_BYTES_PER_ELEMENT,
        "B",
        "eager F.cross_entropy(logits.float()) (torchtitan train.py loss_fn at 9dec370, not compiled; "
        "train.py deletes the bf16 logits before backward): the loss's backward holds three fp32 tensors "
        "of the logits' size at once, before any layer's activations are freed: the log_softmax output "
        "saved for backward 4 + nll_loss_backward's dense gradient 4 (its output takes self's sizes, "
        "aten LossNLL.cpp) + _log_softmax_backward_data's result 4 (derivatives.yaml); the forward's "
        "peak is 10 (bf16 logits 2 + fp32 copy 4 + log_softmax output 4); compared with torchtitan's "
        "measured memory (tests/engine/data/memory_fsdp2.csv), not fitted",
    ),
)
DEFAULT_FRAMEWORK_RESERVE_GIB = MEMORY_ASSUMPTIONS[2].value
FRAGMENTATION = MEMORY_ASSUMPTIONS[3].value


def stage_layers(model: ModelShape, pp: IntArray, layout: PipelineLayout | None = None) -> FloatArray:
    """Layers on the heaviest pipeline stage, ceil(L / pp); with an explicit layout, the most decoder
    layers any pipeline rank holds over its virtual stages."""
    if layout is not None:
        return layout.by_pp(pp, lambda layers, _loss, _mtp: layers.max())
    return np.ceil(model.layers / pp.astype(np.float64))


def layout_recompute_share(problem: Problem, lay: Mapping[str, IntArray]) -> Any:
    """``levers.full_recompute_share`` of each layout: 1.0 unless ``training.recompute_num_layers`` is set."""
    training = problem.training
    if not training.recompute_num_layers:
        return 1.0
    n_stage = stage_layers(problem.model, lay["pp"], training.pipeline_layout)
    return full_recompute_share(training, n_stage=n_stage, vpp=lay["vpp"])


def weight_bytes(training: Training) -> float:
    """Bytes a GPU holds per weight: 2 (bf16), or 1 with ``training.fp8_params``: Megatron-LM's
    --fp8-param-gather ("Keep the compute param in fp8 (do not use any other intermediate dtype) and
    perform the param all-gather in fp8", megatron/training/arguments.py at d98e8a64) builds the model
    under Transformer Engine's fp8_model_init; the fp32 master copy stays in the optimizer states
    (megatron/core/fp8_utils.py ``quantize_param_shard``: the distributed optimizer casts its fp32 main
    params to the fp8 params), the K = 12 B already counted. LoRA's frozen base (NeMo ``fp8_params``) has no
    master copy at all. The LoRA adapters are counted at the same bytes (rank-16 adapters of Llama 2 70B
    are 0.06 % of its weights); Transformer Engine's cached FP8 transposes (Hopper's FP8 GEMMs take one
    layout only) are not counted."""
    return recipe_for(training.precision).element_bytes if training.fp8_params else WEIGHT_BYTES


def end_stage_layers(
    layers: Any, pp: Any, *, split: str = "balanced", layout: PipelineLayout | None = None
) -> tuple[Any, Any]:
    """(first, last) pipeline stage layer counts (numpy-friendly). An even split holds L/pp everywhere.

    ``balanced`` (Megatron-Core's --decoder-first/last-pipeline-num-layers, what the launch export emits):
    the middle stages hold ceil(L/pp) and the two end stages, which also hold the embedding and the output
    layer, take the shortfall d = pp·ceil(L/pp) − L, ceil(d/2) from the first and floor(d/2) from the last,
    never below one layer. Llama 3 405B's 126 layers on 16 stages are 7 + 14 × 8 + 7 (Llama 3 Herd of
    Models, arXiv:2407.21783, Sec. 3.3.2). ``uniform`` (DeepSpeed's partition_uniform, Megatron-DeepSpeed's
    default): the first L mod pp stages hold one layer more, so the first holds ceil(L/pp), the last
    floor(L/pp). An explicit ``layout``: the first and the last pipeline rank's decoder layers."""
    if layout is not None:
        return (
            layout.by_pp(pp, lambda layers, _loss, _mtp: layers[0]),
            layout.by_pp(pp, lambda layers, _loss, _mtp: layers[-1]),
        )
    pp_f = np.asarray(pp, dtype=np.float64)
    per = np.ceil(layers / pp_f)
    short = per * pp_f - layers
    if split == "uniform":
        return per, np.where(pp_f > 1, np.floor(layers / pp_f), per)
    first = np.where(pp_f > 1, np.maximum(1.0, per - np.ceil(short / 2)), per)
    last = np.where(pp_f > 1, np.maximum(1.0, per - np.floor(short / 2)), per)
    return first, last


def interleaving_splits(layers: Any, pp: Any, vpp: Any) -> Any:
    """Whether ``layers`` split into pp × vpp virtual pipeline stages (numpy-friendly): evenly, or with the
    embedding and the loss counted as one layer each (Megatron-Core's --account-for-embedding/loss-in-
    pipeline-split), which is how Llama 3 405B interleaved 126 layers over 16 × 8 chunks: the first chunk
    holds only the embedding, the last only the output layer and loss (arXiv:2407.21783 Sec. 3.3.2)."""
    chunks = np.asarray(pp) * np.asarray(vpp)
    return (np.asarray(pp) > 1) & ((layers % chunks == 0) | ((layers + 2) % chunks == 0))


def expert_tp(training: Training, lay: Mapping[str, IntArray]) -> FloatArray:
    """The expert tensor-parallel size of each layout: ``training.etp`` when given, else tp, Megatron-Core's
    default (megatron/training/arguments.py and model_parallel_config.py set expert_tensor_parallel_size =
    tensor_model_parallel_size when it is None)."""
    tp = lay["tp"].astype(np.float64)
    return np.full_like(tp, float(training.etp)) if training.etp else tp


def params_per_gpu(
    model: ModelShape,
    lay: Mapping[str, IntArray],
    layout: PipelineLayout | None = None,
    *,
    etp: FloatArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(dense, expert, embedding-or-output) parameters held by one GPU of the heaviest stage, before sharding.

    Dense layer weights are split by tp; expert weights by ep × etp (``expert_tp``: Megatron-Core's expert
    tensor parallelism, tp unless given); embedding and output layer by tp, on the first and last stage
    respectively.
    """
    tp = lay["tp"].astype(np.float64)
    etp = tp if etp is None else etp
    n_layers = stage_layers(model, lay["pp"], layout)
    moe_share = model.moe_layers / model.layers if model.is_moe else 0.0
    per_layer = (
        (model.attention_params + (1.0 - moe_share) * model.dense_mlp_params) / tp
        + 2.0 * model.hidden
        + moe_share * (model.shared_experts * model.expert_params / tp + model.hidden * model.experts)
    )
    expert = n_layers * moe_share * model.experts * model.expert_params / (lay["ep"] * etp)
    # pp == 1 holds the embedding and (if untied) the output layer on the same GPU.
    both = np.where(lay["pp"] == 1, 1.0 if model.tied_embeddings else 2.0, 1.0)
    return n_layers * per_layer, expert, both * model.embedding_params / tp


def mtp_params_per_gpu(
    model: ModelShape, lay: Mapping[str, IntArray], *, etp: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """(dense, expert) parameters of the multi-token-prediction modules on one GPU of the stage holding
    them: their routed experts split by ep × etp like the model's, the rest by tp."""
    tp = lay["tp"].astype(np.float64)
    etp = tp if etp is None else etp
    routed = model.experts * model.expert_params if model.is_moe and model.moe_layers else 0
    routed_total = model.mtp_depth * routed
    return (model.mtp_params - routed_total) / tp, routed_total / (lay["ep"] * etp)


def shard_degrees(problem: Problem, lay: Mapping[str, IntArray]) -> tuple[FloatArray, FloatArray]:
    """How many ways dense and expert model states are sharded (the data-parallel × context-parallel
    group, as in Megatron's distributed optimizer; HSDP shards only within a node). Expert states shard
    over the expert-data-parallel ranks of that group: ÷ ep, and × tp / etp with ``training.etp`` given
    (Megatron-Core's expert-data-parallel group, ``timing._edp``)."""
    dpcp = (lay["dp"] * lay["cp"]).astype(np.float64)
    in_node = np.clip(np.floor(problem.cluster.gpus_per_node / lay["tp"]), 1.0, dpcp)
    dense = np.where(lay["sharding"] == SH_HSDP, in_node, dpcp)
    etp = problem.training.etp
    expert = np.maximum(1.0, dense / lay["ep"] if not etp else dense * lay["tp"] / (etp * lay["ep"]))
    return dense, expert


def activation_bytes_per_layer(
    problem: Problem, lay: Mapping[str, IntArray]
) -> tuple[FloatArray, FloatArray]:
    """(stored bytes per layer per micro-batch under the layout's recompute mode, bytes of one layer
    with nothing recomputed).

    Korthikanti 2022 Table 2 for 16-bit activations with 1-byte dropout masks: a layer stores
    10·s·b·h replicated across tensor-parallel ranks (two layer-norm inputs, the attention and MLP inputs,
    two dropout masks; 8·s·b·h without dropout) — divided by t only with sequence parallelism — and
    s·b·(2(q + 2·h_kv) + 2q + mlp)/t split by TP (Q, K, V, the attention output and the MLP
    intermediates: 4f for a GeLU MLP, 6f for SwiGLU; q = heads × head_dim, h unless head_dim is set;
    under MLA Q, K, V and the output are their own widths and the latents are stored whole).
    Without flash attention the 5·a·s²·b score/softmax/dropout term (4·a·s²·b without dropout) is
    stored too; selective recompute drops it.
    Full recompute stores only the layer input, 2·s·b·h (/t with SP); of only some of the layers
    (``training.recompute_num_layers``), that for their share and the whole layer for the rest. CP divides s.

    In FP8 (Transformer Engine) each linear layer keeps its input for the weight gradient as the 1-byte
    FP8 cast instead of the 16-bit tensor (TE's Linear/LayerNormLinear/LayerNormMLP save ``inputmat``
    cast to FP8 when the wgrad GEMM runs in FP8, the default recipe): the QKV and MLP inputs save
    2·s·b·h of the replicated part, the attention output and the MLP activation output s·b·(h + f)/t of
    the split part. With ``training.activation_func_fp8_input_store`` the SwiGLU input (2f elements) is
    kept in 1 byte, 2·s·b·f/t less (``levers.fp8_input_store_savings_per_layer``).
    """
    t = _layer_tensors(problem, lay)
    full_layer = t["replicated"] + t["split"] + t["scores"] + t["routed"]
    checkpoint = 2.0 * t["tokens"] * problem.model.hidden / t["sp_div"]
    if problem.training.recompute_num_layers:
        # --recompute-method block: the recomputed share of the layers keeps its input, the rest everything.
        share = layout_recompute_share(problem, lay)
        checkpoint = share * checkpoint + (1.0 - share) * full_layer
    stored = np.where(
        lay["recompute"] == RECOMPUTE_FULL,
        checkpoint,
        np.where(lay["recompute"] == RECOMPUTE_NONE, full_layer, _selective_bytes(problem, t)),
    )
    return stored, full_layer


def offloaded_bytes_per_layer(problem: Problem, lay: Mapping[str, IntArray]) -> Any:
    """Bytes per layer and micro-batch that ``training.activation_offload_modules`` move to host memory
    (``levers.offload_bytes_per_layer`` on this module's terms); none under full recompute, where a layer
    keeps only its input."""
    training = problem.training
    if not training.activation_offload_modules:
        return 0.0
    t = _layer_tensors(problem, lay)
    kept_routed = 0.0 if "moe" in training.recompute_modules else t["routed"]
    out = offload_bytes_per_layer(
        problem.model, training, tokens=t["tokens"], tp=t["tp"], sp_div=t["sp_div"], routed=kept_routed
    )
    return np.where(lay["recompute"] == RECOMPUTE_FULL, 0.0, out)


def _mlp_width(m: ModelShape) -> float:
    """The MLP intermediate width a token passes through: ffn_hidden, or for MoE the dense layers' and the
    MoE layers' active experts (top_k + shared) in proportion to their count."""
    if m.is_moe:
        share = m.moe_layers / m.layers
        return (1 - share) * m.ffn_hidden + share * (m.top_k + m.shared_experts) * m.expert_ffn_hidden
    return float(m.ffn_hidden)


def _layer_tensors(problem: Problem, lay: Mapping[str, IntArray]) -> dict[str, Any]:
    """The terms of ``activation_bytes_per_layer`` (its docstring gives the formulas): the replicated and
    TP-split bytes, the attention scores and the routed tokens of one layer, with the tokens per
    micro-batch, tp, the sequence-parallel divisor and the MLP width they were computed from."""
    m = problem.model
    tp = lay["tp"].astype(np.float64)
    sp_div = np.where(lay["sequence_parallel"] > 0, tp, 1.0)
    tokens = lay["micro_batch"] * (m.seq_len / lay["cp"].astype(np.float64))
    mlp_factor = 6.0 if m.gated_mlp else 4.0
    mlp_width = _mlp_width(m)
    # Two 1-byte dropout masks (attention output, MLP output) and the attention-probability mask; a
    # model trained without dropout stores none (PyTorch's dropout at p = 0 returns its input).
    fp8_saved = recipe_for(problem.training.precision).saved_bytes_less
    replicated = ((10.0 if m.dropout else 8.0) - 2.0 * fp8_saved) * tokens * m.hidden / sp_div
    if m.is_mla:
        # MLA's latents (Q, KV and the shared RoPE key), inputs of the up-projections, whole on every TP rank.
        replicated = replicated + 2.0 * tokens * (m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim)
    split = (
        tokens
        * (
            2.0 * (m.q_width + m.k_width + m.v_width)
            + 2.0 * m.attn_out_width
            + mlp_factor * mlp_width
            - fp8_saved * (m.attn_out_width + mlp_width)
        )
        / tp
    ) - fp8_input_store_savings_per_layer(m, problem.training, tokens=tokens, tp=tp)
    score_bytes = 5.0 if m.dropout else 4.0
    # Without flash attention each layer stores its score matrix: a query's keys, fewer in local layers.
    keys = m.attention_keys(m.seq_len) / m.layers if m.local_span else m.seq_len
    scores = 0.0 if problem.training.flash_attention else score_bytes * m.heads * keys * tokens / tp
    return {
        "tokens": tokens,
        "tp": tp,
        "sp_div": sp_div,
        "mlp_width": mlp_width,
        "replicated": replicated,
        "split": split,
        "scores": scores,
        "routed": routed_token_bytes(problem, lay, tokens / sp_div),
    }


def _selective_bytes(problem: Problem, t: Mapping[str, Any]) -> FloatArray:
    """Bytes one layer keeps under selective recompute: PyTorch's op-level checkpointing (framework
    profiles fsdp2, nemo-automodel), or Megatron-Core's training.recompute_modules
    (levers.recompute_savings_per_layer): core_attn drops the scores; the other modules their own tensors,
    and moe (the whole MoE block) its routed inputs too."""
    training = problem.training
    tokens, tp, sp_div = t["tokens"], t["tp"], t["sp_div"]
    if training.selective_recompute == "op":
        return op_checkpoint_bytes(problem, tokens=tokens, tp=tp, sp_div=sp_div, mlp_width=t["mlp_width"])
    kept_scores = 0.0 if "core_attn" in training.recompute_modules else t["scores"]
    kept_routed = 0.0 if "moe" in training.recompute_modules else t["routed"]
    others = recompute_savings_per_layer(problem.model, training, tokens=tokens, tp=tp, sp_div=sp_div)
    out: FloatArray = t["replicated"] + t["split"] + kept_scores + kept_routed - others
    return out


def op_checkpoint_bytes(
    problem: Problem, *, tokens: FloatArray, tp: FloatArray, sp_div: FloatArray, mlp_width: float
) -> FloatArray:
    """Bytes one layer keeps per micro-batch under PyTorch op-level selective activation checkpointing
    (torchtitan's ``selective_ac_option = "op"``; NeMo AutoModel's ``activation_checkpointing: selective``).

    The policy saves the outputs of matmuls except every second one, of the attention kernel and of
    reduce-scatters, and recomputes everything else (torchtitan models/llama3/infra/parallelize.py,
    ``_custom_policy``: "Saves output of all compute ops, except every second mm"). In a Llama block the
    matmuls run wq, wk, wv, wo, w1, w3, w2: wq, wv, w1 and w2 are kept, wk, wo and w3 recomputed (w1 of
    w1, w2 without a gate). Kept, in 16 bits: the layer input 2·s·b·h (/t with SP), Q, V and the attention
    output 2·s·b·(q + v + q)/t, the MLP's first projection 2·s·b·f/t, with a gate w2's output 2·s·b·h
    (a partial sum, whole on every TP rank before its reduce-scatter) and with TP the two reduce-scatter
    outputs 2·2·s·b·h/t. No dropout masks (the stacks' Llama models have none), no FP8 casts (torchao
    keeps its matmul outputs in 16 bits), the attention's log-sum-exp neglected; a MoE layer's routed
    experts are counted as a dense MLP of their active width."""
    m = problem.model
    h = float(m.hidden)
    kept = h / sp_div + (m.q_width + m.v_width + m.attn_out_width + mlp_width) / tp
    if m.gated_mlp:
        kept = kept + h
    kept = kept + np.where(tp > 1, 2.0 * h / tp, 0.0)
    return 2.0 * tokens * kept


def routed_token_bytes(problem: Problem, lay: Mapping[str, IntArray], local_tokens: FloatArray) -> FloatArray:
    """Bytes one GPU keeps per MoE layer (in proportion to the MoE layers) for the routed copies of its
    tokens: the input of the experts' first linear layer, saved for its weight gradient.

    Megatron-Core's alltoall dispatcher (transformer/moe/token_dispatcher.py) sends each of the
    ``local_tokens`` (the rank's sequence-parallel shard) to its top_k experts, and with expert tensor
    parallelism all-gathers what arrives over the etp ranks, so a rank's grouped FC1 reads
    etp · top_k · local_tokens rows of h (experts.py TEGroupedMLP: linear_fc1 on the permuted hidden
    states), kept in 16 bits, or in FP8 as Transformer Engine's FP8 cast. The permutation (index_select),
    the all-to-alls and the all-gather save nothing, and the combine's unpermute carries no probabilities
    (they multiply the activation inside the expert MLP), so it saves nothing either. The FC1 output and
    the FC2 input are the routed part of ``activation_bytes_per_layer``'s MLP width (top_k experts). etp is
    ``training.etp``, else tp. With etp 1 this is top_k · h · 2 B per token ÷ tp (sequence parallel)."""
    model = problem.model
    if not model.is_moe:
        return np.zeros_like(local_tokens)
    in_bytes = recipe_for(problem.training.precision).gemm_input_bytes
    share = model.moe_layers / model.layers
    return share * in_bytes * model.top_k * model.hidden * local_tokens * expert_tp(problem.training, lay)


def microbatches(problem: Problem, lay: Mapping[str, IntArray]) -> FloatArray:
    """Micro-batches per pipeline per step: global batch / (dp × micro_batch)."""
    return problem.training.global_batch_seqs / (lay["dp"] * lay["micro_batch"]).astype(np.float64)


def in_flight_layers(
    model: ModelShape, lay: Mapping[str, IntArray], m: FloatArray, layout: PipelineLayout | None = None
) -> tuple[FloatArray, FloatArray]:
    """(first stage, last stage) layers' worth of activations held at the peak of a 1F1B schedule.

    Non-interleaved: the first stage holds min(p, m) micro-batches of L/p layers (≈ L; Korthikanti 2022
    Sec. 4.2.3). Interleaved with v chunks: Megatron's warm-up of 2(p−1) + (v−1)p + 1 chunks of L/(pv)
    layers, i.e. L·(1 + (p−1)/(p·v)) (Korthikanti eq. 5); the last stage holds (p(v−1) + 1) chunks.
    Counts are for full stages of ⌈L/p⌉ layers; ``memory_parts`` scales a lightened end stage's share.
    """
    pp = lay["pp"].astype(np.float64)
    v = lay["vpp"].astype(np.float64)
    n_stage = stage_layers(model, lay["pp"], layout)
    chunk = n_stage / v
    first_interleaved = chunk * np.minimum(2 * (pp - 1) + (v - 1) * pp + 1, m * v)
    first = np.where(v > 1, first_interleaved, n_stage * np.minimum(pp, m))
    last = chunk * np.minimum(pp * (v - 1) + 1, m * v)
    return first, last


def lora_params_per_gpu(problem: Problem, lay: Mapping[str, IntArray]) -> tuple[FloatArray, FloatArray]:
    """(non-expert, expert) LoRA adapter parameters on one GPU of the heaviest stage, before sharding: the
    stage's layers' adapters (``levers.lora_layer_params``) split by tp, the routed experts' by ep × etp,
    as the weights they adapt."""
    layer_dense, layer_expert = lora_layer_params(problem.model, problem.training)
    tp = lay["tp"].astype(np.float64)
    n_layers = stage_layers(problem.model, lay["pp"], problem.training.pipeline_layout)
    return n_layers * layer_dense / tp, n_layers * layer_expert / (
        lay["ep"] * expert_tp(problem.training, lay)
    )


def _activation_terms(
    problem: Problem, lay: Mapping[str, IntArray], held: Mapping[str, Any], d_dense: FloatArray
) -> dict[str, Any]:
    """What every stage's activations and buffers are made of: bytes per stored layer, layers in flight on
    the first and last stage, the full-recompute working set, the logits and the FSDP gather buffers
    (``held``: ``_stage_params``; ``d_dense``: the dense sharding degree, ``shard_degrees``)."""
    model, training = problem.model, problem.training
    layout = training.pipeline_layout
    stored, full_layer = activation_bytes_per_layer(problem, lay)
    first_layers, last_layers = in_flight_layers(model, lay, microbatches(problem, lay), layout)
    tp = lay["tp"].astype(np.float64)
    tokens = lay["micro_batch"] * (model.seq_len / lay["cp"].astype(np.float64))
    logits_bytes = {
        "fused": FUSED_LOGITS_BYTES_PER_ELEMENT,
        "upcast": UPCAST_LOGITS_BYTES_PER_ELEMENT,
    }.get(training.cross_entropy, LOGITS_BYTES_PER_ELEMENT)
    n_stage = stage_layers(model, lay["pp"], layout)
    full_shard = (lay["sharding"] == SH_ZERO3) | (lay["sharding"] == SH_HSDP)
    layer_params = (held["dense"] + held["expert"]) / n_stage
    return {
        "stored": stored,
        "full_layer": full_layer,
        "first_layers": first_layers,
        "last_layers": last_layers,
        # Backward of a recomputed layer holds its activations and their gradients at once: two whole
        # layers, the figure the BLOOM memory rows (all full recompute) were calibrated on. No recompute is
        # charged no such working set (the llm-foundry rows, which fill memory at large micro-batches
        # without recompute, fit only without it), so full recompute is capped at the no-recompute figure.
        "working": np.where(lay["recompute"] == RECOMPUTE_FULL, 2.0 * full_layer, 0.0),
        "logits": logits_bytes * tokens * model.vocab / tp,
        "gather": np.where(
            full_shard,
            2.0 * weight_bytes(training) * layer_params * np.where(d_dense > 1, 1.0, 0.0),
            0.0,
        ),
        # Activation offload (--cpu-offloading-num-layers N, pp 1, no recompute): N of the stage's layers'
        # activations live in host memory. The peak is at the end of the forward pass, when the other
        # layers' activations are all held and the offloaded ones have left (Megatron-Core offloads layer
        # i while layer i + 1 runs and reloads it while the layer above it runs backward).
        "offload_keep": np.clip(1.0 - training.activation_offload_layers / n_stage, 0.0, 1.0),
        # Per-module offload (--offload-modules): those bytes of every stored layer live in host memory but
        # one layer's (``levers.OFFLOAD_ASSUMPTION``); a fully recomputed layer stores none of them.
        "offloaded": offloaded_bytes_per_layer(problem, lay) if training.activation_offload_modules else None,
    }


def _states(
    problem: Problem,
    lay: Mapping[str, IntArray],
    degrees: tuple[FloatArray, FloatArray],
    params_dense: Any,
    params_expert: Any,
    trained: Any,
    *,
    edge_trained: Any = 0.0,
) -> dict[str, Any]:
    """Weights, gradients and optimizer states of the given parameters, each sharded as the layout's mode
    says (ZeRO-1 the optimizer states, ZeRO-2 also the gradients, ZeRO-3/HSDP everything). ``trained`` is
    (dense, expert) parameters that have gradients and optimizer states: all of them, or LoRA's adapters
    (the frozen base weights have neither). Optimizer offload keeps the optimizer states in host memory.
    ``degrees``: ``shard_degrees`` of the layouts (dense, expert). Muon (``training.optimizer``) keeps
    ``optimizer_bytes`` (8: FP32 master + momentum) for the hidden matrices and Adam's 12 for the
    ``edge_trained`` embedding and output-layer parameters it leaves to AdamW (``optimizer.py``)."""
    training = problem.training
    d_dense, d_expert = degrees
    sh = lay["sharding"]
    full_shard = (sh == SH_ZERO3) | (sh == SH_HSDP)

    def sharded(bytes_per_param: float, flag: Any, p_dense: Any, p_expert: Any) -> FloatArray:
        # flag True → divide by the sharding degree, False → replicated.
        out: FloatArray = bytes_per_param * (
            p_dense / np.where(flag, d_dense, 1.0) + p_expert / np.where(flag, d_expert, 1.0)
        )
        return out

    grads_flag, opt_flag = full_shard | (sh == SH_ZERO2), sh != SH_NONE
    optimizer = sharded(training.optimizer_bytes, opt_flag, *trained)
    if training.optimizer == "muon":
        optimizer = optimizer + sharded(
            ADAM_STATE_BYTES - training.optimizer_bytes, opt_flag, edge_trained, 0.0
        )
    weights = sharded(weight_bytes(training), full_shard, params_dense, params_expert)
    gradients = sharded(training.grad_bytes, grads_flag, *trained)
    if training.pipeline_grad_bytes:
        weights, gradients = _pipeline_unsharded(
            lay, training, weights, gradients, params_dense + params_expert, trained
        )
    return {
        "weights": weights,
        "gradients": gradients,
        "optimizer": optimizer * 0.0 if training.optimizer_offload else optimizer,
    }


def _pipeline_unsharded(
    lay: Mapping[str, IntArray], training: Training, weights: Any, gradients: Any, held: Any, trained: Any
) -> tuple[FloatArray, FloatArray]:
    """(weights, gradients) of a stage whose stack keeps them unsharded over the micro-batches of a pipeline
    (pp > 1; the sharded figures otherwise): ``weight_bytes`` per held parameter and
    ``Training.pipeline_grad_bytes`` (the fsdp2 profile's 4) per trained one, whatever the sharding mode.

    torch.distributed.pipelining's stage (stage.py, ``backward_maybe_with_nosync``) calls
    ``set_reshard_after_backward(False)`` and ``set_requires_gradient_sync(False)`` on an FSDP2 module for
    every micro-batch's backward but the last: the parameters stay all-gathered and each gradient stays
    unsharded, "no reduce-scatter ... but uses more gradient memory (storing the unsharded gradients)"
    (pytorch/pytorch PR #126166); FSDP2 upcasts it to the reduce dtype to accumulate
    (``FSDPParam.to_accumulated_grad_if_needed``), float32 in torchtitan (``mixed_precision_reduce``).
    The reduce-scatter after the last micro-batch turns each into its 1/d shard, freed one layer at a time,
    so the unsharded figure is the step's peak."""
    pipelined = lay["pp"] > 1
    grad_bytes = training.pipeline_grad_bytes
    out_weights: FloatArray = np.where(pipelined, weight_bytes(training) * held, weights)
    out_gradients: FloatArray = np.where(pipelined, grad_bytes * (trained[0] + trained[1]), gradients)
    return out_weights, out_gradients


def memory_parts(problem: Problem, lay: Mapping[str, IntArray]) -> dict[str, FloatArray]:
    """Bytes per GPU on the heaviest pipeline stage, by part, and ``total``: the first, the last or, from
    pp 3, a middle stage. An end stage lightened by an uneven split (``end_stage_layers``) holds fewer
    layers' states and activations, but the middle stages still hold ⌈L/pp⌉ layers: Llama 3 405B's 126
    layers over pp 20 are 1 + 18 × 7 + 1, so a middle stage holds seven layers' states where each end
    stage holds one and the embedding or the output layer. A middle stage is charged the states of
    ⌈L/pp⌉ layers and the activations the last stage holds in flight for a full stage, a lower bound
    (stage r of a 1F1B schedule holds more, up to the second stage's p − 1 micro-batches): charging the
    second stage's warm-up in full would refuse Llama 3 405B on 16 × 8 interleaved stages, which Meta ran
    on 80 GB (tests/engine/test_llama3_405b.py), so the per-layer activation figures would need
    recalibrating first.

    total = weights + gradients + optimizer states + activations (in-flight micro-batches, plus one
    layer's full working set under full recompute, never more than without recompute) + output-layer
    logits (last stage) + FSDP gather buffers (two layers unsharded: the current one and the prefetched
    one) + framework reserve. The levers of ``levers.py`` act on the parts: selective recompute modules
    on the stored bytes per layer, activation offload on the activations held, optimizer offload on the
    optimizer states, LoRA on the gradients and optimizer states (adapters only) and the weights (+ adapters).
    """
    model, training = problem.model, problem.training
    layout = training.pipeline_layout
    held = _stage_params(problem, lay)
    degrees = shard_degrees(problem, lay)
    a = _activation_terms(problem, lay, held, degrees[0])
    single = lay["pp"] == 1
    n_stage = stage_layers(model, lay["pp"], layout)
    n_first, n_last = end_stage_layers(model.layers, lay["pp"], split=training.pipeline_split, layout=layout)
    # Only from pp 3 is there a middle stage; below that its candidate holds nothing and never binds.
    middle = np.where(lay["pp"] >= 3, 1.0, 0.0)
    no_logits = np.zeros_like(single)
    stages = (
        (a["first_layers"], single, n_first / n_stage, True, single),
        (a["last_layers"], no_logits, middle, False, no_logits),
        (a["last_layers"], np.ones_like(single), n_last / n_stage, True, np.ones_like(single)),
    )
    parts_by_stage = [
        {
            **_states(
                problem,
                lay,
                degrees,
                *_held_params(problem, held, share, edge_held=edge, mtp_held=mtp),
                edge_trained=held["edge"] if edge and not training.lora_rank else 0.0,
            ),
            "activations": _stage_activations(lay, a, layers_held, share, n_stage) * (1.0 + FRAGMENTATION),
            "logits": np.where(with_logits, a["logits"], 0.0),
            "fsdp_buffers": a["gather"] * np.minimum(share * n_stage, 1.0),
        }
        for layers_held, with_logits, share, edge, mtp in stages
    ]
    return _heaviest(parts_by_stage, training.framework_reserve_gib * GIB)


def _stage_params(problem: Problem, lay: Mapping[str, IntArray]) -> dict[str, Any]:
    """Parameters one GPU of a full stage holds, before sharding: its layers' dense and expert weights, the
    embedding/output edge, the multi-token-prediction modules and the LoRA adapters (0 when absent)."""
    model, training = problem.model, problem.training
    etp = expert_tp(training, lay)
    dense, expert, edge = params_per_gpu(model, lay, training.pipeline_layout, etp=etp)
    lora_dense, lora_expert = lora_params_per_gpu(problem, lay) if training.lora_rank else (0.0, 0.0)
    mtp_dense, mtp_expert = mtp_params_per_gpu(model, lay, etp=etp) if model.mtp_depth else (0.0, 0.0)
    return {
        "dense": dense,
        "expert": expert,
        "edge": edge,
        "lora": (lora_dense, lora_expert),
        "mtp": (mtp_dense, mtp_expert),
    }


def _held_params(
    problem: Problem, held: Mapping[str, Any], share: Any, *, edge_held: bool, mtp_held: Any
) -> tuple[Any, Any, tuple[Any, Any]]:
    """(dense, expert, trained) parameters a stage holds: a lightened end stage holds ``share`` of a full
    stage's layers, the end stages the embedding or output layer (``edge_held``), the last (with pp 1 the
    only) stage the multi-token-prediction modules; under LoRA only the adapters are trained."""
    model, training = problem.model, problem.training
    params_dense = held["dense"] * share + (held["edge"] if edge_held else np.zeros_like(held["edge"]))
    expert_held = held["expert"] * share
    if model.mtp_depth:
        mtp_dense, mtp_expert = held["mtp"]
        params_dense = params_dense + np.where(mtp_held, mtp_dense, 0.0)
        expert_held = expert_held + np.where(mtp_held, mtp_expert, 0.0)
    trained = (params_dense, expert_held)
    if training.lora_rank:
        lora_dense, lora_expert = held["lora"]
        trained = (lora_dense * share, lora_expert * share)
        params_dense, expert_held = params_dense + trained[0], expert_held + trained[1]
    return params_dense, expert_held, trained


def _stage_activations(
    lay: Mapping[str, IntArray], a: Mapping[str, Any], layers_held: Any, share: Any, n_stage: Any
) -> FloatArray:
    """Activation bytes a stage holds, before fragmentation: its share of the layers in flight (less what
    activation offload keeps in host memory: whole layers, or the offloaded modules of all but one layer)
    plus the full-recompute working set."""
    in_flight = layers_held * share
    act = a["stored"] * in_flight * a["offload_keep"] + a["working"] * np.minimum(share * n_stage, 1.0)
    if a["offloaded"] is not None:
        act = act - a["offloaded"] * np.maximum(in_flight - 1.0, 0.0)
    # Full recompute rebuilds one layer at a time what no recompute keeps for every layer in flight, so it
    # never needs more (issue 19: Llama 3 70B at pp 64, micro-batch 32 was charged 349 GiB with full
    # recompute against 271 GiB without, where fewer than two layers are in flight).
    out: FloatArray = np.where(
        lay["recompute"] == RECOMPUTE_FULL, np.minimum(act, a["full_layer"] * layers_held * share), act
    )
    return out


def _heaviest(parts_by_stage: list[dict[str, Any]], reserve: float) -> dict[str, FloatArray]:
    """The parts of the stage with the largest total, plus the framework reserve. Ties go to the first
    stage (as np.argmax would); each part is picked with np.where, not np.choose, which copies the chosen
    element by element (a search's memory pass spent more time choosing than computing)."""
    totals = [sum(p.values()) for p in parts_by_stage]
    total = totals[0]
    picks = []
    for stage, stage_total in enumerate(totals[1:], start=1):
        picks.append((stage, stage_total > total))
        total = np.maximum(total, stage_total)
    heaviest = np.zeros(np.shape(total), dtype=np.int64)
    for stage, heavier in picks:
        heaviest[heavier] = stage
    chosen = [(heaviest == stage, p) for stage, p in enumerate(parts_by_stage[1:], start=1)]
    parts = {}
    for k in parts_by_stage[0]:
        part = np.broadcast_to(parts_by_stage[0][k], heaviest.shape)
        for is_stage, p in chosen:
            part = np.where(is_stage, p[k], part)
        parts[k] = part
    parts["framework_reserve"] = np.full(heaviest.shape, reserve)
    parts["total"] = total + reserve
    return parts
