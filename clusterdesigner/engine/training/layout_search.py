"""Layout validity and the vectorised search over parallel layouts.

A layout is valid when its degrees multiply to the GPU count, TP divides heads, KV heads and the FFN width, PP
× VPP divides the layers or the layers plus two (embedding and loss counted as layers; PP alone may split
unevenly), the global batch is a multiple of dp × micro_batch, CP > 1 splits the sequence into 2·cp load-
balanced chunks (an odd seq_len needs no CP), sequence parallelism needs tp to divide seq_len / cp, and EP
divides the experts and the data-parallel ranks; it is *feasible* when it also fits in memory less
``training.memory_headroom`` of it (``usable_gib``: the engine's memory runs low on measured runs, so a winner
at 99 % of HBM would likely not run; engine/training/error_band.py). The search enumerates every combination
of the free fields, evaluates them in numpy chunks with the same ``memory_parts`` / ``step_time_parts`` as a
single estimate, counts rejections by reason and keeps the fastest feasible layouts. It also keeps the layout
that needs the least memory among the structurally valid ones, so that a search where nothing fits can say by
how much the best candidate misses (memory is then the binding constraint, whatever rule rejected most).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterdesigner.engine.core.arrays import packed_key
from clusterdesigner.engine.core.errors import InputError, under
from clusterdesigner.engine.core.model import (
    RECOMPUTE_FULL,
    RECOMPUTE_MODES,
    RECOMPUTE_NONE,
    RECOMPUTE_SELECTIVE,
)
from clusterdesigner.engine.training.framework import (
    SELECTIVE_ATTENTION,
    FrameworkProfile,
    framework_checks,
    grid_choices,
    profile,
    structure_pins,
)
from clusterdesigner.engine.training.memory import (
    interleaving_splits,
    memory_parts,
    microbatches,
    stage_layers,
)
from clusterdesigner.engine.training.search_settings import (
    base_settings,
    combinations_per_layout,
    setting_combinations,
    with_settings,
)
from clusterdesigner.engine.training.timing import step_time_parts
from clusterdesigner.engine.training.workload import (
    GIB,
    LAYOUT_FIELDS,
    SH_HSDP,
    SH_NONE,
    SHARDING_MODES,
    IntArray,
    Problem,
    layout_row,
    layouts,
)

CHUNK_LAYOUTS = 1 << 16
CP_CHOICES = (1, 2, 4, 8, 16, 32)
MAX_TP = 64
MAX_LOOKUP_DIVISOR = 1 << 20
# What one search may cover. 131,072 GPUs is 8 × Llama 3's 16,384. No cap on the layouts: the search skips
# what cannot be a layout (interleaving depths that split no layers, micro-batches that divide no local
# batch, expert-parallel sizes dividing neither the experts nor dp × cp) before it evaluates, and runs at
# 1-6 M layouts/s on one core (bench/search.py prints each case's size and time; DeepSeek-V3, Qwen3-235B and
# Kimi K2 on 131,072 GPUs about 2 M layouts).
MAX_SEARCH_GPUS = 131_072


@dataclass(frozen=True)
class Reason:
    """A check's rejection text for layout i, with the layout fields it reads (of ``_STRUCTURE_KEY``):
    layouts alike in those fields share the text, so ``_structurally_ok`` formats it once for all of them
    rather than once per structure."""

    fields: tuple[str, ...]
    text: Callable[[int], str]

    def __call__(self, i: int) -> str:
        return self.text(i)


def structural_checks(problem: Problem, lay: Mapping[str, IntArray]) -> list[tuple[str, np.ndarray, Any]]:
    """[(field, failed mask, reason(i) → str)] for every rule but memory, in the order they are reported."""
    return [
        *_grid_checks(problem, lay),
        *_sequence_checks(problem, lay),
        # The training stack's own limits (engine/training/framework.py): none for Megatron-Core.
        *framework_checks(profile(problem.training.framework), lay),
        *_offload_checks(problem, lay),
        *_recompute_checks(problem, lay),
    ]


def _grid_checks(problem: Problem, lay: Mapping[str, IntArray]) -> list[tuple[str, np.ndarray, Any]]:
    """The degrees against the cluster and the model (GPU count, heads, FFN width, layers, interleaving)
    and the global batch against dp × micro_batch."""
    m = problem.model
    n = problem.cluster.num_gpus
    tp, pp, dp, cp, v, mb = (lay[k] for k in ("tp", "pp", "dp", "cp", "vpp", "micro_batch"))
    batch = problem.training.global_batch_seqs
    micro = microbatches(problem, lay)
    return [
        (
            "parallelism.dp",
            tp * pp * dp * cp != n,
            Reason(
                ("tp", "pp", "dp", "cp"),
                lambda i: f"tp × pp × dp × cp = {tp[i] * pp[i] * dp[i] * cp[i]} but the cluster has {n} GPUs",
            ),
        ),
        (
            "parallelism.tp",
            _indivisible(m.heads, tp),
            Reason(("tp",), lambda i: f"tp {tp[i]} does not divide {m.heads} heads"),
        ),
        (
            "parallelism.tp",
            _indivisible(m.kv_heads, tp),
            Reason(("tp",), lambda i: f"tp {tp[i]} does not divide {m.kv_heads} kv heads"),
        ),
        (
            "parallelism.tp",
            _indivisible(m.ffn_hidden, tp),
            Reason(("tp",), lambda i: f"tp {tp[i]} does not divide ffn_hidden {m.ffn_hidden}"),
        ),
        ("parallelism.pp", pp > m.layers, Reason(("pp",), lambda i: f"pp {pp[i]} exceeds {m.layers} layers")),
        _interleaving_check(problem, pp, v),
        (
            "parallelism.micro_batch",
            _indivisible(batch, dp * mb),
            Reason(
                ("dp", "micro_batch"),
                lambda i: f"global batch {batch} is not a multiple of dp {dp[i]} × micro_batch {mb[i]}",
            ),
        ),
        (
            "parallelism.vpp",
            # B / (dp·m) a multiple of pp ⇔ dp·m·pp divides B (a fractional B / (dp·m) is no multiple).
            (v > 1) & _indivisible(batch, dp * mb * pp),
            Reason(
                ("dp", "micro_batch", "pp"),
                lambda i: f"interleaving needs micro-batches ({micro[i]:g}) to be a multiple of pp {pp[i]}",
            ),
        ),
    ]


def _sequence_checks(problem: Problem, lay: Mapping[str, IntArray]) -> list[tuple[str, np.ndarray, Any]]:
    """Context and sequence parallelism against seq_len, then expert parallelism."""
    m = problem.model
    tp, cp, ep = (lay[k] for k in ("tp", "cp", "ep"))
    return [
        (
            "parallelism.cp",
            (cp > 1) & _indivisible(m.seq_len, 2 * cp),
            Reason(
                ("cp",), lambda i: f"cp {cp[i]} does not split seq_len {m.seq_len} into 2·cp equal chunks"
            ),
        ),
        (
            # Megatron-Core scatters the sequence over the TP ranks (tensor_parallel/mappings.py,
            # _split_along_first_dim asserts the first dimension divides by the TP size).
            "parallelism.sequence_parallel",
            (lay["sequence_parallel"] > 0) & (tp > 1) & ((m.seq_len // cp) % tp != 0),
            Reason(
                ("cp", "tp"),
                lambda i: (
                    f"sequence parallelism splits seq_len {m.seq_len} / cp {cp[i]} over tp {tp[i]} ranks, "
                    "which does not divide it"
                ),
            ),
        ),
        (
            "parallelism.ep",
            (ep > 1) & (not m.is_moe),
            Reason((), lambda i: "ep > 1 needs a mixture-of-experts model"),
        ),
        _expert_grid_check(problem, lay),
    ]


def _offload_checks(problem: Problem, lay: Mapping[str, IntArray]) -> list[tuple[str, np.ndarray, Any]]:
    """Activation offload's limits, when it is asked for."""
    if not problem.training.activation_offload_layers:
        return []
    pp = lay["pp"]
    # Megatron-Core refuses CPU offloading with pipeline parallelism or with activation recompute
    # (transformer_config.py __post_init__).
    return [
        (
            "training.activation_offload_layers",
            pp > 1,
            Reason(
                ("pp",),
                lambda i: f"activation offload runs only without pipeline parallelism, got pp {pp[i]}",
            ),
        ),
        (
            "training.activation_offload_layers",
            lay["recompute"] != RECOMPUTE_NONE,
            Reason((), lambda i: "activation offload does not run with activation recompute"),
        ),
    ]


def _recompute_checks(problem: Problem, lay: Mapping[str, IntArray]) -> list[tuple[str, np.ndarray, Any]]:
    """``training.recompute_num_layers`` against a fully recomputed layout's layers per model chunk
    (Megatron-Core's block recompute counts them per chunk: levers.full_recompute_share)."""
    n = problem.training.recompute_num_layers
    if not n:
        return []
    chunk = stage_layers(problem.model, lay["pp"], problem.training.pipeline_layout) / lay["vpp"]
    return [
        (
            "training.recompute_num_layers",
            (lay["recompute"] == RECOMPUTE_FULL) & (n > chunk),
            Reason(
                ("pp", "vpp"),
                lambda i: (
                    f"recompute_num_layers {n} is more than the {chunk[i]:g} layers of a pipeline stage's "
                    f"model chunk (pp {lay['pp'][i]}, vpp {lay['vpp'][i]})"
                ),
            ),
        )
    ]


def _indivisible(n: int, d: IntArray) -> np.ndarray:
    """``n % d != 0`` element-wise, looked up in a table of n's divisors where d is positive and small (an
    integer remainder per layout was the slowest element-wise operation of the structural checks)."""
    d = np.asarray(d)
    if n < 1 or d.size == 0 or int(d.min()) < 1 or int(d.max()) > MAX_LOOKUP_DIVISOR:
        failed: np.ndarray = n % d != 0
        return failed
    table = np.ones(int(d.max()) + 1, dtype=bool)
    table[[k for k in _divisors(n) if k < table.size]] = False
    return table[d]


def _expert_grid_check(problem: Problem, lay: Mapping[str, IntArray]) -> tuple[str, np.ndarray, Any]:
    """ep divides the experts and the ranks it spans: dp × cp (experts split by tp), or with
    ``training.etp`` given tp × dp × cp / etp (Megatron-Core's expert grid, etp · ep · edp = tp · cp · dp:
    parallel_state.initialize_model_parallel raises unless etp · ep · pp divides the world size)."""
    m, etp = problem.model, problem.training.etp
    tp, dp, cp, ep = (lay[k] for k in ("tp", "dp", "cp", "ep"))
    if not etp:
        return (
            "parallelism.ep",
            (ep > 1) & (_indivisible(m.experts, ep) | ((dp * cp) % ep != 0)),
            Reason(
                ("ep", "dp", "cp"),
                lambda i: f"ep {ep[i]} must divide {m.experts} experts and dp × cp {dp[i] * cp[i]}",
            ),
        )
    return (
        "parallelism.ep",
        _indivisible(m.experts, ep) | ((tp * dp * cp) % (ep * etp) != 0),
        Reason(
            ("ep", "tp", "dp", "cp"),
            lambda i: (
                f"ep {ep[i]} must divide {m.experts} experts, and ep × etp = {ep[i] * etp} the "
                f"tp × dp × cp = {tp[i] * dp[i] * cp[i]} ranks of a stage"
            ),
        ),
    )


def _interleaving_check(problem: Problem, pp: IntArray, v: IntArray) -> tuple[str, np.ndarray, Any]:
    """pp × vpp virtual stages: those of an explicit pipeline layout, else a split of the layers (or the
    layers + 2) into equal chunks."""
    m, layout = problem.model, problem.training.pipeline_layout
    if layout is not None:
        stages = layout.stages
        return (
            "parallelism.vpp",
            (pp * v != stages) | ((pp == 1) & (v > 1)),
            Reason(
                ("pp", "vpp"),
                lambda i: (
                    f"pipeline_layout has {stages} stages; pp {pp[i]} × vpp {v[i]} = {pp[i] * v[i]}"
                    + (" (interleaving needs pp > 1)" if pp[i] == 1 and v[i] > 1 else "")
                ),
            ),
        )
    return (
        "parallelism.vpp",
        (v > 1) & ~interleaving_splits(m.layers, pp, v),
        Reason(
            ("vpp", "pp"),
            lambda i: (
                f"vpp {v[i]} × pp {pp[i]} divides neither {m.layers} layers nor {m.layers + 2} "
                "(embedding and loss counted as layers), or pp is 1"
            ),
        ),
    )


def memory_reason(need_gib: float, have_gib: float, headroom: float = 0.0) -> str:
    """Rejection key for a layout that does not fit; needs are rounded to 2 significant figures so that
    similar layouts share a key. With a headroom, the usable memory is named with the capacity."""
    rounded = float(f"{need_gib:.2g}")
    if headroom > 0:
        usable = have_gib * (1.0 - headroom)
        kept = f"{headroom:.1%} of {have_gib:g} GiB kept free"
        return f"needs {rounded:g} GiB, has {usable:.3g} GiB usable ({kept})"
    return f"needs {rounded:g} GiB, has {have_gib:g} GiB"


def usable_gib(problem: Problem) -> float:
    """The memory a searched layout may use: capacity less ``training.memory_headroom`` of it."""
    return problem.cluster.accelerator.memory_gib * (1.0 - problem.training.memory_headroom)


def evaluate(
    problem: Problem, lay: Mapping[str, IntArray]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """(memory parts in bytes, step-time parts in seconds) for a batch of layouts."""
    return memory_parts(problem, lay), step_time_parts(problem, lay)


@dataclass
class SearchResult:
    best: dict[str, IntArray]  # top layouts, best first, as layout arrays
    evaluated: int
    rejected: Counter[str] = field(default_factory=Counter)
    reason_fields: dict[str, str] = field(default_factory=dict)  # rejection reason → the field it concerns
    valid: int = 0
    feasible: int = 0
    # The structurally valid layout that needs the least memory per GPU (GiB), as a ``parallelism`` row;
    # None until a layout passes the structural checks.
    min_need_gib: float | None = None
    min_need_layout: dict[str, Any] | None = None
    # Layouts × setting combinations covered, and those not evaluated (dominated: search_settings.py).
    space: int = 0
    pruned: int = 0
    # The setting combinations met, and each best layout's (``best_settings[i]`` beside ``best``'s i-th).
    variants: list[dict[str, Any]] = field(default_factory=list)
    best_settings: list[dict[str, Any]] = field(default_factory=list)

    def code(self, settings: Mapping[str, Any]) -> int:
        """The index of a setting combination in ``variants`` (added when new)."""
        key = dict(settings)
        if key not in self.variants:
            self.variants.append(key)
        return self.variants.index(key)


def _divisors(n: int) -> list[int]:
    """The divisors of ``n`` in increasing order, in O(√n) steps."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def _structures(problem: Problem, fixed: Mapping[str, int]) -> Iterator[dict[str, int]]:
    """Every (tp, pp, cp, dp, ep, vpp) whose product uses all GPUs, with fixed fields held."""
    m = problem.model
    # Dimensions the stack does not have are held at 1 (a given value still meets its check).
    fixed = {**structure_pins(profile(problem.training.framework)), **fixed}
    for tp, pp, cp, dp in _dense_structures(problem.cluster.num_gpus, m.layers, fixed):
        eps = _ep_choices(problem, tp=tp, dp=dp, cp=cp)
        for ep in _options(fixed, "ep", eps):
            for vpp in _options(fixed, "vpp", _vpp_choices(problem, pp)):
                yield {"tp": tp, "pp": pp, "cp": cp, "dp": dp, "ep": ep, "vpp": vpp}


def _ep_choices(problem: Problem, *, tp: int, dp: int, cp: int) -> list[int]:
    """Expert-parallel sizes to try: the divisors of the experts that divide the ranks the ep group may
    span, dp × cp, or tp × dp × cp / etp with ``training.etp`` (none when etp does not divide them: the
    structure is then tried with ep 1 and refused, saying why); 1 for a dense model."""
    m, etp = problem.model, problem.training.etp
    ranks = dp * cp if not etp else (tp * dp * cp // etp if (tp * dp * cp) % etp == 0 else 0)
    return [e for e in _divisors(ranks) if m.experts % e == 0] if m.is_moe and ranks else [1]


def _vpp_choices(problem: Problem, pp: int) -> list[int]:
    """Interleaving degrees to try: an explicit pipeline layout's stages / pp (none if pp does not divide
    them), else, with pp > 1, 1 and every depth v whose pp × v chunks split the layers or the layers + 2."""
    layout = problem.training.pipeline_layout
    if layout is not None:
        vpp = layout.stages // pp
        return [vpp] if layout.stages % pp == 0 and (pp > 1 or vpp == 1) else []
    if pp == 1:
        return [1]
    # Every depth up to a chunk of one layer (layers ÷ pp, or (layers + 2) ÷ pp with the embedding and the
    # loss counted as layers), as Calculon enumerates it; a depth that splits neither is no layout.
    layers = problem.model.layers
    return [1, *(v for v in range(2, (layers + 2) // pp + 1) if bool(interleaving_splits(layers, pp, v)))]


def _options(fixed: Mapping[str, int], name: str, default: list[int]) -> list[int]:
    return [fixed[name]] if name in fixed else default


def _dense_structures(n: int, layers: int, fixed: Mapping[str, int]) -> Iterator[tuple[int, int, int, int]]:
    """Every (tp, pp, cp, dp) whose product is ``n`` GPUs, with fixed fields held."""
    for tp in _options(fixed, "tp", [d for d in _divisors(n) if d <= MAX_TP]):
        if n % tp:
            continue
        for pp in _options(fixed, "pp", [d for d in _divisors(n // tp) if d <= layers]):
            if n % (tp * pp):
                continue
            for cp in _options(fixed, "cp", [c for c in CP_CHOICES if (n // (tp * pp)) % c == 0]):
                if n % (tp * pp * cp):
                    continue
                dp = n // (tp * pp * cp)
                if "dp" in fixed and fixed["dp"] != dp:
                    continue
                yield tp, pp, cp, dp


def _selective_saves_nothing(problem: Problem) -> bool:
    """Whether Megatron's selective recompute stores as much as none: under flash attention with only
    core_attn among ``training.recompute_modules`` (Megatron-Core's default)."""
    training = problem.training
    return training.flash_attention and set(training.recompute_modules) <= {"core_attn"}


def _option_grid(
    fixed: Mapping[str, int],
    *,
    flash_attention: bool = True,
    stack: FrameworkProfile | None = None,
    micro_batches: list[int] | None = None,
) -> list[tuple[int, ...]]:
    """Every (micro_batch, recompute, sharding, sequence_parallel) a structure is expanded with: the modes
    the training stack has (all without ``stack``), and ``micro_batches`` (``_grid``: every divisor of the
    global batch, of which ``_block_layouts`` keeps those dividing a structure's local batch; default 1).

    Under flash attention, Megatron's "selective" recompute (the attention scores and softmax, Korthikanti
    2022 Sec. 5) saves nothing, since flash attention never stores the scores, and still adds the attention
    core's forward again: it is not searched (a fixed layout may ask for it; ``estimate`` warns) unless
    ``training.recompute_modules`` names modules that do save memory (``_grid`` passes
    ``_selective_saves_nothing`` as ``flash_attention``). PyTorch's op-level selective checkpointing (the
    FSDP2 stacks) keeps half the matmul outputs and is searched."""
    mbs = [fixed["micro_batch"]] if "micro_batch" in fixed else list(micro_batches or [1])
    modes, shardings, sp_values = (
        grid_choices(stack)
        if stack
        else (list(range(len(RECOMPUTE_MODES))), list(range(len(SHARDING_MODES))), [0, 1])
    )
    attention_kind = stack is None or stack.selective_recompute == SELECTIVE_ATTENTION
    modes = [m for m in modes if not (flash_attention and attention_kind and m == RECOMPUTE_SELECTIVE)]
    rcs = [fixed["recompute"]] if "recompute" in fixed else modes
    shs = [fixed["sharding"]] if "sharding" in fixed else shardings
    sps = [fixed["sequence_parallel"]] if "sequence_parallel" in fixed else sp_values
    return list(itertools.product(mbs, rcs, shs, sps))


def _grid(problem: Problem, fixed: Mapping[str, int]) -> list[tuple[int, ...]]:
    """The option grid of this problem: its attention kernel and training stack."""
    return _option_grid(
        fixed,
        flash_attention=_selective_saves_nothing(problem),
        stack=profile(problem.training.framework),
        micro_batches=_divisors(max(1, problem.training.global_batch_seqs)),
    )


def search_size(problem: Problem, *, fixed: Mapping[str, int]) -> int:
    """How many layout × setting combinations :func:`search` covers: each structure expanded with the
    option grid, less what ``_block_layouts`` skips (micro-batches that divide no local batch, duplicates),
    each layout with the combinations of the searched run settings (search_settings.combinations_per_layout),
    counted block by block as the search builds them (bench/search.py prints it beside Calculon's space)."""
    at = with_settings(problem, base_settings(problem))
    return sum(int(combinations_per_layout(problem, lay).sum()) for lay in _blocks(at, fixed))


def check_search_size(problem: Problem, *, fixed: Mapping[str, int]) -> None:
    """Refuse a search over more than MAX_SEARCH_GPUS GPUs, on ``cluster.nodes``, saying what to change."""
    gpus = problem.cluster.num_gpus
    if gpus > MAX_SEARCH_GPUS:
        raise InputError(
            f"a layout search over {gpus:,} GPUs is too large to run here (at most {MAX_SEARCH_GPUS:,}); "
            "use fewer nodes, or give the whole layout (tp, pp, micro_batch, recompute, sharding)",
            field=under(problem.where.cluster, "nodes"),
        )


def search(problem: Problem, *, fixed: Mapping[str, int], top: int = 10, prune: bool = True) -> SearchResult:
    """Evaluate every layout allowed by ``fixed`` (field → value, recompute/sharding as indices), with every
    combination of the run settings the problem searches (search_settings.py), and keep the ``top`` fastest
    that fit. Structures are expanded with the option grid (micro_batch × recompute × sharding ×
    sequence_parallel) and evaluated CHUNK_LAYOUTS at a time, so memory stays bounded.

    With ``prune`` (the default) dominated setting combinations are not evaluated (search_settings.py):
    each layout is evaluated at the dominant settings (overlap on, no offload); one that does not fit there
    is tried with the offloads (``_offloaded``): optimizer offload, then the fewest activation-offload layers
    that make it fit, skipped where the most offload cannot make it fit or where a lower bound on its step
    time (the step without activation offload) exceeds the ``top``-th best found. ``prune=False`` evaluates
    every combination (tests compare the two). ``result.space`` counts the layouts × combinations,
    ``result.evaluated`` those evaluated and ``result.pruned`` the rest.
    Raises InputError on ``cluster.nodes`` past MAX_SEARCH_GPUS GPUs (check_search_size)."""
    check_search_size(problem, fixed=fixed)
    result = SearchResult(best={}, evaluated=0)
    best = _Best(top=top)
    combos = [base_settings(problem)] if prune else setting_combinations(problem)
    for combo in combos:
        at = with_settings(problem, combo)
        for lay in _blocks(at, fixed):
            result.space += int(combinations_per_layout(problem, lay).sum()) if combo is combos[0] else 0
            result.evaluated += lay["tp"].size
            ok = _structurally_ok(at, lay, result)
            if not ok.any():
                continue
            sub = _select(lay, ok)
            result.valid += int(ok.sum())
            fits = _memory_fits(at, sub, result)
            if fits.any():
                result.feasible += int(fits.sum())
                best.add(
                    step_time_parts(at, _select(sub, fits))["total"], _select(sub, fits), result.code(combo)
                )
            if prune and not fits.all() and _offloads_searched(problem):
                _offloaded(problem, combo, _select(sub, ~fits), best, result)
    result.pruned = max(0, result.space - result.evaluated)
    result.best = best.lay
    result.best_settings = [result.variants[c] for c in best.code.tolist()]
    return result


def _blocks(problem: Problem, fixed: Mapping[str, int]) -> Iterator[dict[str, IntArray]]:
    """The search's layouts, a block of structures at a time, each expanded with the option grid."""
    grid = np.array(_grid(problem, fixed), dtype=np.int64)
    per_structure = max(1, CHUNK_LAYOUTS // len(grid))
    structures = _structures(problem, fixed)
    while block := list(itertools.islice(structures, per_structure)):
        yield _block_layouts(problem, fixed, grid, block)


def _offloads_searched(problem: Problem) -> bool:
    searched = problem.training.searched_settings
    return "optimizer_offload" in searched or "activation_offload_layers" in searched


def _offloaded(
    problem: Problem, base: Mapping[str, Any], sub: Mapping[str, IntArray], best: _Best, result: SearchResult
) -> None:
    """Layouts ``sub`` that do not fit at the ``base`` settings, tried with the offloads the problem searches:
    with optimizer offload (when searched) those that then fit are evaluated; with activation offload (pp 1,
    no recompute), the fewest layers that make each fit (``_fewest_offload_layers``), after skipping those
    that do not fit at layers − 1 and those whose step without activation offload (a lower bound: each
    offloaded layer only adds exposed copy time) is slower than the ``top``-th best found."""
    searched = problem.training.searched_settings
    usable = usable_gib(problem) * GIB
    for opt in [False, True] if "optimizer_offload" in searched else [None]:
        combo = dict(base) if opt is None else {**base, "optimizer_offload": opt}
        at = with_settings(problem, combo)
        cand = sub
        if opt:
            result.evaluated += cand["tp"].size
            fits = memory_parts(at, cand)["total"] <= usable
            if fits.any():
                result.feasible += int(fits.sum())
                best.add(
                    step_time_parts(at, _select(cand, fits))["total"], _select(cand, fits), result.code(combo)
                )
            cand = _select(cand, ~fits)
        if "activation_offload_layers" not in searched or cand["tp"].size == 0:
            continue
        cand = _select(cand, (cand["pp"] == 1) & (cand["recompute"] == RECOMPUTE_NONE))
        most = problem.model.layers - 1
        result.evaluated += cand["tp"].size
        cand = _select(
            cand,
            memory_parts(with_settings(at, {"activation_offload_layers": most}), cand)["total"] <= usable,
        )
        if cand["tp"].size and best.full:
            result.evaluated += cand["tp"].size
            cand = _select(cand, step_time_parts(at, cand)["total"] <= best.time[-1])
        if cand["tp"].size:
            _add_fewest(at, combo, cand, best, result)


def _add_fewest(
    at: Problem, combo: Mapping[str, Any], cand: Mapping[str, IntArray], best: _Best, result: SearchResult
) -> None:
    """Evaluate each layout of ``cand`` at the fewest activation-offload layers that make it fit."""
    layers = _fewest_offload_layers(at, cand, result)
    for n in np.unique(layers).tolist():
        chosen = _select(cand, layers == n)
        result.feasible += chosen["tp"].size
        result.evaluated += chosen["tp"].size
        settings = {**combo, "activation_offload_layers": int(n)}
        best.add(step_time_parts(with_settings(at, settings), chosen)["total"], chosen, result.code(settings))


def _fewest_offload_layers(at: Problem, cand: Mapping[str, IntArray], result: SearchResult) -> IntArray:
    """The fewest activation-offload layers n (1 … layers − 1) at which each layout of ``cand`` fits, given
    that it fits at layers − 1 and not at 0: bisection on n (memory never grows with n), each step's memory
    evaluated once per distinct n."""
    usable = usable_gib(at) * GIB
    lo = np.zeros(cand["tp"].size, dtype=np.int64)
    hi = np.full(cand["tp"].size, at.model.layers - 1, dtype=np.int64)
    while (open_ := hi - lo > 1).any():
        mid = (lo + hi) // 2
        for n in np.unique(mid[open_]).tolist():
            idx = np.flatnonzero(open_ & (mid == n))
            result.evaluated += idx.size
            lay = {k: a[idx] for k, a in cand.items()}
            fits = memory_parts(with_settings(at, {"activation_offload_layers": n}), lay)["total"] <= usable
            hi[idx[fits]] = n
            lo[idx[~fits]] = n
    return hi


def _block_layouts(
    problem: Problem, fixed: Mapping[str, int], grid: IntArray, block: list[dict[str, int]]
) -> dict[str, IntArray]:
    """The layouts of a block of structures, each expanded with the option grid (structure-major),
    duplicates dropped. The duplicate rules are decided on the structure × grid table and the kept layouts
    gathered from it once, each column contiguous."""
    structure = {
        k: np.array([b[k] for b in block], dtype=np.int64) for k in ("tp", "pp", "cp", "dp", "ep", "vpp")
    }
    tp = structure["tp"][:, None]
    sp, sharding = grid[None, :, 3], grid[None, :, 2]
    # Sequence parallelism means nothing without TP, and HSDP equals ZeRO-3 or no sharding when the
    # shard group would be the whole (or a single) replica: skip those duplicates.
    dup = np.zeros((len(block), len(grid)), dtype=bool)
    if "sequence_parallel" not in fixed:
        dup |= (sp > 0) & (tp == 1)
        if profile(problem.training.framework).sequence_parallel == "always":
            dup |= (sp == 0) & (tp > 1)
    if "sharding" not in fixed:
        dup |= (sharding == SH_HSDP) & (tp * structure["cp"][:, None] >= problem.cluster.gpus_per_node)
    if "micro_batch" not in fixed:
        # Every micro-batch dividing the local batch B / dp (Calculon's enumeration): the grid holds every
        # divisor of B, and one that does not divide B / dp is no layout. A structure whose dp does not
        # divide B keeps micro-batch 1, refused with the reason.
        batch, dp = problem.training.global_batch_seqs, structure["dp"][:, None]
        mb = grid[None, :, 0]
        dup |= (batch % (dp * mb) != 0) & ~((batch % dp != 0) & (mb == 1))
    # Row-major: each structure's kept options in grid order, so the structure columns are repeats.
    kept = ~dup
    per_structure = kept.sum(axis=1)
    g_idx = np.nonzero(kept)[1]
    options = {k: np.ascontiguousarray(grid[:, j])[g_idx] for j, k in enumerate(_GRID_FIELDS)}
    return layouts(**{k: np.repeat(a, per_structure) for k, a in structure.items()}, **options)


_GRID_FIELDS = ("micro_batch", "recompute", "sharding", "sequence_parallel")


def _select(lay: Mapping[str, IntArray], mask: np.ndarray) -> dict[str, IntArray]:
    """The layouts where ``mask`` holds (the mask turned into indices once, not once per field)."""
    idx = np.flatnonzero(mask)
    return {k: a[idx] for k, a in lay.items()}


def _structurally_ok(problem: Problem, lay: Mapping[str, IntArray], result: SearchResult) -> np.ndarray:
    """Which layouts pass every structural check; the first check each other layout fails is counted in
    ``result.rejected`` (formatted once per structure)."""
    ok = np.ones(lay["tp"].size, dtype=bool)
    for check_field, failed, reason in structural_checks(problem, lay):
        bad = failed & ok
        if bad.any():
            reps, counts = _representatives(lay, np.flatnonzero(bad))
            if isinstance(reason, Reason):
                reps, counts = _alike(lay, reps, counts, reason.fields)
            for i, count in zip(reps, counts, strict=True):
                text = reason(i)
                result.rejected[text] += count
                result.reason_fields[text] = check_field
            ok &= ~failed
    return ok


def _memory_fits(problem: Problem, sub: Mapping[str, IntArray], result: SearchResult) -> np.ndarray:
    """Which layouts fit in the accelerator's memory less the headroom (``usable_gib``); records the
    least-memory layout in ``result`` and counts the others by their need (2 significant figures) in
    ``result.rejected``."""
    cap_gib = problem.cluster.accelerator.memory_gib
    headroom = problem.training.memory_headroom
    need_gib = memory_parts(problem, sub)["total"] / GIB
    least = int(np.argmin(need_gib))
    if result.min_need_gib is None or need_gib[least] < result.min_need_gib:
        result.min_need_gib = float(need_gib[least])
        result.min_need_layout = layout_row(sub, least)
    fits: np.ndarray = need_gib <= usable_gib(problem)
    if (~fits).any():
        needs, how_many = np.unique(_round2(need_gib[~fits]), return_counts=True)
        for need, count in zip(needs, how_many, strict=True):
            result.rejected[memory_reason(float(need), cap_gib, headroom)] += int(count)
    return fits


@dataclass
class _Best:
    """The ``top`` fastest layouts seen so far (step time ascending, ties in the order seen)."""

    top: int
    time: np.ndarray = field(default_factory=lambda: np.empty(0))
    lay: dict[str, IntArray] = field(
        default_factory=lambda: {k: np.empty(0, dtype=np.int64) for k in LAYOUT_FIELDS}
    )
    code: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))

    @property
    def full(self) -> bool:
        return self.time.size >= self.top

    def add(self, t: np.ndarray, sub: Mapping[str, IntArray], code: int = 0) -> None:
        """Merge layouts ``sub`` (step times ``t``, setting combination ``code``) into the top."""
        keep = _smallest(t, self.top)
        best_time = np.concatenate([self.time, t[keep]])
        best_lay = {k: np.concatenate([self.lay[k], sub[k][keep]]) for k in LAYOUT_FIELDS}
        best_code = np.concatenate([self.code, np.full(keep.size, code, dtype=np.int64)])
        order = np.argsort(best_time, kind="stable")[: self.top]
        self.time = best_time[order]
        self.lay = {k: a[order] for k, a in best_lay.items()}
        self.code = best_code[order]


def _smallest(t: np.ndarray, top: int) -> np.ndarray:
    """Indices of the ``top`` smallest of ``t``, ascending, ties in index order: np.argsort(t, kind="stable")
    [:top], with the stable sort run only on the values up to the top-th smallest (np.partition finds it)."""
    if t.size <= top:
        return np.argsort(t, kind="stable")
    kth = np.partition(t, top - 1)[top - 1]
    if np.isnan(kth):  # fewer than ``top`` numbers: NaN sorts last, sort them all
        return np.argsort(t, kind="stable")[:top]
    candidates = np.flatnonzero(t <= kth)
    return candidates[np.argsort(t[candidates], kind="stable")][:top]


def structurally_valid(problem: Problem, *, fixed: Mapping[str, int]) -> bool:
    """Whether any layout allowed by ``fixed`` passes ``structural_checks`` on this cluster (memory aside).

    Cheap next to ``search``: one layout per structure, at micro-batch 1 (or the fixed one), since a
    micro-batch m that satisfies the batch rules (B a multiple of dp·m; B/(dp·m) a multiple of pp when
    interleaving) implies micro-batch 1 does; recompute, sharding and sequence parallelism enter no
    structural rule."""
    block = list(_structures(problem, fixed))
    if not block:
        return False
    cols = {k: np.array([b[k] for b in block], dtype=np.int64) for k in ("tp", "pp", "cp", "dp", "ep", "vpp")}
    always_sp = profile(problem.training.framework).sequence_parallel == "always"
    lay = layouts(
        **cols,
        micro_batch=fixed.get("micro_batch", 1),
        recompute=0,
        sharding=0,
        sequence_parallel=(cols["tp"] > 1) & always_sp,
    )
    ok = np.ones(len(block), dtype=bool)
    for _, failed, _ in structural_checks(problem, lay):
        ok &= ~failed
    return bool(ok.any())


def _round2(values: np.ndarray) -> np.ndarray:
    """Round to 2 significant figures, vectorised."""
    values = np.asarray(values, dtype=np.float64)
    mag = np.where(values > 0, np.floor(np.log10(np.maximum(values, 1e-12))), 0.0)
    scale = 10.0 ** (mag - 1)
    return np.round(values / scale) * scale


_STRUCTURE_KEY = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch")


def _representatives(lay: Mapping[str, IntArray], idx: np.ndarray) -> tuple[list[int], list[int]]:
    """One index per distinct structure (and micro-batch) among ``idx`` (so a reason is formatted once per
    structure), the first of each, with how many layouts share it; in the lexicographic order of
    (tp, pp, dp, cp, ep, vpp, micro_batch), the order the rejection reasons are first counted in.

    The seven fields are packed into one integer per layout (mixed radix, each field's maximum + 1, which
    keeps the lexicographic order). ``_block_layouts`` lays a structure's layouts out by micro-batch first,
    so each distinct key is one run of ``idx``: the runs are found in one pass and only their keys are sorted
    (np.unique on the seven columns sorted every layout, most of the search's time when most are refused)."""
    cols = [lay[k][idx] for k in _STRUCTURE_KEY]
    key = packed_key(cols, shape=idx.size)
    if key is None:
        keys2d = np.stack(cols, axis=1)
        _, first, counts = np.unique(keys2d, axis=0, return_index=True, return_counts=True)
        return [int(idx[f]) for f in first], [int(c) for c in counts]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    order = np.argsort(key[starts], kind="stable")
    sorted_keys = key[starts[order]]
    if (sorted_keys[1:] == sorted_keys[:-1]).any():
        # A key in two runs (never from _block_layouts): count it as one, first index first.
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        return idx[first].tolist(), counts.tolist()
    counts = np.diff(np.append(starts, idx.size))
    return idx[starts[order]].tolist(), counts[order].tolist()


def _alike(
    lay: Mapping[str, IntArray], reps: list[int], counts: list[int], fields: tuple[str, ...]
) -> tuple[list[int], list[int]]:
    """``_representatives`` merged where they agree on ``fields`` (the fields a reason reads, so they share
    its text): the first of each group, in the order the groups first appear in ``reps``, with the group's
    count. Counting one text per group, in that order, counts the same texts as one per representative, in
    the same first-seen order."""
    rep_idx = np.array(reps, dtype=np.int64)
    key = packed_key([lay[k][rep_idx] for k in fields], shape=rep_idx.size)
    if key is None:
        return reps, counts
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    summed = np.bincount(inverse.ravel(), weights=np.array(counts, dtype=np.float64)).astype(np.int64)
    order = np.argsort(first)
    return rep_idx[first[order]].tolist(), summed[order].tolist()


__all__ = ["SH_NONE", "SearchResult", "evaluate", "search", "structural_checks", "structurally_valid"]
