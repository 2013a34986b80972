"""Memory semantics of issue 19, item 5: recompute modes and what each may cost.

Full recompute keeps one layer input per in-flight layer and rebuilds one layer at a time, so it never needs
more memory than keeping every activation (no recompute)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.memory import memory_parts
from clusterdesigner.engine.search import _block_layouts, _option_grid, _structures
from clusterdesigner.engine.training import estimate, parse_problem
from clusterdesigner.engine.workload import GIB

LLAMA3_70B_512 = {
    "model": {"preset": "llama3-70b"},
    "training": {"tokens": 15e12, "global_batch_tokens": 4194304},
    "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
}


def test_full_recompute_never_needs_more_memory_than_none_over_a_whole_search_space() -> None:
    # Before: 195 of Llama 3 70B's layouts on 512 H100 needed more with full recompute than without, up to
    # 349 GiB against 271 GiB (tp 1, pp 64, micro-batch 32: fewer than two layers in flight, each charged
    # two whole layers of backward working set).
    problem = parse_problem(LLAMA3_70B_512, accelerators=ACCELERATORS, fabrics=FABRICS)
    grid = np.array(_option_grid({}), dtype=np.int64)
    lay = _block_layouts(problem, {}, grid, list(_structures(problem, {})))
    need = memory_parts(problem, lay)["total"] / GIB
    keys = ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch", "sharding", "sequence_parallel")
    key = np.stack([lay[k] for k in keys], axis=1)
    none = {tuple(k): n for k, n, r in zip(key, need, lay["recompute"], strict=True) if r == 0}
    full = [(tuple(k), n) for k, n, r in zip(key, need, lay["recompute"], strict=True) if r == 2]
    assert len(full) == len(none) > 1000
    assert all(n <= none[k] + 1e-9 for k, n in full)


def _fixed(recompute: str) -> dict[str, Any]:
    layout = {"tp": 1, "pp": 64, "micro_batch": 32, "recompute": recompute, "sharding": "zero1"}
    return {**LLAMA3_70B_512, "parallelism": layout}


def test_full_recompute_with_few_layers_in_flight_is_charged_what_none_is() -> None:
    # pp 64 over 80 layers: 2 layers a stage; 512 sequences over dp 8 at micro-batch 32 are 2 micro-batches,
    # so the first stage holds 2 × min(64, 2) = 4 layers in flight. Full recompute's inputs plus
    # two rebuilt layers would exceed the four layers none keeps; the charge is capped at none's.
    full = estimate(_fixed("full"), accelerators=ACCELERATORS, fabrics=FABRICS)
    none = estimate(_fixed("none"), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert full["memory_per_gpu_gib"]["activations"] <= none["memory_per_gpu_gib"]["activations"]
    assert full["memory_per_gpu_gib"]["total"] <= none["memory_per_gpu_gib"]["total"]


@pytest.mark.parametrize("seq_len", [2049, 8191])
def test_a_fixed_tp_layout_with_an_odd_sequence_runs_without_sequence_parallelism(seq_len: int) -> None:
    # tp 8 does not divide 2,049 or 8,191: sequence parallelism is off by default, not refused.
    request = {
        "model": {"preset": "llama3-8b", "seq_len": seq_len},
        "training": {"tokens": 1e12, "global_batch_seqs": 64},
        "cluster": {"accelerator": "h100-sxm", "nodes": 2, "fabric": "ib-ndr400"},
        "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "recompute": "none", "sharding": "zero1"},
    }
    result = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert result["parallelism"]["cp"] == 1
    assert result["parallelism"]["sequence_parallel"] is False
