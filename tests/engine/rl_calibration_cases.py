"""Published RL runs (tests/engine/data/rl_runs.csv) as RL engine requests, and the engine's error on them.

Rows: NVIDIA NeMo RL's performance summary (GRPO on OpenMathInstruct-2, Megatron-Core training, vLLM
generation, BF16): GPUs, samples per step (G-GBS), the maximum and mean sequence length, step time. What a
row does not state and this module chooses, the same for every row:

- the prompt length: ``PROMPT_TOKENS`` (ESTIMATE: OpenMathInstruct-2 problems with NeMo RL's math prompt
  template; the table gives only the mean total sequence), so the mean response is the row's mean sequence
  less it and the longest response the maximum sequence less it (math RL runs reach the length cap);
- the placement: on-policy rows colocated (NeMo RL's default ``policy.generation.colocated.enabled``),
  off-policy rows disaggregated and asynchronous (NeMo RL's async GRPO runs generation on separate GPUs), the
  split searched (the table does not give it);
- a reference model (KL) for every row, no critic, no reward model (a rule-based math verifier);
- the fabric: InfiniBand NDR 400 Gb/s per GPU (DGX-H100 and GB200 NVL72 reference systems).

``fit`` and ``check`` were declared per row in the CSV before any figure was compared. The engine's one
constant fitted on these rows is rl.FRAMEWORK_FACTOR (fitted on the fit rows only); the bucket cost of the
weight sync comes from slime's report, not from these rows.
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.rl import rl

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "engine" / "data" / "rl_runs.csv"
SEED = ROOT / "apps" / "catalog" / "data" / "seed_catalog.json"
PROMPT_TOKENS = 256
STEPS = 100  # any count: the step time does not depend on it


@dataclass(frozen=True)
class Case:
    row: dict[str, str]
    predicted_s: float | None
    placement: str

    @property
    def measured_s(self) -> float:
        return float(self.row["measured_step_s"])

    @property
    def error(self) -> float | None:
        """predicted / measured − 1."""
        return None if self.predicted_s is None else self.predicted_s / self.measured_s - 1.0


def rows() -> list[dict[str, str]]:
    with DATA.open(newline="") as f:
        return list(csv.DictReader(f))


def catalog() -> dict[str, Any]:
    specs = specs_from_records(json.loads(SEED.read_text()))
    return specs.training_kwargs()


def request(row: dict[str, str]) -> dict[str, Any]:
    """The RL engine's request for one published run."""
    gpn = int(row["gpus_per_node"])
    off = int(row["off_policy_steps"])
    return {
        "model": {"preset": row["preset"]},
        "training": {"precision": "bf16"},
        "cluster": {
            "accelerator": row["accelerator"],
            "gpus_per_node": gpn,
            "nodes": math.ceil(int(row["gpus"]) / gpn),
            "fabric": "ib-ndr400",
        },
        "rl": {
            "prompts_per_step": int(row["samples_per_step"]),
            "group_size": 1,
            "prompt_tokens": PROMPT_TOKENS,
            "response_tokens_mean": int(row["mean_sequence_tokens"]) - PROMPT_TOKENS,
            "response_tokens_max": int(row["max_sequence_tokens"]) - PROMPT_TOKENS,
            "steps": STEPS,
            "placement": "disaggregated" if off else "colocated",
            "mode": "async" if off else "sync",
            "off_policy_steps": off,
        },
    }


def predict(row: dict[str, str], kwargs: dict[str, Any], factor: float = rl.FRAMEWORK_FACTOR) -> Case:
    """The engine's step time for a row (``factor``: the framework factor, 1 to fit it); None when it finds
    no placement (or refuses the request)."""
    try:
        result = rl.estimate(request(row), framework_factor=factor, **kwargs)
    except EngineError:
        return Case(row, None, "")
    return Case(row, result.chosen.step.seconds, result.chosen.placement)


def median_abs_error(cases: list[Case]) -> float:
    errors = sorted(abs(c.error) for c in cases if c.error is not None)
    if not errors:
        return math.inf
    mid = len(errors) // 2
    return errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2


def fitted_scale(cases: list[Case]) -> float:
    """The one factor that best maps predictions to measurements on ``cases``: the geometric mean of
    measured / predicted (rl.FRAMEWORK_FACTOR is this on the fit rows predicted with the factor 1)."""
    logs = [math.log(c.measured_s / c.predicted_s) for c in cases if c.predicted_s]
    return math.exp(sum(logs) / len(logs)) if logs else 1.0
