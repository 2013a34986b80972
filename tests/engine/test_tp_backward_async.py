"""Tensor-parallel collectives without TP communication overlap: the column-parallel linears' input-gradient
all-reduce (reduce-scatter under sequence parallelism) still runs beside their weight-gradient GEMM on
stacks that start it asynchronously (Transformer Engine's Linear, Megatron-LM since 2021-09), and waits on the
others (timing._tp_comm_layer, framework.FrameworkProfile.tp_backward_async).

Hand calculation, per layer and micro-batch, with a = one all-reduce's worth of TP traffic (its bytes over the
group's bandwidth plus the ring latency) and W the column-parallel GEMMs' time, W ≥ 2a here (Llama 3 70B at
TP 2 on one H100 node: each GEMM is far longer than its collective):
- no overlap, no async backward: all 4 all-reduces wait: 4a;
- async backward, no sequence parallelism: the backward's two all-reduces are the column-parallel layers'
  (QKV's and fc1's), both under their wgrad GEMMs: 2a + 0.2 · 2a (OVERLAP_PENALTY of what is overlapped)
  = 2.4a, 0.6 × the first;
- async backward with sequence parallelism: one all-reduce's worth (their two reduce-scatters) is overlapped,
  the row-parallel layers' output-gradient all-gathers wait: 3a + 0.2a = 3.2a, 0.8 × the first.
"""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.training.framework import PROFILES
from clusterdesigner.engine.training.timing import OVERLAP_PENALTY
from clusterdesigner.engine.training.training import estimate


def _estimate(*, sequence_parallel: bool, **training: Any) -> dict[str, Any]:
    request = {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 64, "tp_comm_overlap": False, **training},
        "cluster": {"accelerator": "h100-sxm", "nodes": 8, "gpus_per_node": 8, "fabric": "ib-ndr400"},
        "parallelism": {
            "tp": 2,
            "pp": 1,
            "dp": 32,
            "micro_batch": 1,
            "recompute": "none",
            "sharding": "zero3",
            "sequence_parallel": sequence_parallel,
        },
    }
    return estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)


def _tp_comm(*, sequence_parallel: bool, **training: Any) -> float:
    return float(_estimate(sequence_parallel=sequence_parallel, **training)["step_time_s"]["tp_comm"])


@pytest.mark.parametrize(("sequence_parallel", "share"), [(False, 0.6), (True, 0.8)])
def test_the_backward_input_gradient_collective_runs_under_the_weight_gradient_gemm(
    sequence_parallel: bool, share: float
) -> None:
    waits = _tp_comm(sequence_parallel=sequence_parallel, tp_backward_async=False)
    overlapped = 2.0 if not sequence_parallel else 1.0
    expected = (4.0 - overlapped + OVERLAP_PENALTY * overlapped) / 4.0
    assert expected == pytest.approx(share)
    assert waits > 0
    assert _tp_comm(sequence_parallel=sequence_parallel, tp_backward_async=True) == pytest.approx(
        share * waits, rel=1e-9
    )
    # Megatron-Core's profile starts it asynchronously by default.
    assert _tp_comm(sequence_parallel=sequence_parallel) == pytest.approx(share * waits, rel=1e-9)


def test_which_stacks_start_it_asynchronously() -> None:
    async_stacks = {slug for slug, profile in PROFILES.items() if profile.tp_backward_async}
    assert async_stacks == {"megatron-core", "megatron-lm-2022"}
    for slug in async_stacks:
        assert "async_op=True" in PROFILES[slug].sources["tp_backward_async"]


def test_the_estimate_says_how_its_tp_collectives_run() -> None:
    def stated(**training: Any) -> list[float]:
        result = _estimate(sequence_parallel=True, **training)
        return [a["value"] for a in result["assumptions"] if a["name"] == "tp_backward_async"]

    assert stated() == [1.0]
    assert stated(tp_backward_async=False) == [0.0]
    assert stated(tp_comm_overlap=True) == []
