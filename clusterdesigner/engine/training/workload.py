"""The training engine's inputs other than the model: the training setup, the cluster and a batch of
parallel layouts held as numpy arrays (one element per layout), plus the documented constants.

Layout arrays let one set of formulas (``memory.py``, ``timing.py``) serve both a single estimate (arrays
of length 1) and the vectorised search (arrays of thousands of layouts).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from clusterdesigner.engine.core.errors import InputError, under
from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.core.model import ModelShape

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

SHARDING_MODES = ("none", "zero1", "zero2", "zero3", "hsdp")
SH_NONE, SH_ZERO1, SH_ZERO2, SH_ZERO3, SH_HSDP = range(5)
LAYOUT_FIELDS = (
    "tp",
    "pp",
    "dp",
    "cp",
    "ep",
    "vpp",
    "micro_batch",
    "recompute",
    "sharding",
    "sequence_parallel",
)

GIB = float(1 << 30)


@dataclass(frozen=True)
class Assumption:
    """A constant the engine uses, reported in every response so a result explains itself."""

    name: str
    value: float
    unit: str
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "unit": self.unit, "source": self.source}


# Megatron-Core's pipeline layout letters (megatron/core/transformer/pipeline_parallel_layer_layout.py):
# E the embedding, t a transformer (decoder) layer, m a multi-token-prediction module, L the loss.
PIPELINE_LAYOUT_LETTERS = "EtmL"
MAX_PIPELINE_STAGES = 4096
MAX_LAYOUT_TEXT = 10_000  # characters of a layout string, before its repeats are unrolled


@dataclass(frozen=True)
class PipelineLayout:
    """An explicit pipeline layout: what each of the S = pp × vpp virtual stages holds, in Megatron-Core's
    order (virtual stage i runs on pipeline rank i mod pp, as its chunk i div pp). ``layers`` are the
    decoder layers per stage; ``embedding``, ``mtp`` and ``loss`` the stages holding the embedding, each
    multi-token-prediction module and the loss. ``text`` is the layout as given (Megatron-Core's
    --pipeline-model-parallel-layout string, or the list of per-stage layer counts)."""

    layers: tuple[int, ...]
    embedding: int
    loss: int
    mtp: tuple[int, ...]
    text: str

    @property
    def stages(self) -> int:
        return len(self.layers)

    def megatron_text(self) -> str:
        """The layout as Megatron-Core's --pipeline-model-parallel-layout takes it: the string as given,
        or one spelled out stage by stage from a list of layer counts."""
        if not self.text.replace(",", "").isdigit():
            return self.text
        return "|".join(
            ("E" if i == self.embedding else "")
            + "t" * n
            + "m" * self.mtp.count(i)
            + ("L" if i == self.loss else "")
            for i, n in enumerate(self.layers)
        )

    def per_rank(self, pp: int) -> tuple[IntArray, IntArray, IntArray]:
        """(decoder layers, loss, MTP modules) on each of the pp pipeline ranks."""
        ranks = np.arange(self.stages) % pp
        layers = np.bincount(ranks, weights=np.asarray(self.layers, dtype=np.float64), minlength=pp)
        loss = np.bincount([self.loss % pp], minlength=pp)
        mtp = np.bincount([i % pp for i in self.mtp], minlength=pp) if self.mtp else np.zeros(pp)
        return layers.astype(np.int64), loss.astype(np.int64), np.asarray(mtp, dtype=np.int64)

    def by_pp(self, pp: Any, pick: Any) -> FloatArray:
        """``pick(layers, loss, mtp)`` (per-rank arrays → a number) for each element of ``pp`` (numpy),
        computed once per distinct pp; pp that does not divide the stages gives NaN (never valid)."""
        pp_arr = np.asarray(pp, dtype=np.int64)
        out = np.full(pp_arr.shape, np.nan)
        for value in np.unique(pp_arr):
            if value > 0 and self.stages % int(value) == 0:
                out[pp_arr == value] = float(pick(*self.per_rank(int(value))))
        return out


def parse_pipeline_layout(
    value: Any, *, layers: int, mtp_depth: int, field: str = "training.pipeline_layout"
) -> PipelineLayout:
    """``training.pipeline_layout``: Megatron-Core's string ("Et*3|(tt|)*29,m|L": stages split by |,
    x*n and (group)*n repeat, commas cosmetic) or a list of decoder layers per virtual stage (the
    embedding on the first, the loss and any MTP modules on the last). The layout must hold every layer
    and MTP module once, the embedding on the first stage and the loss on the last (as Megatron-Core
    checks). Errors name ``field``, where the layout sits in what the user sent."""
    if isinstance(value, str):
        stages = _layout_stages(value, field)
    elif isinstance(value, list) and value:
        counts = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int) or item < 0:
                raise InputError(
                    f"stage {i}: must be a whole number of layers ≥ 0, got {item!r}", field=field
                )
            counts.append("t" * item)
        counts[0] = "E" + counts[0]
        counts[-1] = counts[-1] + "m" * mtp_depth + "L"
        stages = counts
    else:
        raise InputError(
            'must be a Megatron-Core layout string such as "Et*3|(tt|)*29,m|L" or a list of layers per stage',
            field=field,
        )
    if len(stages) > MAX_PIPELINE_STAGES:
        raise InputError(f"at most {MAX_PIPELINE_STAGES} stages, got {len(stages)}", field=field)
    joined = "".join(stages)
    checks = (
        (
            joined.count("t") == layers,
            f"holds {joined.count('t')} transformer layers, the model has {layers}",
        ),
        (joined.count("m") == mtp_depth, f"holds {joined.count('m')} MTP modules, the model has {mtp_depth}"),
        (joined.count("E") == 1 and "E" in stages[0], "needs the embedding (E) once, on the first stage"),
        (joined.count("L") == 1 and "L" in stages[-1], "needs the loss (L) once, on the last stage"),
    )
    for ok, reason in checks:
        if not ok:
            raise InputError(reason, field=field)
    return PipelineLayout(
        layers=tuple(stage.count("t") for stage in stages),
        embedding=0,
        loss=len(stages) - 1,
        mtp=tuple(i for i, stage in enumerate(stages) for _ in range(stage.count("m"))),
        text=value if isinstance(value, str) else ",".join(str(v) for v in value),
    )


def _layout_stages(text: str, field: str) -> list[str]:
    """The stages of a layout string, repeats unrolled (Megatron-Core's parse_str_to_list)."""
    if len(text) > MAX_LAYOUT_TEXT:
        raise InputError(f"must be at most {MAX_LAYOUT_TEXT:,} characters", field=field)
    flat = text.replace(",", "").replace(" ", "")
    for pattern in (r"\(([^()]+)\)\*(\d+)", r"(.)\*(\d+)"):
        try:
            flat = re.sub(pattern, lambda mt: mt.group(1) * _repeat(mt.group(2), field), flat)
        except OverflowError:
            raise InputError("repeats unroll to too long a layout", field=field) from None
        if len(flat) > 1_000_000:
            raise InputError("repeats unroll to too long a layout", field=field)
    bad = sorted(set(flat) - set(PIPELINE_LAYOUT_LETTERS) - {"|"})
    if bad:
        raise InputError(
            f"unknown letter(s) {''.join(bad)!r}: use E (embedding), t (layer), m (MTP), L (loss), | between "
            "stages, x*n or (…)*n to repeat",
            field=field,
        )
    return flat.split("|")


def _repeat(count: str, field: str) -> int:
    n = int(count)
    if n > 100_000:
        raise InputError(f"repeat count {n} is more than 100,000", field=field)
    return n


@dataclass(frozen=True)
class PipelineEngine:
    """How a stack's pipeline engine runs a step (the framework profile's, ``Training.pipeline_engine``; read
    by timing._pp_p2p, _dp_exposed, _dp_bytes_per_param, _tied_embedding_allreduce and
    _grad_accumulation_per_mb). The defaults are Megatron-Core's.

    ``tp_split`` sends each stage boundary's activation (and gradient) split over the TP ranks, 1/tp per
    GPU, and all-gathers it over TP on arrival; ``dp_overlap_backward`` False reduces the data-parallel
    gradients only after the last micro-batch's backward, none of it overlapped; ``tied_embedding_allreduce``
    all-reduces the tied word embedding's gradient between the first and last stage after backward (pp > 1);
    ``grad_accumulation`` ``autograd`` adds each micro-batch's gradients in a memory-bound pass of their own
    (``fused``: the weight-gradient GEMM accumulates in place); ``zero1_fp32_allreduce``: ZeRO-1 with fp32
    gradients all-reduces them whole and all-gathers the updated 16-bit weights (DeepSpeed's BF16Optimizer),
    instead of a reduce-scatter."""

    tp_split: bool = False
    dp_overlap_backward: bool = True
    tied_embedding_allreduce: bool = False
    grad_accumulation: str = "fused"
    zero1_fp32_allreduce: bool = False


@dataclass(frozen=True)
class Training:
    """The training setup. ``grad_bytes`` is 2 for bf16/fp16 gradients (ZeRO paper) and 4 when gradients
    are accumulated in fp32 (Megatron's default main-grad buffer, DeepSpeed's BF16Optimizer).
    ``pipeline_split`` places an uneven layer split: see ``memory.end_stage_layers``. ``cross_entropy``
    is ``fp32`` (the loss upcasts the logits, as Megatron's vocab-parallel cross-entropy does) or ``fused``
    (a fused kernel that reads the bf16 logits and writes a bf16 gradient). ``fsdp_collectives_per_layer``
    all-gathers fetch a fully sharded layer in each pass (1: one flat parameter per layer, as PyTorch FSDP
    and Megatron-Core issue; one per parameter tensor in DeepSpeed's ZeRO-3 of 2021); ``fsdp_overlap``
    says whether they are prefetched under compute or waited for.

    Mixture-of-experts token exchange (``timing._moe_comm_layer``): ``moe_dispatcher`` is ``alltoall``
    (Megatron-Core's NCCL all-to-all: one copy per routed expert), ``allgather`` (every token gathered over
    the tp × ep ranks, reduce-scattered back), ``deepep`` or ``hybridep`` (Megatron-Core's flex dispatcher:
    one copy per destination scale-up domain over the fabric, forwarded over NVLink once per destination
    GPU); its default is the framework profile's. ``moe_load_balance`` ``dropless`` leaves the busiest
    expert-parallel rank above the mean load (``timing._moe_load_imbalance``), ``balanced`` (token drop padded
    to capacity, or forced balance) does not. ``moe_max_domains_per_token`` > 0 is node-limited routing
    (DeepSeek-V3's M = 4: each token's experts lie in at most that many scale-up domains);
    ``moe_fp8_dispatch`` sends the forward
    dispatch and the backward combine in FP8; ``moe_a2a_overlap`` hides the all-to-alls under another
    micro-batch's compute (Megatron-Core's --overlap-moe-expert-parallel-comm);
    ``moe_shared_expert_overlap`` under the shared experts' GEMMs (--moe-shared-expert-overlap).
    ``etp`` is the expert tensor-parallel size (Megatron-Core's --expert-tensor-parallel-size): 0 keeps the
    engine's behaviour before it was an input (experts split by tp, the ep ranks spaced tp·cp apart); a
    given size lays the experts out on Megatron-Core's expert grid (``memory.expert_grid``).

    ``pipeline_layout`` (None: ``pipeline_split`` decides) places layers stage by stage, Megatron-Core's
    --pipeline-model-parallel-layout; it fixes pp × vpp to its number of stages.

    ``framework`` names the stack's profile (engine/training/framework.py), which set the knobs above the
    request left out and restricts the layouts; ``selective_recompute`` is what ``recompute: selective``
    keeps: ``attention`` (Megatron: recompute the attention core) or ``op`` (PyTorch op-level selective
    checkpointing: keep every other matmul's output and the attention output). ``pipeline_grad_bytes`` > 0
    (the profile's): with pp > 1 a stage's parameters and gradients stay unsharded over the micro-batches,
    the gradients at that many bytes per parameter (FSDP2 under torch's pipeline schedules).
    ``pipeline_p2p_overlap`` (the profile's): with interleaving the pipeline sends and receives run under
    the next chunk's compute (Megatron-Core --overlap-p2p-communication, ``timing._pp_p2p_exposed``).
    ``checkpoint_early_stop``: full recompute is PyTorch's non-reentrant ``torch.utils.checkpoint`` with
    its early stop (torch >= 2.1's default), which ends a layer's recomputed forward at the last tensor the
    backward needs, before the MLP's output projection runs (``timing._early_stop_skipped``).

    Memory levers (``levers.recompute_savings_per_layer``, ``memory.memory_parts``): ``recompute_modules``
    are what selective recompute recomputes (Megatron-Core's --recompute-modules; the default core_attn
    is its default); ``activation_offload_layers`` layers' activations live in host memory
    (--cpu-offloading-num-layers); ``optimizer_offload`` keeps the optimizer states in host memory and
    steps Adam on the CPU (--optimizer-cpu-offload, DeepSpeed ZeRO-Offload); ``lora_rank`` > 0 trains
    rank-r adapters on ``lora_modules`` over frozen base weights (LoRA, Hu et al. 2021);
    ``recompute_num_layers`` > 0 makes full recompute recompute only the first that many layers of each
    pipeline stage's model chunk (--recompute-method block, ``levers.full_recompute_share``); ``fp8_params``
    holds the weights in FP8, 1 byte (--fp8-param-gather, Transformer Engine fp8_model_init);
    ``activation_offload_modules`` offloads those modules' saved inputs of every layer to host memory
    (--fine-grained-activation-offloading --offload-modules, ``levers.offload_bytes_per_layer``);
    ``activation_func_fp8_input_store`` keeps the SwiGLU input for backward in FP8
    (--activation-func-fp8-input-store, ``levers.fp8_input_store_savings_per_layer``)."""

    tokens: float
    global_batch_seqs: int
    precision: str = "bf16"
    grad_bytes: float = 2.0
    optimizer_bytes: float = 12.0
    framework_reserve_gib: float = 2.5
    flash_attention: bool = True
    # The flash-attention kernel: "fused" (Transformer Engine's cuDNN fused attention, Megatron-Core's and
    # NeMo's), "flash2" (FlashAttention-2, Dao 2023; flash-attn and Triton kernels) or "flash3"
    # (Hopper-native: FlashAttention-3 or cuDNN >= 9.1, at measured rates): timing.flash_attention_seconds.
    attention_kernel: str = "fused"
    tp_comm_overlap: bool = True
    # Without tp_comm_overlap, the column-parallel linears' input-gradient collectives still run beside their
    # weight-gradient GEMMs (the profile's; framework.FrameworkProfile.tp_backward_async).
    tp_backward_async: bool = False
    pipeline_split: str = "balanced"
    cross_entropy: str = "fp32"
    fsdp_collectives_per_layer: int = 1
    fsdp_overlap: bool = True
    moe_dispatcher: str = "alltoall"
    moe_load_balance: str = "dropless"
    moe_max_domains_per_token: int = 0
    moe_fp8_dispatch: bool = False
    moe_a2a_overlap: bool = False
    moe_shared_expert_overlap: bool = False
    etp: int = 0
    pipeline_layout: PipelineLayout | None = None
    framework: str = "megatron-core"
    selective_recompute: str = "attention"
    pipeline_grad_bytes: float = 0.0
    # The profile's unless the request gives it: bytes per parameter of a sharded-data-parallel gradient
    # reduce-scatter (FSDP's reduce dtype); 0: grad_bytes (timing.reduce_bytes).
    reduce_bytes: float = 0.0
    pipeline_p2p_overlap: bool = True
    pipeline_engine: PipelineEngine = PipelineEngine()
    # Fraction of accelerator memory a searched layout leaves free (``search._memory_fits``); requests get
    # error_band.MEMORY_HEADROOM unless they set ``training.memory_headroom``.
    memory_headroom: float = 0.0
    recompute_modules: tuple[str, ...] = ("core_attn",)
    activation_offload_layers: int = 0
    optimizer_offload: bool = False
    lora_rank: int = 0
    lora_modules: tuple[str, ...] = ()
    recompute_num_layers: int = 0
    checkpoint_early_stop: bool = False
    fp8_params: bool = False
    activation_offload_modules: tuple[str, ...] = ()
    activation_func_fp8_input_store: bool = False
    # "adam" (mixed-precision Adam) or "muon" (engine/training/optimizer.py: hidden matrices orthogonalised by
    # Newton-Schulz, the embedding and output layer stepped by AdamW).
    optimizer: str = "adam"
    # The run settings the layout search chooses (engine/training/search_settings.py): those of
    # tp_comm_overlap, fsdp_overlap, optimizer_offload and activation_offload_layers the request leaves out
    # and the stack runs.
    searched_settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cluster:
    """GPUs, nodes and the scale-out fabric. ``scaleout_gbps_per_gpu`` is the NIC line rate per GPU in
    Gb/s (defaults to one fabric port per GPU, rail-optimised); ``oversubscription`` ≥ 1 divides it."""

    accelerator: AcceleratorSpec
    fabric: FabricSpec
    gpus_per_node: int
    nodes: int
    oversubscription: float = 1.0
    scaleout_gbps_per_gpu: float = 0.0

    def __post_init__(self) -> None:
        acc = self.accelerator
        # A switched scale-up domain (NVSwitch, XGMI full mesh, NVL72's NVLink Switch trays) is the whole
        # of an HGX/OAM node or larger; a node cannot hold GPUs outside it. Only bridged pairs (PCIe cards
        # with NVLink bridges, domain 2) put several domains in one node.
        if (
            acc.has_scaleup_link
            and acc.scaleup_domain_gpus > 2
            and self.gpus_per_node > acc.scaleup_domain_gpus
        ):
            raise InputError(
                f"{acc.name} systems join at most {acc.scaleup_domain_gpus} GPUs in one {acc.scaleup_link} "
                f"domain, so a node of {self.gpus_per_node} GPUs does not exist; use "
                f"{acc.scaleup_domain_gpus} or fewer GPUs per node and add nodes",
                field="gpus_per_node",
            )

    @property
    def num_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    @property
    def scaleup_domain_gpus(self) -> int:
        """GPUs one TP/EP/CP group may span at the scale-up link's rate: the accelerator's domain (8 for
        HGX, 72 for an NVL72 rack of 18 four-GPU trays) when it has a link, else the node (PCIe inside
        it); never more than the cluster. Independent of ``gpus_per_node`` beyond that."""
        acc = self.accelerator
        domain = acc.scaleup_domain_gpus if acc.has_scaleup_link else self.gpus_per_node
        return min(domain, self.num_gpus)

    @property
    def ring_unit_gpus(self) -> int:
        """The inner level of a hierarchical ring (ranks reached without the scale-out NIC): the node, or
        the scale-up domain where it spans several nodes (NVL72 trays in one rack)."""
        return max(self.gpus_per_node, self.scaleup_domain_gpus)

    @property
    def nic_gbps_per_gpu(self) -> float:
        return self.scaleout_gbps_per_gpu or self.fabric.port_gbps


@dataclass(frozen=True)
class Sections:
    """Where each section of a training request sits in what the user sent, as its parser was told: a
    request sent as it is (the training API's) has them at their own names under ``at``
    (:meth:`of_request`); a design's are the spec's (``spec.workload.model``, ``spec.cluster``...), a
    sweep's its parameters. Errors raised while parsing a section, and later by the engine about it (a
    layout that does not divide the GPUs, memory), name its fields under its location."""

    model: str = "model"
    training: str = "training"
    cluster: str = "cluster"
    parallelism: str = "parallelism"
    search: str = "search"
    # The cluster's accelerator, when the user gave it apart from the rest of the cluster (a sweep's swept
    # list); None: the cluster's own field.
    accelerator: str | None = None

    @property
    def cluster_accelerator(self) -> str:
        """Where the cluster's accelerator sits."""
        return under(self.cluster, "accelerator") if self.accelerator is None else self.accelerator

    @classmethod
    def of_request(cls, at: str = "") -> Sections:
        """The sections of a request that sits at ``at`` ("" the top of what the user sent)."""
        return cls(
            **{name: under(at, name) for name in ("model", "training", "cluster", "parallelism", "search")}
        )

    def path(self, field: str) -> str:
        """A field named by its section and its path in it (``parallelism.pp``, ``cluster.nodes``, as the
        layout checks name the field they concern) under that section's location."""
        section, _, rest = field.partition(".")
        if field == "cluster.accelerator":
            return self.cluster_accelerator
        return under(getattr(self, section), rest)


@dataclass(frozen=True)
class Problem:
    """Model + training + cluster: everything fixed while layouts vary; ``where``: where their sections
    (and the layout's) sit in what the user sent, so an error about them names the user's field."""

    model: ModelShape
    training: Training
    cluster: Cluster
    where: Sections = Sections()


def layouts(**columns: Any) -> dict[str, IntArray]:
    """A batch of layouts from equal-length columns (scalars broadcast). Keys: LAYOUT_FIELDS, with
    recompute and sharding as indices into RECOMPUTE_MODES and SHARDING_MODES."""
    arrays = {k: np.atleast_1d(np.asarray(columns[k], dtype=np.int64)) for k in LAYOUT_FIELDS}
    n = max(a.size for a in arrays.values())
    return {k: np.broadcast_to(a, (n,)) if a.size != n else a for k, a in arrays.items()}


def layout_row(lay: Mapping[str, IntArray], i: int) -> dict[str, Any]:
    """One layout as the response's ``parallelism`` object."""
    from clusterdesigner.engine.core.model import RECOMPUTE_MODES

    row: dict[str, Any] = {k: int(lay[k][i]) for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch")}
    row["recompute"] = RECOMPUTE_MODES[int(lay["recompute"][i])]
    row["sharding"] = SHARDING_MODES[int(lay["sharding"][i])]
    row["sequence_parallel"] = bool(lay["sequence_parallel"][i])
    return row


def group_span(*, stride: Any, size: Any, gpus_per_node: int) -> tuple[FloatArray, FloatArray]:
    """How a process group of ``size`` ranks spaced ``stride`` apart lies on nodes: (ranks per node j,
    nodes spanned k). Ranks are placed tp innermost, then cp, dp, pp (Megatron-LM's order)."""
    stride_f = np.asarray(stride, dtype=np.float64)
    size_f = np.asarray(size, dtype=np.float64)
    j = np.clip(np.floor(gpus_per_node / stride_f), 1.0, size_f)
    return j, np.ceil(size_f / j)
