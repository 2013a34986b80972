"""RL post-training step time and the rollout/trainer split (issue 39): the serving engine generates the
rollouts, the training engine times the updates, and this module joins them per placement.

A step of GRPO/PPO (verl's RayPPOTrainer.fit, OpenRLHF's PPO trainer, slime's train loop):
1. rollout: the inference engine prefills prompts × group samples and decodes their responses under
   continuous batching; a synchronous step waits for the longest response (``rollout_time``);
2. the trainer recomputes the old policy's log-probabilities, the reference model's (KL) and, for PPO, the
   critic's values, and a learned reward model scores the samples: forward passes only;
3. the policy (and for PPO the critic) is updated on prompts × group × (prompt + response) tokens;
4. the new weights go to the rollout engines (``weight_sync_s``).

Placements: *colocated* (one pool alternates: step = rollout + sync + train + offload/reload of the training
states when the rollout needs their memory); *disaggregated* (a rollout pool of R nodes and a trainer pool of
T nodes; synchronous: step = rollout + sync + train, each pool idle while the other works; asynchronous,
off-policy by k ≥ 1 steps: step = max(rollout, train) + sync). ``estimate`` searches the split.

A mixed fleet (``rl.rollout``): the rollout pool is its own ``rl.rollout.nodes`` nodes of its own part
(``rl.rollout.accelerator``, default the trainer's) and the design's cluster is the trainer pool; the
rollout is timed by the serving engine on the rollout part, the placement is disaggregated and the split is
the one given (no search: the pools are different hardware, not shares of one).
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from clusterdesigner.engine.core.errors import InfeasibleError, InputError, UnknownReferenceError, under
from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.core.json_object import JsonObject, omit
from clusterdesigner.engine.core.model import ModelShape
from clusterdesigner.engine.rl.rl_request import RLWorkload, parse_rl
from clusterdesigner.engine.serving.serving import (
    BYTES,
    DEFAULT_STACK,
    STACKS,
    ServingInput,
    batch_that_fits,
    decode_step_s,
    layouts,
    prefill_s,
)
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.training_result import LayoutEstimate
from clusterdesigner.engine.training.workload import Sections

GIB = 2**30
# A forward pass is 2N FLOPs a token of the 6N of forward + backward (Kaplan et al. 2020, arXiv:2001.08361,
# Sec. 2.1; Narayanan et al. 2021, arXiv:2104.04473, eq. 3): a log-prob, reference, value or reward pass
# over the step's tokens costs 1/3 of a training step of the same model on them.
FORWARD_SHARE = 1.0 / 3.0
# slime sends the new weights in flattened 512 MB buckets (Biao He, Zilin Zhu et al., "Efficient RL Training:
# Optimizing Weight Sync in slime", 2025-08-27, hebiao064.github.io, Sec. 4.2; THUDM/slime
# backends/megatron_utils/update_weight_utils.py, update_weight_buffer_size default 512 MiB).
SYNC_BUCKET_BYTES = 512 * 2**20
# The same report's end point: Qwen3-30B-A3B (30.53 B params, BF16: 61.06 GB) synchronised colocated in 7 s
# on H100 (NVLink 4, 450 GB/s a direction). Beyond the bytes at link speed (0.14 s) that is the per-bucket
# work (CUDA IPC handles, rebuilding and loading tensors) of ceil(61.06 GB / 512 MiB) = 114 buckets: one
# published point, so this constant is fitted on it and checked by nothing else yet.
_SLIME_BYTES = 30_532_110_336 * 2.0
SYNC_BUCKET_OVERHEAD_S = (7.0 - _SLIME_BYTES / 450e9) / math.ceil(_SLIME_BYTES / SYNC_BUCKET_BYTES)
# The RL frameworks run the same kernels slower than the serving and training engines' calibrations say
# (vLLM in eager or partial-graph mode beside the trainer, log-prob sampling, Ray data movement, packing and
# dynamic batching at long contexts): rollout and trainer seconds are multiplied by this factor, the
# geometric mean of measured / predicted step time on the 'fit' rows of tests/engine/data/rl_runs.csv (NeMo
# RL's performance summary) with the factor 1; bench/rl_calibration.py prints the fit and the 'check' error.
# 2.03 -> 2.02 (refit 2.016) after the joint refit of issue 33's merged MoE terms (MOE_ROUTED_PASSES 13).
# 2.02 -> 2.07 (refit 2.0715) once full recompute reruns the MoE layers' forward dispatch and combine
# (timing._moe_recompute_a2a_factor); the fit rows' median |error| 10 -> 13 %, the check rows' 18 % stays.
# 2.07 -> 2.14 (refit 2.143) in the joint refit after the merge (Hopper family factor 0.75 -> 0.81 and
# flash2 at its measured H100 rate make the H100 trainer faster). Why 2.02 -> 2.07 above: the GB200
# Qwen3-235B 64-GPU colocated fit row's trainer layout moved from ep 2 (pp 1) to pp 2 (no EP) once full
# recompute repeats the all-to-alls; the layout search ranks training time only, and pp 2 halves the weight
# sync (53.3 -> 26.6 s at factor 1), so that row's step fell 148 -> 122 s and the geometric mean rose.
# 2.14 -> 2.07 (refit 2.074) in engine version 23's joint refit (FlashAttention-2 at its published rates,
# family factors Ampere 0.88 and Hopper 0.79): the trainers' step times moved, the factor follows.
FRAMEWORK_FACTOR = 2.07
# Splits tried at most (evenly spaced node counts for the rollout pool): each costs one layout search.
MAX_SPLITS = 16
ASSUMPTIONS: tuple[tuple[str, str], ...] = (
    (
        "forward passes",
        "log-prob, reference, value and reward passes each cost 1/3 of a training step of "
        "the same model on the step's tokens (2N of 6N FLOPs a token: Kaplan et al. 2020, "
        "Narayanan et al. 2021)",
    ),
    (
        "old log-probs",
        "the trainer recomputes the old policy's log-probs each step (verl compute_log_prob; "
        "OpenRLHF make_experience)",
    ),
    ("critic", "PPO's critic is the policy's size (OpenRLHF and verl examples start it from the base model)"),
    (
        "rollout tail",
        "a synchronous step waits for the longest response: the responses' mean length runs "
        "at the full batch, the rest up to response_tokens_max at batch 1",
    ),
    (
        "weight sync",
        "colocated: every GPU gathers the full weights over the scale-up link (verl FSDP "
        "sharding manager full_tensor); disaggregated: one NCCL broadcast from the trainer over one NIC "
        "(slime UpdateWeightFromDistributed); plus a per-512 MiB-bucket cost fitted on slime's 7 s for "
        "Qwen3-30B-A3B; a rollout pool of its own (mixed fleet) is reached over the design's scale-out "
        "fabric, at the slower of the trainer's NIC and one fabric port per rollout GPU (the catalog "
        "fabric row's port_gbps and collective_efficiency, with that row's source)",
    ),
    (
        "colocated memory",
        "the rollout either shares HBM with the resident training states or offloads "
        "them to host memory and back each step (verl param/optimizer offload, "
        "OpenRLHF --vllm_enable_sleep), "
        "whichever is faster",
    ),
)


@dataclass(frozen=True)
class RolloutTime(JsonObject):
    """One pool's generation of a step's samples: replicas of tp × pp GPUs holding ``batch`` sequences."""

    seconds: float
    prefill_s: float
    decode_s: float
    tail_s: float
    tp: int
    pp: int
    replicas: int
    batch: int


@dataclass(frozen=True)
class TrainTime(JsonObject):
    """The trainer's share of a step: forward passes, the policy update and (PPO) the critic update."""

    seconds: float
    policy_update_s: float
    critic_update_s: float
    forward_passes_s: float
    layout: str
    memory_per_gpu_gib: float


@dataclass(frozen=True)
class RLStep(JsonObject):
    """One step of one placement, by part, with each pool's idle share of the step."""

    seconds: float
    rollout_s: float
    weight_sync_s: float
    train_s: float
    offload_s: float
    rollout_idle_share: float
    trainer_idle_share: float


@dataclass(frozen=True)
class RLPlacement(JsonObject):
    placement: str
    mode: str
    rollout_gpus: int
    trainer_gpus: int
    step: RLStep
    rollout: RolloutTime
    train: TrainTime
    weight_sync_bytes: float
    days: float
    gpu_hours: float
    # Each pool's part (the same slug twice unless the fleet is mixed) and GPU-hours (colocated: one pool,
    # the rollout's share 0); absent from results stored before mixed fleets.
    rollout_accelerator: str | None = omit()
    trainer_accelerator: str | None = omit()
    rollout_gpu_hours: float | None = omit()
    trainer_gpu_hours: float | None = omit()


@dataclass(frozen=True)
class SplitPoint(JsonObject):
    """Days at one split (None: nothing fits there); rollout_nodes 0 is the colocated placement."""

    rollout_nodes: int
    trainer_nodes: int
    days: float | None


@dataclass(frozen=True)
class RLResult(JsonObject):
    workload: Mapping[str, Any]
    samples_per_step: int
    rollout_tokens_per_step: int
    train_tokens_per_step: int
    chosen: RLPlacement
    options: tuple[RLPlacement, ...]
    splits: tuple[SplitPoint, ...]
    assumptions: tuple[tuple[str, str], ...]


def serving_input(
    workload: RLWorkload, model: ModelShape, accelerator: AcceleratorSpec, gpn: int
) -> ServingInput:
    """The serving engine's view of a rollout: every sample of the step waiting at once (``backlog``), the
    prompt and mean response lengths, weights and KV cache at the rollout precision, vLLM-like stack."""
    return ServingInput(
        model=model,
        accelerator=accelerator,
        input_tokens=workload.prompt_tokens,
        output_tokens=workload.response_tokens_mean,
        requests_per_s=1.0,
        weight_precision=workload.rollout_precision,
        kv_precision=workload.rollout_precision,
        gpus_per_node=gpn,
        arrivals="backlog",
        disaggregated=False,
        efficiency=STACKS[DEFAULT_STACK],
    )


def rollout_time(
    inp: ServingInput, workload: RLWorkload, *, gpus: int, factor: float = 1.0
) -> RolloutTime | None:
    """The fastest replica layout (tp, pp from serving.layouts) generating the step's samples on ``gpus``.

    Per replica: n = ceil(samples / replicas) sequences, batch B = min(n, batch_that_fits, max_batch).
    prefill = serving.prefill_s of n prompts mixed into decode iterations (shared weight read);
    decode = n · mean_response · TPOT(B) / B (continuous batching at B);
    tail = (response_max − response_mean) · TPOT(1): the longest response finishing alone.
    Each part times ``factor`` (FRAMEWORK_FACTOR in an estimate). None when the weights fit on no replica
    of at most ``gpus`` GPUs."""
    best: RolloutTime | None = None
    for tp, pp in sorted({(t, p) for t, p, _ in layouts(inp)}):
        if tp * pp > gpus:
            continue
        fits = int(batch_that_fits(inp, tp=tp, pp=pp))
        if fits < 1:
            continue
        replicas = gpus // (tp * pp)
        n = math.ceil(workload.samples_per_step / replicas)
        batch = max(1, min(n, fits, inp.max_batch))
        prefill = factor * float(prefill_s(inp, tp=tp, pp=pp, prompts=n, shared_read=True))
        step_b = float(decode_step_s(inp, batch=batch, tp=tp, pp=pp))
        decode = factor * n * workload.response_tokens_mean * step_b / batch
        extra = workload.response_tokens_max - workload.response_tokens_mean
        tail = factor * extra * float(decode_step_s(inp, batch=1, tp=tp, pp=pp))
        seconds = prefill + decode + tail
        if best is None or seconds < best.seconds:
            best = RolloutTime(seconds, prefill, decode, tail, tp, pp, replicas, batch)
    return best


def weight_sync_s(
    *,
    sync_bytes: float,
    colocated: bool,
    accelerator: AcceleratorSpec,
    nic_gbps: float,
    fabric_efficiency: float,
    trainer_pp: int = 1,
) -> float:
    """Seconds to give the rollout engines the new weights.

    colocated: bytes / scale-up GB/s (each GPU gathers the full weights from its FSDP/TP peers over NVLink;
    PCIe where the part has no scale-up link); disaggregated: bytes · 8 / (NIC Gb/s · collective efficiency)
    (one NCCL broadcast from the trainer's source rank, pipelined to every rollout engine, so one NIC's
    bandwidth bounds it). Plus ceil(bytes / 512 MiB) · SYNC_BUCKET_OVERHEAD_S. Each of the trainer's
    ``trainer_pp`` pipeline stages sends only its own layers, the stages at once (slime opens one group per
    pipeline rank, "slime-pp_{pp_rank}", in UpdateWeightFromDistributed), so the bytes are per stage."""
    sync_bytes = sync_bytes / trainer_pp
    if colocated:
        link = (
            accelerator.scaleup_bandwidth_gbps
            if accelerator.has_scaleup_link
            else accelerator.pcie_bandwidth_gbps
        )
        wire = sync_bytes / (link * 1e9)
    else:
        wire = sync_bytes * 8.0 / (nic_gbps * 1e9 * fabric_efficiency)
    return wire + math.ceil(sync_bytes / SYNC_BUCKET_BYTES) * SYNC_BUCKET_OVERHEAD_S


def train_time(row: LayoutEstimate, workload: RLWorkload, factor: float = 1.0) -> TrainTime:
    """The trainer's part of a step from the training engine's step time t of one update on the step's
    tokens: policy update t; PPO critic update t; forward passes (old log-probs always; reference, PPO
    values, reward model where they run) FORWARD_SHARE · t each; t times ``factor`` (FRAMEWORK_FACTOR in an
    estimate)."""
    t = factor * float(row.step_time_s.total)
    passes = 1 + int(workload.reference_model) + int(workload.critic) + int(workload.reward_model)
    critic = t if workload.critic else 0.0
    forward = passes * FORWARD_SHARE * t
    return TrainTime(
        seconds=t + critic + forward,
        policy_update_s=t,
        critic_update_s=critic,
        forward_passes_s=forward,
        layout=training.describe_layout(row.parallelism.to_json()),
        memory_per_gpu_gib=float(row.memory_per_gpu_gib.total),
    )


def compose_step(
    *, placement: str, mode: str, rollout_s: float, sync_s: float, train_s: float, offload_s: float = 0.0
) -> RLStep:
    """The step time and each pool's idle share. Colocated or synchronous: rollout + sync + train (+
    offload); the rollout pool idles while the trainer trains and the trainer while the rollout runs
    (colocated: one pool, never idle). Asynchronous: max(rollout, train) + sync, the faster side idle for
    the difference."""
    if placement == "colocated":
        step = rollout_s + sync_s + train_s + offload_s
        return RLStep(step, rollout_s, sync_s, train_s, offload_s, 0.0, 0.0)
    if mode == "async":
        step = max(rollout_s, train_s) + sync_s
        idle_rollout, idle_trainer = step - sync_s - rollout_s, step - sync_s - train_s
    else:
        step = rollout_s + sync_s + train_s
        idle_rollout, idle_trainer = train_s, rollout_s
    return RLStep(step, rollout_s, sync_s, train_s, 0.0, idle_rollout / step, idle_trainer / step)


@dataclass(frozen=True)
class _Setup:
    """What every placement of one request shares: the workload, the policy, the cluster and the training
    request each pool's layout search starts from."""

    workload: RLWorkload
    model: ModelShape
    accelerator: AcceleratorSpec
    fabric: FabricSpec
    gpus_per_node: int
    nodes: int
    nic_gbps: float
    base: Mapping[str, Any]
    catalog: Mapping[str, Any]
    factor: float = FRAMEWORK_FACTOR
    # A rollout pool of its own (rl.rollout): its part, node size and nodes; None: the trainer's part and
    # a share of the cluster's nodes.
    pool: tuple[AcceleratorSpec, int, int] | None = None
    # Where the request's training sections (model, training, cluster) sit in what the user sent, so the
    # pools' layout searches name the user's field as the parser did.
    where: Sections = Sections()

    @property
    def rollout_part(self) -> tuple[AcceleratorSpec, int]:
        """The rollout's accelerator and GPUs per node."""
        return (self.pool[0], self.pool[1]) if self.pool else (self.accelerator, self.gpus_per_node)

    @property
    def sync_nic_gbps(self) -> float:
        """The link a disaggregated broadcast crosses: the trainer's NIC per GPU, or with a rollout pool of
        its own the slower of it and the rollout side's (one NIC per GPU at the design fabric's port rate,
        ``port_gbps`` of the catalog's fabric row and its source): both pools hang off the design's
        fabric."""
        return min(self.nic_gbps, self.fabric.port_gbps) if self.pool else self.nic_gbps

    @property
    def sync_bytes(self) -> float:
        """The policy's parameters at the rollout precision's bytes per parameter."""
        return float(self.model.total_params) * BYTES[self.workload.rollout_precision]


def training_request(request: Mapping[str, Any], workload: RLWorkload) -> dict[str, Any]:
    """The training engine's request for one RL update: the policy with seq_len = prompt + mean response,
    global batch = prompts × group sequences, tokens = steps × the step's tokens; the design's training
    settings (precision, framework, levers) kept; the layout searched."""
    given = dict(request.get("training") or {})
    for key in ("tokens", "global_batch_tokens", "global_batch_seqs"):
        given.pop(key, None)
    return {
        "model": {**request["model"], "seq_len": workload.sequence_tokens},
        "training": {
            **given,
            "tokens": float(workload.steps * workload.train_tokens_per_step),
            "global_batch_seqs": workload.samples_per_step,
        },
        "cluster": dict(request["cluster"]),
    }


def _setup(
    request: Mapping[str, Any], catalog: Mapping[str, Any], factor: float, where: Sections, rl_at: str
) -> _Setup:
    if not isinstance(request, Mapping) or not isinstance(request.get("rl"), Mapping):
        raise InputError("must be an object", field=rl_at)
    workload = parse_rl(request["rl"], path=rl_at)
    base = training_request(request, workload)
    problem = training.parse_problem(base, where=where, **catalog)
    cluster = problem.cluster
    pool = None
    if workload.rollout is not None:
        pool = _pool(workload, catalog, cluster.accelerator, cluster.gpus_per_node, rl_at)
    return _Setup(
        workload=workload,
        model=problem.model,
        accelerator=cluster.accelerator,
        fabric=cluster.fabric,
        gpus_per_node=cluster.gpus_per_node,
        nodes=cluster.nodes,
        nic_gbps=cluster.scaleout_gbps_per_gpu or cluster.fabric.port_gbps,
        base=base,
        catalog=catalog,
        factor=factor,
        pool=pool,
        where=where,
    )


def _pool(
    workload: RLWorkload, catalog: Mapping[str, Any], trainer: AcceleratorSpec, trainer_gpn: int, rl_at: str
) -> tuple[AcceleratorSpec, int, int]:
    """The rollout pool's part (the catalog's row; default the trainer's), node size and nodes."""
    assert workload.rollout is not None
    slug = workload.rollout.accelerator
    part = trainer
    if slug is not None:
        part = catalog["accelerators"].get(slug)
        if part is None:
            raise UnknownReferenceError(
                f"unknown accelerator {slug!r}", field=under(rl_at, "rollout.accelerator")
            )
    return part, workload.rollout.gpus_per_node or trainer_gpn, workload.rollout.nodes


# Trainer layouts already searched, by request, part, fabric and pool size: a design's save estimates the
# same RL run twice (checked, then evaluated) and the editor re-evaluates it as other fields change, so each
# of its up to 1 + MAX_SPLITS pool sizes is searched once, not every time (the search is a pure function of
# the request and the two catalog rows it reads). Bounded, least recently used dropped first.
_SEARCHED: OrderedDict[str, LayoutEstimate | None] = OrderedDict()
SEARCHED_MAX = 512


def _trainer_row(setup: _Setup, nodes: int, cache: dict[int, LayoutEstimate | None]) -> LayoutEstimate | None:
    """The training engine's best layout for one update on ``nodes`` nodes (None: none fits)."""
    if nodes not in cache:
        req = {**setup.base, "cluster": {**setup.base["cluster"], "nodes": nodes}}
        key = json.dumps([req, repr(setup.accelerator), repr(setup.fabric)], sort_keys=True, default=repr)
        if key in _SEARCHED:
            _SEARCHED.move_to_end(key)
        else:
            try:
                parsed = training.parse_request(req, where=setup.where, **setup.catalog)
                _SEARCHED[key] = training.estimate_problem(parsed).chosen
            except InfeasibleError:
                _SEARCHED[key] = None
            while len(_SEARCHED) > SEARCHED_MAX:
                _SEARCHED.popitem(last=False)
        cache[nodes] = _SEARCHED[key]
    return cache[nodes]


def _placement(
    setup: _Setup, placement: str, gpus: tuple[int, int], parts: tuple[RolloutTime, TrainTime, RLStep]
) -> RLPlacement:
    rollout, train, step = parts
    total = gpus[0] + gpus[1] if placement == "disaggregated" else gpus[0]
    seconds = setup.workload.steps * step.seconds
    apart = placement == "disaggregated"
    return RLPlacement(
        placement=placement,
        mode=setup.workload.mode if placement == "disaggregated" else "sync",
        rollout_gpus=gpus[0],
        trainer_gpus=gpus[1],
        step=step,
        rollout=rollout,
        train=train,
        weight_sync_bytes=setup.sync_bytes,
        days=seconds / 86_400.0,
        gpu_hours=seconds * total / 3600.0,
        rollout_accelerator=setup.rollout_part[0].slug,
        trainer_accelerator=setup.accelerator.slug,
        rollout_gpu_hours=seconds * gpus[0] / 3600.0 if apart else 0.0,
        trainer_gpu_hours=seconds * gpus[1] / 3600.0,
    )


def colocated(setup: _Setup, cache: dict[int, LayoutEstimate | None]) -> RLPlacement | None:
    """Every GPU alternates rollout and training. The rollout runs either beside the resident training
    states (weights, gradients, optimizer: HBM less by their GiB) or with them offloaded to host memory and
    back (2 · their bytes over the host link, PCIe where the part states none), whichever step is shorter."""
    row = _trainer_row(setup, setup.nodes, cache)
    if row is None:
        return None
    gpus = setup.nodes * setup.gpus_per_node
    mem = row.memory_per_gpu_gib
    states_gib = float(mem.weights + mem.gradients + mem.optimizer)
    acc = setup.accelerator
    host_gbps = acc.host_link_gbps or acc.pcie_bandwidth_gbps
    offload_s = 2.0 * states_gib * GIB / (host_gbps * 1e9)
    resident_acc = replace(acc, memory_gib=max(acc.memory_gib - states_gib, 1e-3))
    options = []
    for accelerator, extra in ((resident_acc, 0.0), (acc, offload_s)):
        inp = serving_input(setup.workload, setup.model, accelerator, setup.gpus_per_node)
        rollout = rollout_time(inp, setup.workload, gpus=gpus, factor=setup.factor)
        if rollout is not None:
            options.append((rollout.seconds + extra, rollout, extra))
    if not options:
        return None
    _, rollout, extra = min(options, key=lambda o: o[0])
    sync = weight_sync_s(
        sync_bytes=setup.sync_bytes,
        colocated=True,
        accelerator=acc,
        nic_gbps=setup.nic_gbps,
        fabric_efficiency=setup.fabric.collective_efficiency,
        trainer_pp=row.parallelism.pp,
    )
    train = train_time(row, setup.workload, setup.factor)
    step = compose_step(
        placement="colocated",
        mode="sync",
        rollout_s=rollout.seconds,
        sync_s=sync,
        train_s=train.seconds,
        offload_s=extra,
    )
    return _placement(setup, "colocated", (gpus, gpus), (rollout, train, step))


def disaggregated(
    setup: _Setup, rollout_nodes: int, cache: dict[int, LayoutEstimate | None]
) -> RLPlacement | None:
    """A rollout pool of ``rollout_nodes`` nodes and a trainer pool of the rest (with a rollout pool of its
    own: the rollout part's ``rollout_nodes`` nodes and the whole cluster as trainers); None when either side
    fits nothing."""
    trainer_nodes = setup.nodes if setup.pool else setup.nodes - rollout_nodes
    row = _trainer_row(setup, trainer_nodes, cache)
    if row is None:
        return None
    part, gpn = setup.rollout_part
    inp = serving_input(setup.workload, setup.model, part, gpn)
    rollout = rollout_time(inp, setup.workload, gpus=rollout_nodes * gpn, factor=setup.factor)
    if rollout is None:
        return None
    sync = weight_sync_s(
        sync_bytes=setup.sync_bytes,
        colocated=False,
        accelerator=setup.accelerator,
        nic_gbps=setup.sync_nic_gbps,
        fabric_efficiency=setup.fabric.collective_efficiency,
        trainer_pp=row.parallelism.pp,
    )
    train = train_time(row, setup.workload, setup.factor)
    step = compose_step(
        placement="disaggregated",
        mode=setup.workload.mode,
        rollout_s=rollout.seconds,
        sync_s=sync,
        train_s=train.seconds,
    )
    gpus = (rollout_nodes * gpn, trainer_nodes * setup.gpus_per_node)
    return _placement(setup, "disaggregated", gpus, (rollout, train, step))


def split_candidates(nodes: int, limit: int = MAX_SPLITS) -> list[int]:
    """Rollout-pool node counts to try: every count 1 … nodes − 1, or ``limit`` of them evenly spaced."""
    if nodes < 2:
        return []
    counts = np.unique(np.round(np.linspace(1, nodes - 1, min(limit, nodes - 1))).astype(int))
    return [int(c) for c in counts]


def _pick(options: list[RLPlacement]) -> RLPlacement:
    """Fewest days; a tie (within 0.1 %) goes to fewer GPUs (every placement here uses the design's nodes,
    so to the one with fewer), then to colocated (one pool, no split to run), then to the fewer days."""
    best = min(o.days for o in options)
    close = [o for o in options if o.days <= best * 1.001]
    return min(
        close,
        key=lambda o: (
            o.rollout_gpus + (o.trainer_gpus if o.placement == "disaggregated" else 0),
            o.placement != "colocated",
            o.days,
        ),
    )


def estimate(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    framework_factor: float = FRAMEWORK_FACTOR,
    where: Sections | None = None,
    rl_at: str = "rl",
) -> RLResult:
    """An RL run on the request's cluster: the colocated placement and every disaggregated split searched
    (``rl.placement`` may fix one), the fastest chosen. Request: ``model``, ``training`` (precision and
    levers; tokens and batch come from ``rl``), ``cluster`` and ``rl`` (rl_request.FIELDS). Raises
    InputError naming the field, InfeasibleError when no placement fits. ``framework_factor`` is for the
    calibration (1: the engines' figures as they are). Errors name the user's field: ``where``, where the
    request's model, training and cluster sit (default: a request sent as it is), ``rl_at`` its ``rl``."""
    catalog = {"accelerators": accelerators, "fabrics": fabrics}
    setup = _setup(request, catalog, framework_factor, where or Sections(), rl_at)
    wl = setup.workload
    cache: dict[int, LayoutEstimate | None] = {}
    found: list[RLPlacement] = []
    splits: list[SplitPoint] = []
    if setup.pool is not None:
        # A rollout pool of its own: the one split given (engine/rl/rl_request.py refuses colocated).
        option = disaggregated(setup, setup.pool[2], cache)
        splits.append(SplitPoint(setup.pool[2], setup.nodes, None if option is None else option.days))
        found += [option] if option is not None else []
    elif wl.placement in ("search", "colocated") and wl.mode == "sync":
        co = colocated(setup, cache)
        splits.append(SplitPoint(0, setup.nodes, None if co is None else co.days))
        found += [co] if co is not None else []
    if setup.pool is None and wl.placement in ("search", "disaggregated"):
        if setup.nodes < 2:
            raise InputError(
                "disaggregated pools need at least 2 nodes (one each)",
                field=under(setup.where.cluster, "nodes"),
            )
        for r in split_candidates(setup.nodes):
            option = disaggregated(setup, r, cache)
            splits.append(SplitPoint(r, setup.nodes - r, None if option is None else option.days))
            found += [option] if option is not None else []
    if not found:
        raise InfeasibleError(
            f"no placement of {setup.model.name or 'the policy'} fits on {setup.nodes} nodes of "
            f"{setup.accelerator.name}"
            + (f" and {setup.pool[2]} rollout nodes of {setup.pool[0].name}" if setup.pool else "")
            + ": add nodes",
            field=under(setup.where.cluster, "nodes"),
        )
    chosen = _pick(found)
    best_per_kind = [
        min((o for o in found if o.placement == k), key=lambda o: o.days)
        for k in ("colocated", "disaggregated")
        if any(o.placement == k for o in found)
    ]
    return RLResult(
        workload=wl.to_json(),
        samples_per_step=wl.samples_per_step,
        rollout_tokens_per_step=wl.rollout_tokens_per_step,
        train_tokens_per_step=wl.train_tokens_per_step,
        chosen=chosen,
        options=tuple(best_per_kind),
        splits=tuple(splits),
        assumptions=ASSUMPTIONS,
    )


__all__ = ["estimate", "parse_rl"]
