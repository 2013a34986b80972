"""A search that finds no layout names the binding constraint: memory, with the best layout's need against
the capacity, whenever some layout passes the structural rules; the commonest structural rule only when
none does (those cases are in test_training_engine.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import InfeasibleError
from clusterdesigner.engine.training.training import estimate

MEMORY_MESSAGE = re.compile(r"needs (\d+\.\d+) GiB of (\d+) GiB per GPU \(tp \d+, pp \d+, dp \d+")


def _request(
    preset: str, accelerator: str, nodes: int, gpus_per_node: int = 8, **training: Any
) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": {"preset": preset},
        "training": {"precision": "bf16", **training},
        "cluster": {"accelerator": accelerator, "gpus_per_node": gpus_per_node, "nodes": nodes},
    }
    if nodes > 1:
        request["cluster"]["fabric"] = "ib-ndr400"
    return request


def _infeasible(request: dict[str, Any]) -> InfeasibleError:
    with pytest.raises(InfeasibleError) as exc:
        estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    return exc.value


# Llama 2 7B on one A100 80GB: 6.74e9 parameters × 16 B of model states (bf16 weights and gradients, fp32
# master weights and two Adam moments) = 100.4 GiB before any activation, so memory binds. Most rejected
# layouts break the batch rule ("global batch 8 is not a multiple of dp 1 × micro_batch 3"), which used to
# be the message. Batches: 8 sequences (the reported case) and Llama 2's 4M tokens (1,024 × 4,096).
@pytest.mark.parametrize("batch", [{"global_batch_seqs": 8}, {"global_batch_tokens": 4 * 2**20}])
def test_7b_on_one_a100_is_refused_for_memory_not_for_the_batch(batch: dict[str, int]) -> None:
    error = _infeasible(_request("llama2-7b", "a100-80gb", 1, gpus_per_node=1, tokens=2e12, **batch))
    assert "global batch" not in error.message
    assert error.message.startswith("no parallel layout fits in memory: ")
    match = MEMORY_MESSAGE.search(error.message)
    assert match is not None, error.message
    assert match.group(2) == "80" and error.have_gib == 80
    # The need is at least the model states (100.4 GiB) plus the 2.5 GiB framework reserve.
    assert error.need_gib is not None and 102.9 < error.need_gib < 120
    assert float(match.group(1)) == pytest.approx(error.need_gib, abs=0.05)
    assert error.field == "cluster.nodes"
    assert error.layout is not None and error.layout["tp"] * error.layout["pp"] * error.layout["dp"] == 1


# Llama 3 70B on one node of 8 H100: 70.6e9 × 16 B = 1,052 GiB of states, 131.5 GiB per GPU even spread
# over all eight; the commonest rejection was a vpp divisibility rule.
def test_70b_on_one_h100_node_is_refused_for_memory_on_the_node_count() -> None:
    error = _infeasible(_request("llama3-70b", "h100-sxm", 1, tokens=15e12, global_batch_tokens=4 * 2**20))
    assert "vpp" not in error.message and "most often" not in error.message
    assert MEMORY_MESSAGE.search(error.message) is not None, error.message
    assert "of 80 GiB per GPU" in error.message
    assert error.field == "cluster.nodes"
    assert error.need_gib is not None and error.need_gib > 131.5
    assert error.have_gib == 80


def test_the_memory_error_reports_the_least_need_of_all_valid_layouts() -> None:
    # Each fixed layout evaluated on its own needs at least what the search reported as the best.
    request = _request("llama3-70b", "h100-sxm", 1, tokens=15e12, global_batch_tokens=4 * 2**20)
    error = _infeasible(request)
    assert error.layout is not None and error.need_gib is not None
    given = {k: v for k, v in error.layout.items() if k != "dp"}
    row = estimate({**request, "parallelism": given}, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert row["mode"] == "evaluate" and not row["fits"]
    assert row["memory_per_gpu_gib"]["total"] == pytest.approx(error.need_gib, abs=1e-3)
    for other in ({**given, "recompute": "none"}, {**given, "micro_batch": 2}):
        worse = estimate({**request, "parallelism": other}, accelerators=ACCELERATORS, fabrics=FABRICS)
        assert worse["memory_per_gpu_gib"]["total"] >= error.need_gib - 1e-3


def test_given_fields_that_only_memory_rules_out_are_named_with_a_layout_that_fits() -> None:
    # GPT-3 175B on 384 A100 80GB fits (test_training_engine.py), but not at tp 1 and pp 1 with replicated
    # model states: 175e9 × 16 B = 2.55 TiB on every GPU.
    request = _request("gpt3-175b", "a100-80gb", 48, tokens=300e9, global_batch_seqs=1536)
    request["parallelism"] = {"tp": 1, "pp": 1, "sharding": "none"}
    error = _infeasible(request)
    assert error.field == "parallelism"
    assert error.need_gib is not None and error.need_gib > 2500
    assert "with the parallelism left to the search" in error.message and " fits in " in error.message


def test_given_fields_on_a_cluster_too_small_for_any_layout_still_name_the_node_count() -> None:
    request = _request("gpt3-175b", "a100-80gb", 1, tokens=300e9, global_batch_seqs=1536)
    request["parallelism"] = {"recompute": "full"}
    error = _infeasible(request)
    assert error.field == "cluster.nodes"
    assert "left to the search" not in error.message
    assert MEMORY_MESSAGE.search(error.message) is not None, error.message


def test_a_structural_failure_keeps_the_commonest_rule_and_no_memory_figures() -> None:
    request = _request("gpt3-175b", "a100-80gb", 48, tokens=300e9, global_batch_seqs=1536)
    request["parallelism"] = {"tp": 64}
    error = _infeasible(request)
    assert error.field == "parallelism.tp"
    assert "most often: tp 64 does not divide 96 heads" in error.message
    assert error.need_gib is None and error.have_gib is None and error.layout is None
