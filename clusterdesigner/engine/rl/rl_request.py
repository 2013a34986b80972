"""An RL post-training workload (issue 39): what one GRPO/PPO run asks of the cluster, typed and checked.

The policy model, the training precision and the cluster are the design's (``workload.model``,
``workload.training.precision``, ``cluster``); this section adds what RL adds: prompts per step, samples per
prompt (the GRPO group), the prompt length and the response length's mean and tail (the longest response
holds a synchronous step), the number of steps, the algorithm (GRPO: no critic; PPO: a critic), whether a
reference and a learned reward model run, synchronous or asynchronous operation (off-policy by k steps), and
the placement (colocated, disaggregated, or searched).

A mixed fleet (``rollout``): the rollout engines run on a pool of their own, on another accelerator (an
inference-oriented part) and priced on their own server type and cloud offerings; the design's cluster is
then the trainer pool alone, and the placement is disaggregated (two parts cannot alternate on one GPU).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from clusterdesigner.engine.core.errors import InputError, under

ALGORITHMS = ("grpo", "ppo")
MODES = ("sync", "async")
PLACEMENTS = ("search", "colocated", "disaggregated")
ROLLOUT_PRECISIONS = ("bf16", "fp8")
MAX_TOKENS = 1_000_000
MAX_SAMPLES_PER_STEP = 10_000_000
MAX_RUN_TOKENS = 1e16
MAX_POOL_NODES = 100_000
MAX_GPUS_PER_NODE = 72  # an NVL72 rack as one node, the catalog's largest server type
# The rollout pool's fields: what the RL engine reads (the part and the pool's size) and how the pool is
# priced (read by the design spec's parser with the costs section's own rules, and by the cost engine).
ROLLOUT_ENGINE_FIELDS = ("accelerator", "gpus_per_node", "nodes")
ROLLOUT_PRICING_FIELDS = (
    "server_type",
    "on_prem",
    "cloud",
)  # the design spec's bound on workload.training.tokens, which the run's tokens become

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
SECTION_FIELDS = (*FIELDS, "rollout")


@dataclass(frozen=True)
class RolloutPool:
    """A rollout pool of its own (a mixed fleet): ``nodes`` nodes of ``accelerator`` (None: the trainer's)
    with ``gpus_per_node`` GPUs (None: the trainer's). ``server_type``, ``on_prem`` and ``cloud`` price it
    (its owned server and its cloud offerings, as the design's ``cluster.server_type``, ``costs.on_prem``
    and ``costs.cloud`` price the trainers); they are carried here, not read by the RL engine."""

    nodes: int
    accelerator: str | None = None
    gpus_per_node: int | None = None
    server_type: str | None = None
    on_prem: Mapping[str, Any] | None = None
    cloud: tuple[Mapping[str, Any], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {key: value for key, value in asdict(self).items() if value is not None}
        if self.cloud is not None:
            out["cloud"] = [dict(choice) for choice in self.cloud]
        return out


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
    rollout: RolloutPool | None = None

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
        out = asdict(self)
        out.pop("rollout")
        if self.rollout is not None:
            out["rollout"] = self.rollout.to_json()
        return out


def _whole(value: Any, low: int, high: int, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"must be a whole number from {low:,} to {high:,}", field=field)
    return value


def parse_rollout(section: Any, *, path: str = "rl.rollout") -> RolloutPool:
    """The rollout pool of a mixed fleet: ``nodes`` required, ``accelerator`` a catalog slug (checked against
    the catalog by the engine), ``gpus_per_node``; the pricing fields are objects here (their contents are
    the costs section's to check)."""
    if not isinstance(section, Mapping):
        raise InputError("must be an object", field=path)
    known = (*ROLLOUT_ENGINE_FIELDS, *ROLLOUT_PRICING_FIELDS)
    unknown = sorted(set(section) - set(known))
    if unknown:
        raise InputError(f"unknown field; known: {', '.join(known)}", field=under(path, f"{unknown[0]}"))
    if "nodes" not in section:
        raise InputError("This field is required.", field=under(path, "nodes"))
    nodes = _whole(section["nodes"], 1, MAX_POOL_NODES, under(path, "nodes"))
    gpn = section.get("gpus_per_node")
    if gpn is not None:
        gpn = _whole(gpn, 1, MAX_GPUS_PER_NODE, under(path, "gpus_per_node"))
    for key in ("accelerator", "server_type"):
        value = section.get(key)
        if value is not None and (not isinstance(value, str) or not value or len(value) > 100):
            raise InputError("must be a catalog slug", field=under(path, f"{key}"))
    if section.get("on_prem") is not None and not isinstance(section["on_prem"], Mapping):
        raise InputError("must be an object", field=under(path, "on_prem"))
    cloud = section.get("cloud")
    if cloud is not None:
        if not isinstance(cloud, list):
            raise InputError("must be a list", field=under(path, "cloud"))
        for index, choice in enumerate(cloud):
            if not isinstance(choice, Mapping):
                raise InputError("must be an object", field=under(path, f"cloud.{index}"))
    return RolloutPool(
        nodes=nodes,
        accelerator=section.get("accelerator"),
        gpus_per_node=gpn,
        server_type=section.get("server_type"),
        on_prem=dict(section["on_prem"]) if section.get("on_prem") is not None else None,
        cloud=None if cloud is None else tuple(dict(c) for c in cloud),
    )


def _value(section: Mapping[str, Any], key: str, path: str) -> Any:
    kind, low, high, default = FIELDS[key]
    if key not in section:
        if default is None:
            raise InputError("This field is required.", field=under(path, f"{key}"))
        return default
    value = section[key]
    if kind == "bool":
        if not isinstance(value, bool):
            raise InputError("Must be a valid boolean.", field=under(path, f"{key}"))
        return value
    if kind == "choice":
        if value not in high:
            raise InputError(
                f'"{value}" is not a valid choice; use one of {", ".join(high)}', field=under(path, f"{key}")
            )
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"must be a whole number from {low:,} to {high:,}", field=under(path, f"{key}"))
    return value


def parse_rl(section: Any, *, path: str = "rl") -> RLWorkload:
    """The RL section checked field by field (unknown keys, types, ranges, and the rules between fields);
    every error names ``<path>.<field>`` (``path`` "": the field alone)."""
    if not isinstance(section, Mapping):
        raise InputError("must be an object", field=path)
    unknown = sorted(set(section) - set(SECTION_FIELDS))
    if unknown:
        raise InputError(
            f"unknown field; known: {', '.join(SECTION_FIELDS)}", field=under(path, f"{unknown[0]}")
        )
    values = {key: _value(section, key, path) for key in FIELDS if key != "off_policy_steps"}
    mode = values["mode"]
    k = section.get("off_policy_steps", 1 if mode == "async" else 0)
    if "off_policy_steps" in section:
        k = _value(section, "off_policy_steps", path)
    if mode == "async" and k < 1:
        raise InputError(
            "async operation runs at least 1 step off-policy", field=under(path, "off_policy_steps")
        )
    if mode == "sync" and k != 0:
        raise InputError(
            "a synchronous run is on-policy: 0, or set mode async", field=under(path, "off_policy_steps")
        )
    if mode == "async" and values["placement"] == "colocated":
        raise InputError(
            "colocated rollout and training alternate on the same GPUs, so they cannot overlap: "
            "choose disaggregated (or search) for async operation",
            field=under(path, "placement"),
        )
    if values["response_tokens_max"] < values["response_tokens_mean"]:
        raise InputError("must be at least response_tokens_mean", field=under(path, "response_tokens_max"))
    if values["prompts_per_step"] * values["group_size"] > MAX_SAMPLES_PER_STEP:
        raise InputError(
            f"prompts_per_step × group_size must be at most {MAX_SAMPLES_PER_STEP:,}",
            field=under(path, "group_size"),
        )
    pool = None
    if section.get("rollout") is not None:
        pool = parse_rollout(section["rollout"], path=under(path, "rollout"))
        if values["placement"] == "colocated":
            raise InputError(
                "a rollout pool of its own (rl.rollout) is disaggregated: the two pools are separate GPUs; "
                "choose disaggregated (or search), or remove rl.rollout",
                field=under(path, "placement"),
            )
    workload = RLWorkload(off_policy_steps=int(k), rollout=pool, **values)
    if workload.steps * workload.train_tokens_per_step > MAX_RUN_TOKENS:
        raise InputError(
            f"steps × prompts × group × (prompt + mean response) tokens must be at most {MAX_RUN_TOKENS:.0e}",
            field=under(path, "steps"),
        )
    return workload
