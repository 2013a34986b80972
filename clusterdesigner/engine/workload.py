"""The training engine's inputs other than the model: the training setup, the cluster and a batch of
parallel layouts held as numpy arrays (one element per layout), plus the documented constants.

Layout arrays let one set of formulas (``memory.py``, ``timing.py``) serve both a single estimate (arrays
of length 1) and the vectorised search (arrays of thousands of layouts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from clusterdesigner.engine.errors import InputError
from clusterdesigner.engine.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.model import ModelShape

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
    (Megatron-Core's NCCL all-to-all: one copy per routed expert) or ``deepep`` (DeepEP through
    Megatron-Core's flex dispatcher: one copy per destination scale-up domain over the fabric, forwarded
    over NVLink); ``moe_max_domains_per_token`` > 0 is node-limited routing (DeepSeek-V3's M = 4: each
    token's experts lie in at most that many scale-up domains); ``moe_fp8_dispatch`` sends the forward
    dispatch and the backward combine in FP8; ``moe_a2a_overlap`` hides the all-to-alls under another
    micro-batch's compute (Megatron-Core's --overlap-moe-expert-parallel-comm);
    ``moe_shared_expert_overlap`` under the shared experts' GEMMs (--moe-shared-expert-overlap)."""

    tokens: float
    global_batch_seqs: int
    precision: str = "bf16"
    grad_bytes: float = 2.0
    optimizer_bytes: float = 12.0
    framework_reserve_gib: float = 2.5
    flash_attention: bool = True
    tp_comm_overlap: bool = True
    pipeline_split: str = "balanced"
    cross_entropy: str = "fp32"
    fsdp_collectives_per_layer: int = 1
    fsdp_overlap: bool = True
    moe_dispatcher: str = "alltoall"
    moe_max_domains_per_token: int = 0
    moe_fp8_dispatch: bool = False
    moe_a2a_overlap: bool = False
    moe_shared_expert_overlap: bool = False
    # Fraction of accelerator memory a searched layout leaves free (``search._memory_fits``); requests get
    # error_band.MEMORY_HEADROOM unless they set ``training.memory_headroom``.
    memory_headroom: float = 0.0


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
                field="cluster.gpus_per_node",
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
class Problem:
    """Model + training + cluster: everything fixed while layouts vary."""

    model: ModelShape
    training: Training
    cluster: Cluster


def layouts(**columns: Any) -> dict[str, IntArray]:
    """A batch of layouts from equal-length columns (scalars broadcast). Keys: LAYOUT_FIELDS, with
    recompute and sharding as indices into RECOMPUTE_MODES and SHARDING_MODES."""
    arrays = {k: np.atleast_1d(np.asarray(columns[k], dtype=np.int64)) for k in LAYOUT_FIELDS}
    n = max(a.size for a in arrays.values())
    return {k: np.broadcast_to(a, (n,)) if a.size != n else a for k, a in arrays.items()}


def layout_row(lay: Mapping[str, IntArray], i: int) -> dict[str, Any]:
    """One layout as the response's ``parallelism`` object."""
    from clusterdesigner.engine.model import RECOMPUTE_MODES

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
