"""Predict the measured serving results in tests/engine/data/serving_runs.csv with the serving engine.

Shared by tests/engine/test_serving_calibration.py (asserts the targets on the held-out rows) and
bench/serving_calibration.py (prints the table). Each row is predicted the way its source ran:

- ``offline`` (MLPerf): every sample queued at once, so the engine's best batch with no latency target, on
  the best layout whose replica divides the system's GPUs (MLPerf submitters choose their own layout).
- ``server`` (MLPerf): the same with MLPerf's Llama 2 70B / Mixtral server limits, p99 TTFT ≤ 2 s and
  p99 TPOT ≤ 200 ms (the Test Parameters in each mlperf_log_summary.txt), and Poisson arrivals (LoadGen's
  server scenario), so the mean batch keeps headroom for the 99th percentile; offline rows are a backlog.
- ``fixed_batch`` (vLLM benchmark_latency): one batch of B prompts prefilled, then n_out decode steps:
  B · n_out / (t_prefill(B prompts) + n_out · TPOT(B)), tp = the system's GPUs.
- ``throughput`` (vLLM benchmark_throughput): continuous batching at min(max_num_seqs, the batch that fits).

Efficiency constants (HBM bandwidth and compute fraction of peak, the per-sequence step overhead and, for a
stack with a tensor-parallel batch-1 fit row, the collective latency) are fitted per serving stack on the
rows whose ``split`` is ``fit``, declared in the CSV before fitting: MLPerf DGX H100 Llama 2 70B and Mixtral
offline (TensorRT-LLM); MLPerf 8x MI300X Llama 2 70B offline and two points (batch 1 and 64) of OCI's vLLM
batch scan (``vllm-rocm``, vLLM on ROCm of 2024); batch 1 and 128 of the Llama 3.1 70B and 405B 128/2048
series of ROCm/vllm's dev-docker README, vLLM v0.10.0 image (``vllm-rocm-2025``, AMD's 2025 rocm/vllm
images, added with the split declared before the model was run on them). The fit is a grid search
minimising the mean |log error|; the targets are checked on the ``check`` rows only.
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving

DATA = Path(__file__).resolve().parent / "data" / "serving_runs.csv"
SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"
MLPERF_TTFT_S, MLPERF_TPOT_S = 2.0, 0.2
BANDWIDTH_GRID = tuple(float(x) for x in np.round(np.arange(0.20, 0.951, 0.05), 2))
COMPUTE_GRID = tuple(float(x) for x in np.round(np.arange(0.05, 0.801, 0.05), 2))
OVERHEAD_GRID_US = (0.0, 10.0, 25.0, 50.0, 100.0, 150.0, 200.0, 300.0)
# Fixed latency of one small all-reduce (two per layer), searched only for a stack whose fit rows include a
# tensor-parallel batch-1 row: there a decode step is the weights' read plus 2 · L of these latencies, and
# models of different depth tell the two apart; a stack without such a row keeps the engine's default.
LATENCY_GRID_US = (8.0, 16.0, 32.0, 64.0, 128.0)
# Host time per sequence of a single-step engine loop (ServingEfficiency.host_sequence_us), fitted second with
# the other constants held, only for a stack whose fit rows include runs that pay it (fixed batch, batch > 1)
# and runs that do not (throughput): the two kinds of run tell it apart from the per-sequence overhead.
HOST_GRID_US = (0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 80.0, 100.0, 150.0)
# The routed experts' grouped GEMMs' share of the compute efficiency (ServingEfficiency.moe_compute_scale),
# fitted last, on a stack's attention-DP MoE fit rows (TensorRT-LLM 1.0's MoE tables), the others held.
MOE_SCALE_GRID = tuple(float(x) for x in np.round(np.arange(0.05, 1.001, 0.05), 2))
# The grouped GEMMs' fixed work per output tile as a reduction length (ServingEfficiency.moe_tile_overhead_k),
# fitted with the scale above: 0 (none) to 4,096 (a 32-stage pipeline of 128-deep k-blocks).
MOE_TILE_OVERHEAD_GRID = (0.0, 256.0, 512.0, 768.0, 1024.0, 1536.0, 2048.0, 3072.0, 4096.0)
# The FP4 matmuls' share of the compute efficiency (ServingEfficiency.fp4_compute_scale), fitted second, on
# a stack's FP4 fit rows with the other constants held at their fit on its FP8/BF16 rows.
FP4_SCALE_GRID = tuple(float(x) for x in np.round(np.arange(0.30, 1.001, 0.05), 2))


def rows() -> list[dict[str, str]]:
    with DATA.open(newline="") as f:
        return list(csv.DictReader(f))


def _accelerators() -> dict[str, serving.AcceleratorSpec]:
    import json

    return dict(specs_from_records(json.loads(SEED.read_text())).accelerators)


ACCELERATORS = _accelerators()


def _input(row: dict[str, str], eff: serving.ServingEfficiency) -> serving.ServingInput:
    offline = row["scenario"] != "server"
    return serving.ServingInput(
        model=PRESETS[row["model"]],
        accelerator=ACCELERATORS[row["accelerator"]],
        input_tokens=int(row["input_tokens"]),
        output_tokens=max(1, round(float(row["output_tokens"]))),
        requests_per_s=1.0,
        weight_precision=row["weight_precision"],
        kv_precision=row["kv_precision"],
        ttft_s=1e9 if offline else MLPERF_TTFT_S,
        tpot_s=1e9 if offline else MLPERF_TPOT_S,
        peak_to_mean=1.0,
        max_batch=int(row["max_batch"]) if row["max_batch"] else 4096,
        disaggregated=False,
        arrivals="backlog" if offline else "poisson",
        efficiency=eff,
        # only vLLM's benchmark_latency rows run a single-step loop that returns every token (it detokenises);
        # ROCm/vllm's benchmark_throughput commands set --num-scheduler-steps 10 (vLLM 0.7.3) or
        # --disable-detokenize (v0.10.0); MLPerf harnesses batch their host work (stacks fitted without it)
        host_overlapped=row["scenario"] != "fixed_batch",
        # the row's published command runs attention data-parallel with wide expert parallelism (TensorRT-LLM
        # 1.0's MoE rows, enable_attention_dp); no other row does (MLPerf v4.1's TensorRT engines had none)
        attention_dp=row.get("attention_dp") == "1",
    )


def predict(row: dict[str, str], eff: serving.ServingEfficiency) -> float | None:
    """Predicted tokens/s of the whole system the row measured; None when the engine finds no layout."""
    inp = _input(row, eff)
    gpus = int(row["gpus"])
    out = inp.output_tokens
    # the published layout where the row states it (TensorRT-LLM's perf overview: TP1 … TP8), else one
    # tensor-parallel group over the system's GPUs
    tp = int(row.get("tp") or gpus)
    pp = int(row.get("pp") or 1)
    if row["scenario"] == "fixed_batch":
        b = int(row["batch"])
        t = serving.prefill_s(inp, tp=gpus, pp=1, prompts=b) + out * serving.decode_step_s(
            inp, batch=b, tp=gpus, pp=1
        )
        return float(b * out / t)
    if row["scenario"] == "throughput":
        b = int(min(inp.max_batch, serving.batch_that_fits(inp, tp=tp, pp=pp)))
        if b < 1:
            return None
        replicas = gpus // (tp * pp)
        return float(serving.replica_rate(inp, batch=b, tp=tp, pp=pp)["requests_per_s"] * out * replicas)
    results = [r for r in serving.size_layouts(inp) if gpus % r.gpus_per_replica == 0 and r.meets_targets]
    if not results:
        return None
    return max(r.output_tokens_per_s_per_gpu for r in results) * gpus


@dataclass(frozen=True)
class Case:
    row: dict[str, str]
    predicted: float | None

    @property
    def measured(self) -> float:
        return float(self.row["tokens_per_s"])

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.measured - 1.0


def _latency_bound(row: dict[str, str]) -> bool:
    """A tensor-parallel batch-1 row: one sequence decoding on several GPUs, its step weights and latency."""
    return row["scenario"] == "fixed_batch" and row["batch"] == "1" and int(row["gpus"]) > 1


def _cost_rank(row: dict[str, str]) -> int:
    """0 for a row predicted by one formula (fixed batch, throughput), 1 for one that sizes every layout."""
    return 0 if row["scenario"] in {"fixed_batch", "throughput"} else 1


def _score(
    fit_rows: list[dict[str, str]],
    eff: serving.ServingEfficiency,
    *,
    bound: float,
    order: list[int] | None = None,
) -> float | None:
    """Mean |log(predicted / measured)| over the rows, or None when a row has no prediction or the point
    cannot beat ``bound`` (the best mean so far): the errors are never negative, so once their running sum
    over n rows exceeds n · bound (with a margin far above rounding) the full mean would too, and the
    remaining rows are not predicted. The rows are predicted in ``order`` (default: the cheap rows first),
    and a walk passes the same list to every point: a cheap row that dropped a point moves to the front,
    where it most likely drops the next point too (neighbouring grid points miss the same rows); the rows
    that size every layout stay last, in their own order (they differ in cost, Mixtral's 2.5x Llama's).
    The order only decides how soon a point is dropped: the mean is taken in the rows' own
    order, so a point that is scored gets the same float whatever the order."""
    n = len(fit_rows)
    if order is None:
        order = sorted(range(n), key=lambda i: _cost_rank(fit_rows[i]))
    errs: list[float] = [0.0] * n
    running = 0.0
    for k, i in enumerate(order):
        p = predict(fit_rows[i], eff)
        if not p:
            return None
        errs[i] = abs(math.log(p / float(fit_rows[i]["tokens_per_s"])))
        running += errs[i]
        if running > n * bound + 1e-9:
            if _cost_rank(fit_rows[i]) == 0:
                order.insert(0, order.pop(k))
            return None
    return float(np.mean(errs))


def _pays_host(row: dict[str, str]) -> bool:
    """A run whose decode steps wait for the host's per-sequence work (vLLM benchmark_latency, batch > 1)."""
    return row["scenario"] == "fixed_batch" and int(row["batch"]) > 1


def _fit_host(
    fit_rows: list[dict[str, str]], eff: serving.ServingEfficiency, hint: serving.ServingEfficiency
) -> serving.ServingEfficiency:
    """``host_sequence_us`` on the fit rows with the other constants held (ties: the smaller value); the
    constants unchanged for a stack whose fit rows lack either kind of run."""
    if not (any(map(_pays_host, fit_rows)) and any(r["scenario"] == "throughput" for r in fit_rows)):
        return eff
    points = [replace(eff, host_sequence_us=host) for host in HOST_GRID_US]
    return _walk(fit_rows, points, hint=hint, fields=("host_sequence_us",))


def _walk(
    fit_rows: list[dict[str, str]],
    points: list[serving.ServingEfficiency],
    *,
    hint: serving.ServingEfficiency | None,
    fields: tuple[str, ...],
) -> serving.ServingEfficiency:
    """The grid point with the least mean |log error| on the rows, walked in the points' order: a point
    replaces the best so far only when its mean is lower by more than 1e-12 (ties go to the earlier point).

    ``hint`` (the engine's constants, usually the answer) only speeds the walk: the grid point that takes
    its values of the walked ``fields`` is scored first and its mean plus the tie tolerance, B, bounds the
    walk until a first point is accepted, so a point that cannot score B or less is dropped after a few
    rows (``_score``). The answer does not depend on it. Why, with S* the least mean on the grid and m the
    first point in the walk's order that scores it (scores closer than 1e-12 are taken as equal, the
    premise of the tie rule): the hint's point is a walked point, so S* <= B and m is not dropped; every
    point before m scores more than S*, so whichever point the walk holds when it reaches m (the first
    point not dropped, or a later one accepted) scores more, m replaces it, and no later point beats m.
    That holds for every B >= S*, the unbounded walk (B = inf) included, so the bounded walk returns the
    same m: pruning with the best so far already made every later point need to beat a bound, and B is one
    more bound that m meets. A hint off the grid (or with a row it cannot predict) gives B = inf, the plain
    walk. test_the_fit_does_not_depend_on_the_constants_it_starts_from fits from another grid point."""
    bound = math.inf
    seed = replace(points[0], **{f: getattr(hint, f) for f in fields}) if hint is not None else None
    if seed is not None and seed in points:
        score = _score(fit_rows, seed, bound=math.inf)
        bound = math.inf if score is None else score + 1e-12
    order = sorted(range(len(fit_rows)), key=lambda i: _cost_rank(fit_rows[i]))
    best: tuple[float, serving.ServingEfficiency] | None = None
    for point in points:
        score = _score(fit_rows, point, bound=best[0] if best else bound, order=order)
        if score is not None and (best is None or score < best[0] - 1e-12):
            best = (score, point)
    assert best is not None
    return best[1]


def fit(
    data: list[dict[str, str]], stack: str, *, hint: serving.ServingEfficiency | None = None
) -> serving.ServingEfficiency:
    """The efficiencies of one serving stack (bandwidth, compute, per-sequence overhead and, where a
    tensor-parallel batch-1 fit row pins it, the collective latency) minimising the mean |log(predicted /
    measured)| on that stack's fit rows; ties go to the first point of the grid. Then, with those held, the
    host time of a single-step loop (``_fit_host``), the FP4 matmuls' share (on the FP4 fit rows) and, on the
    rows run with attention data parallelism and wide expert parallelism (their own MoE kernels: grouped
    GEMMs, all-to-all), the routed experts' share (``_fit_moe``); those rows take no part in the stages
    before it. ``hint`` (default: the engine's constants of the stack) only prunes the walks (``_walk``)."""
    hint = serving.STACKS.get(stack) if hint is None else hint
    # the first-token overhead is fitted apart, on the latency rows (fit_first_token_overhead): the throughput
    # fit rows do not depend on it (offline, fixed-batch and throughput rows have no TTFT target)
    # so are the KV reservation policy and whether prompts share the decode step's weight read, properties
    # of the stack's scheduler (not fitted)
    base = serving.ServingEfficiency(
        first_token_overhead_ms=serving.STACKS[stack].first_token_overhead_ms,
        kv_reserved_output_fraction=serving.STACKS[stack].kv_reserved_output_fraction,
        prefill_shares_weight_read=serving.STACKS[stack].prefill_shares_weight_read,
    )
    stack_rows = [r for r in data if r["split"] == "fit" and r["stack"] == stack]
    adp_rows = [r for r in stack_rows if r.get("attention_dp") == "1"]
    every = [r for r in stack_rows if r.get("attention_dp") != "1"]
    fp4_rows = [r for r in every if r["weight_precision"] == "fp4"]
    fit_rows = [r for r in every if r["weight_precision"] != "fp4"] or every
    latencies = LATENCY_GRID_US if any(_latency_bound(r) for r in fit_rows) else (base.collective_latency_us,)
    points = [
        replace(
            base,
            bandwidth_efficiency=float(bw),
            compute_efficiency=float(comp),
            sequence_overhead_us=seq,
            collective_latency_us=lat,
        )
        for lat, seq, bw, comp in itertools.product(latencies, OVERHEAD_GRID_US, BANDWIDTH_GRID, COMPUTE_GRID)
    ]
    walked = ("bandwidth_efficiency", "compute_efficiency", "sequence_overhead_us", "collective_latency_us")
    held = _fit_host(fit_rows, _walk(fit_rows, points, hint=hint, fields=walked), hint)
    if not fp4_rows or fit_rows is every:
        return _fit_moe(adp_rows, held, hint)
    points = [replace(held, fp4_compute_scale=scale) for scale in FP4_SCALE_GRID]
    return _fit_moe(adp_rows, _walk(fp4_rows, points, hint=hint, fields=("fp4_compute_scale",)), hint)


def _fit_moe(
    adp_rows: list[dict[str, str]], eff: serving.ServingEfficiency, hint: serving.ServingEfficiency | None
) -> serving.ServingEfficiency:
    """``moe_compute_scale`` and ``moe_tile_overhead_k`` on the attention-DP MoE fit rows with the other
    constants held (ties: the first grid point, the smaller overhead first); the constants unchanged for a
    stack without such rows."""
    if not adp_rows:
        return eff
    points = [
        replace(eff, moe_compute_scale=scale, moe_tile_overhead_k=overhead)
        for overhead, scale in itertools.product(MOE_TILE_OVERHEAD_GRID, MOE_SCALE_GRID)
    ]
    return _walk(adp_rows, points, hint=hint, fields=("moe_compute_scale", "moe_tile_overhead_k"))


def cases(stacks: dict[str, serving.ServingEfficiency] | None = None) -> list[Case]:
    """Every row predicted with its stack's efficiency (the engine's ``serving.STACKS`` unless given)."""
    stacks = stacks or dict(serving.STACKS)
    return [Case(r, predict(r, stacks[r["stack"]])) for r in rows()]


def pairwise_direction(items: list[Case]) -> tuple[int, int]:
    """(right, total) over pairs of rows of the same model, scenario, precision and request lengths on
    different accelerators: is the faster one per GPU predicted faster per GPU?"""
    right = total = 0
    for a, b in itertools.combinations(items, 2):
        # the output length is left out: MLPerf rows of one benchmark differ only in the generated lengths
        key = ("model", "scenario", "input_tokens", "batch", "max_batch")
        if any(a.row[k] != b.row[k] for k in key) or a.row["accelerator"] == b.row["accelerator"]:
            continue
        if a.predicted is None or b.predicted is None:
            continue
        ma, mb = a.measured / int(a.row["gpus"]), b.measured / int(b.row["gpus"])
        pa, pb = a.predicted / int(a.row["gpus"]), b.predicted / int(b.row["gpus"])
        total += 1
        right += (ma > mb) == (pa > pb)
    return right, total


def regime(row: dict[str, str]) -> tuple[str, str, str, str, str]:
    """The regime a row reports under: (stack, accelerator, weight precision, dense/MoE, scenario)."""
    kind = "MoE" if PRESETS[row["model"]].is_moe else "dense"
    return (row["stack"], row["accelerator"], row["weight_precision"], kind, row["scenario"])


def by_regime(items: list[Case]) -> dict[tuple[str, str, str, str, str], list[Case]]:
    out: dict[tuple[str, str, str, str, str], list[Case]] = {}
    for c in items:
        out.setdefault(regime(c.row), []).append(c)
    return dict(sorted(out.items()))


def summary(items: list[Case]) -> dict[str, float]:
    errs = np.array([abs(c.error) for c in items if c.error is not None])
    right, total = pairwise_direction(items)
    return {
        "rows": float(len(items)),
        "compared": float(errs.size),
        "median_abs_error": float(np.median(errs)) if errs.size else math.nan,
        "p90_abs_error": float(np.percentile(errs, 90)) if errs.size else math.nan,
        "pairs_right": float(right),
        "pairs": float(total),
    }


# ---- latency percentiles (issue #37 item 2) ---------------------------------------------------------------
# MLPerf server rows' measured TTFT and TPOT percentiles (tests/engine/data/serving_latency_runs.csv, read
# from the same mlperf_log_summary.txt files as the throughput rows), split fit/check before the queueing
# model was first run on them. Predicted at the engine's own operating point for the row: the layout and
# batch the sizing picks under MLPerf's limits (p99 TTFT ≤ 2 s, p99 TPOT ≤ 200 ms, Poisson arrivals), the
# queueing model's percentiles at that replica's rate and mean batch, as a user of the planner would see them.
LATENCY_DATA = DATA.with_name("serving_latency_runs.csv")
LATENCY_FIELDS = ("ttft_p50", "ttft_p90", "ttft_p99", "tpot_p50", "tpot_p90", "tpot_p99")
FIRST_TOKEN_OVERHEAD_GRID_MS = tuple(float(x) for x in range(0, 2001, 10))


def latency_rows() -> list[dict[str, str]]:
    with LATENCY_DATA.open(newline="") as f:
        return list(csv.DictReader(f))


def predict_latency(row: dict[str, str], eff: serving.ServingEfficiency) -> dict[str, float] | None:
    """The engine's TTFT/TPOT p50/p90/p99 (ms) for a server row at its sizing point, None without a layout."""
    inp = _input(row, eff)
    gpus = int(row["gpus"])
    results = [r for r in serving.size_layouts(inp) if gpus % r.gpus_per_replica == 0 and r.meets_targets]
    if not results:
        return None
    best = max(results, key=lambda r: r.output_tokens_per_s_per_gpu)
    return {name: getattr(best, f"{name}_s") * 1000.0 for name in LATENCY_FIELDS}


@dataclass(frozen=True)
class LatencyCase:
    row: dict[str, str]  # the throughput row (system, stack, model)
    measured: dict[str, float]  # ms
    predicted: dict[str, float] | None
    split: str

    def error(self, name: str) -> float | None:
        return None if self.predicted is None else self.predicted[name] / self.measured[name] - 1.0


def latency_cases(stacks: dict[str, serving.ServingEfficiency] | None = None) -> list[LatencyCase]:
    stacks = stacks or dict(serving.STACKS)
    by_id = {r["row_id"]: r for r in rows()}
    out = []
    for lat in latency_rows():
        row = by_id[lat["row_id"]]
        measured = {name: float(lat[f"{name}_ms"]) for name in LATENCY_FIELDS}
        out.append(LatencyCase(row, measured, predict_latency(row, stacks[row["stack"]]), lat["split"]))
    return out


def fit_first_token_overhead(stack: str) -> float:
    """The stack's ``first_token_overhead_ms`` minimising the mean |log error| of TTFT p50/p90/p99 on its
    latency fit rows (0 for a stack without one); ties go to the smaller value. A value at which a fit row
    no longer meets MLPerf's own TTFT limit is not a candidate."""
    fit_rows = [c for c in latency_cases() if c.split == "fit" and c.row["stack"] == stack]
    if not fit_rows:
        return 0.0
    best: tuple[float, float] | None = None
    for ms in FIRST_TOKEN_OVERHEAD_GRID_MS:
        eff = replace(serving.STACKS[stack], first_token_overhead_ms=ms)
        predictions = [predict_latency(case.row, eff) for case in fit_rows]
        if any(p is None for p in predictions):
            continue
        errs = [
            abs(math.log(p[n] / case.measured[n]))
            for case, p in zip(fit_rows, predictions, strict=True)
            if p is not None
            for n in ("ttft_p50", "ttft_p90", "ttft_p99")
        ]
        score = float(np.mean(errs))
        if best is None or score < best[0] - 1e-12:
            best = (score, ms)
    assert best is not None
    return best[1]


def latency_summary(items: list[LatencyCase], names: tuple[str, ...]) -> dict[str, float]:
    """Median and p90 |error| over the rows and percentiles named (e.g. the three TTFT percentiles)."""
    errs = np.array([abs(e) for c in items for n in names if (e := c.error(n)) is not None])
    return {
        "points": float(errs.size),
        "median_abs_error": float(np.median(errs)) if errs.size else math.nan,
        "p90_abs_error": float(np.percentile(errs, 90)) if errs.size else math.nan,
    }
