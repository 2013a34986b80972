"""A design's defaults, each written once with its source: what a new design, a sweep and a recommendation
start from when the user leaves a field out. Forms, the API, sweeps, the cost engine's assumptions and the
docs read them from here (issue 14, "one defaults module").

The cost engine's own inputs beyond these (owning, network, storage, failures, cash flows) keep their
defaults, each with its source, in :data:`clusterdesigner.engine.cost.DEFAULTS`, which reads the shared ones
below.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from clusterdesigner.engine.offerings import PRICING_MODELS

ISSUE = "ClusterDesigner default (illustrative; set your own)"


@dataclass(frozen=True)
class Default:
    """One default: its value, unit and where it comes from."""

    value: Any
    unit: str
    source: str


# -- the workload -----------------------------------------------------------------------------------------
MODEL_PRESET = Default("llama3-70b", "preset", "ClusterDesigner default: a dense 70B model")
TRAINING_TOKENS = Default(1.0e12, "tokens", ISSUE)
# 1,024 sequences × 4,096 tokens: Llama 2's "global batch-size of 4M tokens" (Touvron et al.,
# arXiv:2307.09288, Sec. 2.2).
GLOBAL_BATCH_TOKENS = Default(
    4_194_304, "tokens", "Llama 2: global batch of 4M tokens (arXiv:2307.09288 §2.2)"
)
PRECISION = Default("bf16", "bf16|fp8", "ClusterDesigner default: bf16 mixed precision")

# -- the cluster ------------------------------------------------------------------------------------------
ACCELERATOR = Default("h100-sxm", "slug", "ClusterDesigner default")
GPUS_PER_NODE = Default(8, "GPUs", "HGX/DGX 8-GPU baseboard")
NODES = Default(64, "nodes", "ClusterDesigner default: 512 GPUs (illustrative example)")
FABRIC = Default("ib-ndr400", "slug", "ClusterDesigner default (illustrative example)")
OVERSUBSCRIPTION = Default(
    1.0, "down:up", "non-blocking; Llama 3 pods are full-bisection (arXiv:2407.21783 Sec. 3.3.1)"
)
STORAGE = Default("lustre", "slug", "ClusterDesigner default (illustrative example)")
PARALLELISM = Default("search", "layout|search", "ClusterDesigner default: the fastest layout that fits")

# -- costs ------------------------------------------------------------------------------------------------
HORIZON_YEARS = Default(3, "years", "ClusterDesigner default: the longest common cloud commitment (3 years)")
UTILIZATION = Default(0.7, "fraction of hours busy", "ClusterDesigner default (set your own expected load)")
# Only what the catalog prices: p5 has an on-demand row; a ticked pricing model with no price is refused.
CLOUD_OFFERING = Default("aws-p5-48xlarge", "slug", "ClusterDesigner default: an 8 × H100 SXM instance")
CLOUD_PRICING = Default(("on_demand",), "pricing models", "ClusterDesigner default: on-demand only")

# -- pricing models ---------------------------------------------------------------------------------------
OWN = "own"  # a sweep's or recommendation's owning option, beside the cloud pricing models
SWEEP_PRICING_OPTIONS = (*PRICING_MODELS, OWN)
SWEEP_PRICING = ("on_demand", "reserved_1y", "spot", OWN)
# A recommendation compares these, and spot too when the run tolerates interruptions.
RECOMMEND_PRICING = ("on_demand", "reserved_1y", OWN)

# -- the sweep page's starting point ----------------------------------------------------------------------
SWEEP_ACCELERATORS = ("h100-sxm", "h200", "b200")
SWEEP_NODES = (8, 16, 32, 64)

# Every design default by its spec path (the docs and the editor's help read this table).
DESIGN_DEFAULTS: Mapping[str, Default] = MappingProxyType(
    {
        "workload.model.preset": MODEL_PRESET,
        "workload.training.tokens": TRAINING_TOKENS,
        "workload.training.global_batch_tokens": GLOBAL_BATCH_TOKENS,
        "workload.training.precision": PRECISION,
        "cluster.accelerator": ACCELERATOR,
        "cluster.gpus_per_node": GPUS_PER_NODE,
        "cluster.nodes": NODES,
        "cluster.fabric": FABRIC,
        "cluster.oversubscription": OVERSUBSCRIPTION,
        "cluster.storage": STORAGE,
        "parallelism": PARALLELISM,
        "costs.horizon_years": HORIZON_YEARS,
        "costs.utilization": UTILIZATION,
        "costs.cloud.0.offering": CLOUD_OFFERING,
        "costs.cloud.0.pricing_models": CLOUD_PRICING,
    }
)


def training() -> dict[str, Any]:
    """A new design's training section (also a sweep's and a recommendation's)."""
    return {
        "tokens": TRAINING_TOKENS.value,
        "global_batch_tokens": GLOBAL_BATCH_TOKENS.value,
        "precision": PRECISION.value,
    }


def model() -> dict[str, Any]:
    return {"preset": MODEL_PRESET.value}


_SPEC: Mapping[str, Any] = MappingProxyType(
    {
        "workload": {"model": model(), "training": training()},
        "cluster": {
            "accelerator": ACCELERATOR.value,
            "gpus_per_node": GPUS_PER_NODE.value,
            "nodes": NODES.value,
            "fabric": FABRIC.value,
            "oversubscription": OVERSUBSCRIPTION.value,
            "storage": STORAGE.value,
        },
        "parallelism": PARALLELISM.value,
        "costs": {
            "horizon_years": HORIZON_YEARS.value,
            "utilization": UTILIZATION.value,
            "on_prem": {},
            "cloud": [{"offering": CLOUD_OFFERING.value, "pricing_models": list(CLOUD_PRICING.value)}],
        },
    }
)


def design_spec() -> dict[str, Any]:
    """A new design's whole spec (a fresh copy: callers edit it)."""
    return copy.deepcopy(dict(_SPEC))


def markdown_table() -> str:
    """The design defaults as the README's table (a test keeps the README's copy equal to this)."""
    rows = ["| spec field | default | unit | source |", "|---|---|---|---|"]
    for path, default in DESIGN_DEFAULTS.items():
        value = default.value
        shown = (
            ", ".join(value)
            if isinstance(value, tuple)
            else f"{value:g}"
            if isinstance(value, float)
            else value
        )
        unit, source = (text.replace("|", "\\|") for text in (default.unit, default.source))
        rows.append(f"| `{path}` | `{shown}` | {unit} | {source} |")
    return "\n".join(rows)
