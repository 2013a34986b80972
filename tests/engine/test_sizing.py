"""Sizing: the fewest nodes at which a layout fits (min_nodes_to_fit) and days to train at given node counts
(days_at_nodes)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import InfeasibleError, InputError
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.layout_search import structurally_valid
from clusterdesigner.engine.training.training import days_at_nodes, estimate, min_nodes_to_fit, parse_problem


def _llama3_405b(nodes: int) -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-405b"},
        "training": {"tokens": 15.6e12, "global_batch_tokens": 16 * 2**20, "precision": "bf16"},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": nodes, "fabric": "ib-ndr400"},
    }


def _at(request: dict[str, Any], nodes: int) -> dict[str, Any]:
    return {**request, "cluster": {**request["cluster"], "nodes": nodes}}


def test_llama3_405b_on_two_h100_nodes_is_refused_for_memory_and_sized_to_a_node_count_that_fits() -> None:
    request = _llama3_405b(2)
    with pytest.raises(InfeasibleError) as exc:
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert exc.value.field == "cluster.nodes"
    assert (
        "no parallel layout fits in memory" in exc.value.message
        and "GiB of 80 GiB per GPU" in exc.value.message
    )

    nodes = min_nodes_to_fit(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    # Hand estimate: 405.9e9 parameters × 16 B (bf16 weights 2 + bf16 gradients 2 + fp32 master weights
    # and two Adam moments 12) = 6.49e12 B = 6,047 GiB of model states. Spread over GPUs of 80 GiB less the
    # 2.5 GiB framework reserve, that is at least 78 GPUs, i.e. 10 nodes of 8, before any activation; full
    # recompute keeps activations small, so the answer should be within a few times that.
    assert nodes is not None and 10 <= nodes <= 32
    fits = estimate(_at(request, nodes), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert fits["fits"] and fits["summary"]["cluster"]["nodes"] == nodes
    with pytest.raises(InfeasibleError) as below:
        estimate(_at(request, nodes - 1), accelerators=ACCELERATORS, fabrics=FABRICS)
    # Below it, the least need exceeds the memory less the default 14.1 % headroom (68.72 GiB usable).
    assert below.value.need_gib is not None and below.value.need_gib > 80 * (1 - 0.141)


def test_sizing_costs_a_bounded_number_of_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    search = training.search

    def counting(problem: Any, **kwargs: Any) -> Any:
        calls.append(problem.cluster.nodes)
        return search(problem, **kwargs)

    monkeypatch.setattr(training, "search", counting)
    nodes = min_nodes_to_fit(_llama3_405b(2), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert nodes in calls and len(calls) <= training.MAX_SIZING_SEARCHES
    assert calls[0] == 2 and all(n > 2 for n in calls[1:])


def test_a_request_that_already_fits_is_its_own_answer() -> None:
    request = _llama3_405b(16)
    assert min_nodes_to_fit(request, accelerators=ACCELERATORS, fabrics=FABRICS) == 16


def test_sizing_gives_none_when_nothing_fits_up_to_the_cap() -> None:
    assert min_nodes_to_fit(_llama3_405b(2), accelerators=ACCELERATORS, fabrics=FABRICS, max_nodes=8) is None


def test_sizing_a_single_node_request_without_a_fabric_names_the_fabric() -> None:
    # Llama 2 7B on one A100 80GB needs 100.4 GiB of model states alone (6.74e9 × 16 B): more than one node.
    request = {
        "model": {"preset": "llama2-7b"},
        "training": {"tokens": 2e12, "global_batch_seqs": 8},
        "cluster": {"accelerator": "a100-80gb", "gpus_per_node": 1, "nodes": 1},
    }
    with pytest.raises(InputError) as exc:
        min_nodes_to_fit(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert exc.value.field == "cluster.fabric"
    request["cluster"]["fabric"] = "ib-hdr200"  # type: ignore[index]
    # Two GPUs can shard the states: with ZeRO-3, 6.74e9 × 16 B / 2 = 50.2 GiB a GPU before activations.
    assert min_nodes_to_fit(request, accelerators=ACCELERATORS, fabrics=FABRICS) == 2


def test_node_counts_no_layout_can_use_are_told_apart_without_a_search() -> None:
    # Llama 2 7B, 32 heads and 32 layers, batch 8 sequences, one GPU per node. 33 GPUs = 3 × 11: tp must
    # divide 32 heads (so 1), cp is a power of two, pp ≤ 32 layers and dp must divide 8 — no split works.
    request = {
        "model": {"preset": "llama2-7b"},
        "training": {"tokens": 2e12, "global_batch_seqs": 8},
        "cluster": {"accelerator": "a100-80gb", "gpus_per_node": 1, "nodes": 1},
    }
    problem = parse_problem(request, accelerators=ACCELERATORS, fabrics=FABRICS)

    def on(nodes: int) -> bool:
        return structurally_valid(replace(problem, cluster=replace(problem.cluster, nodes=nodes)), fixed={})

    assert not on(33)
    assert on(32) and on(24) and on(31)  # 31 = pp 31 (uneven split), dp 1


def test_days_at_nodes_match_the_estimate_and_fall_with_more_nodes() -> None:
    request = _llama3_405b(2)
    days = days_at_nodes(request, [2, 16, 64, 16], accelerators=ACCELERATORS, fabrics=FABRICS)
    assert list(days) == [2, 16, 64]
    assert days[2] is None
    d16, d64 = days[16], days[64]
    assert d16 is not None and d64 is not None and d64 < d16
    expected = estimate(_at(request, 64), accelerators=ACCELERATORS, fabrics=FABRICS)["time_to_train_days"]
    assert d64 == pytest.approx(expected, rel=1e-12)
    # time_to_train_days = tokens / tokens_per_second / 86,400.
    row = estimate(_at(request, 16), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert d16 == pytest.approx(15.6e12 / row["tokens_per_second"] / 86400, rel=1e-12)


def test_days_at_nodes_refuses_a_node_count_below_one() -> None:
    with pytest.raises(InputError) as exc:
        days_at_nodes(_llama3_405b(2), [0], accelerators=ACCELERATORS, fabrics=FABRICS)
    assert exc.value.field == "cluster.nodes"
