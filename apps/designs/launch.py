"""Launch configurations for a design's chosen layout: a ``torchrun`` command for Megatron-LM's
``pretrain_gpt.py``, a Slurm ``sbatch`` script, a Kubernetes Volcano Job and the NCCL settings for the fabric.

All functions are pure: they read the evaluation as the engine's typed result (``DesignEvaluation``; a
stored evaluation dict is read through ``selectors.evaluation_read``), and return text. Nothing here
touches the database.

Flag names follow Megatron-LM ``megatron/training/arguments.py`` (``--tensor-model-parallel-size``,
``--pipeline-model-parallel-size``, ``--context-parallel-size``, ``--expert-model-parallel-size``,
``--expert-tensor-parallel-size``,
``--num-layers-per-virtual-pipeline-stage``, ``--decoder-first/last-pipeline-num-layers``,
``--sequence-parallel``, ``--recompute-granularity {full,selective}``, ``--recompute-method uniform``,
``--use-distributed-optimizer``, ``--fp8-format hybrid``, ``--group-query-attention --num-query-groups``,
``--num-experts``, ``--moe-router-topk``, ``--moe-ffn-hidden-size``, ``--moe-layer-freq``). ZeRO-2/3 and HSDP
map to Megatron-FSDP (``--use-megatron-fsdp``, ``--data-parallel-sharding-strategy optim_grads`` or
``optim_grads_params``,
``--num-distributed-optimizer-instances`` for the replicated outer level), whose documented required flags are
``--no-gradient-accumulation-fusion --use-distributed-optimizer --ckpt-format fsdp_dtensor``.

NCCL and libfabric variable names follow the NCCL user guide ("Environment Variables") and aws-ofi-nccl
``doc/efa-env-var.md``. The Volcano job uses the ``pytorch`` job plugin, which opens the port and sets
MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK in every pod (volcano-sh/volcano
docs/user-guide/how_to_use_pytorch_plugin.md).
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from apps.designs import selectors
from apps.designs.launch_automodel import AUTOMODEL_SCRIPT, RECIPE_FILE, automodel_recipe
from apps.designs.launch_deepspeed import (
    DS_CONFIG_FILE,
    MEGATRON_DEEPSPEED_SCRIPT,
    deepspeed_env_file,
    ds_config_json,
    megatron_deepspeed_args,
)
from apps.designs.launch_torchtitan import TORCHTITAN_MODULE, stack_env, torchtitan_args
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.model import ModelShape
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.design.evaluation import DesignEvaluation
from clusterdesigner.engine.design.spec import Cluster, DesignSpec
from clusterdesigner.engine.training.framework import DEFAULT_FRAMEWORK, FrameworkProfile
from clusterdesigner.engine.training.framework import PROFILES as FRAMEWORK_PROFILES
from clusterdesigner.engine.training.memory import end_stage_layers, interleaving_splits
from clusterdesigner.engine.training.precision import RECIPES as PRECISION_RECIPES
from clusterdesigner.engine.training.precision import bf16_layers
from clusterdesigner.engine.training.training_result import Layout, TrainingEstimate
from clusterdesigner.engine.training.workload import PipelineLayout, parse_pipeline_layout

MASTER_PORT = 29500
VOLCANO_PORT = 23456  # the Volcano pytorch plugin's default --port
PRETRAIN_SCRIPT = "${MEGATRON_DIR:-/workspace/Megatron-LM}/pretrain_gpt.py"
IMAGE = "nvcr.io/nvidia/pytorch:24.12-py3"
FABRIC_KINDS = ("infiniband", "roce", "efa", "ethernet")

# Device-plugin resource names. IB and RoCE: the NVIDIA network operator's RDMA shared device plugin
# (its example resource name); EFA: the AWS EFA device plugin.
RDMA_RESOURCE = "rdma/rdma_shared_device_a"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# EFA interfaces per instance: p4d 4, p5 32, p5en 16, p6-b200 8 (AWS EC2 accelerated-computing specs).
EFA_DEVICES_BY_ACCELERATOR = {"a100-40gb": 4, "a100-80gb": 4, "h100-sxm": 32, "h200": 16, "b200": 8}


# ---- NCCL ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NcclSetting:
    """One NCCL/libfabric variable with the reason it is set. ``value`` None means "deliberately left unset"
    (rendered as a comment so the reader sees the choice)."""

    name: str
    value: str | None
    why: str


def fabric_kind_of(evaluation: DesignEvaluation, catalog_kind: str | None = None) -> str:
    """The fabric kind (infiniband, roce, efa, ethernet) of the evaluation's cluster: ``catalog_kind``, the
    kind of the catalog row of its fabric (``selectors.evaluation_fabric_kind``), else inferred from the
    fabric's slug (ib-*, roce-*, *efa*, eth-*) when that row is not at hand."""
    kind = (catalog_kind or "").lower()
    if kind in FABRIC_KINDS:
        return kind
    return _kind_from_slug(_cluster(evaluation).fabric)


def _kind_from_slug(slug: str) -> str:
    s = slug.lower()
    if s.startswith("ib-") or "infiniband" in s:
        return "infiniband"
    if "roce" in s:
        return "roce"
    if "efa" in s:
        return "efa"
    if s.startswith("eth") or "ethernet" in s:
        return "ethernet"
    raise ValueError(
        f"cannot tell the fabric kind of {slug!r}: it is not in the catalog and its slug names no kind; "
        f"pick a catalog fabric for spec.cluster.fabric, or add {slug!r} to the catalog with its kind "
        f"({', '.join(FABRIC_KINDS)})"
    )


def _link_gbps(slug: str) -> float:
    match = re.search(r"(\d+)\s*g", slug.lower())
    return float(match.group(1)) if match else 0.0


_GDR = (
    "NCCL_NET_GDR_LEVEL",
    "PXB",
    "GPUDirect RDMA when NIC and GPU share PCIe switches (HGX rails), never through the CPU",
)
_NCCL: dict[str, tuple[tuple[str, str | None, str], ...]] = {
    "infiniband": (
        (
            "NCCL_IB_HCA",
            "mlx5",
            "the ConnectX (mlx5) HCAs; list the compute rails (=mlx5_0,...) if storage is mlx5 too",
        ),
        ("NCCL_IB_GID_INDEX", None, "native InfiniBand routes by LID; a GID index only matters on RoCE"),
        _GDR,
    ),
    "roce": (
        ("NCCL_IB_HCA", "mlx5", "RoCE uses the same verbs API: the ConnectX (mlx5) ports"),
        (
            "NCCL_IB_GID_INDEX",
            "3",
            "GID 3 is usually RoCE v2 over IPv4 (check show_gids); NCCL < 2.21 uses 0 = v1",
        ),
        ("NCCL_IB_TC", "106", "DSCP 26 x 4 + ECN bits: must match the switches' lossless (PFC/ECN) class"),
        ("NCCL_IB_QPS_PER_CONNECTION", "4", "more queue pairs give ECMP more flows to spread over the spine"),
        _GDR,
    ),
    "efa": (
        (
            "FI_PROVIDER",
            "efa",
            "libfabric must use EFA, never TCP (needed for aws-ofi-nccl <= 1.5, harmless later)",
        ),
        ("FI_EFA_USE_DEVICE_RDMA", "1", "GPUDirect RDMA on p4/p5 (needed for plugin 1.6, default from 1.7)"),
        (
            "NCCL_PROTO",
            "simple",
            "EFA may reorder packets, breaking LL/LL128 (plugin <= 1.5; newer ones set it)",
        ),
        ("FI_EFA_USE_HUGE_PAGE", None, "set to 0 only if os.fork() in data loaders fails to allocate memory"),
    ),
    "ethernet": (
        (
            "NCCL_SOCKET_IFNAME",
            "^lo,docker,veth,virbr",
            "TCP carries everything: not loopback or bridges (or =eth0)",
        ),
        (
            "NCCL_IB_DISABLE",
            "1",
            "no RDMA fabric: do not use verbs even if the NIC offers RoCE without lossless QoS",
        ),
    ),
}
_FAST_SOCKETS = (
    (
        "NCCL_SOCKET_NTHREADS",
        "4",
        "one helper thread cannot fill 100 Gb/s; the NCCL guide suggests 4 for 100G",
    ),
    (
        "NCCL_NSOCKS_PERTHREAD",
        "4",
        "4 sockets per thread (threads x sockets <= 64), the NCCL guide's 100G value",
    ),
)


def nccl_settings(*, fabric_kind: str, fabric_slug: str) -> list[NcclSetting]:
    """The NCCL settings that suit a fabric, each with why; ``value`` None marks one left unset on purpose.

    Sources: NCCL user guide, "Environment Variables" (NCCL_IB_HCA; NCCL_IB_GID_INDEX, default -1 =
    auto-select since 2.21; NCCL_IB_TC; NCCL_IB_QPS_PER_CONNECTION; NCCL_NET_GDR_LEVEL; NCCL_SOCKET_IFNAME;
    NCCL_IB_DISABLE; NCCL_SOCKET_NTHREADS and NCCL_NSOCKS_PERTHREAD, 4 each for 100G); aws-ofi-nccl
    doc/efa-env-var.md for EFA (FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA=1, NCCL_PROTO=simple for old plugins).
    """
    kind = fabric_kind.lower()
    if kind not in _NCCL:
        raise ValueError(f"unknown fabric kind {fabric_kind!r}; use one of {', '.join(FABRIC_KINDS)}")
    rows = list(_NCCL[kind])
    if kind == "ethernet" and _link_gbps(fabric_slug) >= 100:
        rows += _FAST_SOCKETS
    return [NcclSetting(name, value, why) for name, value, why in rows]


def nccl_env(*, fabric_kind: str, fabric_slug: str) -> dict[str, str]:
    """The NCCL environment for a fabric as name → value (variables deliberately left unset are absent).
    The reason for each is in ``nccl_settings`` and is written next to it in the generated scripts."""
    return {
        s.name: s.value
        for s in nccl_settings(fabric_kind=fabric_kind, fabric_slug=fabric_slug)
        if s.value is not None
    }


# ---- reading the evaluation ------------------------------------------------------------------------------
def _cluster(evaluation: DesignEvaluation) -> Cluster:
    return _spec(evaluation).cluster


def _spec(evaluation: DesignEvaluation) -> DesignSpec:
    """The evaluation's parsed spec; ValueError when its stored spec does not parse (a launch needs its
    cluster and model)."""
    if evaluation.design_spec is None:
        if not evaluation.cluster:
            raise ValueError("the evaluation has no spec.cluster, so there is no cluster to launch on")
        raise ValueError(
            "the evaluation's stored spec no longer parses, so there is no cluster to launch on: "
            "save the design again"
        )
    return evaluation.design_spec


def _training(evaluation: DesignEvaluation) -> TrainingEstimate:
    """The evaluation's typed training result; ValueError when there is none to launch."""
    if evaluation.training is None:
        raise ValueError(
            "the evaluation has no parallel layout (training.parallelism is missing): none fits the cluster; "
            "add nodes, pick a larger-memory accelerator or allow more sharding/recompute"
        )
    return evaluation.training


def chosen_layout(evaluation: DesignEvaluation) -> Layout:
    """The evaluated layout (training.parallelism); ValueError when there is none or it does not fit in
    memory."""
    chosen = _training(evaluation).chosen
    if not chosen.fits:
        raise ValueError(
            "the chosen layout does not fit in GPU memory (needs "
            f"{chosen.memory_per_gpu_gib.total:.1f} GiB per GPU, has {chosen.memory_capacity_gib:g} GiB); "
            "a launch would run out of memory"
        )
    layout = chosen.parallelism
    for key in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch"):
        value = getattr(layout, key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"training.parallelism.{key} must be a whole number >= 1, got {value!r}")
    return layout


# A layout dimension left out of a hand-written parallelism object is not split.
_NO_PARALLELISM = Layout(1, 1, 1, 1, 1, 1, 1, "none", "none", False).to_json()


def layout_summary(parallelism: Layout | Mapping[str, Any]) -> str:
    """A one-line description of a layout, e.g. ``TP8 PP4 DP16 CP1 EP1 VPP1 mb1 selective zero1 SP``."""
    p = (
        parallelism
        if isinstance(parallelism, Layout)
        else Layout.from_json({**_NO_PARALLELISM, **parallelism})
    )
    parts = [f"TP{p.tp}", f"PP{p.pp}", f"DP{p.dp}", f"CP{p.cp}"]
    if p.ep != 1:
        parts.append(f"EP{p.ep}")
    parts += [f"VPP{p.vpp}", f"mb{p.micro_batch}", f"recompute={p.recompute}", f"sharding={p.sharding}"]
    if p.sequence_parallel:
        parts.append("SP")
    return " ".join(parts)


# Every shape field of the engine's ModelShape (layers … moe_layers), without its name and slug.
_SHAPE_KEYS = tuple(f.name for f in fields(ModelShape) if f.name not in ("name", "slug"))
_SHAPE_DEFAULTS = {
    f.name: f.default for f in fields(ModelShape) if f.name in _SHAPE_KEYS and f.default is not MISSING
}


def model_shape(evaluation: DesignEvaluation) -> dict[str, Any]:
    """The model shape to launch: the engine's preset (when the spec names one), overridden by the shape
    fields in the spec, overridden by the resolved shape the training engine reports (training.summary.model,
    which has every dense-shape field; the preset and the spec add the MoE details it does not report)."""
    spec_model = _spec(evaluation).model
    shape: dict[str, Any] = {}
    if "preset" in spec_model:
        shape.update(_preset_shape(spec_model["preset"]))
    shape.update({k: spec_model[k] for k in _SHAPE_KEYS if k in spec_model})
    echoed = _training(evaluation).summary.model
    shape.update({k: getattr(echoed, k) for k in _SHAPE_KEYS if getattr(echoed, k, None) is not None})
    # What no source gave is the engine's default (a dense model, untied, with dropout).
    shape = {**_SHAPE_DEFAULTS, **shape}
    if shape["experts"] and not shape["moe_layers"]:
        shape["moe_layers"] = shape["layers"]
    return shape


def _preset_shape(slug: str) -> dict[str, Any]:
    # The training engine's presets are the same shapes the estimate used; an unknown (private) preset
    # simply yields nothing and the caller falls back to the echoed shape or a comment.
    base = PRESETS.get(slug)
    return {k: getattr(base, k) for k in _SHAPE_KEYS} if base is not None else {}


def _precision(evaluation: DesignEvaluation) -> str:
    return _training(evaluation).summary.training.precision.lower()


def _global_batch_seqs(evaluation: DesignEvaluation) -> int:
    return _training(evaluation).summary.training.global_batch_seqs


def _train_tokens(evaluation: DesignEvaluation) -> float:
    return float(_training(evaluation).summary.training.tokens)


# ---- Megatron arguments ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class LaunchPlan:
    """Everything the three launchers share."""

    nodes: int
    gpus_per_node: int
    megatron_args: tuple[str, ...]
    comments: tuple[str, ...]
    env: tuple[NcclSetting, ...]
    fabric_kind: str
    fabric_slug: str
    accelerator: str
    name: str
    # What torchrun runs, as one shell-quoted line: Megatron-LM's pretrain_gpt.py, or ``-m torchtitan.train``.
    script: str = ""
    # Files the launch writes before it starts (name, text): DeepSpeed's ds_config.json, AutoModel's recipe.
    files: tuple[tuple[str, str], ...] = ()
    # The single-node launch: torchrun on every node, or the deepspeed launcher on the first (which starts
    # the rest).
    launcher: str = "torchrun"


def _stage_split(layers: int, pp: int) -> tuple[int, int] | None:
    """(first, last) stage layer counts for an uneven pipeline split, middle stages holding ceil(L/pp): the
    first and last stages also hold the embedding and the output layer, so they are the ones to lighten —
    the split the training engine models (engine.training.memory.end_stage_layers)."""
    if pp <= 1 or layers % pp == 0:
        return None
    first, last = (int(x) for x in end_stage_layers(layers, pp))
    if first + last + (pp - 2) * math.ceil(layers / pp) != layers:
        raise ValueError(f"{layers} layers cannot be split over {pp} pipeline stages")
    return first, last


def _moe_layer_freq(layers: int, moe_layers: int) -> str | None:
    # Dense layers first (DeepSeek-V3 keeps its first 3 layers dense), then MoE layers.
    if moe_layers >= layers:
        return None
    return f"([0]*{layers - moe_layers}+[1]*{moe_layers})"


def _hsdp_instances(layout: Layout, gpus_per_node: int) -> int:
    # HSDP shards inside a node and replicates across nodes: the shard group is the data-parallel ranks
    # that fit in one node, the number of replicas is dp / that.
    dp = layout.dp
    in_node = max(1, min(dp, gpus_per_node // (layout.tp * layout.cp)))
    while dp % in_node:
        in_node -= 1
    return dp // in_node


@dataclass
class _Args:
    """The Megatron argument list and the comments that explain what it leaves out, built in order."""

    args: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)

    def add(self, flag: str, value: Any = None) -> None:
        self.args.append(flag)
        if value is not None:
            self.args.append(str(value))


def _cluster_size(evaluation: DesignEvaluation, layout: Layout) -> tuple[int, int]:
    """(nodes, GPUs per node) of the evaluated cluster (training.summary.cluster), checked against the
    layout: tp·pp·dp·cp must use every GPU."""
    cluster = _training(evaluation).summary.cluster
    nodes, gpn = cluster.nodes, cluster.gpus_per_node
    if nodes < 1 or gpn < 1:
        raise ValueError("training.summary.cluster needs nodes and gpus_per_node (whole numbers >= 1)")
    tp, pp, dp, cp = layout.tp, layout.pp, layout.dp, layout.cp
    world = tp * pp * dp * cp
    if world != nodes * gpn:
        raise ValueError(
            f"layout uses tp×pp×dp×cp = {tp}×{pp}×{dp}×{cp} = {world} GPUs but the cluster has "
            f"{_count(nodes, 'node')} × {gpn} = {nodes * gpn}"
        )
    return nodes, gpn


def _parallel_args(out: _Args, layout: Layout, etp: int | None = None) -> None:
    """The degrees; with experts split (ep > 1, or an ``etp`` the spec gives) the expert tensor-parallel
    size too: the spec's ``workload.training.etp``, else tp, Megatron-Core's default and the engine's."""
    out.add("--tensor-model-parallel-size", layout.tp)
    out.add("--pipeline-model-parallel-size", layout.pp)
    out.add("--context-parallel-size", layout.cp)
    if layout.ep > 1:
        out.add("--expert-model-parallel-size", layout.ep)
    if layout.ep > 1 or etp is not None:
        out.add("--expert-tensor-parallel-size", etp if etp is not None else layout.tp)
    if layout.sequence_parallel and layout.tp > 1:
        out.add("--sequence-parallel")


def _pipeline_split_args(out: _Args, layout: Layout, layers: int) -> None:
    """Interleaving (vpp > 1) needs pp × vpp to divide the layers, or the layers + 2 with the embedding and
    the loss counted as layers; without it an uneven split lightens the first and last stages."""
    pp, vpp = layout.pp, layout.vpp
    if vpp > 1:
        if layers % (pp * vpp) == 0:
            out.add("--num-layers-per-virtual-pipeline-stage", layers // (pp * vpp))
        elif interleaving_splits(layers, pp, vpp):
            # Llama 3's split: the embedding and the loss take one virtual stage's place each.
            out.add("--account-for-embedding-in-pipeline-split")
            out.add("--account-for-loss-in-pipeline-split")
            out.add("--num-virtual-stages-per-pipeline-rank", vpp)
        else:
            raise ValueError(
                f"{layers} layers do not split into pp×vpp = {pp}×{vpp} equal virtual stages; "
                f"Megatron's interleaved schedule needs pp × vpp to divide the layers, or the layers + 2 "
                "with the embedding and the loss counted as layers"
            )
    elif (split := _stage_split(layers, pp)) is not None:
        out.add("--decoder-first-pipeline-num-layers", split[0])
        out.add("--decoder-last-pipeline-num-layers", split[1])


def _moe_args(out: _Args, shape: Mapping[str, Any], layers: int) -> None:
    expert_ffn = shape["expert_ffn_hidden"] or shape["ffn_hidden"]
    out.add("--num-experts", shape["experts"])
    out.add("--moe-router-topk", shape["top_k"])
    out.add("--moe-ffn-hidden-size", expert_ffn)
    if shape["shared_experts"]:
        out.add("--moe-shared-expert-intermediate-size", int(shape["shared_experts"]) * int(expert_ffn))
    if (freq := _moe_layer_freq(layers, int(shape["moe_layers"] or layers))) is not None:
        out.add("--moe-layer-freq", freq)


# training.moe_dispatcher as Megatron-Core flags (transformer_config.py at NVIDIA/Megatron-LM d98e8a64:
# moe_token_dispatcher_type allgather | alltoall | flex, moe_flex_dispatcher_backend deepep | hybridep).
MOE_DISPATCHER_FLAGS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "alltoall": (("--moe-token-dispatcher-type", "alltoall"),),
    "allgather": (("--moe-token-dispatcher-type", "allgather"),),
    "deepep": (("--moe-token-dispatcher-type", "flex"), ("--moe-flex-dispatcher-backend", "deepep")),
    "hybridep": (("--moe-token-dispatcher-type", "flex"), ("--moe-flex-dispatcher-backend", "hybridep")),
}


def _moe_exchange_args(out: _Args, training: Any, stack: FrameworkProfile, ep: int) -> None:
    """The MoE token exchange the estimate timed: the dispatcher (the spec's, else the framework profile's,
    always written since Megatron-Core's own default, allgather, is not what the estimate assumed); the
    EP all-to-all overlap (megatron/core/transformer/moe/README.md: --overlap-moe-expert-parallel-comm
    --delay-wgrad-compute); --moe-shared-expert-overlap; and balanced routing as token drop at capacity
    factor 1.0 padded to capacity (--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity),
    Megatron-Core's default being dropless."""
    dispatcher = training.moe_dispatcher or stack.moe_dispatcher
    for flag, value in MOE_DISPATCHER_FLAGS[dispatcher]:
        out.add(flag, value)
    overlap = stack.moe_a2a_overlap if training.moe_a2a_overlap is None else training.moe_a2a_overlap
    if overlap and ep > 1:
        out.add("--overlap-moe-expert-parallel-comm")
        out.add("--delay-wgrad-compute")
    if training.moe_shared_expert_overlap:
        out.add("--moe-shared-expert-overlap")
    if training.moe_load_balance == "balanced":
        out.add("--moe-expert-capacity-factor", 1.0)
        out.add("--moe-pad-expert-input-to-capacity")
    if training.moe_fp8_dispatch or training.moe_max_domains_per_token:
        out.comments.append(
            "moe_fp8_dispatch / moe_max_domains_per_token: set Megatron-Core's moe_dispatch_fwd_dtype and "
            "--moe-router-num-groups / --moe-router-group-topk for the cluster's nodes by hand"
        )


def _attention_args(out: _Args, shape: Mapping[str, Any]) -> None:
    """Multi-head latent attention's widths (Megatron-LM arguments.py: --multi-latent-attention,
    --q-lora-rank, --kv-lora-rank, --qk-head-dim for the no-RoPE part, --qk-pos-emb-head-dim, --v-head-dim),
    else a head width apart from hidden / heads (--kv-channels); multi-token prediction (--mtp-num-layers).
    ``shape`` is model_shape's: every ModelShape field, its default filled in."""
    if shape["kv_lora_rank"]:
        out.add("--multi-latent-attention")
        if shape["q_lora_rank"]:
            out.add("--q-lora-rank", shape["q_lora_rank"])
        out.add("--kv-lora-rank", shape["kv_lora_rank"])
        out.add("--qk-head-dim", shape["qk_nope_head_dim"])
        out.add("--qk-pos-emb-head-dim", shape["qk_rope_head_dim"])
        out.add("--v-head-dim", shape["v_head_dim"])
    elif shape["head_dim"] and int(shape["head_dim"]) * int(shape["heads"]) != int(shape["hidden"]):
        out.add("--kv-channels", shape["head_dim"])
    if shape["mtp_depth"]:
        out.add("--mtp-num-layers", shape["mtp_depth"])


def _pipeline_layout(evaluation: DesignEvaluation, shape: Mapping[str, Any]) -> PipelineLayout | None:
    """The spec's explicit pipeline layout (spec.workload.training.pipeline_layout), checked as the engine
    checks it, or None."""
    given = _spec(evaluation).training.pipeline_layout
    if given is None:
        return None
    try:
        return parse_pipeline_layout(
            given, layers=int(shape["layers"]), mtp_depth=int(shape["mtp_depth"] or 0)
        )
    except InputError as exc:
        raise ValueError(f"pipeline_layout: {exc.message}") from exc


def _model_args(
    out: _Args, layout: Layout, shape: Mapping[str, Any], pipeline: PipelineLayout | None = None
) -> None:
    layers = int(shape["layers"])
    if pipeline is not None:
        # The layout places every layer; Megatron-Core derives vpp from it and pp (pp × vpp = its stages).
        if layout.pp * layout.vpp != pipeline.stages:
            raise ValueError(
                f"pipeline_layout has {pipeline.stages} stages but pp × vpp = {layout.pp}×{layout.vpp}"
            )
        out.add("--pipeline-model-parallel-layout", pipeline.megatron_text())
    else:
        _pipeline_split_args(out, layout, layers)
    out.add("--num-layers", layers)
    out.add("--hidden-size", shape["hidden"])
    out.add("--ffn-hidden-size", shape["ffn_hidden"])
    out.add("--num-attention-heads", shape["heads"])
    if int(shape["kv_heads"]) != int(shape["heads"]):
        out.add("--group-query-attention")
        out.add("--num-query-groups", shape["kv_heads"])
    out.add("--seq-length", shape["seq_len"])
    out.add("--max-position-embeddings", shape["seq_len"])
    if shape["gated_mlp"]:
        out.add("--swiglu")
    if shape["dropout"] is False:
        # Megatron's dropouts default to 0.1; the estimate assumed none (no masks stored or written).
        out.add("--attention-dropout", 0.0)
        out.add("--hidden-dropout", 0.0)
    if not shape["tied_embeddings"]:
        out.add("--untie-embeddings-and-output-weights")
    _attention_args(out, shape)
    _norm_and_position_args(out, shape)
    _local_attention_args(out, shape)
    if shape["experts"]:
        _moe_args(out, shape, layers)


def _norm_and_position_args(out: _Args, shape: Mapping[str, Any]) -> None:
    """RMSNorm and rotary embeddings with the model's base (Megatron-LM arguments.py --normalization,
    --position-embedding-type, --rotary-base), from ``rms_norm`` and ``rope_theta``. A model that gives
    neither keeps Megatron's defaults (LayerNorm, learned absolute positions), and the comment says so."""
    if shape["rms_norm"]:
        out.add("--normalization", "RMSNorm")
    if shape["rope_theta"]:
        out.add("--position-embedding-type", "rope")
        out.add("--rotary-base", shape["rope_theta"])
    unset = [name for name in ("rms_norm", "rope_theta") if not shape[name]]
    if unset:
        out.comments.append(
            f"the model does not set {' or '.join(unset)}: Megatron's defaults apply (LayerNorm, learned "
            "absolute positions); give them on the model (or choose a preset that has them) to carry "
            "--normalization RMSNorm / --position-embedding-type rope --rotary-base"
        )


def _global_every(layers: int, local: int) -> int | None:
    """N when the model has one global layer after every N − 1 local ones (local = layers − layers / N),
    Megatron's integer form of --window-attn-skip-freq and --no-rope-freq; None otherwise."""
    global_layers = layers - local
    if global_layers <= 0 or layers % global_layers:
        return None
    return layers // global_layers


def _local_attention_args(out: _Args, shape: Mapping[str, Any]) -> None:
    """Sliding-window layers (--window-size W,0 and --window-attn-skip-freq N: one full layer after N − 1
    windowed ones), attention sinks (--softmax-type learnable, GPT-OSS) and Llama 4's NoPE global layers
    (--no-rope-freq N) — Megatron-LM arguments.py and its GPT-OSS example (--window-size 128,0
    --window-attn-skip-freq 2 --softmax-type learnable). Chunked attention has no Megatron-LM flag: said in
    a comment."""
    layers, local = int(shape["layers"]), int(shape["local_layers"])
    every = _global_every(layers, local)
    if shape["sliding_window"]:
        out.add("--window-size", f"{int(shape['sliding_window'])},0")
        if every is not None:
            out.add("--window-attn-skip-freq", every)
        elif local < layers:
            out.comments.append(
                f"{local} of {layers} layers are windowed in no 1-in-N pattern: give --window-attn-skip-freq "
                'as a list (Megatron-LM accepts e.g. "[1,1,1,0]*3") for the model\'s own layer pattern'
            )
    if shape["attention_chunk"]:
        if every is not None:
            # Llama 4's global (unchunked) layers are its NoPE layers (config no_rope_layer_interval 4).
            out.add("--no-rope-freq", every)
        out.comments.append(
            f"chunked attention ({int(shape['attention_chunk'])} tokens on {local} of {layers} layers) has "
            "no Megatron-LM flag: the estimate times those layers chunked; Megatron trains them with full "
            "causal attention unless the build adds chunking"
        )
    if shape["attention_sinks"]:
        out.add("--softmax-type", "learnable")


def _batch_args(out: _Args, layout: Layout, evaluation: DesignEvaluation, seq_len: int) -> None:
    """Micro and global batch; the global batch (sequences) must divide by micro_batch × dp. Iterations =
    ⌈tokens / (global batch × seq_len)⌉."""
    mb, dp = layout.micro_batch, layout.dp
    out.add("--micro-batch-size", mb)
    gbs = _global_batch_seqs(evaluation)
    if gbs % (mb * dp):
        raise ValueError(
            f"global batch of {gbs} sequences does not divide by micro_batch × dp = {mb}×{dp}; "
            "Megatron needs a whole number of micro-batches per data-parallel rank"
        )
    out.add("--global-batch-size", gbs)
    tokens = _train_tokens(evaluation)
    out.add("--train-iters", math.ceil(tokens / (gbs * seq_len)))


def _memory_lever_args(out: _Args, evaluation: DesignEvaluation, recompute: str) -> None:
    """The spec's memory levers as Megatron-LM flags (megatron/training/arguments.py and the config
    dataclasses at NVIDIA/Megatron-LM d98e8a64): --recompute-modules with selective recompute,
    --recompute-method block --recompute-num-layers N, --fp8-param-gather, --cpu-offloading-num-layers,
    --fine-grained-activation-offloading --offload-modules, --activation-func-fp8-input-store,
    --optimizer-cpu-offload. LoRA is NeMo / Megatron-Bridge PEFT, not a
    Megatron-LM pretraining flag: refused rather than exported as full training."""
    training = _spec(evaluation).training
    if training.lora_rank:
        raise ValueError(
            "lora_rank: LoRA fine-tuning runs through NeMo / Megatron-Bridge PEFT, which this Megatron-LM "
            "pretraining launch does not express"
        )
    _recompute_args(out, recompute, training.recompute_num_layers)
    if training.fp8_params:
        out.add("--fp8-param-gather")
    if recompute == "selective" and training.recompute_modules:
        # nargs="*": one argument per module.
        out.add("--recompute-modules")
        out.args.extend(training.recompute_modules)
    # A search chooses the offloads the spec leaves out (engine/training/search_settings.py): export its
    # choice.
    searched = _training(evaluation).chosen.settings
    offload_layers = training.activation_offload_layers or (searched and searched.activation_offload_layers)
    if offload_layers:
        out.add("--cpu-offloading-num-layers", offload_layers)
    if training.activation_offload_modules:
        out.add("--fine-grained-activation-offloading")
        out.add("--offload-modules")
        out.args.extend(training.activation_offload_modules)
    if training.activation_func_fp8_input_store:
        out.add("--activation-func-fp8-input-store")
    if training.optimizer_offload or (searched and searched.optimizer_offload):
        out.add("--optimizer-cpu-offload")
    _attention_backend_args(out, training.attention_kernel)


# training.attention_kernel as Megatron-Core's --attention-backend (AttnBackend at Megatron-LM d98e8a64:
# flash, fused, unfused, local, auto): "fused" is Transformer Engine's cuDNN fused attention, "flash" its
# flash-attn backend. Without the field the export leaves Megatron's auto, which picks the fused backend on
# Hopper and Blackwell (what the engine times under the Megatron-Core profile).
# "flash3" (FlashAttention-3 or cuDNN >= 9.1) is auto: Transformer Engine picks FlashAttention-3 on Hopper
# when it is installed, else cuDNN's fused attention.
ATTENTION_BACKENDS = {"fused": "fused", "flash2": "flash", "flash3": "auto"}


def _attention_backend_args(out: _Args, kernel: str | None) -> None:
    if kernel is not None:
        out.add("--attention-backend", ATTENTION_BACKENDS[kernel])


def _recompute_args(out: _Args, recompute: str, block_layers: int | None) -> None:
    """Full recompute of every layer (--recompute-method uniform, one layer per unit), or with the spec's
    recompute_num_layers of the first that many layers of each stage (--recompute-method block)."""
    if recompute == "selective":
        out.add("--recompute-granularity", "selective")
    elif recompute == "full":
        out.add("--recompute-granularity", "full")
        out.add("--recompute-method", "block" if block_layers else "uniform")
        out.add("--recompute-num-layers", block_layers or 1)


def _sharding_args(out: _Args, layout: Layout, gpus_per_node: int) -> None:
    """ZeRO-1 is Megatron's distributed optimizer; ZeRO-2/3 and HSDP map to Megatron-FSDP with its
    documented required flags."""
    sharding = layout.sharding
    if sharding == "zero1":
        out.add("--use-distributed-optimizer")
        out.add("--overlap-grad-reduce")
        out.add("--overlap-param-gather")
    elif sharding in _FSDP_SHARDING:
        out.add("--use-megatron-fsdp")
        out.add(
            "--data-parallel-sharding-strategy",
            "optim_grads" if sharding == "zero2" else "optim_grads_params",
        )
        if sharding == "hsdp":
            out.add("--num-distributed-optimizer-instances", _hsdp_instances(layout, gpus_per_node))
            out.add("--outer-dp-sharding-strategy", "no_shard")
        out.add("--use-distributed-optimizer")
        out.add("--no-gradient-accumulation-fusion")
        out.add("--ckpt-format", "fsdp_dtensor")
    elif sharding != "none":
        out.comments.append(
            f"sharding {sharding!r} has no Megatron-LM equivalent here; choose optimizer sharding yourself"
        )


def _precision_args(out: _Args, precision: str, layers: int) -> None:
    """The recipe's Transformer Engine flags (engine/training/precision.py ``megatron_args``: --fp8-format and
    --fp8-recipe, or --fp4-format and --fp4-recipe, megatron/core/transformer/transformer_config.py at
    d98e8a64) on BF16 weights; NVFP4 keeps its BF16 layers first and last (``precision.bf16_layers``)."""
    recipe = PRECISION_RECIPES.get(precision)
    if recipe is not None:
        out.add("--bf16")
        for flag, value in recipe.megatron_args:
            out.add(flag, value or None)
        if recipe.bf16_layer_fraction:
            start, end = bf16_layers(recipe, layers)
            out.add("--num-layers-at-start-in-bf16", start)
            out.add("--num-layers-at-end-in-bf16", end)
    elif precision == "fp4":
        out.add("--bf16")
        out.add("--fp4-format", "e2m1")
    elif precision == "tf32":
        out.comments.append("tf32: fp32 weights with TF32 matmuls (Megatron's default without --bf16/--fp16)")


_PLACEHOLDER_ARGS = (
    ("--lr", "3.0e-4"),
    ("--min-lr", "3.0e-5"),
    ("--lr-decay-style", "cosine"),
    ("--lr-warmup-fraction", "0.01"),
    ("--weight-decay", "0.1"),
    ("--clip-grad", "1.0"),
    ("--adam-beta1", "0.9"),
    ("--adam-beta2", "0.95"),
    ("--log-interval", "10"),
    ("--save", "${CHECKPOINT_DIR:-/checkpoints}"),
    ("--save-interval", "1000"),
)
_FSDP_SHARDING = ("zero2", "zero3", "hsdp")


def _data_and_placeholder_args(out: _Args, shape: Mapping[str, Any]) -> None:
    out.add("--tokenizer-type", "NullTokenizer")
    out.add("--vocab-size", shape["vocab"])
    out.add("--mock-data")
    out.comments.append(
        "--mock-data with NullTokenizer measures throughput; replace with --data-path and your tokenizer"
    )
    for flag, value in _PLACEHOLDER_ARGS:
        out.add(flag, value)
    out.comments.append(
        "learning-rate, logging and checkpoint flags are placeholders, not part of the design"
    )


def _queues_setting(sharding: str) -> NcclSetting:
    """CUDA_DEVICE_MAX_CONNECTIONS for a Megatron launch: 1 so TP/SP communication is ordered before compute,
    unset under Megatron-FSDP, which overlaps its all-gathers on several CUDA queues."""
    if sharding in _FSDP_SHARDING:
        return NcclSetting(
            "CUDA_DEVICE_MAX_CONNECTIONS",
            None,
            "left unset: Megatron-FSDP overlaps its all-gathers on several CUDA queues",
        )
    return NcclSetting(
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "1",
        "Megatron needs one hardware queue so TP/SP communication is ordered before compute",
    )


def launch_plan(
    *, evaluation: DesignEvaluation | Mapping[str, Any], fabric_kind: str | None = None
) -> LaunchPlan:
    """Build the Megatron-LM argument list for the evaluation's layout, model and precision.

    Checks what Megatron would reject at start-up: tp·pp·dp·cp must equal nodes × GPUs per node; the global
    batch (sequences) must divide by micro_batch × dp; with vpp > 1 the layers (or the layers + 2, with
    the embedding and the loss counted as layers) must split evenly into pp × vpp chunks. Raises ValueError
    with the reason. ``fabric_kind`` is the kind of the catalog row of the design's fabric, which the caller
    reads (``selectors.evaluation_fabric_kind``; this module touches no database); without it the kind is
    inferred from the fabric's slug.
    """
    evaluation = selectors.evaluation_read(result=evaluation)
    layout = chosen_layout(evaluation)
    nodes, gpn = _cluster_size(evaluation, layout)
    stack = _stack(evaluation)
    fabric_slug = _cluster(evaluation).fabric
    kind = fabric_kind_of(evaluation, fabric_kind)
    if stack.launch not in _STACK_PARTS:
        raise ValueError(f"no launch export for {stack.name} yet")
    parts = _STACK_PARTS[stack.launch](evaluation, layout, gpn)
    env = (*nccl_settings(fabric_kind=kind, fabric_slug=fabric_slug), *parts.env)
    return LaunchPlan(
        nodes=nodes,
        gpus_per_node=gpn,
        megatron_args=tuple(parts.args),
        comments=tuple(parts.comments),
        env=env,
        fabric_kind=kind,
        fabric_slug=fabric_slug,
        accelerator=_training(evaluation).summary.cluster.accelerator,
        name=evaluation.design.name if evaluation.design and evaluation.design.name else "design",
        script=parts.script,
        files=parts.files,
        launcher=parts.launcher,
    )


def _stack(evaluation: DesignEvaluation) -> FrameworkProfile:
    """The framework profile of the evaluation's spec (training.framework; Megatron-Core when absent)."""
    return FRAMEWORK_PROFILES[_spec(evaluation).training.framework or DEFAULT_FRAMEWORK]


@dataclass(frozen=True)
class _StackParts:
    """What one training stack adds to a launch: its arguments and comments, environment beyond NCCL's, the
    script torchrun runs, the files written first, and the launcher of the single-node command."""

    args: list[str]
    comments: list[str]
    script: str
    env: tuple[NcclSetting, ...] = ()
    files: tuple[tuple[str, str], ...] = ()
    launcher: str = "torchrun"


def _megatron_parts(evaluation: DesignEvaluation, layout: Layout, gpn: int) -> _StackParts:
    args, comments = _megatron_args(evaluation, layout, gpn)
    return _StackParts(args, comments, _quote(PRETRAIN_SCRIPT), (_queues_setting(layout.sharding),))


def _torchtitan_parts(evaluation: DesignEvaluation, layout: Layout, gpn: int) -> _StackParts:
    args, comments = torchtitan_args(
        layout=layout,
        gpus_per_node=gpn,
        global_batch_seqs=_global_batch_seqs(evaluation),
        seq_len=int(model_shape(evaluation)["seq_len"]),
        tokens=_train_tokens(evaluation),
        precision=_precision(evaluation),
    )
    env = tuple(NcclSetting(k, v, "as torchtitan's run_train.sh sets it") for k, v in stack_env().items())
    return _StackParts(args, comments, f"-m {TORCHTITAN_MODULE}", env)


def _deepspeed_parts(evaluation: DesignEvaluation, layout: Layout, gpn: int) -> _StackParts:
    args, comments = megatron_deepspeed_args(
        layout=layout,
        shape=model_shape(evaluation),
        global_batch_seqs=_global_batch_seqs(evaluation),
        tokens=_train_tokens(evaluation),
    )
    files = ((DS_CONFIG_FILE, launch_ds_config(evaluation=evaluation)),)
    return _StackParts(args, comments, _quote(MEGATRON_DEEPSPEED_SCRIPT), files=files, launcher="deepspeed")


def _automodel_parts(evaluation: DesignEvaluation, layout: Layout, gpn: int) -> _StackParts:
    files = ((RECIPE_FILE, launch_automodel_recipe(evaluation=evaluation)),)
    comments = [f"NeMo AutoModel: {RECIPE_FILE} below is the recipe (layout, batch, length of the estimate)"]
    return _StackParts(["--config", RECIPE_FILE], comments, _quote(AUTOMODEL_SCRIPT), files=files)


_STACK_PARTS = {
    "megatron": _megatron_parts,
    "torchtitan": _torchtitan_parts,
    "deepspeed": _deepspeed_parts,
    "automodel": _automodel_parts,
}


def _stack_check(evaluation: DesignEvaluation, launch: str, what: str) -> Layout:
    """The chosen layout, after checking that the design's stack is the one ``what`` is for."""
    stack = _stack(evaluation)
    if stack.launch != launch:
        wanted = next(p.name for p in FRAMEWORK_PROFILES.values() if p.launch == launch)
        raise ValueError(
            f"{what} is for {wanted} designs; this design's framework is {stack.name} "
            "(spec.workload.training.framework): use the torchrun, sbatch or volcano export"
        )
    return chosen_layout(evaluation)


def launch_ds_config(
    *, evaluation: DesignEvaluation | Mapping[str, Any], fabric_kind: str | None = None
) -> str:
    """DeepSpeed's ds_config.json for a DeepSpeed ZeRO (2021) design's layout (launch_deepspeed.ds_config)."""
    evaluation = selectors.evaluation_read(result=evaluation)
    layout = _stack_check(evaluation, "deepspeed", "the ds_config export")
    return ds_config_json(
        layout=layout, global_batch_seqs=_global_batch_seqs(evaluation), precision=_precision(evaluation)
    )


def launch_automodel_recipe(
    *, evaluation: DesignEvaluation | Mapping[str, Any], fabric_kind: str | None = None
) -> str:
    """AutoModel's recipe YAML for a NeMo AutoModel design's layout (launch_automodel.automodel_recipe)."""
    evaluation = selectors.evaluation_read(result=evaluation)
    layout = _stack_check(evaluation, "automodel", "the automodel recipe export")
    return automodel_recipe(
        layout=layout,
        gpus_per_node=_training(evaluation).summary.cluster.gpus_per_node,
        global_batch_seqs=_global_batch_seqs(evaluation),
        shape=model_shape(evaluation),
        tokens=_train_tokens(evaluation),
        precision=_precision(evaluation),
    )


def _megatron_args(evaluation: DesignEvaluation, layout: Layout, gpn: int) -> tuple[list[str], list[str]]:
    """Megatron-LM's pretrain_gpt.py arguments and the comments that go with them."""
    out = _Args()
    _parallel_args(out, layout, _spec(evaluation).training.etp)
    shape = model_shape(evaluation)
    _model_args(out, layout, shape, _pipeline_layout(evaluation, shape))
    _batch_args(out, layout, evaluation, int(shape["seq_len"]))
    _memory_lever_args(out, evaluation, layout.recompute)
    if shape["experts"]:
        _moe_exchange_args(out, _spec(evaluation).training, _stack(evaluation), layout.ep)
    _sharding_args(out, layout, gpn)
    _precision_args(out, _precision(evaluation), int(shape["layers"]))
    if _spec(evaluation).training.optimizer == "muon":
        # Megatron-LM's Muon (arguments.py at d98e8a64): AdamW on embeddings, biases and norms; five
        # Newton-Schulz steps; every TP rank orthogonalises the whole matrix (the engine's assumptions).
        out.add("--optimizer", "muon")
        out.add("--muon-num-ns-steps", 5)
        out.add("--muon-tp-mode", "duplicated")
    _data_and_placeholder_args(out, shape)
    return out.args, out.comments


# ---- rendering -------------------------------------------------------------------------------------------
def _quote(token: str) -> str:
    # ${VAR:-default} placeholders must stay expandable; everything else is quoted for the shell.
    if token.startswith("${") and re.fullmatch(r"\$\{[A-Z_]+(:-[^}'\"\s]*)?\}(/[\w./-]*)?", token):
        return f'"{token}"'
    return shlex.quote(token)


def _job_name(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return (slug or "design")[:50].rstrip("-") or "design"


def _args_lines(args: tuple[str, ...], indent: str) -> list[str]:
    """Megatron arguments one flag (with its value) per continuation line."""
    lines: list[str] = []
    for token in args:
        if token.startswith("--") or not lines:
            lines.append(_quote(token))
        else:
            lines[-1] += " " + _quote(token)
    return [f"{indent}{line}" for line in lines]


def _continued(lines: list[str]) -> str:
    return " \\\n".join(lines)


def _env_lines(env: tuple[NcclSetting, ...]) -> list[str]:
    out = []
    for s in env:
        if s.value is None:
            out.append(f"# {s.name} not set: {s.why}")
        else:
            out.append(f"export {s.name}={shlex.quote(s.value)}  # {s.why}")
    return out


def _count(n: int, noun: str) -> str:
    """``1 node``, ``2 nodes``: the header a reader copies into a ticket reads as English."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _header(plan: LaunchPlan, evaluation: DesignEvaluation) -> list[str]:
    chosen = _training(evaluation).chosen
    lines = [
        f"ClusterDesigner launch for {plan.name!r}: {_count(plan.nodes, 'node')} x {plan.gpus_per_node} GPUs "
        f"({plan.accelerator}), fabric {plan.fabric_slug} ({plan.fabric_kind})",
        f"layout: {layout_summary(chosen_layout(evaluation))}",
    ]
    lines.append(
        f"estimated time to train: {chosen.time_to_train_days:.1f} days; "
        f"step time {_num(chosen.step_time_s.total)} s"
    )
    return lines + list(plan.comments)


def _num(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else "?"


def _file_lines(files: tuple[tuple[str, str], ...]) -> list[str]:
    """Shell here-documents writing ``files`` (quoted delimiter: their text is not expanded)."""
    lines: list[str] = []
    for name, text in files:
        lines += [f"cat > {shlex.quote(name)} <<'{_EOF}'", *text.rstrip("\n").split("\n"), _EOF, ""]
    return lines


_EOF = "CLUSTERDESIGNER_EOF"


def launch_torchrun(
    *, evaluation: DesignEvaluation | Mapping[str, Any], fabric_kind: str | None = None
) -> str:
    """A shell snippet: the NCCL exports for the fabric, the files the stack reads, and the command for one
    node: ``torchrun``, run on every node with NODE_RANK (0 … nodes-1) and MASTER_ADDR (node 0's address)
    set; for a DeepSpeed design the ``deepspeed`` launcher, run on the first node, which starts every node's
    ranks from the hostfile."""
    evaluation = selectors.evaluation_read(result=evaluation)
    plan = launch_plan(evaluation=evaluation, fabric_kind=fabric_kind)
    head = [f"# {line}" for line in _header(plan, evaluation)]
    files = plan.files
    if plan.launcher == "deepspeed":
        # The deepspeed launcher starts the other nodes' ranks over ssh: only what .deepspeed_env lists (and a
        # few prefixes) reaches them, so the exports above are written there too.
        exported = {s.name: s.value for s in plan.env if s.value is not None}
        files = (*files, (".deepspeed_env", deepspeed_env_file(exported)))
        head.append(
            f"# Run on the first node only, with HOSTFILE listing the {plan.nodes} nodes ('<host> "
            f"slots={plan.gpus_per_node}' a line) and password-less ssh between them; .deepspeed_env carries "
            "the exports to every node."
        )
        launcher = [
            "deepspeed",
            f"  --num_nodes={plan.nodes}",
            f"  --num_gpus={plan.gpus_per_node}",
            '  --hostfile="${HOSTFILE:-hostfile}"',
            '  --master_addr="${MASTER_ADDR:-localhost}"',
            f'  --master_port="${{MASTER_PORT:-{MASTER_PORT}}}"',
        ]
    else:
        head.append("# Run on every node with NODE_RANK=0..N-1 and MASTER_ADDR=<node 0> set.")
        launcher = [
            "torchrun",
            f"  --nnodes={plan.nodes}",
            f"  --nproc-per-node={plan.gpus_per_node}",
            '  --node-rank="${NODE_RANK:-0}"',
            '  --master-addr="${MASTER_ADDR:-localhost}"',
            f'  --master-port="${{MASTER_PORT:-{MASTER_PORT}}}"',
        ]
    launcher += [f"  {plan.script}", *_args_lines(plan.megatron_args, "    ")]
    body = [*head, *_env_lines(plan.env), "", *_file_lines(files), _continued(launcher)]
    return "\n".join(body) + "\n"


def launch_sbatch(*, evaluation: DesignEvaluation | Mapping[str, Any], fabric_kind: str | None = None) -> str:
    """A Slurm batch script: one task per node, all GPUs of each node, exclusive nodes, ``srun torchrun`` with
    c10d rendezvous on the first node of the allocation."""
    evaluation = selectors.evaluation_read(result=evaluation)
    plan = launch_plan(evaluation=evaluation, fabric_kind=fabric_kind)
    days = _training(evaluation).chosen.time_to_train_days
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={_job_name(plan.name)}",
        f"#SBATCH --nodes={plan.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={plan.gpus_per_node}",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
    ]
    if isinstance(days, (int, float)):
        lines.append(
            f"# add #SBATCH --time=... within your partition's limit; the run takes about {days:.1f} days, "
            "so plan on resuming from checkpoints"
        )
    lines += [f"# {line}" for line in _header(plan, evaluation)]
    lines += ["", "set -euo pipefail", "", *_env_lines(plan.env), ""]
    if plan.files:
        lines += ["# Written once, on the first node: the nodes share this directory."]
        lines += _file_lines(plan.files)
    lines += [
        "# The first node of the allocation hosts the rendezvous.",
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        f"MASTER_PORT={MASTER_PORT}",
        "export MASTER_ADDR MASTER_PORT",
        "",
    ]
    launcher = [
        "srun --kill-on-bad-exit=1 --ntasks-per-node=1 torchrun",
        '  --nnodes="$SLURM_JOB_NUM_NODES"',
        f"  --nproc-per-node={plan.gpus_per_node}",
        '  --rdzv-id="$SLURM_JOB_ID"',
        "  --rdzv-backend=c10d",
        '  --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT"',
        f"  {plan.script}",
        *_args_lines(plan.megatron_args, "    "),
    ]
    return "\n".join([*lines, _continued(launcher)]) + "\n"


def _y(value: Any) -> str:
    """A YAML scalar: JSON strings and numbers are valid YAML flow scalars."""
    return json.dumps(value)


def _volcano_resources(plan: LaunchPlan) -> list[tuple[str, Any, str]]:
    """The container's device limits: every GPU of the node, and the fabric's RDMA or EFA devices."""
    resources: list[tuple[str, Any, str]] = [("nvidia.com/gpu", plan.gpus_per_node, "every GPU of the node")]
    if plan.fabric_kind in ("infiniband", "roce"):
        resources.append(
            (RDMA_RESOURCE, 1, "RDMA verbs devices from the network operator's shared device plugin")
        )
    elif plan.fabric_kind == "efa":
        count = EFA_DEVICES_BY_ACCELERATOR.get(plan.accelerator, plan.gpus_per_node)
        resources.append(
            (EFA_RESOURCE, count, "all EFA interfaces of the instance (aws-efa-k8s-device-plugin)")
        )
    return resources


def _volcano_script(plan: LaunchPlan) -> list[str]:
    """The pod's bash script: the plan's comments and torchrun with the Volcano pytorch plugin's variables."""
    return [
        "set -euo pipefail",
        *[f"# {line}" for line in plan.comments],
        *_file_lines(plan.files),
        _continued(
            [
                "torchrun",
                f"  --nnodes={plan.nodes}",
                f"  --nproc-per-node={plan.gpus_per_node}",
                '  --node-rank="${RANK}"',
                '  --master-addr="${MASTER_ADDR}"',
                '  --master-port="${MASTER_PORT}"',
                f"  {plan.script}",
                *_args_lines(plan.megatron_args, "    "),
            ]
        ),
    ]


def _volcano_container(plan: LaunchPlan, i: str) -> list[str]:
    """The megatron container at indent ``i``: image, script, NCCL environment, device limits, IPC lock."""
    out = [
        f"{i}    containers:",
        f"{i}      - name: megatron",
        f"{i}        image: {_y(IMAGE)}  # any image with PyTorch, Transformer Engine and Megatron-LM",
        f'{i}        command: ["/bin/bash", "-c"]',
        f"{i}        args:",
        f"{i}          - |",
        *[f"{i}            {line}" for block in _volcano_script(plan) for line in block.split("\n")],
        f"{i}        env:",
    ]
    for s in plan.env:
        if s.value is None:
            out.append(f"{i}          # {s.name} not set: {s.why}")
        else:
            out += [f"{i}          - name: {s.name}  # {s.why}", f"{i}            value: {_y(s.value)}"]
    out += [f"{i}        resources:", f"{i}          limits:"]
    out += [f"{i}            {key}: {val}  # {why}" for key, val, why in _volcano_resources(plan)]
    return out + [
        f"{i}        securityContext:",
        f"{i}          capabilities:",
        f'{i}            add: ["IPC_LOCK"]  # RDMA pins (locks) its buffers in memory',
        f"{i}        volumeMounts:",
        f"{i}          - name: dshm",
        f"{i}            mountPath: /dev/shm",
    ]


def _volcano_pod(plan: LaunchPlan, i: str) -> list[str]:
    """A task's pod template at indent ``i``: one pod per node, never restarted alone, with /dev/shm in
    memory."""
    out = [
        f"{i}template:",
        f"{i}  spec:",
        f"{i}    restartPolicy: Never  # the job policies below restart the whole gang",
    ]
    if plan.fabric_kind == "ethernet":
        out.append(f"{i}    hostNetwork: true  # TCP collectives: skip the CNI overlay")
    return out + [
        *_volcano_container(plan, i),
        f"{i}    volumes:",
        f"{i}      - name: dshm",
        f"{i}        emptyDir:",
        f"{i}          medium: Memory  # NCCL and data loaders outgrow the default 64 MiB /dev/shm",
    ]


def launch_volcano(
    *, evaluation: DesignEvaluation | Mapping[str, Any], fabric_kind: str | None = None
) -> str:
    """A Volcano ``batch.volcano.sh/v1alpha1`` Job: gang-scheduled (minAvailable = nodes), one pod per node
    (a master task and nodes-1 workers), all GPUs of the node, the RDMA/EFA devices of the fabric, the NCCL
    environment with the reason for each variable, and the torchrun command with the Volcano pytorch
    plugin's MASTER_ADDR / MASTER_PORT / RANK."""
    evaluation = selectors.evaluation_read(result=evaluation)
    plan = launch_plan(evaluation=evaluation, fabric_kind=fabric_kind)
    lines = [f"# {line}" for line in _header(plan, evaluation)]
    lines += [
        "apiVersion: batch.volcano.sh/v1alpha1",
        "kind: Job",
        "metadata:",
        f"  name: {_y(_job_name(plan.name))}",
        "spec:",
        "  schedulerName: volcano",
        f"  minAvailable: {plan.nodes}  # gang scheduling: every node starts or none does",
        "  queue: default",
        "  maxRetry: 3",
        "  plugins:",
        f'    pytorch: ["--master=master", "--worker=worker", "--port={VOLCANO_PORT}"]',
        "  policies:",
        "    - event: PodEvicted",
        "      action: RestartJob",
        "    - event: PodFailed",
        "      action: RestartJob",
        "  tasks:",
        "    - name: master",
        "      replicas: 1",
        "      policies:",
        "        - event: TaskCompleted",
        "          action: CompleteJob",
        *_volcano_pod(plan, "      "),
    ]
    if plan.nodes > 1:
        lines += ["    - name: worker", f"      replicas: {plan.nodes - 1}", *_volcano_pod(plan, "      ")]
    return "\n".join(lines) + "\n"


__all__ = [
    "LaunchPlan",
    "launch_automodel_recipe",
    "launch_ds_config",
    "NcclSetting",
    "chosen_layout",
    "fabric_kind_of",
    "launch_plan",
    "launch_sbatch",
    "launch_torchrun",
    "launch_volcano",
    "layout_summary",
    "model_shape",
    "nccl_env",
    "nccl_settings",
]
