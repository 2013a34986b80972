"""What the training engine returns: frozen dataclasses whose ``to_json()`` is the response ``estimate``
has always given (and every stored evaluation holds under ``training``), and whose ``from_json()`` reads
that JSON back. Pages, launch scripts and analyses read attributes of these instead of ``.get()`` chains.

Units are in the names: GiB per GPU, seconds per step, TFLOP/s per GPU, days. How each figure is computed is
documented where it is computed (``training._rows``, ``memory.memory_parts``, ``timing.step_time_parts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clusterdesigner.engine.core.json_object import JsonObject, omit


@dataclass(frozen=True)
class Layout(JsonObject):
    """One parallel layout: the response's ``parallelism`` object (``workload.layout_row``)."""

    tp: int
    pp: int
    dp: int
    cp: int
    ep: int
    vpp: int
    micro_batch: int
    recompute: str
    sharding: str
    sequence_parallel: bool


@dataclass(frozen=True)
class MemoryPerGpu(JsonObject):
    """GiB per GPU on the heaviest pipeline stage, by part (``memory.memory_parts``), rounded to 3 places.
    A part an older engine did not model reads back as 0."""

    total: float
    weights: float = 0.0
    gradients: float = 0.0
    optimizer: float = 0.0
    fsdp_buffers: float = 0.0
    activations: float = 0.0
    logits: float = 0.0
    framework_reserve: float = 0.0


@dataclass(frozen=True)
class StepTime(JsonObject):
    """Seconds per optimizer step, by part (``timing.step_time_parts``); ``total`` is not their plain sum
    (overlapped communication counts only where exposed)."""

    total: float
    compute: float = 0.0
    recompute: float = 0.0
    tp_comm: float = 0.0
    cp_comm: float = 0.0
    moe_all_to_all: float = 0.0
    pp_p2p: float = 0.0
    pp_bubble: float = 0.0
    dp_comm_exposed: float = 0.0
    fsdp_comm_exposed: float = 0.0
    optimizer: float = 0.0
    # The wait for the slowest of the step's ranks (timing.STRAGGLER_CV).
    straggler: float = 0.0
    # Exposed host-link copies of activation offload (layers or modules); absent when nothing is offloaded.
    activation_offload: float | None = field(default=None, metadata={"omit": True})

    def parts(self) -> dict[str, float]:
        """Every part but ``total``, by name."""
        return {name: value for name, value in self.to_json().items() if name != "total"}


@dataclass(frozen=True)
class ErrorBand(JsonObject):
    """The range an estimate's tokens/s and failure-free days may take (engine/training/error_band.py): the
    point estimate divided by (1 + p90) … (1 + p10) of the calibration residuals of ``basis``, the table key
    its ``regime`` (family/precision/kind/scale) falls back to, which rests on ``rows`` measured runs."""

    regime: str
    basis: str
    rows: int
    tokens_per_second_low: float
    tokens_per_second_high: float
    days_low: float
    days_high: float


@dataclass(frozen=True)
class RunSettings(JsonObject):
    """The run settings a layout search chose (search_settings.SEARCHED_SETTINGS): only those it searched,
    the others absent (the request's or the stack's value holds)."""

    tp_comm_overlap: bool | None = omit()
    fsdp_overlap: bool | None = omit()
    optimizer_offload: bool | None = omit()
    activation_offload_layers: int | None = omit()


@dataclass(frozen=True)
class LayoutEstimate(JsonObject):
    """One layout's figures (``training._rows``): memory, step time, throughput, MFU and days to train, with
    the error band of the throughput and days (None in results stored before the band existed)."""

    parallelism: Layout
    fits: bool
    memory_per_gpu_gib: MemoryPerGpu
    memory_capacity_gib: float
    headroom_gib: float
    step_time_s: StepTime
    model_tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    tokens_per_second: float
    time_to_train_days: float
    error_band: ErrorBand | None = None
    # The run settings a search chose for this layout (search_settings.py); absent when it chose none.
    settings: RunSettings | None = omit()


@dataclass(frozen=True)
class ModelSummary(JsonObject):
    """The model as the engine resolved it (preset plus overrides)."""

    name: str | None
    slug: str | None
    params: int
    active_params: int
    layers: int
    hidden: int
    ffn_hidden: int
    heads: int
    kv_heads: int
    vocab: int
    seq_len: int
    gated_mlp: bool
    dropout: bool
    experts: int
    top_k: int
    model_flops_per_token: float


@dataclass(frozen=True)
class TrainingSummary(JsonObject):
    """The training setup the engine used; ``global_batch_tokens`` = global_batch_seqs · seq_len."""

    tokens: float
    global_batch_seqs: int
    global_batch_tokens: int
    precision: str
    grad_bytes: float
    flash_attention: bool
    pipeline_split: str
    cross_entropy: str
    fsdp_collectives_per_layer: int
    fsdp_overlap: bool
    memory_headroom: float = 0.0


@dataclass(frozen=True)
class ClusterSummary(JsonObject):
    """The cluster the engine used; ``peak_tflops`` is the accelerator's dense peak at the precision."""

    accelerator: str
    fabric: str
    gpus: int
    gpus_per_node: int
    nodes: int
    peak_tflops: float
    oversubscription: float
    scaleout_gbps_per_gpu: float


@dataclass(frozen=True)
class Summary(JsonObject):
    model: ModelSummary
    training: TrainingSummary
    cluster: ClusterSummary


@dataclass(frozen=True)
class AssumptionUsed(JsonObject):
    """A constant the estimate used, with its unit and source (``workload.Assumption``)."""

    name: str
    value: float
    unit: str
    source: str


@dataclass(frozen=True)
class SearchCounts:
    """How a layout search went: layouts evaluated, structurally valid, fitting in memory, and how many
    were rejected for each reason (most frequent first)."""

    layouts_evaluated: int
    layouts_valid: int
    layouts_feasible: int
    rejected: Mapping[str, int]


@dataclass(frozen=True)
class TrainingEstimate:
    """The training engine's response. ``chosen`` is the given layout (mode "evaluate") or the best one
    found (mode "search"); its figures sit at the top level of the JSON, as they always have. A search
    adds ``candidates`` (best first, ``chosen`` among them) and ``search`` counts, and ``ties``: the
    indices into ``candidates`` of those whose tokens/s lies within the best one's error band (the engine
    cannot tell them apart), most robust first (``training.robustness``)."""

    mode: str
    chosen: LayoutEstimate
    warnings: tuple[str, ...]
    summary: Summary
    assumptions: tuple[AssumptionUsed, ...]
    candidates: tuple[LayoutEstimate, ...] = ()
    search: SearchCounts | None = None
    ties: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, **self.chosen.to_json()}
        if self.search is not None:
            out["candidates"] = [c.to_json() for c in self.candidates]
            out["layouts_evaluated"] = self.search.layouts_evaluated
            out["layouts_valid"] = self.search.layouts_valid
            out["layouts_feasible"] = self.search.layouts_feasible
            out["rejected"] = dict(self.search.rejected)
            out["ties"] = list(self.ties)
        out["warnings"] = list(self.warnings)
        out["summary"] = self.summary.to_json()
        out["assumptions"] = [a.to_json() for a in self.assumptions]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainingEstimate:
        search = None
        if data.get("mode") == "search":
            search = SearchCounts(
                layouts_evaluated=int(data["layouts_evaluated"]),
                layouts_valid=int(data.get("layouts_valid", 0)),
                layouts_feasible=int(data.get("layouts_feasible", 0)),
                rejected=dict(data.get("rejected") or {}),
            )
        return cls(
            mode=str(data["mode"]),
            chosen=LayoutEstimate.from_json(data),
            warnings=tuple(data.get("warnings") or ()),
            summary=Summary.from_json(data["summary"]),
            assumptions=tuple(AssumptionUsed.from_json(a) for a in data.get("assumptions") or ()),
            candidates=tuple(LayoutEstimate.from_json(c) for c in data.get("candidates") or ()),
            search=search,
            ties=tuple(int(i) for i in data.get("ties") or ()),
        )
