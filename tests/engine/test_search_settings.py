"""Calculon's run settings searched beside the layout (issue 33, "the whole space searched"): TP and
data-parallel overlap, optimizer and activation offload are searched when the request leaves them out, the
dominance pruning never changes the best layout (checked against the exhaustive search on small cases), and
the large searches answer in time."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from specs import ACCELERATORS as SPEC_ACCELERATORS
from specs import FABRICS

from clusterdesigner.engine.training.layout_search import search
from clusterdesigner.engine.training.search_settings import (
    SEARCHED_SETTINGS,
    setting_combinations,
    with_settings,
)
from clusterdesigner.engine.training.timing import step_time_parts
from clusterdesigner.engine.training.training import estimate, parse_parallelism, parse_problem

# The seed catalog's host links (PCIe Gen4 x16 on A100: 32 GB/s; Gen5 x16 on H100: 64 GB/s), which
# offloading needs; the spec accelerators carry none.
HOST_LINK_GBPS = {"a100-80gb": 32.0, "a100-40gb": 32.0, "h100-sxm": 64.0}
ACCELERATORS = {
    slug: replace(a, host_link_gbps=HOST_LINK_GBPS.get(slug, a.host_link_gbps))
    for slug, a in SPEC_ACCELERATORS.items()
}


def _request(
    preset: str, nodes: int, accelerator: str, batch_tokens: int, *, gpus_per_node: int = 8, **training: Any
) -> dict[str, Any]:
    return {
        "model": {"preset": preset},
        # search_offload: the search may choose the offloads (asked for; off by default, search_settings.py)
        "training": {"tokens": 1e12, "global_batch_tokens": batch_tokens, "search_offload": True, **training},
        "cluster": {
            "accelerator": accelerator,
            "nodes": nodes,
            "gpus_per_node": gpus_per_node,
            "fabric": "ib-ndr400",
        },
    }


def _layout_key(result: Any, i: int) -> tuple[int, ...]:
    return tuple(int(a[i]) for a in result.best.values())


# Small cases where memory binds, so that optimizer and activation offload decide the best layout.
SMALL_CASES = [
    _request("llama3-8b", 1, "a100-40gb", 1 << 20),
    _request("gpt-oss-20b", 1, "a100-40gb", 1 << 20),
    _request("llama2-13b", 1, "a100-40gb", 1 << 20, gpus_per_node=4),
]


@pytest.mark.parametrize("request_", SMALL_CASES, ids=["llama3-8b", "gpt-oss-20b", "llama2-13b"])
def test_pruning_never_changes_the_best_layouts(request_: dict[str, Any]) -> None:
    problem = parse_problem(request_, accelerators=ACCELERATORS, fabrics=FABRICS)
    fixed = parse_parallelism(request_)
    pruned = search(problem, fixed=fixed, top=5)
    full = search(problem, fixed=fixed, top=400, prune=False)
    # Every combination of the four settings: 2 × 2 × 2 × layers (activation offload 0 … layers − 1).
    assert len(setting_combinations(problem)) == 8 * problem.model.layers
    assert pruned.space == full.space and pruned.evaluated < full.evaluated / 10
    # The exhaustive top lists a layout once per setting combination; its first occurrence is its best.
    seen: dict[tuple[int, ...], int] = {}
    for i in range(full.best["tp"].size):
        seen.setdefault(_layout_key(full, i), i)
    firsts = sorted(seen.values())[:5]
    assert [_layout_key(pruned, i) for i in range(5)] == [_layout_key(full, i) for i in firsts]
    assert pruned.best_settings == [full.best_settings[i] for i in firsts]


def test_offload_makes_the_best_layout_faster_where_memory_binds() -> None:
    # Llama 3 8B on 8 A100 40GB: without offload the fastest layout that fits is slower than tp 2 with 18
    # of its 32 layers' activations in host memory (the exhaustive search above finds the same).
    searched = estimate(SMALL_CASES[0], accelerators=ACCELERATORS, fabrics=FABRICS)
    fixed = {**SMALL_CASES[0], "training": {**SMALL_CASES[0]["training"], "optimizer_offload": False}}
    fixed["training"]["activation_offload_layers"] = 0
    without = estimate(fixed, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert searched["settings"]["activation_offload_layers"] == 18
    assert searched["parallelism"]["tp"] == 2 and searched["parallelism"]["pp"] == 1
    # The 18 layers' copies hide under the forward and backward compute (timing._activation_offload): free.
    assert searched["step_time_s"]["activation_offload"] == 0.0
    assert searched["step_time_s"]["total"] < without["step_time_s"]["total"]
    # Fixed in the request, the offloads are no searched setting, and the row says only what was searched.
    assert set(without["settings"]) == {"tp_comm_overlap", "fsdp_overlap"}


def test_a_setting_the_request_gives_stays_fixed() -> None:
    request = _request("llama3-8b", 1, "a100-40gb", 1 << 20, tp_comm_overlap=False)
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert "tp_comm_overlap" not in problem.training.searched_settings
    out = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert "tp_comm_overlap" not in out["settings"]
    # With overlap off the TP collectives are fully exposed: the step is slower than the searched one.
    searched = estimate(SMALL_CASES[0], accelerators=ACCELERATORS, fabrics=FABRICS)
    assert out["step_time_s"]["total"] > searched["step_time_s"]["total"]


def test_a_stack_without_tp_overlap_does_not_search_it() -> None:
    # Megatron-LM of 2022 (Korthikanti et al.) has no TP communication overlap: the profile holds it off.
    request = _request("llama3-8b", 1, "a100-40gb", 1 << 20, framework="megatron-lm-2022")
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert "tp_comm_overlap" not in problem.training.searched_settings
    assert problem.training.tp_comm_overlap is False


def test_offload_is_searched_only_when_asked_for() -> None:
    # Host memory is not modelled, so the search never proposes an offload unasked (search_settings.py).
    request = _request("llama3-8b", 1, "a100-40gb", 1 << 20)
    del request["training"]["search_offload"]
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert problem.training.searched_settings == ("tp_comm_overlap", "fsdp_overlap")
    asked = parse_problem(
        _request("llama3-8b", 1, "a100-40gb", 1 << 20), accelerators=ACCELERATORS, fabrics=FABRICS
    )
    assert asked.training.searched_settings == SEARCHED_SETTINGS


def test_an_accelerator_without_a_host_link_searches_no_offload() -> None:
    request = _request("llama3-8b", 1, "a100-40gb", 1 << 20)
    problem = parse_problem(request, accelerators=SPEC_ACCELERATORS, fabrics=FABRICS)
    assert problem.training.searched_settings == ("tp_comm_overlap", "fsdp_overlap")


def test_gpt3_space_is_counted_beside_calculon_and_searched_in_time() -> None:
    # GPT-3 175B on 1,024 A100 80GB, batch 1,536 (Calculon's case, 11.7 M in Isaev et al. SC '23).
    request = {
        "model": {"preset": "gpt3-175b"},
        "training": {"tokens": 300e9, "global_batch_seqs": 1536, "search_offload": True},
        "cluster": {"accelerator": "a100-80gb", "nodes": 128, "fabric": "ib-hdr200"},
    }
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    start = time.process_time()
    result = search(problem, fixed={}, top=10)
    cpu_s = time.process_time() - start
    assert result.space == 4_518_808 and result.evaluated + result.pruned == result.space
    assert cpu_s < 5.0  # bench/search.py: about 0.3 s on one core; generous for a loaded test machine
    # The best layout offloads 80 of the 96 layers' activations (16.35 s/step before the settings were
    # searched, tp 8 pp 2 vpp 16; bench/search.py prints both).
    assert result.best_settings[0]["activation_offload_layers"] == 80
    assert (int(result.best["tp"][0]), int(result.best["pp"][0])) == (8, 1)


@pytest.mark.parametrize("preset", ["deepseek-v3", "qwen3-235b-a22b", "kimi-k2"])
@pytest.mark.parametrize("nodes", [512, 16_384])
def test_moe_models_are_searched_up_to_131072_gpus_in_time(preset: str, nodes: int) -> None:
    request = {
        "model": {"preset": preset},
        "training": {"tokens": 15e12, "global_batch_tokens": 16777216, "search_offload": True},
        "cluster": {"accelerator": "h100-sxm", "nodes": nodes, "fabric": "ib-ndr400"},
    }
    start = time.process_time()
    out = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    cpu_s = time.process_time() - start
    assert out["mode"] == "search" and out["fits"]
    assert out["layouts_evaluated"] > 100_000
    assert cpu_s < 5.0  # bench/search.py: 0.25-0.6 s on one core


def test_overlap_off_is_never_faster_than_on() -> None:
    # The dominance the pruning rests on, checked on every feasible layout of a small search (pp 1,
    # micro-batch 1, no offload): timing._exposed leaves max(0, c − x) + penalty · min(c, x) ≤ c of a
    # collective c overlapped with compute x, so each overlap switched off only adds time.
    request = _request(
        "llama3-8b", 2, "a100-80gb", 1 << 20, optimizer_offload=False, activation_offload_layers=0
    )
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    fixed = {"pp": 1, "micro_batch": 1}
    dominant = search(problem, fixed=fixed, top=10_000)
    lay = dominant.best
    on = step_time_parts(problem, lay)["total"]
    assert 100 < lay["tp"].size < 10_000 and len(setting_combinations(problem)) == 4
    for combo in setting_combinations(problem)[1:]:
        off = step_time_parts(with_settings(problem, combo), lay)["total"]
        assert np.all(off >= on)
    tp_off = step_time_parts(with_settings(problem, {"tp_comm_overlap": False}), lay)["total"]
    assert np.any(tp_off > on)  # where TP communicates, overlap hides some of it


def test_space_counts_activation_offload_depths_only_where_it_runs() -> None:
    request = _request("llama3-8b", 1, "a100-40gb", 1 << 20, tp_comm_overlap=True, fsdp_overlap=True)
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    result = search(problem, fixed={"pp": 2}, top=1)
    # pp 2: activation offload does not run (Megatron-Core refuses it with pipelining), so each layout has
    # optimizer offload's two values only.
    layouts = search(problem, fixed={"pp": 2}, top=1, prune=False)
    assert result.space == layouts.space and result.space % 2 == 0
    assert np.all(result.best["pp"] == 2)
