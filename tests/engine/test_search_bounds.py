"""The layout search is bounded: the GPU count and the number of layouts it would try are checked before it
runs, and the sizing search probes no further than a search may go."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine import search as search_module
from clusterdesigner.engine.errors import InputError
from clusterdesigner.engine.search import MAX_SEARCH_GPUS, _divisors, search_size
from clusterdesigner.engine.training import estimate, min_nodes_to_fit, parse_parallelism, parse_problem


def _request(
    preset: str, nodes: int, gpus_per_node: int = 8, accelerator: str = "h100-sxm"
) -> dict[str, Any]:
    return {
        "model": {"preset": preset},
        "training": {"tokens": 1e12, "global_batch_tokens": 4194304},
        "cluster": {
            "accelerator": accelerator,
            "nodes": nodes,
            "gpus_per_node": gpus_per_node,
            "fabric": "ib-ndr400",
        },
    }


@given(st.integers(min_value=1, max_value=5_000))
def test_divisors_are_every_divisor_in_increasing_order(n: int) -> None:
    assert _divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_divisors_of_a_large_count_come_without_a_scan_of_every_number() -> None:
    found = _divisors(7_200_000)  # 100,000 nodes × 72 GPUs = 2^8 · 3^2 · 5^5: 9 · 3 · 6 divisors
    assert len(found) == 162 and found[:4] == [1, 2, 3, 4] and found[-1] == 7_200_000


def test_search_size_bounds_the_layouts_the_search_evaluates() -> None:
    request = _request("llama3-70b", 64)
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    size = search_size(problem, fixed=parse_parallelism(request))
    evaluated = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["layouts_evaluated"]
    # The search drops duplicates (sequence parallel without TP, HSDP equal to ZeRO-3) from the grid.
    assert evaluated <= size < 1.5 * evaluated


def test_a_search_past_the_gpu_cap_is_refused_on_the_nodes_before_it_runs() -> None:
    with pytest.raises(InputError) as refused:
        estimate(_request("llama3-70b", MAX_SEARCH_GPUS // 8 + 1), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert refused.value.field == "cluster.nodes"
    assert "at most 131,072" in refused.value.message


def test_a_search_past_the_layout_cap_is_refused_and_a_smaller_one_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = _request("llama3-70b", 8)
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    size = search_size(problem, fixed={})
    monkeypatch.setattr(search_module, "MAX_SEARCH_LAYOUTS", size - 1)
    with pytest.raises(InputError) as refused:
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert refused.value.field == "cluster.nodes"
    assert f"would try {size:,} layouts" in refused.value.message
    monkeypatch.setattr(search_module, "MAX_SEARCH_LAYOUTS", size)
    assert estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["mode"] == "search"


def test_sizing_probes_no_further_than_a_search_may_go(monkeypatch: pytest.MonkeyPatch) -> None:
    searched: list[int] = []
    real = search_module.search

    def counted(problem: Any, **kwargs: Any) -> Any:
        searched.append(problem.cluster.num_gpus)
        return real(problem, **kwargs)

    monkeypatch.setattr("clusterdesigner.engine.training.search", counted)
    # Llama 3 405B from 1 node of 72 GPUs (a GB200 NVL72 rack; an H100 node of 72 does not exist): the probe
    # stops at the GPU cap, which 72 does not divide.
    min_nodes_to_fit(
        _request("llama3-405b", 1, 72, "gb200"), accelerators=ACCELERATORS, fabrics=FABRICS, max_nodes=100_000
    )
    assert searched and max(searched) <= MAX_SEARCH_GPUS


@given(
    st.integers(min_value=0, max_value=100_000),
    st.lists(st.integers(min_value=-3, max_value=3_000_000), min_size=1, max_size=50),
)
def test_divisor_lookup_agrees_with_the_remainder(n: int, divisors: list[int]) -> None:
    # Positive divisors up to MAX_LOOKUP_DIVISOR are looked up; non-positive or larger ones take n % d.
    d = np.array([x if x else 1 for x in divisors], dtype=np.int64)
    assert search_module._indivisible(n, d).tolist() == [n % int(x) != 0 for x in d]


def _rejections_one_per_structure(problem: Any, lay: dict[str, Any]) -> list[tuple[str, int]]:
    """The rejection counts as the search first counted them: every check's refused layouts grouped by
    (tp, pp, dp, cp, ep, vpp, micro_batch) with np.unique on the columns, one text per group, formatted
    from the group's first layout, in the groups' lexicographic order."""
    counted: Counter[str] = Counter()
    ok = np.ones(lay["tp"].size, dtype=bool)
    for _field, failed, reason in search_module.structural_checks(problem, lay):
        idx = np.flatnonzero(failed & ok)
        if idx.size:
            keys = np.stack(
                [lay[k][idx] for k in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch")], axis=1
            )
            _, first, counts = np.unique(keys, axis=0, return_index=True, return_counts=True)
            for f, c in zip(first, counts, strict=True):
                counted[reason(int(idx[f]))] += int(c)
        ok &= ~failed
    return list(counted.items())


@pytest.mark.parametrize(
    ("preset", "nodes", "training"),
    [
        ("gpt3-175b", 96, {"tokens": 300e9, "global_batch_seqs": 1536}),
        ("mixtral-8x7b", 8, {"tokens": 1e12, "global_batch_seqs": 256, "etp": 1}),
        ("llama3-8b", 1, {"tokens": 1e12, "global_batch_seqs": 64, "activation_offload_layers": 16}),
        ("llama3-70b", 8, {"tokens": 1e12, "global_batch_seqs": 128, "framework": "deepspeed-zero-2021"}),
    ],
)
def test_rejections_are_counted_as_one_text_per_refused_structure(
    preset: str, nodes: int, training: dict[str, Any]
) -> None:
    # The search formats each reason once per distinct value of the fields it reads (search.Reason); the
    # texts, their counts and their first-seen order must be those of one text per refused structure.
    request = {
        "model": {"preset": preset},
        "training": training,
        "cluster": {"accelerator": "h100-sxm", "nodes": nodes, "fabric": "ib-ndr400"},
    }
    # Activation offload needs the host link, which the test catalog's H100 row leaves out.
    h100 = dataclasses.replace(ACCELERATORS["h100-sxm"], host_link_gbps=64.0)
    problem = parse_problem(request, accelerators={"h100-sxm": h100}, fabrics=FABRICS)
    grid = np.array(search_module._grid(problem, {}), dtype=np.int64)
    block = list(search_module._structures(problem, {}))
    lay = search_module._block_layouts(problem, {}, grid, block)
    result = search_module.SearchResult(best={}, evaluated=0)
    search_module._structurally_ok(problem, lay, result)
    expected = _rejections_one_per_structure(problem, lay)
    assert len(expected) > 5
    assert list(result.rejected.items()) == expected


@given(
    st.lists(st.sampled_from([0.0, 1.0, 1.5, 2.0, float("inf"), float("nan")]), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=12),
)
def test_the_fastest_layouts_are_kept_as_a_stable_sort_would(times: list[float], top: int) -> None:
    # Ties (and NaN, sorted last) stay in the order seen, as np.argsort(kind="stable") keeps them.
    t = np.array(times)
    assert search_module._smallest(t, top).tolist() == np.argsort(t, kind="stable")[:top].tolist()
