"""Serving planner: memory, latency, throughput and sizing for LLM inference (its $ per million tokens:
engine.serving_cost).

Pure Python + numpy (no Django, no I/O). The model shapes are the training engine's (``model.ModelShape``,
``presets.PRESETS``), the accelerators the catalog's (``hardware.AcceleratorSpec``). This engine answers the
physics (:func:`sizing`: layouts, replicas, throughput, latency); the owning and renting costs are added by
engine.serving_cost (``serving_cost.estimate``), which prices them through the cost engine: serving never
imports cost. Formulas and sources: docs/serving-engine.md.

The model is a roofline of the two serving phases (Pope et al. 2022, "Efficiently Scaling Transformer
Inference", arXiv:2211.05102, Sec. 2-3):

* prefill of a prompt of ``s`` tokens is compute bound: 2·N_active·s + 2·s²·d_attn·L FLOPs (causal
  attention), at ``compute_efficiency`` of the dense peak of the weight precision;
* one decode step of a batch of ``B`` sequences is memory-bandwidth bound: it reads the weights once and the
  KV cache of every sequence, at ``bandwidth_efficiency`` of the HBM bandwidth, unless its 2·N_active·B FLOPs
  take longer;
* tensor (and expert) parallel collectives cross the scale-up link: two all-reduces of B·h activations per
  layer (Megatron-LM, Shoeybi et al. 2019, Sec. 3), ring cost 2(t−1)/t · bytes / bandwidth plus a latency.

Continuous batching (Yu et al. 2022, Orca, OSDI) interleaves prefills with decode steps, so one replica
serving R requests/s at batch B spends R·t_prefill of each second on prefills and the rest decoding:
R = 1 / (t_prefill + n_out · TPOT(B) / B); users see TPOT(B) / (1 − R·t_prefill) between tokens.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from statistics import NormalDist
from types import MappingProxyType
from typing import Any

import numpy as np

from clusterdesigner.engine.core.arrays import packed_key
from clusterdesigner.engine.core.bounds import COST as COST_BOUNDS
from clusterdesigner.engine.core.errors import (
    EngineError,
    InfeasibleError,
    InputError,
    UnknownReferenceError,
    under,
)
from clusterdesigner.engine.core.hardware import AcceleratorSpec
from clusterdesigner.engine.core.model import ModelShape, model_from_dict
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.core.units import HOURS_PER_YEAR

# Bytes per weight or KV element. FP4 is NVFP4/MXFP4: 4-bit values plus one 8-bit scale per 16 (NVFP4) or
# 32 (MXFP4) elements; 0.5 byte ignores the scales (≤ 3 % more).
BYTES = {"bf16": 2.0, "fp8": 1.0, "fp4": 0.5}
SERVING_PRECISIONS = tuple(BYTES)
ACTIVATION_BYTES = 2.0  # activations travel in BF16 between GPUs (TensorRT-LLM and vLLM do so for FP8)
# Batch sizes the search considers: 1 … 4,096 concurrent sequences, about 12 per doubling.
BATCH_GRID = np.unique(np.round(np.geomspace(1, 4096, 145)).astype(np.int64))
PP_CHOICES = (1, 2, 4, 8)
# A million requests per second is some thousand times the largest public chat services; beyond it the
# sizing's whole numbers (replicas, nodes) leave the range the cost engine prices.
MAX_REQUESTS_PER_S = 1_000_000
SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0


def _finite(value: Any) -> bool:
    """A JSON number that is a finite float: not a bool, not NaN/inf, not an integer too large for a float
    (10**400 would raise OverflowError, a 500, wherever it is compared with a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _positive(value: Any, path: str) -> float:
    if not _finite(value) or value <= 0:
        raise InputError(f"must be a positive finite number, got {_shown(value)}", field=path)
    return float(value)


def _nonnegative(value: Any, path: str) -> float:
    if not _finite(value) or value < 0:
        raise InputError(f"must be a finite number, zero or more, got {_shown(value)}", field=path)
    return float(value)


def _shown(value: Any) -> str:
    """``value`` for a message, a huge integer shortened (its repr could be thousands of digits)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}… ({len(text)} characters)"


def _fraction(value: Any, path: str) -> float:
    number = _positive(value, path)
    if number > 1:
        raise InputError(f"must be in (0, 1], got {value!r}", field=path)
    return number


# A node's GPUs and the managed-service overhead are bounded as the cost engine bounds them
# (engine/core/bounds.py): the owning and renting costs are the cost engine's.
MAX_GPUS_PER_NODE = int(COST_BOUNDS["cluster.gpus_per_node"].high)


def _whole(value: Any, path: str, *, low: int = 1, high: int = 10_000_000) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"must be a whole number from {low:,} to {high:,}, got {_shown(value)}", field=path)
    return value


@dataclass(frozen=True)
class ServingEfficiency:
    """Fractions of the roofline a serving stack reaches, and memory it keeps back.

    ``bandwidth_efficiency``: fraction of HBM bandwidth a decode step's reads reach. ``compute_efficiency``:
    fraction of the dense peak the matmuls reach. ``memory_reserve_fraction``: HBM kept back for
    activations, CUDA graphs and fragmentation (vLLM's default ``gpu_memory_utilization`` is 0.9, so 0.1).
    ``collective_latency_us``: fixed cost of one small all-reduce on the scale-up link, paid twice a layer at
    every decode step of a tensor-parallel replica; at batch 1 the step is the weights' read plus these
    2 · L latencies, so models of different depth on one stack tell the two apart (on MI300X with vLLM, the
    70B step is 2.8× shorter than the 405B step where the weights alone would make it 5.8×). Fitted for a
    stack whose fit rows include a tensor-parallel batch-1 row, else the default.
    ``sequence_overhead_us``: time each running sequence adds to a decode step outside the GPU kernels'
    roofline (the scheduler's per-sequence bookkeeping, block tables, sampling and detokenisation; vLLM
    runs these in Python between steps: Kwon et al. 2023, Sec. 4–5; the vLLM v0.6.0 release post measures
    them as a large share of a step at high batch). Zero for a stack whose fit rows say so.
    The defaults are fitted on the declared subset of tests/engine/data/serving_runs.csv (bench/
    serving_calibration.py prints the fit and the error on the held-out rows).
    """

    bandwidth_efficiency: float = 0.7
    compute_efficiency: float = 0.5
    memory_reserve_fraction: float = 0.1
    collective_latency_us: float = 8.0
    sequence_overhead_us: float = 0.0
    # Fixed time from a request's arrival to its prefill beyond the queueing model (tokenisation, the
    # scheduler's admission window): fitted per stack on the latency fit rows (serving_latency_runs.csv).
    first_token_overhead_ms: float = 0.0
    # Share of a request's output whose KV cache the scheduler holds for it while it runs, beside its prompt:
    # 0.5 when blocks are allocated as tokens are generated (vLLM's and SGLang's paged caches, preempting on
    # overflow: a running sequence holds n_in + n_out/2 on average), 1 when the whole n_in + n_out is reserved
    # at admission (TensorRT-LLM's default capacity scheduler policy GUARANTEED_NO_EVICT, and trtllm-bench's
    # own batch sizing, tensorrt_llm/bench/build/tuning.py, which divides the KV memory by ISL + OSL).
    kv_reserved_output_fraction: float = 0.5
    # Fraction of ``compute_efficiency`` FP4 weight matmuls keep: block-scaled FP4 GEMMs (NVFP4, MXFP4) reach
    # a smaller share of their doubled peak than FP8 ones do of theirs (the scales' loads and the dequantised
    # epilogue); fitted on the stack's FP4 fit rows after the other constants, 1 for a stack without any.
    fp4_compute_scale: float = 1.0
    # Whether a running replica's prompts ride in its decode iterations, sharing their weight read (mixed
    # batches / chunked prefill: vLLM V1, which AMD's 2025 images run, and TensorRT-LLM 1.0's PyTorch
    # backend), or pay a read of their own (``prefill_s(shared_read=...)`` in ``replica_rate``). False for
    # the 2024 vLLM-on-ROCm (V0: prefill-only iterations) and the MLPerf v4.1 engines as fitted before.
    prefill_shares_weight_read: bool = False
    # Per-sequence host (CPU) time of a decode step that the GPU waits for when the engine schedules, prepares
    # and returns one step at a time: vLLM V0's default single-step loop (LLMEngine.step: scheduler.schedule,
    # the model runner's per-sequence input preparation, the sampler's results brought to the host and
    # turned into per-sequence outputs before the next step is scheduled). vLLM's multi-step scheduling
    # (``--num-scheduler-steps n``, vllm/worker/multi_step_model_runner.py) does that work once per n steps
    # and advances the inputs on the GPU; the vLLM v0.6.0 performance post (September 2024) names the host
    # side as the step's bottleneck it removes. A run that keeps this work off the step's critical path
    # (``ServingInput.host_overlapped``) pays none of it; the planner's own deployments pay it (a server
    # streams every token to its caller). Beside ``sequence_overhead_us``, which every run pays. Fitted
    # second, with the other constants held, on a stack whose fit rows include both kinds of run (ROCm/vllm's
    # README: ``benchmark_latency.py`` runs single-step and detokenises; its ``benchmark_throughput.py``
    # command sets ``--num-scheduler-steps 10`` on vLLM 0.7.3 and ``--disable-detokenize`` on v0.10.0).
    host_sequence_us: float = 0.0
    # Fraction of ``compute_efficiency`` the routed experts' grouped GEMMs reach beyond what the engine counts
    # (their rows padded to the tile, ``routed_expert_rows``, and the tiles' fixed work,
    # ``moe_tile_overhead_k``): the tokens permuted to and from expert order around them, a grouped GEMM's
    # scheduling over uneven experts. Fitted, with ``moe_tile_overhead_k`` and the other constants held, on a
    # stack's attention-DP MoE fit rows (their own kernels); 1 for a stack without any.
    moe_compute_scale: float = 1.0
    # Fixed work of one output tile of the routed experts' grouped GEMMs, as a length of the reduction it
    # computes (the software pipeline's fill before the first MMA and the epilogue's scaling, activation and
    # store after the last): a GEMM of reduction length K takes (K + this) / K of its MMA time, so experts
    # with a short reduction (Qwen3 30B-A3B's down projection: 768) lose more than wide ones (Llama 4: 8,192).
    # Fitted with ``moe_compute_scale`` on the attention-DP MoE fit rows; 0 for a stack without any.
    moe_tile_overhead_k: float = 0.0

    def __post_init__(self) -> None:
        _fraction(self.bandwidth_efficiency, "efficiency.bandwidth_efficiency")
        _fraction(self.compute_efficiency, "efficiency.compute_efficiency")
        if not 0 <= self.memory_reserve_fraction < 1:
            raise InputError("must be in [0, 1)", field="efficiency.memory_reserve_fraction")
        if not math.isfinite(self.collective_latency_us) or self.collective_latency_us < 0:
            raise InputError("must be zero or more", field="efficiency.collective_latency_us")
        if not math.isfinite(self.sequence_overhead_us) or not 0 <= self.sequence_overhead_us <= 1e5:
            raise InputError("must be between 0 and 100,000 µs", field="efficiency.sequence_overhead_us")
        if not math.isfinite(self.host_sequence_us) or not 0 <= self.host_sequence_us <= 1e5:
            raise InputError("must be between 0 and 100,000 µs", field="efficiency.host_sequence_us")
        if not math.isfinite(self.first_token_overhead_ms) or not 0 <= self.first_token_overhead_ms <= 1e5:
            raise InputError("must be between 0 and 100,000 ms", field="efficiency.first_token_overhead_ms")
        _fraction(self.fp4_compute_scale, "efficiency.fp4_compute_scale")
        _fraction(self.moe_compute_scale, "efficiency.moe_compute_scale")
        if not math.isfinite(self.moe_tile_overhead_k) or not 0 <= self.moe_tile_overhead_k <= 1e5:
            raise InputError("must be between 0 and 100,000", field="efficiency.moe_tile_overhead_k")
        if (
            not math.isfinite(self.kv_reserved_output_fraction)
            or not 0.5 <= self.kv_reserved_output_fraction <= 1
        ):
            raise InputError(
                "must be between 0.5 (allocated as generated) and 1 (reserved at admission)",
                field="efficiency.kv_reserved_output_fraction",
            )


# The efficiency of each serving stack, fitted on the declared ``fit`` rows of
# tests/engine/data/serving_runs.csv (MLPerf Inference v4.1 closed results and vLLM posts); the error on the
# held-out rows is printed by bench/serving_calibration.py and asserted by
# tests/engine/test_serving_calibration.py, which also checks that these numbers are what the fit gives.
STACKS: Mapping[str, ServingEfficiency] = MappingProxyType(
    {
        # fitted on MLPerf v4.1 DGX H100 Llama 2 70B offline and Mixtral 8x7B offline (three constants on two
        # rows: the grid's first best point; the held-out rows, not the fit, say whether they generalise).
        # Its KV reservation and prefill are kept as fitted before issue #37 (0.5 of the output, prompts
        # reading the weights): the MLPerf results do not state the harness's scheduler policy, and with
        # the shared read its refit drifts to 0.65 / 0.60 and the server rows' p99 TPOT misses by 44 %
        "tensorrt-llm": ServingEfficiency(
            bandwidth_efficiency=0.9, compute_efficiency=0.65, sequence_overhead_us=25.0
        ),
        # TensorRT-LLM 1.0, PyTorch backend (trtllm-bench, 2025): fitted on the 'fit' rows of the dense tables
        # of its perf overview (docs/source/performance/perf-overview.md: Llama 3.1 8B, 3.3 70B and 3.1 405B
        # on H100 and H200 in FP8, B200 and GB200 in FP4); the FP4 matmuls' share fitted second, on the FP4
        # rows. Its scheduler reserves the whole request's KV (GUARANTEED_NO_EVICT, TensorRT-LLM's default
        # capacity policy) and mixes prompts into decode iterations (in-flight batching). The routed experts'
        # share and its grouped GEMMs' fixed work per tile fitted last, on the MoE tables' fit rows (Llama 4
        # Scout/Maverick, Qwen3 30B-A3B/235B-A22B), run as published: attention data-parallel with wide
        # expert parallelism (enable_attention_dp)
        "tensorrt-llm-2025": ServingEfficiency(
            bandwidth_efficiency=0.75,
            compute_efficiency=0.5,
            sequence_overhead_us=0.0,
            kv_reserved_output_fraction=1.0,
            fp4_compute_scale=0.6,
            prefill_shares_weight_read=True,
            moe_compute_scale=0.4,
            moe_tile_overhead_k=2048.0,
        ),
        # vLLM on ROCm of 2024: fitted on MLPerf v4.1 8x MI300X Llama 2 70B offline and OCI's vLLM Llama 3.1
        # 405B batch 1 and 64 (October 2024)
        "vllm-rocm": ServingEfficiency(
            bandwidth_efficiency=0.85,
            compute_efficiency=0.8,
            sequence_overhead_us=200.0,
            collective_latency_us=64.0,
            # fitted on the MLPerf v4.1 8x MI300X Llama 2 70B server row's TTFT p50/p90/p99
            # (serving_latency_runs.csv): AMD's 2024 scheduler admits prompts in windows, TTFT p50 990 ms
            first_token_overhead_ms=950.0,
        ),
        # AMD's rocm/vllm images of 2025 (vLLM 0.7–0.10, after vLLM's v0.6 work on the CPU side of a step):
        # fitted on ROCm/vllm's dev-docker README (vLLM v0.10.0 image), Llama 3.1 70B and 405B at 128/2048,
        # batch 1 and 128, and its throughput table; the host time of a single-step loop fitted second on the
        # same rows (its latency runs pay it, its throughput runs do not: ``host_sequence_us``)
        "vllm-rocm-2025": ServingEfficiency(
            bandwidth_efficiency=0.6,
            compute_efficiency=0.2,
            sequence_overhead_us=25.0,
            collective_latency_us=32.0,
            prefill_shares_weight_read=True,
            host_sequence_us=50.0,
        ),
    }
)
DEFAULT_STACK = "tensorrt-llm"
# Latency targets at a fixed percentile, beside ``targets.ttft_s``/``tpot_s`` at ``targets.percentile``.
PERCENTILE_TARGETS = tuple(f"{k}_p{q}_s" for k in ("ttft", "tpot") for q in (50, 90, 99))
ARRIVALS = ("poisson", "backlog")
# The example request of docs/serving-engine.md, the tests and bench/serving.py: Llama 3 70B on H100, chat
# lengths, a 50 ms TPOT target, 20 requests/s on average and twice that at the peak.
EXAMPLE_REQUEST: Mapping[str, Any] = MappingProxyType(
    {
        "model": {"preset": "llama3-70b"},
        "accelerator": "h100-sxm",
        "input_tokens": 1024,
        "output_tokens": 256,
        "targets": {"ttft_s": 2.0, "tpot_s": 0.05},
        "demand": {"requests_per_s": 20, "peak_to_mean": 2},
    }
)


@dataclass(frozen=True)
class ServingInput:
    """One serving question: a model on an accelerator, a request shape, targets and demand.

    ``requests_per_s`` is the mean demand and ``peak_to_mean`` the ratio of the busiest hour to the mean
    (the daily shape); sizing serves the peak, cost is spread over the mean. ``ttft_s``/``tpot_s`` are the
    targets at ``percentile``. ``arrivals``: ``poisson`` (requests arrive independently, so the running batch
    fluctuates and the sizing keeps headroom for its ``percentile``: ``poisson_mean_batch``) or ``backlog``
    (a queue always waiting, as in a batch job or MLPerf Offline: every slot stays full).
    ``tp``/``pp``/``ep`` fix part of the layout (0: searched). ``disaggregated`` adds the option of separate
    prefill and decode pools.
    """

    model: ModelShape
    accelerator: AcceleratorSpec
    input_tokens: int
    output_tokens: int
    requests_per_s: float
    weight_precision: str = "fp8"
    kv_precision: str = "fp8"
    ttft_s: float = 2.0
    tpot_s: float = 0.2
    percentile: float = 99.0
    peak_to_mean: float = 2.0
    gpus_per_node: int = 8
    tp: int = 0
    pp: int = 0
    ep: int = 0
    max_batch: int = 4096
    disaggregated: bool = True
    arrivals: str = "poisson"
    # Coefficient of variation of the time between arrivals: 1 for Poisson, above 1 for bursty traffic
    # (the queueing model's index of dispersion of arrivals per iteration, c_a², as in Allen–Cunneen).
    arrival_cv: float = 1.0
    # Targets at other percentiles than ``percentile``, each met by the sizing: (name, seconds), names from
    # PERCENTILE_TARGETS (``ttft_p90_s``, ``tpot_p50_s``, ...), judged on the queueing model's percentiles.
    percentile_targets: tuple[tuple[str, float], ...] = ()
    # Prefix caching: share of prompt tokens served from the KV cache (0: none); memory is not discounted.
    prefix_cache_hit_rate: float = 0.0
    # Speculative decoding / multi-token prediction: k draft tokens a step, each accepted with probability α,
    # the draft's step costing draft_cost × the target's plain decode step (0 draft tokens: off).
    draft_tokens: int = 0
    acceptance_rate: float = 0.0
    draft_cost: float = 0.0
    kv_transfer_gbps: float = 50.0  # GB/s per GPU between pools: one 400 Gb/s NIC per GPU
    efficiency: ServingEfficiency = field(default_factory=lambda: STACKS[DEFAULT_STACK])
    # A distribution of request lengths: (input tokens, output tokens, share of requests); empty: every
    # request is input_tokens/output_tokens. Given, input_tokens/output_tokens are its rounded means (shown
    # only; the formulas read the classes).
    lengths: tuple[tuple[int, int, float], ...] = ()
    # The run keeps the stack's per-sequence host work off each step's critical path (vLLM V0 multi-step
    # scheduling, an offline run that does not detokenise): ``ServingEfficiency.host_sequence_us`` is not
    # paid. False for a server streaming tokens to its users, which the planner sizes.
    host_overlapped: bool = False
    # Attention data-parallel with wide expert parallelism (DeepSeek-style DEP) in a replica of tp GPUs: each
    # GPU runs attention for its own 1/tp of the sequences with all heads (their KV on it alone) and holds
    # the non-expert weights whole; the routed experts are spread ep = tp ways; tokens reach their experts
    # by an all-to-all dispatch and return by a combine in every MoE layer (SGLang --enable-dp-attention,
    # TensorRT-LLM enable_attention_dp, vLLM --data-parallel-size with --enable-expert-parallel).
    # None: searched beside the tensor-parallel layouts for an MoE model; True/False: fixed.
    attention_dp: bool | None = None
    # Where the request sits in what the user sent ("" sent to the serving API as it is; a design's:
    # spec.serving), and where the model and accelerator given for it sit (None: the request's own; a
    # design's: the serving section as a whole), so that every error, a later one too, names the user's
    # field. Not part of the input's figures (to_json leaves them out).
    at: str = ""
    given_at: str | None = None

    def path(self, field: str) -> str:
        """A field of the request (``demand.requests_per_s``) as the user's path."""
        return under(self.at, field)

    def given(self, field: str) -> str:
        """A field the caller gives for the request (``accelerator``, ``model.preset``) as the user's path."""
        return self.path(field) if self.given_at is None else self.given_at

    def __post_init__(self) -> None:
        for name in ("weight_precision", "kv_precision"):
            value = getattr(self, name)
            if value not in BYTES:
                raise InputError(
                    f"unknown precision {value!r}; use one of {', '.join(SERVING_PRECISIONS)}",
                    field=self.path(name),
                )
        if self.weight_precision not in self.accelerator.dense_tflops:
            have = ", ".join(sorted(self.accelerator.dense_tflops))
            raise InputError(
                f"{self.accelerator.name} has no dense {self.weight_precision} peak (it supports {have})",
                field=self.path("weight_precision"),
            )
        _whole(self.input_tokens, self.path("input_tokens"), high=10_000_000)
        _whole(self.output_tokens, self.path("output_tokens"), high=10_000_000)
        _positive(self.requests_per_s, self.path("demand.requests_per_s"))
        _positive(self.ttft_s, self.path("targets.ttft_s"))
        _positive(self.tpot_s, self.path("targets.tpot_s"))
        if not 0 < self.percentile < 100:
            raise InputError("must be between 0 and 100", field=self.path("targets.percentile"))
        for name, limit in self.percentile_targets:
            if name not in PERCENTILE_TARGETS:
                raise InputError(
                    f"unknown target; use {', '.join(PERCENTILE_TARGETS)}", field=self.path(f"targets.{name}")
                )
            _positive(limit, self.path(f"targets.{name}"))
        if not _finite(self.prefix_cache_hit_rate) or not 0 <= self.prefix_cache_hit_rate < 1:
            raise InputError("must be in [0, 1)", field=self.path("prefix_cache_hit_rate"))
        _whole(self.draft_tokens, self.path("speculative.draft_tokens"), low=0, high=16)
        if not _finite(self.acceptance_rate) or not 0 <= self.acceptance_rate < 1:
            raise InputError("must be in [0, 1)", field=self.path("speculative.acceptance_rate"))
        if not _finite(self.draft_cost) or not 0 <= self.draft_cost <= 1:
            raise InputError(
                "must be in [0, 1] (a share of the target's step)", field=self.path("speculative.draft_cost")
            )
        if not _finite(self.arrival_cv) or not 0 <= self.arrival_cv <= 100:
            raise InputError("must be between 0 and 100 (1: Poisson)", field=self.path("demand.arrival_cv"))
        if self.arrivals not in ARRIVALS:
            raise InputError(
                f"unknown arrivals {self.arrivals!r}; use one of {', '.join(ARRIVALS)}",
                field=self.path("arrivals"),
            )
        if _positive(self.peak_to_mean, self.path("demand.peak_to_mean")) < 1:
            raise InputError(
                "must be at least 1 (the peak is never below the mean)",
                field=self.path("demand.peak_to_mean"),
            )
        _whole(self.gpus_per_node, self.path("gpus_per_node"), high=MAX_GPUS_PER_NODE)
        for name in ("tp", "pp", "ep"):
            _whole(getattr(self, name), self.path(f"layout.{name}"), low=0, high=1024)
        _whole(self.max_batch, self.path("max_batch"), high=1_000_000)
        _positive(self.kv_transfer_gbps, self.path("kv_transfer_gbps"))
        for index, (n_in, n_out, share) in enumerate(self.lengths):
            _whole(n_in, self.path(f"lengths.{index}.input"), high=10_000_000)
            _whole(n_out, self.path(f"lengths.{index}.output"), high=10_000_000)
            _fraction(share, self.path(f"lengths.{index}.share"))
        if self.lengths and abs(sum(c[2] for c in self.lengths) - 1.0) > 1e-3:
            raise InputError("the shares must add up to 1", field=self.path("lengths"))
        if self.ep and not self.model.is_moe:
            raise InputError(
                "expert parallelism needs a mixture-of-experts model", field=self.path("layout.ep")
            )
        if self.attention_dp is not None and not isinstance(self.attention_dp, bool):
            raise InputError(
                f"must be true or false, got {_shown(self.attention_dp)}",
                field=self.path("layout.attention_dp"),
            )
        if self.attention_dp and not self.model.is_moe:
            raise InputError(
                "attention data parallelism with wide expert parallelism needs a mixture-of-experts model",
                field=self.path("layout.attention_dp"),
            )
        if self.attention_dp and self.ep and self.tp and self.ep != self.tp:
            raise InputError(
                f"with attention_dp the experts are spread over the replica's tp GPUs: ep must be {self.tp}",
                field=self.path("layout.ep"),
            )
        if self.ep and self.model.experts % self.ep:
            raise InputError(
                f"ep {self.ep} does not divide the model's {self.model.experts} experts",
                field=self.path("layout.ep"),
            )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["at"], data["given_at"]
        data["model"] = {k: getattr(self.model, k) for k in self.model.__dataclass_fields__}
        data["accelerator"] = self.accelerator.slug
        return data

    @property
    def tokens_per_verification(self) -> float:
        """Tokens a speculative step yields on average, (1 − α^(k+1)) / (1 − α) (Leviathan et al. 2023,
        arXiv:2211.17192, eq. 1): k = 3, α = 0.7 gives 2.53; 1 without speculation."""
        a, k = self.acceptance_rate, self.draft_tokens
        return (1.0 - a ** (k + 1)) / (1.0 - a) if k else 1.0

    @property
    def classes(self) -> tuple[tuple[int, int, float], ...]:
        """The request lengths as (input, output, share) classes: ``lengths``, or the one fixed length."""
        return self.lengths or ((self.input_tokens, self.output_tokens, 1.0),)

    @property
    def mean_input_tokens(self) -> float:
        """Σ share · n_in: prompt tokens per request."""
        return float(sum(share * n_in for n_in, _, share in self.classes))

    @property
    def mean_output_tokens(self) -> float:
        """Σ share · n_out: generated tokens per request."""
        return float(sum(share * n_out for _, n_out, share in self.classes))

    @property
    def context_tokens(self) -> float:
        """Mean tokens a running sequence holds in its KV cache: n_in + n_out/2 for one length (paged
        attention allocates as it generates: Kwon et al. 2023, vLLM, SOSP, Sec. 4). With a distribution, a
        class holds its slots for n_out decode steps, so the running batch is weighted by share · n_out:
        Σ s·n_out·(n_in + n_out/2) / Σ s·n_out (long answers are over-represented in the batch)."""
        weight = sum(share * n_out for _, n_out, share in self.classes)
        return float(
            sum(share * n_out * (n_in + n_out / 2.0) for n_in, n_out, share in self.classes) / weight
        )

    @property
    def reserved_context_tokens(self) -> float:
        """KV tokens the scheduler holds for one running sequence: n_in + f · n_out with f the stack's
        ``kv_reserved_output_fraction`` (0.5: ``context_tokens``, allocated as generated; 1: the whole
        request reserved at admission), weighted by share · n_out over the length classes as there."""
        f = self.efficiency.kv_reserved_output_fraction
        weight = sum(share * n_out for _, n_out, share in self.classes)
        return float(sum(share * n_out * (n_in + f * n_out) for n_in, n_out, share in self.classes) / weight)

    @property
    def percentile_input_tokens(self) -> int:
        """The prompt length at the target percentile of requests (classes sorted by n_in, the first whose
        cumulative share reaches it): the TTFT target is judged on it."""
        total = 0.0
        ordered = sorted(self.classes)
        for n_in, _, share in ordered:
            total += share
            if total >= self.percentile / 100.0 - 1e-9:
                return n_in
        return ordered[-1][0]


# ---- memory ----------------------------------------------------------------------------------------------
def routed_expert_params(model: ModelShape) -> int:
    """Parameters of the routed experts of every MoE layer (0 for a dense model): the part attention data
    parallelism spreads over the replica's GPUs; shared experts, attention, dense MLPs, router and embeddings
    stay whole on each GPU."""
    return model.moe_layers * model.experts * model.expert_params if model.is_moe else 0


def weight_bytes_per_gpu(
    *, model: ModelShape, precision: str, tp: Any, pp: Any, attention_dp: bool = False
) -> Any:
    """Weights per GPU = total parameters × bytes per weight / (tp · pp).

    Attention, dense MLPs, the embedding and the output layer are split tp ways (Megatron-LM row/column and
    vocabulary parallelism) and the layers pp ways; experts are split ep ways by expert and tp/ep ways within
    each expert, so an ep that divides tp leaves the bytes per GPU unchanged. Numpy-friendly in tp, pp.
    With ``attention_dp`` every GPU holds the non-expert weights whole and 1/tp of the routed experts (ep =
    tp): (total − routed + routed / tp) × bytes / pp.
    """
    tp, pp = np.asarray(tp), np.asarray(pp)
    if attention_dp and model.is_moe:
        routed = routed_expert_params(model)
        return ((model.total_params - routed) + routed / tp) * BYTES[precision] / pp
    return model.total_params * BYTES[precision] / (tp * pp)


def kv_bytes_per_token(*, model: ModelShape, precision: str, context_tokens: float = 0.0) -> float:
    """KV cache per token of the whole model = layers × elements a layer × bytes: K and V of every KV head,
    kv_heads × head_dim × 2, or under multi-head latent attention (DeepSeek-V2/V3) the compressed latent and
    the shared RoPE key, kv_lora_rank + qk_rope_head_dim, stored once for all heads
    (``ModelShape.kv_cache_elements_per_token_layer``; DeepSeek-V2, arXiv:2405.04434, Sec. 2.1.4).
    DeepSeek-V3: 61 × 576 × 2 B = 70,272 B a token at BF16, where 128 full heads of 192 + 128 would hold
    61 × 128 × 320 × 2 B ≈ 5.0 MB. With ``context_tokens`` (a sequence's context) the layers are
    ``ModelShape.kv_layers``: a sliding-window or chunked layer keeps at most its window or chunk, so its
    share per context token falls as the context grows past it."""
    return model.kv_layers(context_tokens) * model.kv_cache_elements_per_token_layer * BYTES[precision]


def kv_bytes_per_token_per_gpu(
    *,
    model: ModelShape,
    precision: str,
    tp: Any,
    pp: Any,
    context_tokens: float = 0.0,
    attention_dp: bool = False,
) -> Any:
    """KV per token on one GPU: layers/pp × ceil(kv_heads/tp) × head_dim × 2 × bytes. When tp exceeds the KV
    heads, each head is replicated on tp/kv_heads GPUs (TensorRT-LLM and vLLM do so for GQA).

    Multi-head latent attention: layers/pp × (kv_lora_rank + qk_rope_head_dim) × bytes on every GPU of the
    stage, whatever tp: the latent is one KV head that every tensor-parallel rank needs for its query heads,
    so vLLM and SGLang keep a full copy on each rank (vLLM's MLA backend, vllm/v1/attention/backends/mla/
    common.py: a cache of head size 576 with num_kv_heads "assumed to be 1 for MLA"; SGLang's guide "DP, DPA
    and SGLang DP Router", docs.sglang.io: with tensor parallelism an MLA model's KV cache is duplicated on
    every GPU, the reason for its data-parallel attention, which this planner does not model).

    Local attention: layers are ``ModelShape.kv_layers(context_tokens)`` (all layers when no context is
    given), as in ``kv_bytes_per_token``.

    Attention data parallelism: each sequence's KV lives on one GPU of the replica, all its heads (or its
    whole latent) there, so a replica's sequences hold layers/pp × elements × bytes / tp per GPU on average:
    no head is replicated, and an MLA latent is not copied tp times (SGLang's reason for DP attention)."""
    layers = model.kv_layers(context_tokens)
    if attention_dp:
        per_layer = model.kv_cache_elements_per_token_layer * BYTES[precision]
        return layers / np.asarray(pp) * per_layer / np.asarray(tp, dtype=float)
    if model.is_mla:
        per_layer = model.kv_cache_elements_per_token_layer * BYTES[precision]
        return layers / np.asarray(pp) * per_layer * np.ones_like(np.asarray(tp), dtype=float)
    heads = np.ceil(model.kv_heads / np.asarray(tp))
    return layers / np.asarray(pp) * heads * model.head_dim * 2.0 * BYTES[precision]


def prefill_attention_flops(model: ModelShape, tokens: int) -> float:
    """Attention-core FLOPs of one causal prefill of ``tokens`` tokens over all layers (half the s × s
    scores): QKᵀ and AV, n² · heads · (query/key width + value width) · L, which is 2 · n² · heads · head_dim
    · L for ordinary attention. Multi-head latent attention prefills as multi-head attention, the latent
    projected up to a 192-wide key and 128-wide value per head (DeepSeek-V3; vLLM's "compute friendly"
    prefill path, vllm/v1/attention/backends/mla/common.py), so n² · heads · (nope + rope + v_head_dim) · L.
    The up-projection is the kv_b_proj matmul already in ``active_matmul_params``. Local attention (sliding
    window, chunks): the n² · L of full layers becomes n · ``ModelShape.attention_keys(n)`` (keys on the
    full-matrix scale, whose causal half is computed)."""
    keys = model.attention_keys(tokens)
    if model.is_mla:
        return 1.0 * tokens * keys * model.heads * (model.head_dim + model.v_head_dim)
    return 2.0 * tokens * keys * model.heads * model.head_dim


def mla_decode_attention_flops_per_context_token(model: ModelShape) -> float:
    """Attention-core FLOPs one decoding sequence spends per token of its context in one layer under
    multi-head latent attention with absorbed weights (vLLM's "data-movement friendly" decode path,
    vllm/v1/attention/backends/mla/common.py; FlashMLA): each head's query is projected into the latent
    space (W_UK absorbed), so it is multi-query attention over the cached latent with a query/key of
    kv_lora_rank + qk_rope_head_dim and a value of kv_lora_rank: 2 · heads · (2 · kv_lora_rank +
    qk_rope_head_dim). DeepSeek-V3: 2 · 128 · (1,024 + 64) = 278,528, 3.4× the 4 · 128 · 160 of
    un-absorbed attention over 192/128-wide heads, read from 576 cached elements instead of 128 × 320. The
    absorption matmuls (W_UK on the query, W_UV on the output) cost per token what kv_b_proj does, so
    ``active_matmul_params`` already counts them."""
    return 2.0 * model.heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim)


def batch_that_fits(inp: ServingInput, *, tp: Any, pp: Any) -> Any:
    """Concurrent sequences one replica holds: (memory × (1 − reserve) − weights) / (KV per token per GPU ×
    the tokens the scheduler holds per sequence, ``ServingInput.reserved_context_tokens``: the mean context
    n_in + n_out/2 when KV blocks are allocated as generated, n_in + n_out when the stack reserves the whole
    request), floored; ≤ 0 when the weights alone do not fit. Per GPU, because every GPU of a replica holds
    its share of every sequence's KV."""
    have = inp.accelerator.memory_gib * 2**30 * (1.0 - inp.efficiency.memory_reserve_fraction)
    adp = bool(inp.attention_dp)
    free = have - weight_bytes_per_gpu(
        model=inp.model, precision=inp.weight_precision, tp=tp, pp=pp, attention_dp=adp
    )
    held = inp.reserved_context_tokens
    per_seq = (
        kv_bytes_per_token_per_gpu(
            model=inp.model, precision=inp.kv_precision, tp=tp, pp=pp, context_tokens=held, attention_dp=adp
        )
        * held
    )
    return np.floor(free / per_seq)


# ---- time ------------------------------------------------------------------------------------------------
def _allreduce_s(inp: ServingInput, *, tokens: Any, tp: Any, pp: Any) -> Any:
    """Two ring all-reduces of tokens × hidden BF16 activations per layer, over the layers of one stage:
    2 · (L/pp) · (2(t−1)/t · bytes / link + latency); zero when tp = 1 (Megatron-LM, Shoeybi et al. 2019).
    Under attention data parallelism there is no tensor-parallel all-reduce: ``_all_to_all_s`` instead."""
    if inp.attention_dp:
        return _all_to_all_s(inp, tokens=tokens, tp=tp, pp=pp)
    tp = np.asarray(tp, dtype=float)
    acc = inp.accelerator
    link = (acc.scaleup_bandwidth_gbps if acc.has_scaleup_link else acc.pcie_bandwidth_gbps) * 1e9
    size = np.asarray(tokens, dtype=float) * inp.model.hidden * ACTIVATION_BYTES
    one = 2.0 * (tp - 1.0) / tp * size / link + inp.efficiency.collective_latency_us * 1e-6
    return np.where(tp > 1, 2.0 * inp.model.layers / np.asarray(pp) * one, 0.0)


def _all_to_all_s(inp: ServingInput, *, tokens: Any, tp: Any, pp: Any) -> Any:
    """Attention data parallelism with wide expert parallelism (ep = tp): in each MoE layer of a stage, a
    dispatch all-to-all sends every token to the GPUs holding its top-k experts and a combine brings the
    results back. A GPU's tokens/tp tokens each go to ep · (1 − (1 − 1/ep)^k) distinct GPUs under uniform
    routing, (ep − 1)/ep of them remote (one copy per destination GPU: DeepEP's dispatch, Megatron-LM
    ``fused_a2a.py`` is_token_in_rank; the training engine's formula), hidden × BF16 bytes a copy, over the
    scale-up link; plus ``collective_latency_us`` for each: 2 · (moe_layers/pp) · (bytes / link + latency).
    Dense layers run data-parallel with their weights whole on every GPU: no collective. Zero when tp = 1."""
    m = inp.model
    ep = np.asarray(tp, dtype=float)
    acc = inp.accelerator
    link = (acc.scaleup_bandwidth_gbps if acc.has_scaleup_link else acc.pcie_bandwidth_gbps) * 1e9
    remote = ep * (1.0 - (1.0 - 1.0 / ep) ** m.top_k) * (ep - 1.0) / ep
    size = np.asarray(tokens, dtype=float) / ep * m.hidden * ACTIVATION_BYTES * remote
    one = size / link + inp.efficiency.collective_latency_us * 1e-6
    return np.where(ep > 1, 2.0 * m.moe_layers / np.asarray(pp) * one, 0.0)


# Rows a grouped GEMM pads each expert's tokens to: DeepGEMM's m-grouped contiguous kernels align every
# expert's segment to 128 rows (deepseek-ai/DeepGEMM, csrc/utils/layout.hpp,
# get_mk_alignment_for_contiguous_layout), and vLLM's and SGLang's fused MoE kernels pad each expert's tokens
# to their block's rows the same way (vllm/model_executor/layers/fused_moe/moe_align_block_size.py: at most
# numel + E · (block − 1) rows after padding).
MOE_TILE_ROWS = 128


def _busiest_rank_share(model: ModelShape, *, tokens: Any, ep: Any) -> Any:
    """The busiest expert-parallel rank's routed rows over the mean rank's: the step waits for it. Under
    uniform routing a rank receives N · k / ep of the batch's N · k assignments, Binomial with variance
    N · k / ep · (1 − 1/ep), and the largest of ep such loads exceeds the mean by about √(2 ln ep)
    standard deviations (the expected maximum of ep Gaussians): 1 + √(2 ln ep · (1 − 1/ep) · ep / (N · k)),
    1 at ep = 1. Real routers are less even than uniform (DeepSeek-V3, arXiv:2412.19437, Sec. 3.4,
    rebalances redundant experts for it), so this is the floor of the imbalance."""
    ep = np.asarray(ep, dtype=float)
    load = np.maximum(np.asarray(tokens, dtype=float) * model.top_k, 1.0)
    spread = np.sqrt(2.0 * np.log(np.maximum(ep, 1.0)) * (1.0 - 1.0 / ep) * ep / load)
    return 1.0 + spread


def routed_expert_rows(model: ModelShape, *, tokens: Any, ep: Any, padded: bool) -> Any:
    """Rows the routed experts' grouped GEMMs of one MoE layer compute for a step of ``tokens`` tokens, as the
    busiest expert-parallel rank sees them, summed over the E experts (0 for a dense model).

    Each expert receives m tokens, Binomial(N, k/E): it is touched with probability P = 1 − (1 − k/E)^N and
    then holds m₊ = N · k / (E · P) on average, times the busiest rank's share (``_busiest_rank_share``).
    ``padded``: its rows are rounded up to the kernel's tile, ``MOE_TILE_ROWS`` · ceil(m₊ / tile), as a
    step's grouped GEMM computes them; so E · P · tile · ceil(m₊ / tile) rows. At decode, where each expert
    sees a few tokens (Llama 4 Maverick at batch 2,000: 16), the tile is mostly padding, the grouped GEMM's
    loss at small per-expert token counts. Not padded (the prompt's tokens riding in a decode iteration whose
    tiles are already paid for): N · k · the rank share."""
    tokens = np.asarray(tokens, dtype=float)
    if not model.is_moe:
        return np.zeros_like(tokens)
    share = _busiest_rank_share(model, tokens=tokens, ep=ep)
    if not padded:
        return tokens * model.top_k * share
    touched = 1.0 - (1.0 - model.top_k / model.experts) ** np.maximum(tokens, 0.0)
    per_expert = tokens * model.top_k * share / (model.experts * np.maximum(touched, 1e-12))
    tiles = np.ceil(per_expert / MOE_TILE_ROWS - 1e-9)
    return model.experts * touched * MOE_TILE_ROWS * tiles


def _tile_stretch(model: ModelShape, eff: ServingEfficiency) -> float:
    """Time of an expert's grouped GEMMs over their MMA time when each output tile also pays a fixed
    ``moe_tile_overhead_k`` (a reduction length's worth: the pipeline's fill and the epilogue): a GEMM of
    reduction length K takes (K + K₀) / K of its MMA time. An expert's MLP is an up projection of reduction
    length h (gate and up: ``mlp_matrices`` − 1 matrices of h × f) and a down projection of reduction length
    f, so the stretch is ((n − 1) · (h + K₀) + (f + K₀) · h / f) / ((n − 1) · h + h), which weighs short
    reductions: 1.0 at K₀ = 0; at tensorrt-llm-2025's K₀ = 2,048, Qwen3 30B-A3B's experts (h 2,048, f 768):
    2.56, Qwen3 235B-A22B's (h 4,096, f 1,536): 1.78, Llama 4's (h 5,120, f 8,192): 1.35."""
    k0 = eff.moe_tile_overhead_k
    h, f, n = model.hidden, model.expert_ffn_hidden, model.mlp_matrices
    return ((n - 1) * (h + k0) + (f + k0) * h / f) / ((n - 1) * h + h)


def matmul_flops(inp: ServingInput, *, tokens: Any, tp: Any, padded: bool) -> Any:
    """FLOPs of the weight matmuls for ``tokens`` tokens: 2 · tokens · the weights one token multiplies by
    (``ModelShape.active_matmul_params``) with the routed experts' part replaced by 2 · expert_params ·
    moe_layers · ``routed_expert_rows`` stretched by short reductions' fixed tile work (``_tile_stretch``) and
    counted at 1 / ``moe_compute_scale`` (their grouped GEMMs' share of peak beyond both), so matmul time
    is this / (peak · compute_efficiency). The experts are spread ep = tp ways under attention data
    parallelism (the imbalance across ranks), else split within each expert over the tensor-parallel group
    (no imbalance)."""
    m = inp.model
    tokens = np.asarray(tokens, dtype=float)
    if not m.is_moe:
        return 2.0 * tokens * m.active_matmul_params
    routed = m.moe_layers * m.top_k * m.expert_params
    ep = np.asarray(tp) if inp.attention_dp else np.ones_like(np.asarray(tp))
    rows = routed_expert_rows(m, tokens=tokens, ep=ep, padded=padded)
    eff = inp.efficiency
    expert = 2.0 * m.moe_layers * m.expert_params * rows * _tile_stretch(m, eff) / eff.moe_compute_scale
    return 2.0 * tokens * (m.active_matmul_params - routed) + expert


def _peak_flops(inp: ServingInput) -> float:
    eff = inp.efficiency
    scale = eff.fp4_compute_scale if inp.weight_precision == "fp4" else 1.0
    return inp.accelerator.peak_tflops(inp.weight_precision) * 1e12 * eff.compute_efficiency * scale


def _attention_peak_flops(inp: ServingInput) -> float:
    """The attention core's (QKᵀ, AV) reachable FLOP/s: its operands are activations and the KV cache, not
    weights, so FP4 weights do not make it FP4 math. FP8 where the weights are FP8 or FP4 and the part has
    an FP8 peak (FP8 FMHA over an FP8 KV cache in TensorRT-LLM, FlashInfer and AITER), BF16 otherwise."""
    acc = inp.accelerator
    precision = "fp8" if inp.weight_precision != "bf16" and "fp8" in acc.dense_tflops else "bf16"
    if precision not in acc.dense_tflops:
        precision = inp.weight_precision
    return acc.peak_tflops(precision) * 1e12 * inp.efficiency.compute_efficiency


def prefill_s(
    inp: ServingInput,
    *,
    tp: Any,
    pp: Any,
    prompts: Any = 1,
    input_tokens: int | None = None,
    shared_read: bool = False,
) -> Any:
    """Time to prefill ``prompts`` prompts on one replica of tp·pp GPUs: of ``input_tokens`` tokens each when
    given, else the mean over the request's length classes (Σ share · time of one class, the n² attention
    term making the mean prompt's time differ from the mean time).

    FLOPs = prompts · (2 · N_active · n_in + 2 · n_in² · heads · head_dim · L) (causal attention: half of
    Narayanan's 4·s·h·L per token; multi-head latent attention: ``prefill_attention_flops``), over tp·pp GPUs
    at compute_efficiency × dense peak; plus the weights read once per stage and the tensor-parallel
    all-reduces of the prompt's activations. The stages run one after another for one prompt (no pipelining
    within one request's prefill).

    ``shared_read``: the prompt is prefilled inside an iteration that also runs the running batch's decode
    step (continuous batching mixes prompts, or their chunks, into decode iterations: Orca, Yu et al. 2022;
    Sarathi-Serve, Agrawal et al. 2024, OSDI), so the weights are read once for both and the step's time
    already holds that read: the prompt adds only its compute and collectives. Without it (a prompt alone,
    the latency of one request) the read bounds a short prompt.
    """
    m = inp.model
    prompts = np.asarray(prompts, dtype=float)
    gpus = np.asarray(tp) * np.asarray(pp)
    weights = weight_bytes_per_gpu(
        model=m, precision=inp.weight_precision, tp=tp, pp=pp, attention_dp=bool(inp.attention_dp)
    ) * np.asarray(pp)
    read = weights / (inp.accelerator.hbm_bandwidth_tbps * 1e12 * inp.efficiency.bandwidth_efficiency)
    classes = ((input_tokens, 0, 1.0),) if input_tokens is not None else inp.classes
    total: Any = 0.0
    for n, _, share in classes:
        # prefix caching: a share h of the prompt's tokens is found in the cache, so only (1 − h)·n are
        # computed; they attend to the whole prompt, the causal attention over the new suffix being
        # (1 − h²) of the full prompt's (vLLM automatic prefix caching; SGLang RadixAttention, Zheng et al.
        # 2024, arXiv:2312.07104)
        h = inp.prefix_cache_hit_rate
        # the prompt's routed rows are not padded to the tile: its n tokens ride in an iteration of up to the
        # stack's token budget (TensorRT-LLM's max_num_tokens 8,192, vLLM's max_num_batched_tokens 2,048 or
        # more) with other prompts and the running batch, whose tiles already hold hundreds of rows an expert
        matmul = matmul_flops(inp, tokens=prompts * n * (1.0 - h), tp=tp, padded=False)
        attention_flops = prompts * prefill_attention_flops(m, n) * (1.0 - h * h)
        compute = matmul / (gpus * _peak_flops(inp)) + attention_flops / (gpus * _attention_peak_flops(inp))
        bound = compute if shared_read else np.maximum(compute, read)
        one = bound + np.asarray(pp) * _allreduce_s(inp, tokens=prompts * n, tp=tp, pp=pp)
        total = one if len(classes) == 1 else total + share * one
    return total


def _moe_weight_fraction_read(model: ModelShape, batch: Any) -> Any:
    """Fraction of the weights a decode step of ``batch`` tokens reads. Dense: 1. MoE: the non-expert weights
    plus the experts at least one token routes to, E·(1 − (1 − k/E)^B) of E per layer for uniform routing."""
    batch = np.asarray(batch, dtype=float)
    if not model.is_moe:
        return np.ones_like(batch)
    experts = model.moe_layers * model.experts * model.expert_params
    touched = 1.0 - (1.0 - model.top_k / model.experts) ** batch
    return (model.total_params - experts + experts * touched) / model.total_params


def decode_step_s(inp: ServingInput, *, batch: Any, tp: Any, pp: Any) -> Any:
    """TPOT(B): time of one decode step of a replica holding ``batch`` sequences (one token each).

    The pp stages are pipelined over pp micro-batches of B/pp, so a token passes every stage once per step:
    TPOT = pp · t_stage(B/pp) + B · sequence_overhead. A stage runs two kinds of kernel one after the other,
    each at its own roofline (Pope et al. 2022, arXiv:2211.05102, Sec. 2; Williams et al. 2009):
    - the weight matmuls: max(weights the batch touches / (HBM · bandwidth_eff), b · 2 · N_active /
      (tp · pp) / (peak · compute_eff)) (MoE: only the experts routed to are read, and their FLOPs are
      ``matmul_flops`` of the rows padded to the grouped GEMM's tile on the busiest rank);
    - attention over the KV cache: max(b × mean context × KV per token per GPU / (HBM · bandwidth_eff),
      b · 4 · context · heads · head_dim · L / (tp · pp) / (peak · compute_eff)); under multi-head latent
      attention the latent (replicated on every tp rank, ``kv_bytes_per_token_per_gpu``) is read and
      b · context · ``mla_decode_attention_flops_per_context_token`` · L computed (absorbed weights).
    A compute-bound matmul does not hide the attention kernel's KV reads, so at large batch × context the
    step grows with them. Plus the tensor-parallel all-reduces of the stage. ``sequence_overhead`` is the
    stack's per-sequence time outside the kernels (``ServingEfficiency.sequence_overhead_us``), plus its
    single-step loop's host time (``host_sequence_us``) unless the run overlaps it (``host_overlapped``).
    """
    m = inp.model
    batch = np.asarray(batch, dtype=float)
    pp_a = np.asarray(pp, dtype=float)
    micro = np.maximum(batch / pp_a, 1.0)
    ctx = inp.context_tokens
    adp = bool(inp.attention_dp)
    weights = weight_bytes_per_gpu(model=m, precision=inp.weight_precision, tp=tp, pp=pp, attention_dp=adp)
    kv = kv_bytes_per_token_per_gpu(
        model=m, precision=inp.kv_precision, tp=tp, pp=pp, context_tokens=ctx, attention_dp=adp
    )
    hbm = inp.accelerator.hbm_bandwidth_tbps * 1e12 * inp.efficiency.bandwidth_efficiency
    peak = np.asarray(tp) * pp_a * _peak_flops(inp)
    # speculative decoding: every sequence verifies k + 1 tokens a step (the draft's k and one of its own)
    q = 1.0 + inp.draft_tokens
    if adp and m.is_moe:
        # each GPU reads its whole non-expert weights and those of its experts that the replica's tokens
        # (all of them reach every GPU's experts through the dispatch) route to
        routed = routed_expert_params(m) * BYTES[inp.weight_precision] / (np.asarray(tp) * pp_a)
        touched = 1.0 - (1.0 - m.top_k / m.experts) ** (micro * pp_a * q)
        read = weights - routed + routed * touched
    else:
        read = weights * _moe_weight_fraction_read(m, micro * pp_a * q)
    matmul = np.maximum(read / hbm, matmul_flops(inp, tokens=micro * q, tp=tp, padded=True) / peak)
    if m.is_mla:
        attention_flops = micro * q * ctx * mla_decode_attention_flops_per_context_token(m) * m.kv_layers(ctx)
    else:
        # A local layer's new token scores at most its window or chunk of the context (kv_layers).
        attention_flops = micro * q * 4.0 * ctx * m.heads * m.head_dim * m.kv_layers(ctx)
    attention_peak = np.asarray(tp) * pp_a * _attention_peak_flops(inp)
    attention = np.maximum(micro * ctx * kv / hbm, attention_flops / attention_peak)
    host = 0.0 if inp.host_overlapped else inp.efficiency.host_sequence_us
    overhead = batch * (inp.efficiency.sequence_overhead_us + host) * 1e-6
    step = pp_a * (matmul + attention + _allreduce_s(inp, tokens=micro * q, tp=tp, pp=pp)) + overhead
    if not inp.draft_tokens:
        return step
    # Leviathan et al. 2023 (arXiv:2211.17192), eq. 1: a verification yields (1 − α^(k+1)) / (1 − α) tokens
    # on average; the draft runs k steps costing draft_cost × a plain step each (MTP heads or a small model).
    plain = decode_step_s(replace(inp, draft_tokens=0), batch=batch, tp=tp, pp=pp)
    return (step + inp.draft_tokens * inp.draft_cost * plain) / inp.tokens_per_verification


def replica_rate(inp: ServingInput, *, batch: Any, tp: Any, pp: Any) -> dict[str, Any]:
    """Requests/s, user-visible TPOT and TTFT of one replica under continuous batching at batch B.

    R = 1 / (t_prefill + n_out · TPOT(B) / B) with the mean prefill and mean n_out, the prefill's weights'
    read shared with the decode step it rides in where the stack mixes them
    (``ServingEfficiency.prefill_shares_weight_read``); prefill share
    φ = R · t_prefill; seen TPOT = TPOT(B)/(1 − φ); TTFT = t_prefill(n_in at the target percentile) + TPOT(B)
    (a new prompt waits for the decode step under way).
    """
    prefill = prefill_s(inp, tp=tp, pp=pp, shared_read=inp.efficiency.prefill_shares_weight_read)
    step = decode_step_s(inp, batch=batch, tp=tp, pp=pp)
    rate = 1.0 / (prefill + inp.mean_output_tokens * step / np.asarray(batch, dtype=float))
    share = rate * prefill
    first = prefill_s(inp, tp=tp, pp=pp, input_tokens=inp.percentile_input_tokens if inp.lengths else None)
    return {
        "requests_per_s": rate,
        "tpot_s": step / np.maximum(1.0 - share, 1e-9),
        "ttft_s": first + step,
        "prefill_s": prefill,
        "step_s": step,
    }


# ---- latency percentiles under queueing ------------------------------------------------------------------
PERCENTILES = (50.0, 90.0, 99.0)
# Share of a Poisson-batch fluctuation that survives averaging over one request's life: the number running
# in an M/G/∞ system decorrelates over about one service time τ, and the mean of an exp(−t/τ)-correlated
# process over a window T = τ keeps 2 · (τ/T)² · (T/τ − 1 + e^(−T/τ)) = 2/e ≈ 0.736 of its variance.
BATCH_VARIANCE_SEEN = 2.0 / math.e


def gamma_percentile(*, mean: Any, variance: Any, percentile: float) -> Any:
    """The ``percentile`` of a gamma distribution with that mean and variance (moment matching: shape
    k = mean² / variance, scale θ = variance / mean), by the Wilson–Hilferty cube-root normal approximation
    q ≈ k·θ·(1 − 1/(9k) + z·√(1/(9k)))³ (Wilson & Hilferty 1931; exact to ~1 % for k ≥ 1). A right-skewed
    law for waiting times, as in the gamma approximations of M/G/1 waits (Whitt 1993); zero variance gives
    the mean."""
    mean = np.asarray(mean, dtype=float)
    variance = np.maximum(np.asarray(variance, dtype=float), 0.0)
    z = NormalDist().inv_cdf(percentile / 100.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(variance > 0, mean * mean / np.where(variance > 0, variance, 1.0), np.inf)
        inv = np.where(np.isfinite(k), 1.0 / (9.0 * k), 0.0)
        q = mean * np.maximum(1.0 - inv + z * np.sqrt(inv), 0.0) ** 3
    return np.where(np.isfinite(mean), q, np.inf)


def _prefill_moments(inp: ServingInput, *, tp: Any, pp: Any) -> tuple[Any, Any]:
    """E[t_p] and E[t_p²] of one prompt's prefill over the request's length classes."""
    first: Any = 0.0
    second: Any = 0.0
    for n_in, _, share in inp.classes:
        t = np.asarray(prefill_s(inp, tp=tp, pp=pp, input_tokens=n_in), dtype=float)
        first = first + share * t
        second = second + share * t * t
    return first, second


def queueing_latency(
    inp: ServingInput,
    *,
    tp: Any,
    pp: Any,
    requests_per_s: Any,
    step_s: Any,
    mean_batch: Any,
    prefill_moments: tuple[Any, Any] | None = None,
) -> dict[str, Any]:
    """TTFT and TPOT percentiles (``PERCENTILES`` and the target's) of one replica under continuous batching
    with arrivals at ``requests_per_s`` (λ) and decode steps of ``step_s`` (t_d) at ``mean_batch`` (b).

    Iteration-level scheduling (Orca, Yu et al. 2022; vLLM and TensorRT-LLM's in-flight batching): each
    iteration runs one decode step of the batch and the prefills of the prompts that arrived during the
    previous iteration (gated service). With K ~ arrivals in the previous iteration T_prev (mean λ·T_prev,
    index of dispersion I = c_a², 1 for Poisson) and prefill times t_p:
      T = t_d + Σ_K t_p,  E[T] = t_d / (1 − φ),  φ = λ·E[t_p] (the prefill share; the queue saturates as
      φ → 1), Var[T] = λ·E[T]·(Var t_p + I·E[t_p]²) / (1 − φ²).
    A request arrives inside an iteration drawn length-biased (T ~ gamma by moments, so the one it meets is
    gamma with shape k + 1), waits its remainder (1 − U)·T*, then its own iteration, which prefills it and
    the φ·T* of prompts that arrived with it:
      TTFT = t_d + t_own + T*·(1 − U + φ) + noise (variance λ·E[T*]·(Var t_p + I·E[t_p]²)) + the stack's
      ``first_token_overhead_ms``; percentiles of a gamma with its mean and variance
      (:func:`gamma_percentile`; the gamma-moment approach to M/G/1 waiting times; c_a² scales the
      variance as in Allen–Cunneen).
    TPOT seen by a request is the mean of its n_out iterations: mean E[T]; variance from the running batch's
    Poisson fluctuation over its life (b × ``BATCH_VARIANCE_SEEN`` sequences², times (dt_d/db)² / (1 − φ)²)
    plus the iterations' own, Var[T]·(1 + φ)/(1 − φ)/n_out (an AR(1) with coefficient φ); percentiles of a
    normal. Returns arrays ``ttft_pNN_s`` and ``tpot_pNN_s`` and ``prefill_share`` (φ).
    """
    rate = np.asarray(requests_per_s, dtype=float)
    t_d = np.asarray(step_s, dtype=float)
    b = np.maximum(np.asarray(mean_batch, dtype=float), 1.0)
    e_tp, e_tp2 = prefill_moments if prefill_moments is not None else _prefill_moments(inp, tp=tp, pp=pp)
    var_tp = np.maximum(e_tp2 - e_tp * e_tp, 0.0)
    disp = inp.arrival_cv**2
    phi = rate * e_tp
    ok = phi < 0.999
    phi_ok = np.where(ok, phi, 0.0)
    e_t = t_d / (1.0 - phi_ok)
    per_prompt_var = var_tp + disp * e_tp * e_tp
    var_t = rate * e_t * per_prompt_var / (1.0 - phi_ok**2)
    # length-biased iteration T* ~ gamma(k + 1, θ) of the gamma(k, θ) that T is by moments
    theta = np.where(var_t > 0, var_t / np.where(e_t > 0, e_t, 1.0), 0.0)
    shape = np.where(theta > 0, e_t / np.where(theta > 0, theta, 1.0), np.inf)
    e_star = np.where(np.isfinite(shape), (shape + 1.0) * theta, e_t)
    e_star2 = np.where(np.isfinite(shape), (shape + 1.0) * (shape + 2.0) * theta * theta, e_t * e_t)
    e_v = 0.5 + phi_ok
    e_v2 = 1.0 / 12.0 + e_v * e_v
    overhead = inp.efficiency.first_token_overhead_ms * 1e-3
    ttft_mean = t_d + e_tp + e_star * e_v + overhead
    ttft_var = var_tp + e_star2 * e_v2 - (e_star * e_v) ** 2 + rate * e_star * per_prompt_var
    # TPOT: the slope of the decode step in the batch, by a central difference of ±√b
    spread = np.sqrt(b)
    slope = (
        np.asarray(decode_step_s(inp, batch=b + spread, tp=tp, pp=pp), dtype=float)
        - np.asarray(decode_step_s(inp, batch=np.maximum(b - spread, 1.0), tp=tp, pp=pp), dtype=float)
    ) / (b + spread - np.maximum(b - spread, 1.0))
    n_out = max(inp.mean_output_tokens, 1.0)
    tpot_var = (slope / (1.0 - phi_ok)) ** 2 * b * BATCH_VARIANCE_SEEN + var_t * (1.0 + phi_ok) / (
        1.0 - phi_ok
    ) / n_out
    out: dict[str, Any] = {"prefill_share": phi}
    for pct in sorted({*PERCENTILES, inp.percentile}):
        name = f"{pct:g}".replace(".", "_")
        z = NormalDist().inv_cdf(pct / 100.0)
        ttft = gamma_percentile(mean=ttft_mean, variance=ttft_var, percentile=pct)
        out[f"ttft_p{name}_s"] = np.where(ok, ttft, np.inf)
        out[f"tpot_p{name}_s"] = np.where(ok, e_t + z * np.sqrt(tpot_var), np.inf)
    return out


def percentile_key(percentile: float) -> str:
    """The suffix ``queueing_latency`` names a percentile by: 99 → ``p99``, 99.9 → ``p99_9``."""
    return "p" + f"{percentile:g}".replace(".", "_")


@dataclass(frozen=True)
class LatencyPercentiles:
    """TTFT and TPOT at the 50th, 90th and 99th percentiles (seconds) of one replica at one load."""

    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p99_s: float
    mean_batch: float
    prefill_share: float


def latency_at_load(inp: ServingInput, *, tp: int, pp: int, requests_per_s: float) -> LatencyPercentiles:
    """:func:`queueing_latency` of one replica receiving ``requests_per_s``, its mean running batch b found
    by Little's law, b = λ · (E[TTFT] + (n_out − 1) · E[T](b)), iterated to a fixed point (damped). Raises
    InfeasibleError when the load saturates the prefill (φ ≥ 1) or needs more sequences than fit."""
    fits = float(batch_that_fits(inp, tp=tp, pp=pp))
    b = 1.0
    lat: dict[str, Any] = {}
    for _ in range(200):
        step = float(decode_step_s(inp, batch=b, tp=tp, pp=pp))
        lat = queueing_latency(inp, tp=tp, pp=pp, requests_per_s=requests_per_s, step_s=step, mean_batch=b)
        if not math.isfinite(float(lat["ttft_p50_s"])):
            raise InfeasibleError(
                "the load saturates the replica's prefill", field=inp.path("demand.requests_per_s")
            )
        e_t = step / (1.0 - float(lat["prefill_share"]))
        new = requests_per_s * (float(lat["ttft_p50_s"]) + (max(inp.mean_output_tokens, 1.0) - 1.0) * e_t)
        if abs(new - b) < 1e-6 * max(b, 1.0):
            break
        b = 0.5 * b + 0.5 * new
    if b > fits:
        raise InfeasibleError(
            f"the load runs {b:,.0f} sequences where {fits:,.0f} fit", field=inp.path("demand.requests_per_s")
        )
    return LatencyPercentiles(
        **{
            f"{kind}_{percentile_key(p)}_s": float(lat[f"{kind}_{percentile_key(p)}_s"])
            for kind in ("ttft", "tpot")
            for p in PERCENTILES
        },
        mean_batch=b,
        prefill_share=float(lat["prefill_share"]),
    )


# ---- layouts and sizing ---------------------------------------------------------------------------------
def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _tp_choices(inp: ServingInput) -> list[int]:
    """Tensor-parallel degrees: the given one, else the divisors of the scale-up domain (of the node when it
    is larger, keeping only 1 beyond the domain; 1 alone without a scale-up link); each divides the heads."""
    if inp.tp:
        tps = [inp.tp]
    else:
        acc = inp.accelerator
        domain = max(acc.scaleup_domain_gpus if acc.has_scaleup_link else 1, 1)
        tps = [t for t in _divisors(max(domain, inp.gpus_per_node)) if t <= domain or t == 1]
    return [t for t in tps if inp.model.heads % t == 0]


def _ep_choices(inp: ServingInput, tp: int) -> list[int]:
    """Expert-parallel degrees for one tp: 1 for a dense model; else the given one or every divisor of tp
    that divides the experts, kept only where it divides tp."""
    if not inp.model.is_moe:
        return [1]
    eps = [inp.ep] if inp.ep else [e for e in _divisors(tp) if inp.model.experts % e == 0]
    return [e for e in eps if tp % e == 0]


def layouts(inp: ServingInput) -> list[tuple[int, int, int]]:
    """(tp, pp, ep) candidates: tp divides the scale-up domain (or the node without one) and the query heads;
    pp in 1, 2, 4, 8 dividing the layers; ep (MoE only) divides tp and the experts. Given degrees are kept."""
    pps = [inp.pp] if inp.pp else [p for p in PP_CHOICES if inp.model.layers % p == 0]
    out = [(t, p, e) for t in _tp_choices(inp) for p in pps for e in _ep_choices(inp, t)]
    if not out:
        raise InputError(
            f"no layout: tp must divide the model's {inp.model.heads} heads and pp its {inp.model.layers}"
            " layers",
            field=inp.path("layout.tp" if inp.tp else "layout.pp"),
        )
    return out


def layout_label(tp: int, pp: int, ep: int, attention_dp: bool = False) -> str:
    """A layout as pages and plans name it: "tp8 pp1", "tp8 pp1 ep8", "tp8 pp1 ep8 attention-DP"."""
    return f"tp{tp} pp{pp}" + (f" ep{ep}" if ep > 1 else "") + (" attention-DP" if attention_dp else "")


@dataclass(frozen=True)
class LayoutResult:
    """The best batch of one layout: throughput, latency and the GPUs it takes to serve the peak."""

    tp: int
    pp: int
    ep: int
    gpus_per_replica: int
    weights_gib_per_gpu: float
    kv_gib_per_gpu: float
    batch_fits: int
    batch: int
    ttft_s: float
    tpot_s: float
    requests_per_s_per_replica: float
    output_tokens_per_s_per_gpu: float
    replicas: int
    gpus: int
    meets_targets: bool
    why: str
    # The queueing model's percentiles at the chosen batch (``queueing_latency``); absent in results stored
    # before it, read back as 0.
    ttft_p50_s: float = 0.0
    ttft_p90_s: float = 0.0
    ttft_p99_s: float = 0.0
    tpot_p50_s: float = 0.0
    tpot_p90_s: float = 0.0
    tpot_p99_s: float = 0.0
    # attention data-parallel over the tp GPUs with the routed experts spread ep = tp ways
    # (``ServingInput.attention_dp``); absent in results stored before it, read back as False
    attention_dp: bool = False


@dataclass(frozen=True)
class ParetoPoint:
    """One (layout, batch cap) on the frontier of output tokens/s per user against per GPU."""

    tp: int
    pp: int
    ep: int
    batch: int
    output_tokens_per_s_per_user: float  # 1 / the queueing model's median TPOT
    output_tokens_per_s_per_gpu: float  # the replica's rate × n_out / (tp · pp), at its Poisson mean batch
    ttft_s: float  # at the target percentile
    tpot_s: float  # at the target percentile (busiest batch)
    meets_targets: bool
    attention_dp: bool = False  # attention data-parallel with wide expert parallelism


@dataclass(frozen=True)
class CurvePoint:
    batch: int
    ttft_s: float
    tpot_s: float
    output_tokens_per_s_per_gpu: float


@dataclass(frozen=True)
class DisaggregatedResult:
    """Separate prefill and decode pools (Zhong et al. 2024, DistServe; Patel et al. 2024, Splitwise)."""

    prefill_layout: str
    decode_layout: str
    prefill_gpus: int
    decode_gpus: int
    gpus: int
    decode_batch: int
    ttft_s: float
    tpot_s: float
    kv_transfer_s: float
    output_tokens_per_s_per_gpu: float


@dataclass(frozen=True)
class CostOption:
    """$ per million tokens for one way to pay for the GPUs, on what that way bills (engine.serving_cost's
    ``serving_costs`` computes it; the serving engine only defines its shape).

    ``usd_per_m_tokens`` is the option's total over the horizon ÷ every token served (input and output).
    ``usd_per_m_input_tokens`` / ``usd_per_m_output_tokens`` split that total by phase: the replica's prefill
    GPU time goes to input tokens, its decode time to output tokens, and billed idle time pro rata, so
    n_in · input + n_out · output = (n_in + n_out) · all. ``usd_per_m_output_tokens_all_gpu_time`` charges
    the whole total to output tokens (the figure a per-output-token price list compares with).
    ``idle_fraction``: the share of the billed GPU-hours no request occupies (GPUs of a billed node or
    instance outside every replica, and replicas' spare capacity below the peak).
    """

    option: str  # "own" or "<offering slug> <pricing model>"
    pricing_model: str
    offering: str
    usd_per_gpu_hour: float
    usd_per_m_input_tokens: float
    usd_per_m_output_tokens: float
    usd_per_m_tokens: float
    formula: str
    # Added with billed-basis $/M (ENGINE_VERSION after 11); absent in older stored JSON, read back as 0.
    usd_per_m_output_tokens_all_gpu_time: float = 0.0
    idle_fraction: float = 0.0
    billed_gpus: int = 0  # GPUs of the whole nodes (or the offering's instances) that hold the replicas
    billed_gpu_hours: float = 0.0  # over the horizon: owning every hour, renting what the pricing model bills
    busy_gpu_hours: float = 0.0  # GPU-hours the served requests occupy at the replica's planned throughput
    total_usd: float = 0.0  # the option's own total over the horizon (cost engine)
    tokens_served: float = 0.0  # mean requests/s × (n_in + n_out) × horizon seconds


@dataclass(frozen=True)
class ServingResult:
    """A serving estimate: the chosen layout, every layout searched, the latency curves and the costs (empty
    from :func:`sizing`; engine.serving_cost's ``estimate`` fills ``costs`` and ``cost_note``)."""

    model: str
    accelerator: str
    best: LayoutResult
    layouts: tuple[LayoutResult, ...]
    curve: tuple[CurvePoint, ...]
    disaggregated: DisaggregatedResult | None
    utilization: float
    peak_requests_per_s: float
    mean_requests_per_s: float
    costs: tuple[CostOption, ...]
    cost_note: str
    assumptions: tuple[tuple[str, str], ...]
    # Added after results were first stored: absent in stored JSON, read back as 0.
    peak_to_mean: float = 0.0
    input_tokens_per_day: float = 0.0  # mean demand × 86,400 × mean n_in
    output_tokens_per_day: float = 0.0  # mean demand × 86,400 × mean n_out
    kv_bytes_per_token: float = 0.0  # the whole model's KV per token at the KV precision and mean context
    pareto: tuple[ParetoPoint, ...] = ()  # tokens/s per user against per GPU across layouts and batch caps

    def to_json(self) -> dict[str, Any]:
        """The estimate as the stored JSON holds it (lists, not tuples), so a stored estimate read back
        writes out the same."""
        data = _lists(asdict(self))
        data["assumptions"] = [{"name": n, "value": v} for n, v in self.assumptions]
        return dict(data)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServingResult:
        disagg = data.get("disaggregated")
        return cls(
            model=str(data["model"]),
            accelerator=str(data["accelerator"]),
            best=LayoutResult(**data["best"]),
            layouts=tuple(LayoutResult(**row) for row in data["layouts"]),
            curve=tuple(CurvePoint(**row) for row in data["curve"]),
            disaggregated=None if disagg is None else DisaggregatedResult(**disagg),
            utilization=float(data["utilization"]),
            peak_requests_per_s=float(data["peak_requests_per_s"]),
            mean_requests_per_s=float(data["mean_requests_per_s"]),
            costs=tuple(CostOption(**row) for row in data["costs"]),
            cost_note=str(data["cost_note"]),
            assumptions=tuple((a["name"], a["value"]) for a in data["assumptions"]),
            peak_to_mean=float(data.get("peak_to_mean", 0.0)),
            input_tokens_per_day=float(data.get("input_tokens_per_day", 0.0)),
            output_tokens_per_day=float(data.get("output_tokens_per_day", 0.0)),
            kv_bytes_per_token=float(data.get("kv_bytes_per_token", 0.0)),
            pareto=tuple(ParetoPoint(**row) for row in data.get("pareto", ())),
        )


def _lists(value: Any) -> Any:
    """``value`` with every tuple, nested too, written as a list (JSON has no tuples)."""
    if isinstance(value, (list, tuple)):
        return [_lists(item) for item in value]
    if isinstance(value, dict):
        return {key: _lists(item) for key, item in value.items()}
    return value


def _replicas(load: float) -> int:
    """Whole replicas for a load measured in replicas' worth of work: ⌈load⌉, at least one (a service that
    exists runs somewhere), with a 1e-9 slack so that exactly 3.0 stays 3."""
    return max(1, math.ceil(load - 1e-9))


def poisson_mean_batch(*, slots: Any, percentile: float) -> Any:
    """The mean number of running sequences whose ``percentile`` fits in ``slots`` when requests arrive as a
    Poisson stream: with continuous batching each request holds a slot for its whole time in service, so the
    number running is Poisson with mean b for any service-time law (M/G/∞; Kleinrock 1975, Queueing
    Systems vol. 1); its
    percentile is about b + z·√b (normal approximation, z = Φ⁻¹(percentile)). Solving b + z·√b = slots:
    b = ((−z + √(z² + 4·slots)) / 2)². At the 99th percentile (z = 2.326) 1,000 slots run 929 on average,
    100 slots 79. A request arriving when every slot is taken waits, so this is the TTFT/TPOT percentile's
    headroom.
    """
    z = max(NormalDist().inv_cdf(percentile / 100.0), 0.0)
    slots = np.asarray(slots, dtype=float)
    return ((-z + np.sqrt(z * z + 4.0 * slots)) / 2.0) ** 2


def attention_dp_variants(inp: ServingInput) -> tuple[ServingInput, ...]:
    """The inputs a search runs: the request's own when it fixes ``attention_dp`` (or the model is dense),
    else both, tensor-parallel attention and attention data parallelism with wide expert parallelism."""
    if inp.attention_dp is not None or not inp.model.is_moe:
        return (replace(inp, attention_dp=bool(inp.attention_dp)),)
    return (replace(inp, attention_dp=False), replace(inp, attention_dp=True))


def _adp_layouts(inp: ServingInput) -> list[tuple[int, int, int]]:
    """``layouts`` under attention data parallelism: tp > 1 and ep = tp (wide expert parallelism); the
    heads need not divide by tp (each GPU runs them all)."""
    pps = [inp.pp] if inp.pp else [p for p in PP_CHOICES if inp.model.layers % p == 0]
    acc = inp.accelerator
    domain = max(acc.scaleup_domain_gpus if acc.has_scaleup_link else 1, 1)
    tps = [inp.tp] if inp.tp else [t for t in _divisors(domain) if t <= max(domain, inp.gpus_per_node)]
    out = [(t, p, t) for t in tps for p in pps if t > 1 and inp.model.experts % t == 0 and inp.ep in (0, t)]
    if not out and inp.attention_dp:
        raise InputError(
            f"no layout: attention_dp needs tp > 1 dividing the model's {inp.model.experts} experts",
            field=inp.path("layout.attention_dp"),
        )
    return out


def _layout_grid(inp: ServingInput) -> dict[str, np.ndarray]:
    """Every (layout, batch) pair as flat numpy arrays, with memory fit, latency and rate; both attention
    layouts of an MoE model unless the request fixes one (``attention_dp_variants``; ``adp`` 1 marks the
    attention data-parallel rows)."""
    variants = attention_dp_variants(inp)
    if len(variants) > 1 and not _adp_layouts(variants[1]):
        variants = variants[:1]  # a searched layout the given tp or ep rules out
    grids = [_layout_grid_one(v) for v in variants]
    if len(grids) == 1:
        return grids[0]
    return {k: np.concatenate([g[k] for g in grids]) for k in grids[0]}


def _layout_grid_one(inp: ServingInput) -> dict[str, np.ndarray]:
    """Every (layout, batch) pair of one attention layout as flat numpy arrays, with memory fit, latency and
    rate. The batch is the slots a replica runs at its busiest (latency is evaluated there); under Poisson
    arrivals the rate is that of the mean batch ``poisson_mean_batch`` keeps below it: R(B) × b / B."""
    lay = np.array(_adp_layouts(inp) if inp.attention_dp else layouts(inp), dtype=np.int64)
    batches = BATCH_GRID[BATCH_GRID <= inp.max_batch]
    if batches.size == 0 or batches[-1] != inp.max_batch and inp.max_batch < BATCH_GRID[-1]:
        batches = np.append(batches, inp.max_batch)
    tp = np.repeat(lay[:, 0], batches.size)
    pp = np.repeat(lay[:, 1], batches.size)
    ep = np.repeat(lay[:, 2], batches.size)
    batch = np.tile(batches, len(lay))
    fits = batch_that_fits(inp, tp=tp, pp=pp)
    rate = replica_rate(inp, batch=batch, tp=tp, pp=pp)
    mean_batch = batch.astype(float)
    if inp.arrivals == "poisson":
        mean_batch = poisson_mean_batch(slots=batch, percentile=inp.percentile)
        rate["requests_per_s"] = rate["requests_per_s"] * mean_batch / batch
    # Percentiles from the queueing model at the replica's rate and its mean batch; the TTFT target is judged
    # on the model's TTFT at the target percentile (queueing included), the TPOT target as before on the step
    # at the busiest batch, stretched by the prefill share.
    # the prefill depends on the layout only: its moments once a layout, repeated over the batches
    e_tp, e_tp2 = _prefill_moments(inp, tp=lay[:, 0], pp=lay[:, 1])
    lat = queueing_latency(
        inp,
        tp=tp,
        pp=pp,
        requests_per_s=rate["requests_per_s"],
        step_s=decode_step_s(inp, batch=mean_batch, tp=tp, pp=pp),
        mean_batch=mean_batch,
        prefill_moments=(np.repeat(e_tp, batches.size), np.repeat(e_tp2, batches.size)),
    )
    rate["ttft_s"] = lat[f"ttft_{percentile_key(inp.percentile)}_s"]
    adp = np.full(tp.shape, int(bool(inp.attention_dp)), dtype=np.int64)
    return {"tp": tp, "pp": pp, "ep": ep, "adp": adp, "batch": batch, "fits": fits, **lat, **rate}


def _why(fits: bool, ttft: bool, tpot: bool, inp: ServingInput) -> str:
    if not fits:
        return "the weights do not fit in memory"
    extra = "".join(f", {name} {limit:g} s" for name, limit in inp.percentile_targets if name[:4] == "ttft")
    if not ttft:
        return f"no batch meets the {inp.ttft_s:g} s time to first token (p{inp.percentile:g}{extra})"
    extra = "".join(f", {name} {limit:g} s" for name, limit in inp.percentile_targets if name[:4] == "tpot")
    if not tpot:
        return (
            f"no batch meets the {inp.tpot_s * 1000:g} ms time per output token (p{inp.percentile:g}{extra})"
        )
    return ""


def _meets(inp: ServingInput, g: Mapping[str, np.ndarray]) -> tuple[Any, Any, Any]:
    """(fits memory, meets the TTFT targets, meets the TPOT targets) of every grid point."""
    fit = g["batch"] <= g["fits"]
    ok_ttft = g["ttft_s"] <= inp.ttft_s
    ok_tpot = g["tpot_s"] <= inp.tpot_s
    for name, limit in inp.percentile_targets:
        if name.startswith("ttft"):
            ok_ttft = ok_ttft & (g[name] <= limit)
        else:
            ok_tpot = ok_tpot & (g[name] <= limit)
    return fit, ok_ttft, ok_tpot


def pareto_frontier(
    inp: ServingInput, grid: Mapping[str, np.ndarray] | None = None
) -> tuple[ParetoPoint, ...]:
    """The (layout, batch cap) points no other beats on both output tokens/s per user (1 / median TPOT) and
    output tokens/s per GPU, among those that fit memory and do not saturate; slowest per user first. The
    trade-off NVIDIA's aiconfigurator and the SemiAnalysis InferenceMAX charts draw: a larger batch raises
    tokens/s per GPU and lowers each user's speed. Method: Kung, Luccio & Preparata's two-dimensional sweep
    (as ``tradeoffs.pareto_indices``), in numpy over the grid."""
    g = grid if grid is not None else _layout_grid(inp)
    fit, ok_ttft, ok_tpot = _meets(inp, g)
    gpus = g["tp"] * g["pp"]
    per_gpu = g["requests_per_s"] * inp.mean_output_tokens / gpus
    with np.errstate(divide="ignore"):
        per_user = np.where(g["tpot_p50_s"] > 0, 1.0 / g["tpot_p50_s"], 0.0)
    usable = np.flatnonzero(fit & np.isfinite(per_user) & np.isfinite(g["ttft_s"]) & (per_user > 0))
    # Kung et al.'s sweep, vectorised: most tokens/s per GPU first (ties: faster per user first); a point is
    # on the front when it is faster per user than every point before it
    order = usable[np.lexsort((-per_user[usable], -per_gpu[usable]))]
    before = np.concatenate(([-np.inf], np.maximum.accumulate(per_user[order])[:-1]))
    front = order[per_user[order] > before]
    return tuple(
        ParetoPoint(
            tp=int(g["tp"][i]),
            pp=int(g["pp"][i]),
            ep=int(g["ep"][i]),
            batch=int(g["batch"][i]),
            output_tokens_per_s_per_user=float(per_user[i]),
            output_tokens_per_s_per_gpu=float(per_gpu[i]),
            ttft_s=float(g["ttft_s"][i]),
            tpot_s=float(g["tpot_s"][i]),
            meets_targets=bool(ok_ttft[i] and ok_tpot[i]),
            attention_dp=bool(g["adp"][i]),
        )
        for i in front
    )


def size_layouts(inp: ServingInput, grid: Mapping[str, np.ndarray] | None = None) -> tuple[LayoutResult, ...]:
    """Per layout, the batch with the most requests/s per replica that fits memory and meets both targets,
    and the replicas ⌈peak R / R_replica⌉ and GPUs (replicas × tp × pp) it takes; sorted fewest GPUs first
    (then most tokens/s per GPU). A layout that meets nothing keeps its best-effort batch and says why."""
    g = grid if grid is not None else _layout_grid(inp)
    fit, ok_ttft, ok_tpot = _meets(inp, g)
    ok = fit & ok_ttft & ok_tpot
    peak = inp.requests_per_s * inp.peak_to_mean
    # one integer per layout keeps the lexicographic order of (tp, pp, ep, adp) that np.unique on the four
    # columns gives, without its sort of rows (most of this function's time)
    columns = [g["tp"], g["pp"], g["ep"], g["adp"]]
    key = packed_key(columns, shape=g["tp"].shape)
    if key is None:
        _, group = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    else:
        _, group = np.unique(key, return_inverse=True)
    group = group.ravel()
    results: list[LayoutResult] = []
    for index in range(int(group.max()) + 1):
        rows = np.flatnonzero(group == index)
        good = rows[ok[rows]]
        pick = good if good.size else rows[fit[rows]] if fit[rows].any() else rows[:1]
        best = pick[np.argmax(g["requests_per_s"][pick])]
        tp, pp, ep = int(g["tp"][best]), int(g["pp"][best]), int(g["ep"][best])
        adp = bool(g["adp"][best])
        rate = float(g["requests_per_s"][best])
        replicas = _replicas(peak / rate) if good.size else 0
        weights = float(
            weight_bytes_per_gpu(
                model=inp.model, precision=inp.weight_precision, tp=tp, pp=pp, attention_dp=adp
            )
        )
        ctx = inp.context_tokens
        kv = float(
            kv_bytes_per_token_per_gpu(
                model=inp.model,
                precision=inp.kv_precision,
                tp=tp,
                pp=pp,
                context_tokens=ctx,
                attention_dp=adp,
            )
        )
        batch = int(g["batch"][best])
        results.append(
            LayoutResult(
                tp=tp,
                pp=pp,
                ep=ep,
                gpus_per_replica=tp * pp,
                weights_gib_per_gpu=weights / 2**30,
                kv_gib_per_gpu=kv * ctx * min(batch, max(int(g["fits"][best]), 0)) / 2**30,
                batch_fits=max(int(g["fits"][best]), 0),
                batch=batch,
                ttft_s=float(g["ttft_s"][best]),
                tpot_s=float(g["tpot_s"][best]),
                requests_per_s_per_replica=rate,
                output_tokens_per_s_per_gpu=rate * inp.mean_output_tokens / (tp * pp),
                replicas=replicas,
                gpus=replicas * tp * pp,
                meets_targets=bool(good.size),
                why=_why(bool(fit[rows].any()), bool((fit & ok_ttft)[rows].any()), bool(good.size), inp),
                attention_dp=adp,
                **{
                    f"{k}_{percentile_key(q)}_s": float(g[f"{k}_{percentile_key(q)}_s"][best])
                    for k in ("ttft", "tpot")
                    for q in PERCENTILES
                },
            )
        )
    results.sort(key=lambda r: (not r.meets_targets, r.gpus, -r.output_tokens_per_s_per_gpu))
    return tuple(results)


def latency_curve(inp: ServingInput, *, tp: int, pp: int) -> tuple[CurvePoint, ...]:
    """TTFT, seen TPOT and output tokens/s per GPU against batch for one layout, up to the batch that fits:
    every slot busy (rate R(B)), TTFT the queueing model's at the target percentile at that rate."""
    fits = int(batch_that_fits(inp, tp=tp, pp=pp))
    batches = BATCH_GRID[BATCH_GRID <= max(min(fits, inp.max_batch), 1)]
    rate = replica_rate(inp, batch=batches, tp=tp, pp=pp)
    lat = queueing_latency(
        inp, tp=tp, pp=pp, requests_per_s=rate["requests_per_s"], step_s=rate["step_s"], mean_batch=batches
    )
    rate["ttft_s"] = lat[f"ttft_{percentile_key(inp.percentile)}_s"]
    per_gpu = rate["requests_per_s"] * inp.mean_output_tokens / (tp * pp)
    return tuple(
        CurvePoint(int(b), float(f), float(t), float(x))
        for b, f, t, x in zip(batches, rate["ttft_s"], rate["tpot_s"], per_gpu, strict=True)
    )


def disaggregated(inp: ServingInput, results: Sequence[LayoutResult]) -> DisaggregatedResult | None:
    """Prefill and decode in separate pools. Prefill pool: the layout with the fewest GPU-seconds per prompt,
    sized to the peak's prefill work at full use, ⌈peak R · t_prefill⌉ replicas. Decode pool: per layout the
    largest batch whose plain TPOT(B) meets the target (no prefill interrupts it), peak R · n_out · TPOT / B
    replicas. TTFT = t_prefill + KV transfer (n_in × KV per token / kv_transfer_gbps per GPU, each GPU sending
    its tp·pp share; under multi-head latent attention its stage's whole latent). None when no pair meets
    both targets."""
    if not inp.disaggregated:
        return None
    peak = inp.requests_per_s * inp.peak_to_mean
    lay = np.array(layouts(inp), dtype=np.int64)
    tp, pp = lay[:, 0], lay[:, 1]
    fits = batch_that_fits(inp, tp=tp, pp=pp) > 0
    if not fits.any():
        return None
    prefill = np.asarray(prefill_s(inp, tp=tp, pp=pp), dtype=float)
    cost = np.where(fits, prefill * tp * pp, np.inf)
    p = int(np.argmin(cost))
    n_first = inp.percentile_input_tokens
    transfer = _kv_transfer_s(inp, tokens=n_first, tp=tp[p], pp=pp[p])
    first = prefill[p] if not inp.lengths else prefill_s(inp, tp=tp[p], pp=pp[p], input_tokens=n_first)
    ttft = float(first) + float(transfer)
    if ttft > inp.ttft_s:
        return None
    prefill_gpus = _replicas(peak * float(prefill[p])) * int(tp[p] * pp[p])
    best = _decode_pool(inp, lay, fits, peak=peak)
    if best is None:
        return None
    decode_gpus, d_tp, d_pp, d_batch, tpot = best
    total = prefill_gpus + decode_gpus
    return DisaggregatedResult(
        prefill_layout=f"tp{int(tp[p])} pp{int(pp[p])}",
        decode_layout=f"tp{d_tp} pp{d_pp}",
        prefill_gpus=prefill_gpus,
        decode_gpus=decode_gpus,
        gpus=total,
        decode_batch=int(d_batch),
        ttft_s=ttft,
        tpot_s=tpot,
        kv_transfer_s=float(transfer),
        output_tokens_per_s_per_gpu=peak * inp.mean_output_tokens / total,
    )


def _kv_transfer_s(inp: ServingInput, *, tokens: int, tp: Any, pp: Any) -> float:
    """Seconds to send a prompt's KV cache from the prefill pool to the decode pool: each GPU sends its tp·pp
    share; under multi-head latent attention each GPU holds, and its decode counterpart needs, the whole
    latent of its stage (not split tp ways), so every NIC carries a full copy: n × KV per token per GPU."""
    if inp.model.is_mla:
        per_gpu = kv_bytes_per_token_per_gpu(
            model=inp.model, precision=inp.kv_precision, tp=tp, pp=pp, context_tokens=tokens
        )
        return float(tokens * float(per_gpu) / (inp.kv_transfer_gbps * 1e9))
    return float(
        tokens
        * kv_bytes_per_token(model=inp.model, precision=inp.kv_precision, context_tokens=tokens)
        / (inp.kv_transfer_gbps * 1e9 * tp * pp)
    )


def _decode_pool(
    inp: ServingInput, lay: np.ndarray, fits: np.ndarray, *, peak: float
) -> tuple[int, int, int, float, float] | None:
    """The decode pool with the fewest GPUs: per fitting layout the largest batch of BATCH_GRID whose plain
    TPOT(B) meets the target, peak R · n_out · TPOT / B replicas. (GPUs, tp, pp, batch, TPOT), or None when
    no layout meets the target."""
    best: tuple[int, int, int, float, float] | None = None
    for (t, q, _e), ok in zip(lay, fits, strict=True):
        if not ok:
            continue
        top = int(min(batch_that_fits(inp, tp=t, pp=q), inp.max_batch))
        batches = BATCH_GRID[BATCH_GRID <= top]
        if batches.size == 0:
            continue
        step = np.asarray(decode_step_s(inp, batch=batches, tp=t, pp=q), dtype=float)
        good = np.flatnonzero(step <= inp.tpot_s)
        if not good.size:
            continue
        b = int(batches[good[-1]])
        tpot = float(step[good[-1]])
        gpus = _replicas(peak * inp.mean_output_tokens * tpot / b) * int(t * q)
        if best is None or gpus < best[0]:
            best = (gpus, int(t), int(q), float(b), tpot)
    return best


def implied_utilization(inp: ServingInput, best: LayoutResult) -> float:
    """Mean demand ÷ provisioned capacity: R_mean / (replicas × R_replica), in [1e-6, 1] (the cost engine
    prices utilizations from 1e-6)."""
    capacity = best.replicas * best.requests_per_s_per_replica
    return max(1e-6, min(1.0, inp.requests_per_s / capacity)) if capacity > 0 else 1.0


# ---- request parsing and the entry point ---------------------------------------------------------------
_TOP_KEYS = {
    "model",
    "accelerator",
    "weight_precision",
    "kv_precision",
    "input_tokens",
    "output_tokens",
    "lengths",
    "targets",
    "demand",
    "gpus_per_node",
    "layout",
    "max_batch",
    "disaggregated",
    "arrivals",
    "kv_transfer_gbps",
    "prefix_cache_hit_rate",
    "speculative",
    "efficiency",
    "stack",
    "cost",
}


def _section(request: Mapping[str, Any], name: str, keys: set[str], at: str) -> Mapping[str, Any]:
    section = request.get(name, {})
    if not isinstance(section, Mapping):
        raise InputError("must be an object", field=under(at, name))
    unknown = sorted(set(section) - keys)
    if unknown:
        raise InputError(f"unknown field(s): {', '.join(unknown)}", field=under(at, f"{name}.{unknown[0]}"))
    return section


HOURS_PER_DAY = 24


def _peak_to_mean(demand: Mapping[str, Any], at: str) -> float:
    """``demand.peak_to_mean`` (2), or from ``demand.hourly_profile``: 24 relative demands, one an hour of
    the day (any scale; zero for a closed hour), whose busiest hour ÷ mean hour is the peak ÷ mean."""
    if "hourly_profile" not in demand:
        return _positive(demand.get("peak_to_mean", 2.0), under(at, "demand.peak_to_mean"))
    if "peak_to_mean" in demand:
        raise InputError(
            "give hourly_profile or peak_to_mean, not both", field=under(at, "demand.hourly_profile")
        )
    profile = demand["hourly_profile"]
    if (
        not isinstance(profile, Sequence)
        or isinstance(profile, (str, bytes))
        or len(profile) != HOURS_PER_DAY
    ):
        raise InputError(
            "must be a list of 24 numbers, one an hour", field=under(at, "demand.hourly_profile")
        )
    for hour, value in enumerate(profile):
        if not _finite(value) or value < 0:
            raise InputError(
                f"must be a finite number, zero or more, got {_shown(value)}",
                field=under(at, f"demand.hourly_profile.{hour}"),
            )
    peak = float(max(profile))
    if peak <= 0:
        raise InputError("needs at least one hour with demand", field=under(at, "demand.hourly_profile"))
    # peak ÷ mean = 24 / Σ (hour ÷ peak): each term ≤ 1, so 24 × 1e308 stays finite; a flat day is exactly 1
    return HOURS_PER_DAY / math.fsum(float(value) / peak for value in profile)


def _lengths(request: Mapping[str, Any], at: str) -> tuple[tuple[int, int, float], ...]:
    """``lengths``: a list of {input, output, share} request classes (shares adding up to 1), instead of
    ``input_tokens``/``output_tokens``; () when absent."""
    raw = request.get("lengths")
    if raw is None:
        return ()
    if "input_tokens" in request or "output_tokens" in request:
        raise InputError("give lengths or input_tokens/output_tokens, not both", field=under(at, "lengths"))
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)) or not 1 <= len(raw) <= 64:
        raise InputError(
            "must be a list of 1 to 64 {input, output, share} objects", field=under(at, "lengths")
        )
    out: list[tuple[int, int, float]] = []
    for index, item in enumerate(raw):
        where = f"lengths.{index}"
        if not isinstance(item, Mapping):
            raise InputError("must be an object {input, output, share}", field=under(at, where))
        unknown = sorted(set(item) - {"input", "output", "share"})
        if unknown:
            raise InputError(
                f"unknown field(s): {', '.join(unknown)}", field=under(at, f"{where}.{unknown[0]}")
            )
        out.append(
            (
                _whole(item.get("input"), under(at, f"{where}.input")),
                _whole(item.get("output"), under(at, f"{where}.output")),
                _fraction(item.get("share"), under(at, f"{where}.share")),
            )
        )
    if abs(sum(c[2] for c in out) - 1.0) > 1e-3:
        raise InputError(
            f"the shares add up to {sum(c[2] for c in out):g}, not 1", field=under(at, "lengths")
        )
    return tuple(out)


def _token_lengths(
    request: Mapping[str, Any], at: str
) -> tuple[tuple[tuple[int, int, float], ...], int, int, float]:
    """The request classes (``lengths``, () when given as ``input_tokens``/``output_tokens``), the mean input
    and output tokens rounded to whole tokens, and the exact mean output tokens."""
    lengths = _lengths(request, at)
    if lengths:
        mean_out = sum(share * n_out for _, n_out, share in lengths)
        input_tokens = max(1, round(sum(share * n_in for n_in, _, share in lengths)))
        return lengths, input_tokens, max(1, round(mean_out)), mean_out
    input_tokens = _whole(request.get("input_tokens", 1024), under(at, "input_tokens"))
    output_tokens = _whole(request.get("output_tokens", 256), under(at, "output_tokens"))
    return lengths, input_tokens, output_tokens, output_tokens


def _requests_per_s(demand: Mapping[str, Any], mean_output_tokens: float, at: str) -> float:
    """Mean requests per second: ``demand.requests_per_s``, or ``demand.output_tokens_per_day`` ÷ 86,400 ÷
    the mean output tokens; exactly one of them, at most MAX_REQUESTS_PER_S."""
    if ("requests_per_s" in demand) == ("output_tokens_per_day" in demand):
        raise InputError(
            "give exactly one of demand.requests_per_s and demand.output_tokens_per_day",
            field=under(at, "demand.requests_per_s"),
        )
    if "requests_per_s" in demand:
        rps = _positive(demand["requests_per_s"], under(at, "demand.requests_per_s"))
        path = "demand.requests_per_s"
    else:
        per_day = _positive(demand["output_tokens_per_day"], under(at, "demand.output_tokens_per_day"))
        rps = per_day / SECONDS_PER_DAY / mean_output_tokens
        path = "demand.output_tokens_per_day"
    if rps > MAX_REQUESTS_PER_S:
        raise InputError(
            f"is {rps:,.4g} requests/s; the planner sizes at most {MAX_REQUESTS_PER_S:,} (split the service)",
            field=under(at, path),
        )
    return rps


def _stack(request: Mapping[str, Any], efficiency: Mapping[str, Any], at: str) -> str:
    """The serving stack's name (its efficiencies: STACKS), the ``efficiency`` overrides checked finite."""
    stack = request.get("stack", DEFAULT_STACK)
    if not isinstance(stack, str) or stack not in STACKS:
        raise InputError(
            f"unknown serving stack {stack!r}; use one of {', '.join(STACKS)}", field=under(at, "stack")
        )
    for key, value in efficiency.items():
        if key == "prefill_shares_weight_read":  # the one flag
            if not isinstance(value, bool):
                raise InputError(
                    f"must be true or false, got {_shown(value)}", field=under(at, f"efficiency.{key}")
                )
        elif not _finite(value):
            raise InputError(
                f"must be a finite number, got {_shown(value)}", field=under(at, f"efficiency.{key}")
            )
    return stack


def _checked_request(request: Mapping[str, Any], at: str) -> Mapping[str, Any]:
    if not isinstance(request, Mapping):
        raise InputError("the request must be an object")
    unknown = sorted(set(request) - _TOP_KEYS)
    if unknown:
        raise InputError(f"unknown field(s): {', '.join(unknown)}", field=under(at, unknown[0]))
    return request


def _accelerator(
    request: Mapping[str, Any], accelerators: Mapping[str, AcceleratorSpec], at: str, given_at: str | None
) -> AcceleratorSpec:
    slug = request.get("accelerator", "h100-sxm")
    if not isinstance(slug, str) or slug not in accelerators:
        raise UnknownReferenceError(
            f"unknown accelerator {slug!r}; known: {', '.join(sorted(accelerators))}",
            field=under(at, "accelerator") if given_at is None else given_at,
        )
    return accelerators[slug]


def _model(request: Mapping[str, Any], at: str, given_at: str | None) -> ModelShape:
    """The request's model; one the caller gives (a design's) is named ``given_at`` as a whole."""
    data = request.get("model", {"preset": "llama3-70b"})
    if given_at is None:
        return model_from_dict(data, presets=PRESETS, at=under(at, "model"))
    try:
        return model_from_dict(data, presets=PRESETS)
    except EngineError as exc:
        raise type(exc)(exc.message, field=given_at) from None


def parse_request(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    at: str = "",
    given_at: str | None = None,
) -> tuple[ServingInput, Mapping[str, Any]]:
    """The JSON request (docs/serving-engine.md) → a :class:`ServingInput` and the ``cost`` section.

    Demand is ``demand.requests_per_s`` or ``demand.output_tokens_per_day`` (÷ 86,400 ÷ mean n_out), one of
    them, shaped by ``demand.peak_to_mean`` or ``demand.hourly_profile``. Lengths are ``input_tokens``/
    ``output_tokens`` or a ``lengths`` distribution. Errors name the user's field: the request sits at
    ``at`` ("" sent as it is; a design's ``spec.serving``), and a model and accelerator the caller gives for
    it (a design's own) are named ``given_at`` as a whole; the input keeps both for the errors raised later.
    """
    request = _checked_request(request, at)
    model = _model(request, at, given_at)
    accelerator = _accelerator(request, accelerators, at, given_at)
    targets = _section(request, "targets", {"ttft_s", "tpot_s", "percentile", *PERCENTILE_TARGETS}, at)
    demand = _section(
        request,
        "demand",
        {"requests_per_s", "output_tokens_per_day", "peak_to_mean", "hourly_profile", "arrival_cv"},
        at,
    )
    layout = _section(request, "layout", {"tp", "pp", "ep", "attention_dp"}, at)
    attention_dp = layout.get("attention_dp")
    if attention_dp is not None and not isinstance(attention_dp, bool):
        raise InputError(
            f"must be true or false, got {_shown(attention_dp)}", field=under(at, "layout.attention_dp")
        )
    speculative = _section(request, "speculative", {"draft_tokens", "acceptance_rate", "draft_cost"}, at)
    if speculative and "draft_tokens" not in speculative:
        raise InputError(
            "give draft_tokens (k) with speculative decoding", field=under(at, "speculative.draft_tokens")
        )
    for key, what in (
        ("acceptance_rate", "the acceptance rate α measured for this draft and workload"),
        ("draft_cost", "the draft's step as a share of the target's (MTP heads or a small model)"),
    ):
        if speculative.get("draft_tokens") and key not in speculative:
            raise InputError(f"give {what}", field=under(at, f"speculative.{key}"))
    eff = _section(request, "efficiency", set(ServingEfficiency.__dataclass_fields__), at)
    _section(
        request,
        "cost",
        {"on_prem", "site", *OWNING_SECTIONS, "horizon_years", "managed_overhead_fraction", "include_cloud"},
        at,
    )
    lengths, input_tokens, output_tokens, mean_out = _token_lengths(request, at)
    rps = _requests_per_s(demand, mean_out, at)
    disagg = request.get("disaggregated", True)
    if not isinstance(disagg, bool):
        raise InputError(f"must be true or false, got {disagg!r}", field=under(at, "disaggregated"))
    stack = _stack(request, eff, at)  # checks the overrides finite before they are read as numbers
    # numbers, the one flag (prefill_shares_weight_read) read as a truth value
    overrides: dict[str, Any] = {
        k: bool(v) if k == "prefill_shares_weight_read" else float(v) for k, v in eff.items()
    }
    try:
        efficiency = replace(STACKS[stack], **overrides)
    except InputError as exc:  # the efficiency's own checks name its field (efficiency.<name>)
        raise exc.within(at) from None
    inp = ServingInput(
        at=at,
        given_at=given_at,
        model=model,
        accelerator=accelerator,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        lengths=lengths,
        requests_per_s=rps,
        weight_precision=str(request.get("weight_precision", "fp8")),
        kv_precision=str(request.get("kv_precision", "fp8")),
        ttft_s=float(_positive(targets.get("ttft_s", 2.0), under(at, "targets.ttft_s"))),
        tpot_s=float(_positive(targets.get("tpot_s", 0.2), under(at, "targets.tpot_s"))),
        percentile=float(_positive(targets.get("percentile", 99.0), under(at, "targets.percentile"))),
        peak_to_mean=_peak_to_mean(demand, at),
        gpus_per_node=_whole(
            request.get("gpus_per_node", 8), under(at, "gpus_per_node"), high=MAX_GPUS_PER_NODE
        ),
        tp=_whole(layout.get("tp", 0), under(at, "layout.tp"), low=0, high=1024),
        pp=_whole(layout.get("pp", 0), under(at, "layout.pp"), low=0, high=1024),
        ep=_whole(layout.get("ep", 0), under(at, "layout.ep"), low=0, high=1024),
        attention_dp=attention_dp,
        max_batch=_whole(request.get("max_batch", 4096), under(at, "max_batch"), high=1_000_000),
        disaggregated=disagg,
        arrivals=str(request.get("arrivals", "poisson")),
        arrival_cv=_nonnegative(demand.get("arrival_cv", 1.0), under(at, "demand.arrival_cv")),
        prefix_cache_hit_rate=_nonnegative(
            request.get("prefix_cache_hit_rate", 0.0), under(at, "prefix_cache_hit_rate")
        ),
        draft_tokens=_whole(
            speculative.get("draft_tokens", 0), under(at, "speculative.draft_tokens"), low=0, high=16
        ),
        acceptance_rate=_nonnegative(
            speculative.get("acceptance_rate", 0.0), under(at, "speculative.acceptance_rate")
        ),
        draft_cost=_nonnegative(speculative.get("draft_cost", 0.0), under(at, "speculative.draft_cost")),
        percentile_targets=tuple(
            (name, _positive(targets[name], under(at, f"targets.{name}")))
            for name in PERCENTILE_TARGETS
            if name in targets
        ),
        kv_transfer_gbps=_positive(request.get("kv_transfer_gbps", 50.0), under(at, "kv_transfer_gbps")),
        efficiency=efficiency,
    )
    return inp, request.get("cost", {})


# The cost engine's owning sections a serving request may give beside ``on_prem`` (a price book's network
# quote, a colocation contract's basis): part of the request this module checks, passed to the cost engine
# as they are by engine.serving_cost.
OWNING_SECTIONS = ("network", "colocation")


def _shape_assumptions(model: ModelShape) -> tuple[tuple[str, str], ...]:
    """What the estimate assumes of a multi-head latent attention or multi-token-prediction model (none for
    others, whose assumptions are unchanged)."""
    out: list[tuple[str, str]] = []
    if model.is_mla:
        latent = model.kv_cache_elements_per_token_layer
        out.append(
            (
                "multi_head_latent_attention",
                f"KV cache: the {model.kv_lora_rank} + {model.qk_rope_head_dim} = {latent}-element latent"
                " a layer a token, a full copy on every tensor-parallel GPU (vLLM, SGLang; no data-parallel"
                " attention);"
                f" decode with absorbed weights: multi-query attention over it, {model.heads} heads of"
                f" {latent}-wide query/key and {model.kv_lora_rank}-wide value; prefill un-absorbed, as"
                f" multi-head attention of {model.head_dim}-wide query/key and {model.v_head_dim}-wide value"
                " (vLLM's MLA backend); attention kernels at the weight precision's peak, like the matmuls",
            )
        )
    if model.mtp_depth:
        out.append(
            (
                "multi_token_prediction",
                f"the {model.mtp_depth} MTP module(s) are not served (no speculative decoding): weights and"
                " FLOPs are the main model's",
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class CostSettings:
    """The request's ``cost`` section checked (:func:`_cost_settings`), for engine.serving_cost to price with:
    the horizon (years), the managed-service overhead on renting, the owning inputs (``on_prem``, the
    ``site`` object as given and the other owning sections, :data:`OWNING_SECTIONS`) and whether to price
    the cloud offerings."""

    horizon_years: float
    managed_overhead_fraction: float
    on_prem: Mapping[str, Any]
    include_cloud: bool
    site: Mapping[str, Any] | None
    sections: Mapping[str, Any]


@dataclass(frozen=True)
class Sizing:
    """The physics of one request (:func:`sizing`): the parsed input, its checked ``cost`` section and the
    answer with no cost rows yet (``costs`` empty, ``cost_note`` blank)."""

    inp: ServingInput
    cost: CostSettings
    result: ServingResult


def sizing(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    at: str = "",
    given_at: str | None = None,
) -> Sizing:
    """The serving engine's answer to one request (docs/serving-engine.md) without its costs: the fewest-GPU
    layout meeting the targets at the peak demand, every layout searched, TTFT/TPOT against batch, the
    disaggregated option, the utilization the mean demand implies and the assumptions. The costs are
    engine.serving_cost's (``serving_cost.estimate``: this answer with $ per million tokens owning and per
    cloud offering). Raises InputError/UnknownReferenceError naming the field, InfeasibleError when no layout
    fits or meets the targets. Errors name the user's field (``at``, ``given_at``: :func:`parse_request`)."""
    inp, cost_section = parse_request(request, accelerators=accelerators, at=at, given_at=given_at)
    grid = _layout_grid(inp)
    results = size_layouts(inp, grid)
    best = results[0]
    if not best.meets_targets:
        raise _no_layout_error(inp, results)
    cost = _cost_settings(cost_section, at)
    result = ServingResult(
        model=inp.model.name,
        accelerator=inp.accelerator.slug,
        best=best,
        layouts=results,
        curve=latency_curve(replace(inp, attention_dp=best.attention_dp), tp=best.tp, pp=best.pp),
        disaggregated=disaggregated(inp, results),
        utilization=implied_utilization(inp, best),
        peak_requests_per_s=inp.requests_per_s * inp.peak_to_mean,
        mean_requests_per_s=inp.requests_per_s,
        costs=(),
        cost_note="",
        assumptions=_assumptions(inp),
        peak_to_mean=inp.peak_to_mean,
        input_tokens_per_day=inp.requests_per_s * SECONDS_PER_DAY * inp.mean_input_tokens,
        output_tokens_per_day=inp.requests_per_s * SECONDS_PER_DAY * inp.mean_output_tokens,
        kv_bytes_per_token=kv_bytes_per_token(
            model=inp.model, precision=inp.kv_precision, context_tokens=inp.context_tokens
        ),
        pareto=pareto_frontier(inp, grid),
    )
    return Sizing(inp=inp, cost=cost, result=result)


def _no_layout_error(inp: ServingInput, results: Sequence[LayoutResult]) -> InfeasibleError:
    """Why no layout serves the request: the model fits at none, or the best fitting one misses a target."""
    fitting = [r for r in results if r.batch_fits > 0]
    if not fitting:
        need = float(weight_bytes_per_gpu(model=inp.model, precision=inp.weight_precision, tp=1, pp=1))
        return InfeasibleError(
            f"{inp.model.name} does not fit on {inp.accelerator.name} at any layout searched"
            f" ({need / 2**30:.0f} GiB of {inp.weight_precision} weights)",
            field=inp.given("accelerator"),
        )
    return InfeasibleError(
        f"no layout meets the targets: {fitting[0].why} (best: tp{fitting[0].tp} pp{fitting[0].pp},"
        f" TTFT {fitting[0].ttft_s:.2f} s, TPOT {fitting[0].tpot_s * 1000:.0f} ms)",
        field=inp.path(_binding_target(inp, _layout_grid(inp))),
    )


def _binding_target(inp: ServingInput, g: Mapping[str, np.ndarray]) -> str:
    """The request path of the target no fitting (layout, batch) meets together with the targets before it,
    in the order TTFT at the percentile, the TTFT percentile targets, TPOT, the TPOT percentile targets."""
    ok = g["batch"] <= g["fits"]
    order = [("targets.ttft_s", g["ttft_s"], inp.ttft_s)]
    order += [(f"targets.{n}", g[n], limit) for n, limit in inp.percentile_targets if n.startswith("ttft")]
    order += [("targets.tpot_s", g["tpot_s"], inp.tpot_s)]
    order += [(f"targets.{n}", g[n], limit) for n, limit in inp.percentile_targets if n.startswith("tpot")]
    for path, values, limit in order:
        ok = ok & (values <= limit)
        if not ok.any():
            return path
    return "targets.tpot_s"


def _cost_settings(cost_section: Mapping[str, Any], at: str) -> CostSettings:
    """The ``cost`` section checked: horizon (years), managed overhead (a fraction, bounds.COST), the owning
    inputs (``on_prem``) and whether to price cloud offerings."""
    horizon = _positive(cost_section.get("horizon_years", 3.0), under(at, "cost.horizon_years"))
    overhead = cost_section.get("managed_overhead_fraction", 0.0)
    most = COST_BOUNDS["cloud.managed_overhead_fraction"].high
    if isinstance(overhead, bool) or not isinstance(overhead, (int, float)) or not 0 <= overhead <= most:
        raise InputError(
            f"must be a number from 0 to {most:g}, got {overhead!r}",
            field=under(at, "cost.managed_overhead_fraction"),
        )
    on_prem = cost_section.get("on_prem", {})
    if not isinstance(on_prem, Mapping):
        raise InputError("must be an object", field=under(at, "cost.on_prem"))
    include_cloud = cost_section.get("include_cloud", True)
    if not isinstance(include_cloud, bool):
        raise InputError(
            f"must be true or false, got {include_cloud!r}", field=under(at, "cost.include_cloud")
        )
    return CostSettings(
        horizon_years=horizon,
        managed_overhead_fraction=float(overhead),
        on_prem=on_prem,
        include_cloud=include_cloud,
        site=cost_section.get("site"),
        sections={k: cost_section[k] for k in OWNING_SECTIONS if k in cost_section},
    )


def _assumptions(inp: ServingInput) -> tuple[tuple[str, str], ...]:
    """The efficiencies, hours per year and percentile reading the estimate assumed, with the model's own."""
    e = inp.efficiency
    return (
        (
            ("bandwidth_efficiency", f"{e.bandwidth_efficiency:g}"),
            ("compute_efficiency", f"{e.compute_efficiency:g}"),
            ("memory_reserve_fraction", f"{e.memory_reserve_fraction:g}"),
            ("collective_latency_us", f"{e.collective_latency_us:g}"),
            ("sequence_overhead_us", f"{e.sequence_overhead_us:g}"),
            (
                "host_sequence_us",
                f"{e.host_sequence_us:g} µs of host time a running sequence adds to every decode step"
                " (a single-step engine loop serving streamed tokens)",
            ),
            ("hours_per_year", f"{HOURS_PER_YEAR:g}"),
            (
                "percentile",
                f"p{inp.percentile:g} targets compared with the model's figure at the busiest batch; "
                + (
                    f"{inp.arrivals} arrivals: the mean batch keeps headroom for that percentile"
                    if inp.arrivals == "poisson"
                    else "backlog: every slot stays full"
                ),
            ),
        )
        + _shape_assumptions(inp.model)
        + _technique_assumptions(inp)
    )


def _technique_assumptions(inp: ServingInput) -> tuple[tuple[str, str], ...]:
    """What the estimate assumes of prefix caching and speculative decoding, when the request uses them."""
    h, k = inp.prefix_cache_hit_rate, inp.draft_tokens
    caching = (
        f"{h:.0%} of prompt tokens found in the cache: prefill computes {1 - h:.0%} of the matmuls and"
        f" {1 - h * h:.0%} of the causal attention; the cached blocks still count in memory"
    )
    speculation = (
        f"{k} draft token(s) a step accepted with probability {inp.acceptance_rate:g}:"
        f" {inp.tokens_per_verification:.2f} tokens a verification (Leviathan et al. 2023, eq. 1); the draft"
        f" costs {inp.draft_cost:g} of a plain decode step per draft token"
    )
    used = (("prefix_caching", caching, h > 0), ("speculative_decoding", speculation, k > 0))
    return tuple((name, text) for name, text, on in used if on)
