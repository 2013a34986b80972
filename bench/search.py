"""Time the training engine's full layout search (issue 3, "Speed"; issue 33, "the whole space searched").

    taskset -c 1 .venv/bin/python bench/search.py

Prints, for each case, the size of its space (search.SearchResult.space: every layout, with every interleaving
depth up to layers ÷ pp, every micro-batch dividing the local batch, cp, ep, ZeRO stages, HSDP, recompute,
sequence parallelism, times every combination of the run settings searched beside it, search_settings.py:
TP and data-parallel overlap, optimizer offload, 0 … layers − 1 offloaded activation layers where they run),
how many combinations were evaluated and how many the dominance pruning skipped, the wall and CPU time and
peak traced memory, for (a) GPT-3 175B on 1,024 A100 80GB, global batch 1,536 sequences, its space beside
Calculon's 11.7 M for the same problem (Isaev et al., SC '23, doi:10.1145/3581784.3607102; the figure issue
33 quotes); (b) Llama 3 405B on 16,384 H100 with 16M-token batches; (c) Llama 3 70B on 512 H100 (4M-token
batches); (d) the MoE models of issue 33 (DeepSeek-V3, Qwen3-235B, Kimi K2 as a 1T MoE) on 4,096 and
131,072 H100, 16M-token batches; then the 70B search on 64-512 H100 as a Celery sweep calls it. The
accelerators carry the seed catalog's host links, so the offloads are searched as in the app. Targets: (a)
and every (d) < 1 s of CPU time on one core, peak memory < 1 GiB. The first call's wall time counts cold
caches; the best of REPEATS further calls is the time on a machine others share (their load only ever slows
a call). Pin one core (taskset).
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "engine")]

from dataclasses import replace  # noqa: E402

from specs import ACCELERATORS as SPEC_ACCELERATORS  # noqa: E402
from specs import FABRICS  # noqa: E402

from clusterdesigner.engine.training.layout_search import search  # noqa: E402
from clusterdesigner.engine.training.training import estimate, parse_parallelism, parse_problem  # noqa: E402

# The seed catalog's host links (apps/catalog/data/seed_catalog.json: PCIe Gen4 x16 32 GB/s on A100, Gen5
# x16 64 GB/s on H100), so that optimizer and activation offload are searched as the app searches them.
HOST_LINK_GBPS = {"a100-80gb": 32.0, "a100-40gb": 32.0, "h100-sxm": 64.0}
ACCELERATORS = {
    slug: replace(a, host_link_gbps=HOST_LINK_GBPS.get(slug, a.host_link_gbps))
    for slug, a in SPEC_ACCELERATORS.items()
}

REPEATS = 5
CALCULON_GPT3_SPACE = 11_700_000
TARGET_S = 1.0

CASES: list[tuple[str, dict[str, Any]]] = [
    (
        "(a) GPT-3 175B, 1,024 A100 80GB, batch 1,536 seqs",
        {
            "model": {"preset": "gpt3-175b"},
            "training": {"tokens": 300e9, "global_batch_seqs": 1536, "search_offload": True},
            "cluster": {"accelerator": "a100-80gb", "nodes": 128, "fabric": "ib-hdr200"},
        },
    ),
    (
        "(b) Llama 3 405B, 16,384 H100, 16M-token batch",
        {
            "model": {"preset": "llama3-405b"},
            "training": {"tokens": 15.6e12, "global_batch_tokens": 16777216, "search_offload": True},
            "cluster": {"accelerator": "h100-sxm", "nodes": 2048, "fabric": "ib-ndr400"},
        },
    ),
    (
        "(c) Llama 3 70B, 512 H100, 4M-token batch",
        {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 15e12, "global_batch_tokens": 4194304, "search_offload": True},
            "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
        },
    ),
]


def run(label: str, request: dict[str, Any]) -> None:
    # Wall time from an untraced call (the first, so cold caches count): tracemalloc hooks every numpy
    # allocation and roughly doubles the time on these machines. Peak memory from a second, traced call.
    t0 = time.perf_counter()
    response = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    wall = time.perf_counter() - t0
    best_wall = wall
    best_cpu = float("inf")
    for _ in range(REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
        best_wall = min(best_wall, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    tracemalloc.start()
    estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    n = response["layouts_evaluated"]
    best = response["parallelism"]
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    counts = search(problem, fixed=parse_parallelism(request), top=1)
    beside = f" (Calculon: {CALCULON_GPT3_SPACE:,})" if label.startswith("(a)") else ""
    # The verdict on the CPU time of the best call: a machine others load slows the wall clock, not it.
    verdict = "" if not label.startswith(("(a)", "(d)")) else (" ok" if best_cpu < TARGET_S else " OVER 1 s")
    print(
        f"{label}\n  space {counts.space:,} layouts × settings{beside}; evaluated {counts.evaluated:,}, "
        f"pruned {counts.pruned:,}  wall {wall:.3f} s (first call); best of {REPEATS + 1} {best_wall:.3f} s "
        f"wall, {best_cpu:.3f} s CPU{verdict}  {n / best_wall:,.0f} evaluated/s  peak traced memory "
        f"{peak / 2**20:.1f} MiB"
    )
    settings = response.get("settings") or {}
    print(
        f"  best: tp{best['tp']} pp{best['pp']} dp{best['dp']} cp{best['cp']} vpp{best['vpp']} "
        f"mb{best['micro_batch']} {best['recompute']} {best['sharding']} sp={best['sequence_parallel']}: "
        f"{response['step_time_s']['total']:.2f} s/step, MFU {response['mfu']:.3f}, "
        f"{response['memory_per_gpu_gib']['total']:.1f} GiB  settings {settings}"
    )


def sweep() -> None:
    times = []
    for nodes in (8, 16, 32, 64):
        request = {**CASES[2][1], "cluster": {**CASES[2][1]["cluster"], "nodes": nodes}}
        t0 = time.perf_counter()
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
        times.append(time.perf_counter() - t0)
    print("Llama 3 70B search on 64/128/256/512 H100: " + ", ".join(f"{t:.3f} s" for t in times))


MOE_CASES: list[tuple[str, dict[str, Any]]] = [
    (
        f"(d) {preset}, {nodes * 8:,} H100, 16M-token batch",
        {
            "model": {"preset": preset},
            "training": {"tokens": 15e12, "global_batch_tokens": 16777216, "search_offload": True},
            "cluster": {"accelerator": "h100-sxm", "nodes": nodes, "fabric": "ib-ndr400"},
        },
    )
    for preset in ("deepseek-v3", "qwen3-235b-a22b", "kimi-k2")
    for nodes in (512, 16_384)
]


if __name__ == "__main__":
    for label, request in [*CASES, *MOE_CASES]:
        run(label, request)
    sweep()
    # An upper bound on every case's peak: the whole process (interpreter, numpy, Django-free engine).
    print(f"process max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
