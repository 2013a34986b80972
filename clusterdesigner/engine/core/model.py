"""Transformer shape, parameter counts and FLOPs per token.

Everything here is a closed-form count from the shape; the formulas follow Narayanan et al. 2021
("Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", arXiv:2104.04473,
Sec. 5.1 and Appendix eq. 3) generalised to grouped-query attention, gated MLPs and mixture-of-experts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.errors import InputError, under

# Multi-head latent attention's shape fields (ModelShape's docstring).
MLA_FIELDS = ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")

# Recompute modes, as small integers so that layouts can be numpy arrays (index into this tuple).
RECOMPUTE_MODES = ("none", "selective", "full")
RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL = 0, 1, 2


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer.

    ``ffn_hidden`` is the MLP inner size of a dense layer; with ``gated_mlp`` (SwiGLU) the up projection has
    two matrices of that size. Mixture-of-experts: ``experts`` routed experts of inner size
    ``expert_ffn_hidden`` each, ``top_k`` of them per token, ``shared_experts`` always-on experts of the
    same size, in ``moe_layers`` of the ``layers`` (the rest are dense). ``head_dim`` is the width of one
    attention head; 0 (the default) means hidden / heads. Qwen3 and GPT-OSS set it apart from the hidden
    size (Qwen3-30B-A3B: hidden 2048, 32 heads of 128, so Q is 4,096 wide).

    Multi-head latent attention (MLA, DeepSeek-V2/V3; ``kv_lora_rank`` > 0): K and V are projected down
    to a ``kv_lora_rank`` latent (plus one shared ``qk_rope_head_dim`` RoPE key) and up again per head; Q
    through a ``q_lora_rank`` latent (0: projected directly). Each head's query and key are
    ``qk_nope_head_dim`` + ``qk_rope_head_dim`` wide, its value ``v_head_dim``; ``head_dim`` is then the
    query/key width and ``kv_heads`` equals ``heads``. DeepSeek-V3: 1536 / 512 / 128 / 64 / 128.

    Multi-token prediction (``mtp_depth`` modules, DeepSeek-V3 1; arXiv:2412.19437 Sec. 2.2): each module
    joins the previous depth's hidden state with the next token's embedding (two norms and a 2h×h
    projection), runs one transformer layer of the model's last kind (an MoE layer in an MoE model) and
    the shared output head. Its parameters are counted apart (``mtp_params``; ``total_params`` is the main
    model, as model cards count it), its FLOPs in the training FLOPs.
    ``tied_embeddings`` shares the
    input embedding with the output layer (fewer parameters, same FLOPs). ``dropout`` false: trained with
    no dropout (Llama, Mixtral, DeepSeek, MPT, BLOOM configs set it to 0), so no dropout masks are stored
    or written.

    Local attention (issue #32): ``local_layers`` of the layers attend within a ``sliding_window`` of the
    last tokens (GPT-OSS: every other layer, window 128; Gemma 3: five of six layers, 1,024) or within their
    ``attention_chunk`` of the sequence (Llama 4: three of four layers in chunks of 8,192); the rest attend
    to the whole causal prefix. At most one of the two is set; when one is, ``local_layers`` defaults to
    every layer. ``attention_sinks``: a learned logit per head in every layer's softmax (GPT-OSS), counted
    as parameters (heads per layer), negligible in FLOPs. ``rms_norm`` and ``rope_theta`` (the RoPE base;
    0 = not given or no RoPE) do not change the counts; the launch exports read them.
    """

    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    seq_len: int
    gated_mlp: bool = False
    tied_embeddings: bool = False
    dropout: bool = True
    experts: int = 0
    top_k: int = 0
    expert_ffn_hidden: int = 0
    shared_experts: int = 0
    moe_layers: int = 0
    head_dim: int = 0
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    mtp_depth: int = 0
    sliding_window: int = 0
    attention_chunk: int = 0
    local_layers: int = 0
    attention_sinks: bool = False
    rms_norm: bool = False
    rope_theta: int = 0
    name: str = ""
    slug: str = ""

    def __post_init__(self) -> None:
        self._check_counts()
        if self.kv_lora_rank or any(getattr(self, f) for f in MLA_FIELDS):
            self._check_mla()
        elif not self.head_dim:
            if self.hidden % self.heads:
                raise InputError(
                    f"hidden {self.hidden} is not a multiple of heads {self.heads}; give head_dim when the "
                    "heads are not hidden / heads wide",
                    field="heads",
                )
            # Frozen: the width is resolved once, so every reader sees the same head_dim.
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        if self.heads % self.kv_heads:
            raise InputError(f"kv_heads {self.kv_heads} must divide heads {self.heads}", field="kv_heads")
        if self.experts:
            self._check_moe()
        self._check_local_attention()

    def _check_local_attention(self) -> None:
        """One kind of local attention, on between 1 and all layers; local layers need a window or chunk."""
        if self.sliding_window and self.attention_chunk:
            raise InputError(
                "give sliding_window or attention_chunk, not both (a layer is windowed or chunked)",
                field="attention_chunk",
            )
        if (self.sliding_window or self.attention_chunk) and not 1 <= self.local_layers <= self.layers:
            raise InputError(
                f"local_layers must be between 1 and layers ({self.layers}) with a window or chunk",
                field="local_layers",
            )
        if self.local_layers and not (self.sliding_window or self.attention_chunk):
            raise InputError(
                "local layers need a sliding_window or an attention_chunk (tokens)",
                field="local_layers",
            )

    def _check_counts(self) -> None:
        """Every size a whole number: the dense shape's positive, the optional ones (MLA, head_dim, MTP,
        experts) ≥ 0."""
        for name in ("layers", "hidden", "ffn_hidden", "heads", "kv_heads", "vocab", "seq_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InputError(f"must be a positive whole number, got {value!r}", field=name)
        optional: tuple[str, ...] = MLA_FIELDS + ("head_dim", "mtp_depth", "experts", "top_k")
        optional += ("expert_ffn_hidden", "sliding_window", "attention_chunk", "local_layers", "rope_theta")
        for name in optional + ("shared_experts", "moe_layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(f"must be a whole number ≥ 0, got {value!r}", field=name)

    def _check_moe(self) -> None:
        """A mixture of experts: top_k of the experts, an expert width, MoE layers among the layers."""
        if not 1 <= self.top_k <= self.experts:
            raise InputError(f"top_k must be between 1 and experts ({self.experts})", field="top_k")
        if self.expert_ffn_hidden <= 0:
            raise InputError("a mixture-of-experts model needs expert_ffn_hidden", field="expert_ffn_hidden")
        if not 1 <= self.moe_layers <= self.layers:
            raise InputError(f"moe_layers must be between 1 and layers ({self.layers})", field="moe_layers")

    def _check_mla(self) -> None:
        """Multi-head latent attention: a latent, the per-head widths, one K and V per head."""
        if not self.kv_lora_rank:
            raise InputError(
                "multi-head latent attention needs kv_lora_rank (the K/V latent width)",
                field="kv_lora_rank",
            )
        for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            if not getattr(self, name):
                raise InputError(f"multi-head latent attention needs {name}", field=name)
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.head_dim and self.head_dim != qk:
            raise InputError(
                f"with multi-head latent attention a head's query/key is qk_nope_head_dim + "
                f"qk_rope_head_dim = {qk} wide; leave head_dim out",
                field="head_dim",
            )
        if self.kv_heads != self.heads:
            raise InputError(
                f"multi-head latent attention has a K and a V per head: kv_heads must equal heads "
                f"({self.heads})",
                field="kv_heads",
            )
        object.__setattr__(self, "head_dim", qk)

    # ---- shape helpers -------------------------------------------------------------------------------
    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def q_width(self) -> int:
        """Width of Q: heads × head_dim (the query/key width of a head, nope + rope under MLA); the hidden
        size unless head_dim is set apart from it."""
        return self.heads * self.head_dim

    @property
    def k_width(self) -> int:
        """Width of K: kv_heads × head_dim (heads × (nope + rope) under MLA)."""
        return self.kv_heads * self.head_dim

    @property
    def v_width(self) -> int:
        """Width of V: kv_heads × head_dim, or heads × v_head_dim under MLA."""
        return self.heads * self.v_head_dim if self.is_mla else self.kv_heads * self.head_dim

    @property
    def attn_out_width(self) -> int:
        """Width of the attention output the output projection reads: one value per head."""
        return self.v_width if self.is_mla else self.q_width

    @property
    def kv_cache_elements_per_token_layer(self) -> int:
        """Elements one token keeps per layer for later tokens: K and V (2 × kv_heads × head_dim), or
        under MLA the compressed latent and the shared RoPE key, kv_lora_rank + qk_rope_head_dim (DeepSeek-V2,
        arXiv:2405.04434, Sec. 2.1.4 and Table 1: (d_c + d_h^R)·l elements; DeepSeek-V3 576 per layer)."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_heads * self.head_dim

    @property
    def kv_hidden(self) -> int:
        """Width of K (and of V): kv_heads × head_dim."""
        return self.kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def dense_layers(self) -> int:
        return self.layers - (self.moe_layers if self.is_moe else 0)

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices per MLP: 3 for a gated (SwiGLU) MLP, 2 otherwise."""
        return 3 if self.gated_mlp else 2

    # ---- parameter counts ----------------------------------------------------------------------------
    @property
    def attention_params(self) -> int:
        """Q and output projections h×q_width each, K and V h×kv_hidden each (biases ignored). MLA:
        Q down h×q_lora and up q_lora×q_width (or h×q_width without a Q latent), KV down
        h×(kv_lora + rope), up kv_lora×heads·(nope + v), output heads·v×h (DeepSeek-V3's q_a_proj,
        q_b_proj, kv_a_proj_with_mqa, kv_b_proj and o_proj)."""
        if self.is_mla:
            h, q_lora, kv_lora = self.hidden, self.q_lora_rank, self.kv_lora_rank
            q = h * q_lora + q_lora * self.q_width if q_lora else h * self.q_width
            kv = h * (kv_lora + self.qk_rope_head_dim) + kv_lora * self.heads * (
                self.qk_nope_head_dim + self.v_head_dim
            )
            return q + kv + self.attn_out_width * h
        return 2 * self.hidden * self.q_width + 2 * self.hidden * self.kv_hidden

    @property
    def layer_norm_params(self) -> int:
        """Norm weights per layer: the two pre-norms, under MLA the norms of the Q and KV latents, and the
        attention sinks' one logit per head (GPT-OSS ``self_attn.sinks``), small per-layer vectors alike."""
        sinks = self.heads if self.attention_sinks else 0
        return 2 * self.hidden + (self.q_lora_rank + self.kv_lora_rank if self.is_mla else 0) + sinks

    @property
    def dense_mlp_params(self) -> int:
        return self.mlp_matrices * self.hidden * self.ffn_hidden

    @property
    def expert_params(self) -> int:
        """Parameters of one expert MLP."""
        return self.mlp_matrices * self.hidden * self.expert_ffn_hidden

    @property
    def moe_layer_mlp_params(self) -> int:
        """All experts of one MoE layer (routed + shared) and its router."""
        return (self.experts + self.shared_experts) * self.expert_params + self.hidden * self.experts

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden

    @property
    def total_params(self) -> int:
        """All parameters (what memory holds): layers, norms, embedding and, if untied, the output layer."""
        moe = self.moe_layers * self.moe_layer_mlp_params if self.is_moe else 0
        layers = (
            self.layers * (self.attention_params + self.layer_norm_params)
            + self.dense_layers * self.dense_mlp_params
        )
        out = 0 if self.tied_embeddings else self.embedding_params
        return layers + moe + self.embedding_params + out + self.hidden

    @property
    def active_matmul_params(self) -> int:
        """Weights one token multiplies by: attention, active experts and the output layer (not the
        embedding lookup, which is a gather). 2 × this is the forward matmul FLOPs per token."""
        per_moe = (self.top_k + self.shared_experts) * self.expert_params + self.hidden * self.experts
        moe = self.moe_layers * per_moe if self.is_moe else 0
        return (
            self.layers * self.attention_params
            + self.dense_layers * self.dense_mlp_params
            + moe
            + self.embedding_params
        )

    @property
    def mtp_layer_mlp_params(self) -> int:
        """The MLP of a multi-token-prediction module's layer: an MoE layer's (routed + shared experts and
        router) in an MoE model, else a dense one (DeepSeek-V3's MTP layer is an MoE layer)."""
        return self.moe_layer_mlp_params if self.is_moe and self.moe_layers else self.dense_mlp_params

    @property
    def mtp_params(self) -> int:
        """Parameters of the multi-token-prediction modules (embedding and output head shared with the main
        model): per module the 2h×h projection, three norms (the two input norms and the head's), one
        transformer layer. DeepSeek-V3: 11,610,067,968; with a copy of the embedding and head
        (1,853,358,080) 13.46B, the "14B of MTP module weights" of its Hugging Face card."""
        h = self.hidden
        layer = self.attention_params + self.layer_norm_params + self.mtp_layer_mlp_params
        return self.mtp_depth * (2 * h * h + 3 * h + layer)

    @property
    def mtp_active_matmul_params(self) -> int:
        """Weights one token multiplies by in the MTP modules, the shared output head apart."""
        if self.is_moe and self.moe_layers:
            mlp = (self.top_k + self.shared_experts) * self.expert_params + self.hidden * self.experts
        else:
            mlp = self.dense_mlp_params
        return self.mtp_depth * (2 * self.hidden * self.hidden + self.attention_params + mlp)

    @property
    def active_params(self) -> int:
        """Active parameters per token incl. the embedding (the "active params" of MoE model cards)."""
        return self.active_matmul_params + (0 if self.tied_embeddings else self.embedding_params)

    # ---- FLOPs ---------------------------------------------------------------------------------------
    @property
    def layer_matmul_flops_fwd_per_token(self) -> float:
        """Forward matmul FLOPs per token of all transformer layers (no attention core, no output layer),
        with the MTP modules' layers and projections."""
        if self.mtp_depth:
            return 2.0 * (self.active_matmul_params - self.embedding_params + self.mtp_active_matmul_params)
        return 2.0 * (self.active_matmul_params - self.embedding_params)

    @property
    def attention_core_flops_fwd_per_token(self) -> float:
        """QKᵀ and AV forward FLOPs per token over all layers: 4·s·h·L (Narayanan 2021 counts the full
        s×s score matrix, not the causal half; we keep that convention so MFU compares with papers).
        With head_dim: 4·s·heads·head_dim·L; MLA: 2·s·heads·(nope + rope + v)·L (QKᵀ over the 192-wide
        query/key, AV over the 128-wide value for DeepSeek-V3: 2.86× the 4·s·h of its hidden 7168)."""
        keys = self.attention_keys(self.seq_len) + self.mtp_depth * self.seq_len  # MTP layers attend fully
        if self.is_mla:
            return 2.0 * keys * self.heads * (self.head_dim + self.v_head_dim)
        return 4.0 * keys * self.heads * self.head_dim

    # ---- local attention -----------------------------------------------------------------------------
    @property
    def local_span(self) -> int:
        """The window or chunk of a local layer, tokens (0 when every layer attends fully)."""
        return self.sliding_window or self.attention_chunk

    def local_keys_per_query(self, seq_len: float) -> float:
        """Keys a query of a local layer scores, on the scale where a full layer scores ``seq_len`` (the
        whole s×s matrix Narayanan counts, twice the causal triangle s(s+1)/2): 2·E/(s+1), E the entries
        the causal local mask keeps. Sliding window w ≤ s: query i sees min(i, w) keys, E = w·s − w(w−1)/2,
        so (2ws − w² + w)/(s + 1) keys, about 2w for w ≪ s. Chunks of c: n = ⌊s/c⌋ whole chunks and r = s −
        n·c left, E = n·c(c+1)/2 + r(r+1)/2. Window 128, s 4,096: 251.97 keys against 4,096 (6.2 %)."""
        s = float(seq_len)
        if self.sliding_window:
            w = min(float(self.sliding_window), s)
            entries = w * s - w * (w - 1.0) / 2.0
        elif self.attention_chunk:
            c = float(self.attention_chunk)
            n = s // c
            r = s - n * c
            entries = n * c * (c + 1.0) / 2.0 + r * (r + 1.0) / 2.0
        else:
            return s
        return 2.0 * entries / (s + 1.0)

    def attention_keys(self, seq_len: float) -> float:
        """Keys a query scores summed over the layers (MTP apart), on the full-matrix scale: full layers
        ``seq_len`` each, local layers ``local_keys_per_query``. The attention core's FLOPs and time are
        proportional to it: 4 · heads · head_dim per key."""
        local = self.local_layers if self.local_span else 0
        return (self.layers - local) * float(seq_len) + local * self.local_keys_per_query(seq_len)

    def kv_layers(self, context_tokens: float) -> float:
        """Layers' worth of KV a sequence of ``context_tokens`` keeps: full layers keep every token, local
        layers at most their window or chunk (a sliding-window cache holds the last w tokens; a chunked one
        the current chunk, up to c). KV bytes per sequence = kv_layers × context × bytes per token-layer."""
        if not self.local_span or context_tokens <= 0:
            return float(self.layers)
        kept = min(float(self.local_span), float(context_tokens)) / float(context_tokens)
        return (self.layers - self.local_layers) + self.local_layers * kept

    @property
    def output_flops_fwd_per_token(self) -> float:
        """The output layer's logits, once more per MTP module (the shared head)."""
        return 2.0 * self.embedding_params * (1 + self.mtp_depth)

    @property
    def model_flops_per_token(self) -> float:
        """Model FLOPs per token, forward + backward = 3 × forward (Narayanan 2021 eq. 3 without the
        recompute pass): for a dense GPT this is 72·L·h²·(1 + s/(6h) + V/(12·L·h))."""
        return 3.0 * (
            self.layer_matmul_flops_fwd_per_token
            + self.attention_core_flops_fwd_per_token
            + self.output_flops_fwd_per_token
        )

    @property
    def causal_model_flops_per_token(self) -> float:
        """Model FLOPs per token counting the attention core's causal half: ``model_flops_per_token`` −
        3 · ``attention_core_flops_fwd_per_token`` / 2, i.e. 72·L·h²·(1 + s/(12h) + V/(12·L·h)) for a dense
        GPT. The convention of Megatron-LM's num_floating_point_operations since NVIDIA/Megatron-LM
        8873b55d6a (2025-03-06, "only half of the attention matrix is non-zero") and of NeMo since
        6251117f4c (2025-08-09): a TFLOP/s figure logged by those stacks is compared with this count."""
        return self.model_flops_per_token - 1.5 * self.attention_core_flops_fwd_per_token


def op_checkpoint_flops_fwd_per_token(model: ModelShape) -> float:
    """Forward FLOPs per token PyTorch op-level selective checkpointing runs again (framework profiles
    fsdp2, nemo-automodel; memory.op_checkpoint_bytes): per layer the recomputed matmuls 2·h·k + 2·q·h
    (wk, wo) and a third of the MLP's matmul FLOPs with a gate, half without."""
    layers = model.layers + model.mtp_depth
    attn_proj = 2.0 * model.hidden * (model.q_width + model.k_width + model.v_width + model.attn_out_width)
    mlp = max(model.layer_matmul_flops_fwd_per_token / layers - attn_proj, 0.0)
    recomputed = 2.0 * model.hidden * (model.k_width + model.attn_out_width)
    return layers * (recomputed + mlp / (3.0 if model.gated_mlp else 2.0))


def hardware_flops_per_token(model: ModelShape, recompute: Any, *, selective: str = "attention") -> Any:
    """Model FLOPs plus the recompute pass (numpy-friendly in ``recompute``, a mode index), without LoRA
    or recompute modules (the training engine uses ``levers.hardware_flops``, which adds them).

    full: one more forward of every layer (matmuls and attention core), not of the output layer — for a
    dense GPT 96·L·h²·(1 + s/(6h) + V/(16·L·h)) per token, Narayanan 2021 eq. 3.
    selective: the attention core forward again (Korthikanti et al. 2022, arXiv:2205.05198, Sec. 5); with
    ``selective="op"`` (PyTorch op-level checkpointing) ``op_checkpoint_flops_fwd_per_token``.
    """
    import numpy as np

    rc = np.asarray(recompute)
    again = model.attention_core_flops_fwd_per_token
    if selective == "op":
        again = op_checkpoint_flops_fwd_per_token(model)
    extra = np.where(
        rc == RECOMPUTE_FULL,
        model.layer_matmul_flops_fwd_per_token + model.attention_core_flops_fwd_per_token,
        np.where(rc == RECOMPUTE_SELECTIVE, again, 0.0),
    )
    return model.model_flops_per_token + extra


_INT_FIELDS = (
    "layers",
    "hidden",
    "ffn_hidden",
    "heads",
    "kv_heads",
    "vocab",
    "seq_len",
    "experts",
    "top_k",
    "expert_ffn_hidden",
    "shared_experts",
    "moe_layers",
    "head_dim",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_nope_head_dim",
    "qk_rope_head_dim",
    "v_head_dim",
    "mtp_depth",
    "sliding_window",
    "attention_chunk",
    "local_layers",
    "rope_theta",
)
_BOOL_FIELDS = ("gated_mlp", "tied_embeddings", "dropout", "attention_sinks", "rms_norm")
# The range of each shape number a request may give: about a thousand times the largest published model in
# each dimension, and far below where the float arithmetic on a shape overflows (hidden 1e300 passed the
# whole-number check and failed mid-sweep with OverflowError). The design spec's serializer
# (apps/designs/specs.py) states the same upper bounds.
SHAPE_LIMITS: dict[str, tuple[int, int]] = {
    "layers": (1, 100_000),
    "hidden": (1, 10_000_000),
    "ffn_hidden": (1, 100_000_000),
    "heads": (1, 100_000),
    "kv_heads": (1, 100_000),
    "vocab": (1, 100_000_000),
    "seq_len": (1, 100_000_000),
    "experts": (0, 100_000),  # 0: a dense model
    "top_k": (0, 1_000),
    "expert_ffn_hidden": (0, 100_000_000),
    "shared_experts": (0, 1_000),
    "moe_layers": (0, 100_000),
    "head_dim": (1, 100_000),
    "q_lora_rank": (0, 10_000_000),  # 0: Q projected without a latent (DeepSeek-V2-Lite)
    "kv_lora_rank": (1, 10_000_000),
    "qk_nope_head_dim": (1, 100_000),
    "qk_rope_head_dim": (1, 100_000),
    "v_head_dim": (1, 100_000),
    "mtp_depth": (0, 1_000),
    "sliding_window": (0, 100_000_000),  # 0: no sliding window
    "attention_chunk": (0, 100_000_000),  # 0: no chunked attention
    "local_layers": (0, 100_000),
    "rope_theta": (0, 10**12),  # 0: not given
}


def model_from_dict(
    data: Mapping[str, Any], *, presets: Mapping[str, ModelShape], at: str = "model"
) -> ModelShape:
    """Build a shape from the request's ``model`` object: ``{"preset": slug, ...overrides}`` or a full shape.

    Overrides on a preset (e.g. ``{"preset": "llama3-8b", "seq_len": 4096}``) replace single fields.
    ``kv_heads`` defaults to ``heads`` (multi-head attention) and ``ffn_hidden`` to 4 × hidden. ``at``: where
    the object sits in what the user sent (``spec.workload.model``); every error names its field under it,
    the shape's own checks (ModelShape, which name the shape's fields) too.
    """
    if not isinstance(data, Mapping):
        raise InputError("must be an object with a preset or a shape", field=at)
    unknown = set(data) - set(_INT_FIELDS) - set(_BOOL_FIELDS) - {"preset", "name"}
    if unknown:
        raise InputError(
            f"unknown field(s): {', '.join(sorted(unknown))}", field=under(at, sorted(unknown)[0])
        )
    values = _preset_values(data["preset"], presets, at) if "preset" in data else {}
    for key in _INT_FIELDS:
        if key in data:
            values[key] = _shape_int(key, data[key], at)
    for key in _BOOL_FIELDS:
        if key in data:
            if not isinstance(data[key], bool):
                raise InputError(f"must be true or false, got {data[key]!r}", field=under(at, key))
            values[key] = data[key]
    if "name" in data:
        values["name"] = str(data["name"])
    values = _with_defaults(values, at)
    try:
        return ModelShape(**values)
    except InputError as exc:  # the shape's own checks name its field: here it is the object's at ``at``
        raise exc.within(at) from None


def _preset_values(slug: Any, presets: Mapping[str, ModelShape], at: str) -> dict[str, Any]:
    """The fields of the preset named ``slug`` (``model.preset``), to be overridden by the request's own."""
    if not isinstance(slug, str):
        raise InputError(f"must be a preset name (text), got {slug!r}", field=under(at, "preset"))
    if slug not in presets:
        from clusterdesigner.engine.core.errors import UnknownReferenceError

        raise UnknownReferenceError(
            f"unknown model preset {slug!r}; known: {', '.join(sorted(presets))}", field=under(at, "preset")
        )
    base = presets[slug]
    values = {f: getattr(base, f) for f in (*_INT_FIELDS, *_BOOL_FIELDS, "name", "slug")}
    if base.is_mla or base.head_dim * base.heads == base.hidden:
        # A derived width follows overrides of hidden or heads; only a preset's own head_dim is kept.
        del values["head_dim"]
    return values


def _shape_int(key: str, given: Any, at: str) -> int:
    """``model.<key>`` as a whole number within SHAPE_LIMITS (a float such as 4096.0 is taken as 4096)."""
    value = int(given) if isinstance(given, float) and given.is_integer() else given
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"must be a whole number, got {value!r}", field=under(at, key))
    low, high = SHAPE_LIMITS[key]
    if not low <= value <= high:
        raise InputError(
            f"must be a whole number from {low:,} to {high:,}, got {given!r}",
            field=under(at, key),
        )
    return value


def _with_defaults(values: dict[str, Any], at: str) -> dict[str, Any]:
    """Check the required fields of a shape given without a preset, and fill those that have a default."""
    for key in ("layers", "hidden", "heads", "vocab", "seq_len"):
        if key not in values:
            raise InputError("is required when no preset is given", field=under(at, key))
    values.setdefault("kv_heads", values["heads"])
    values.setdefault("ffn_hidden", 4 * values["hidden"])
    if values.get("experts") and not values.get("moe_layers"):
        values["moe_layers"] = values["layers"]
    if (values.get("sliding_window") or values.get("attention_chunk")) and not values.get("local_layers"):
        values["local_layers"] = values["layers"]
    values.setdefault("name", values.get("slug") or f"custom {values['layers']}L×{values['hidden']}")
    return values
