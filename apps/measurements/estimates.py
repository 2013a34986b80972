"""A measured run as the training engine sees it: the request a design with the same model, cluster and layout
would build (clusterdesigner.engine.design.spec), the engine's estimate of it, and the run against that
estimate.

Errors name the run's own fields (``nodes``, ``tp``, ``global_batch``, ``model.layers``), translated from
the spec paths the design parser and the engine name (``spec.cluster.nodes``, ``spec.parallelism.tp``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.user_calibration import MeasuredPoint
from clusterdesigner.engine.training.workload import LAYOUT_FIELDS
from clusterdesigner.errors import InvalidInput

# The run's tokens to train are not measured: step time, tokens/s and the band do not depend on them.
TOKENS = 1e12
CLUSTER_FIELDS = ("accelerator", "nodes", "gpus_per_node", "fabric")
# Spec paths (as the design parser and the engine name them) to the run's fields, longest head first.
RUN_PATHS = (
    ("spec.workload.model.seq_len", "seq_len"),
    ("spec.workload.model", "model"),
    ("spec.workload.training.global_batch_seqs", "global_batch"),
    ("spec.workload.training.precision", "precision"),
    ("spec.workload.training.framework", "framework"),
    ("spec.workload.training", "global_batch"),
    ("spec.workload", "model"),
    ("spec.cluster", ""),
    ("spec.parallelism", ""),
    ("spec", "non_field_errors"),
)


def run_field(path: str) -> str:
    """A spec path as the run's field: ``spec.cluster.nodes`` → ``nodes``, ``spec.workload.model.layers`` →
    ``model.layers``, ``spec.parallelism`` (the layout as a whole) → ``tp``."""
    for head, field in RUN_PATHS:
        if path == head or path.startswith(f"{head}."):
            rest = path[len(head) :].lstrip(".")
            if field == "non_field_errors" and rest:
                return rest
            return f"{field}.{rest}" if field and rest else field or rest or "tp"
    return path


def run_spec(data: Mapping[str, Any]) -> dict[str, Any]:
    """The design spec a run is: its model with its sequence length, its batch, precision and framework, its
    cluster and its whole layout (so the engine evaluates that layout; it never searches)."""
    model = data.get("model")
    model = {**model, "seq_len": data.get("seq_len")} if isinstance(model, Mapping) else model
    train: dict[str, Any] = {
        "tokens": TOKENS,
        "global_batch_seqs": data.get("global_batch"),
        "precision": data.get("precision") or "bf16",
    }
    if data.get("framework"):
        train["framework"] = data["framework"]
    return {
        "workload": {"model": model, "training": train},
        "cluster": {k: data.get(k) for k in CLUSTER_FIELDS if data.get(k) is not None},
        "parallelism": {k: data[k] for k in LAYOUT_FIELDS if data.get(k) is not None},
    }


def run_estimate(data: Mapping[str, Any], catalog: CatalogSpecs) -> dict[str, Any]:
    """The training engine's estimate of the run's layout (``training.estimate``, as a design's), or
    InvalidInput naming the run's field the design parser or the engine refused."""
    try:
        clean = design_spec.parse_design_spec(design_spec.with_defaults(run_spec(data))).json
    except design_spec.SpecError as exc:
        raise InvalidInput({run_field(path): messages for path, messages in exc.fields().items()}) from exc
    try:
        parsed = training.parse_request(
            design_spec.training_request(clean),
            where=design_spec.training_sections(),
            **catalog.training_kwargs(),
        )
        return training.estimate_problem(parsed).to_json()
    except EngineError as exc:
        raise InvalidInput({run_field(exc.field): [exc.message]}) from exc


@dataclass(frozen=True, kw_only=True)
class RunComparison:
    """A measured run against the engine: the estimated and measured step time and tokens/s, the signed
    error on the rate (estimated / measured − 1, the published bands' residual: positive when the engine
    promises more than was measured), the band's tokens/s and whether the measured rate lies inside it."""

    regime: str
    estimated_step_s: float
    measured_step_s: float
    estimated_tokens_per_s: float
    measured_tokens_per_s: float
    error: float
    band_low_tokens_per_s: float
    band_high_tokens_per_s: float
    band_basis: str
    inside_band: bool
    estimated_memory_gib: float

    @property
    def point(self) -> MeasuredPoint:
        return MeasuredPoint(
            regime=self.regime, estimated_step_s=self.estimated_step_s, measured_step_s=self.measured_step_s
        )


def compare(estimate: Mapping[str, Any], *, measured_step_s: float, tokens_per_step: int) -> RunComparison:
    """The run's measured step time against the engine's estimate of it."""
    band = estimate["error_band"]
    measured_tps = tokens_per_step / measured_step_s
    low, high = float(band["tokens_per_second_low"]), float(band["tokens_per_second_high"])
    return RunComparison(
        regime=str(band["regime"]),
        estimated_step_s=float(estimate["step_time_s"]["total"]),
        measured_step_s=measured_step_s,
        estimated_tokens_per_s=float(estimate["tokens_per_second"]),
        measured_tokens_per_s=measured_tps,
        error=float(estimate["tokens_per_second"]) / measured_tps - 1.0,
        band_low_tokens_per_s=low,
        band_high_tokens_per_s=high,
        band_basis=str(band["basis"]),
        inside_band=low <= measured_tps <= high,
        estimated_memory_gib=float(estimate["memory_per_gpu_gib"]["total"]),
    )
