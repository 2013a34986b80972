"""An RL post-training workload (issue 39): what one GRPO/PPO run asks of the cluster, typed and checked.

The policy model, the training precision and the cluster are the design's (``workload.model``,
``workload.training.precision``, ``cluster``); this section adds what RL adds: prompts per step, samples per
prompt (the GRPO group), the prompt length and the response length's mean and tail (the longest response
holds a synchronous step), the number of steps, the algorithm (GRPO: no critic; PPO: a critic), whether a
reference and a learned reward model run, synchronous or asynchronous operation (off-policy by k steps), and
the placement (colocated, disaggregated, or searched).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from clusterdesigner.engine.errors import InputError

ALGORITHMS = ("grpo", "ppo")
MODES = ("sync", "async")
PLACEMENTS = ("search", "colocated", "disaggregated")
ROLLOUT_PRECISIONS = ("bf16", "fp8")
MAX_TOKENS = 1_000_000
MAX_SAMPLES_PER_STEP = 10_000_000
MAX_RUN_TOKENS = 1e16  # the design spec's bound on workload.training.tokens, which the run's tokens become

# (kind, low, high, default); default None: required. Kinds: int, choice (high holds the choices), bool.
FIELDS: Mapping[str, tuple[str, Any, Any, Any]] = {
    "algorithm": ("choice", None, ALGORITHMS, "grpo"),
    "prompts_per_step": ("int", 1, 1_000_000, None),
    "group_size": ("int", 1, 4096, None),
    "prompt_tokens": ("int", 1, MAX_TOKENS, None),
    "response_tokens_mean": ("int", 1, MAX_TOKENS, None),
    "response_tokens_max": ("int", 1, MAX_TOKENS, None),
    "steps": ("int", 1, 10_000_000, None),
    "reference_model": ("bool", None, None, True),
    "reward_model": ("bool", None, None, False),
    "mode": ("choice", None, MODES, "sync"),
    "off_policy_steps": ("int", 0, 64, None),
    "placement": ("choice", None, PLACEMENTS, "search"),
    "rollout_precision": ("choice", None, ROLLOUT_PRECISIONS, "bf16"),
}


@dataclass(frozen=True)
class RLWorkload:
    """One RL run's shape. ``reward_model`` False: a rule-based verifier (on CPUs, no GPU time); True: a
    learned reward model the policy's size scoring every sample. ``critic`` (PPO) is the policy's size, as
    OpenRLHF's and verl's PPO examples initialise it from the same base model. ``off_policy_steps`` k: in
    async mode the rollout of step n+k runs on the weights of step n (k ≥ 1); 0 in sync mode."""

    algorithm: str
    prompts_per_step: int
    group_size: int
    prompt_tokens: int
    response_tokens_mean: int
    response_tokens_max: int
    steps: int
    reference_model: bool = True
    reward_model: bool = False
    mode: str = "sync"
    off_policy_steps: int = 0
    placement: str = "search"
    rollout_precision: str = "bf16"

    @property
    def samples_per_step(self) -> int:
        """Responses generated a step: prompts × group size."""
        return self.prompts_per_step * self.group_size

    @property
    def rollout_tokens_per_step(self) -> int:
        """Response tokens decoded a step: samples × mean response length."""
        return self.samples_per_step * self.response_tokens_mean

    @property
    def sequence_tokens(self) -> int:
        """Tokens of the mean sample the trainer sees: prompt + mean response (padding removed and sequences
        packed, as verl's use_remove_padding and OpenRLHF's packing_samples do)."""
        return self.prompt_tokens + self.response_tokens_mean

    @property
    def train_tokens_per_step(self) -> int:
        """Tokens one policy update trains on: samples × (prompt + mean response)."""
        return self.samples_per_step * self.sequence_tokens

    @property
    def critic(self) -> bool:
        return self.algorithm == "ppo"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _value(section: Mapping[str, Any], key: str, path: str) -> Any:
    kind, low, high, default = FIELDS[key]
    if key not in section:
        if default is None:
            raise InputError("This field is required.", field=f"{path}.{key}")
        return default
    value = section[key]
    if kind == "bool":
        if not isinstance(value, bool):
            raise InputError("Must be a valid boolean.", field=f"{path}.{key}")
        return value
    if kind == "choice":
        if value not in high:
            raise InputError(
                f'"{value}" is not a valid choice; use one of {", ".join(high)}', field=f"{path}.{key}"
            )
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"must be a whole number from {low:,} to {high:,}", field=f"{path}.{key}")
    return value


def parse_rl(section: Any, *, path: str = "rl") -> RLWorkload:
    """The RL section checked field by field (unknown keys, types, ranges, and the rules between fields);
    every error names ``<path>.<field>``."""
    if not isinstance(section, Mapping):
        raise InputError("must be an object", field=path)
    unknown = sorted(set(section) - set(FIELDS))
    if unknown:
        raise InputError(f"unknown field; known: {', '.join(FIELDS)}", field=f"{path}.{unknown[0]}")
    values = {key: _value(section, key, path) for key in FIELDS if key != "off_policy_steps"}
    mode = values["mode"]
    k = section.get("off_policy_steps", 1 if mode == "async" else 0)
    if "off_policy_steps" in section:
        k = _value(section, "off_policy_steps", path)
    if mode == "async" and k < 1:
        raise InputError("async operation runs at least 1 step off-policy", field=f"{path}.off_policy_steps")
    if mode == "sync" and k != 0:
        raise InputError(
            "a synchronous run is on-policy: 0, or set mode async", field=f"{path}.off_policy_steps"
        )
    if mode == "async" and values["placement"] == "colocated":
        raise InputError(
            "colocated rollout and training alternate on the same GPUs, so they cannot overlap: "
            "choose disaggregated (or search) for async operation",
            field=f"{path}.placement",
        )
    if values["response_tokens_max"] < values["response_tokens_mean"]:
        raise InputError("must be at least response_tokens_mean", field=f"{path}.response_tokens_max")
    if values["prompts_per_step"] * values["group_size"] > MAX_SAMPLES_PER_STEP:
        raise InputError(
            f"prompts_per_step × group_size must be at most {MAX_SAMPLES_PER_STEP:,}",
            field=f"{path}.group_size",
        )
    workload = RLWorkload(off_policy_steps=int(k), **values)
    if workload.steps * workload.train_tokens_per_step > MAX_RUN_TOKENS:
        raise InputError(
            f"steps × prompts × group × (prompt + mean response) tokens must be at most {MAX_RUN_TOKENS:.0e}",
            field=f"{path}.steps",
        )
    return workload
