"""DeepSpeed's pipeline engine as the deepspeed-zero-2021 profile times it (framework.py, timing.py):
partitioned stage sends, the gradient reduction after the last micro-batch, the tied embedding's all-reduce
between the first and last stage, and gradient accumulation outside the GEMMs. Hand calculations on the
BLOOM-176B shape (70 layers × 14336, vocab 250,880) on 48 nodes of 8 A100 80GB with Omni-Path at 50 Gb/s
per GPU (the BLOOM prequel's Jean Zay nodes): NIC busbw 50 / 8 GB/s × 0.9 = 5.625 GB/s, NVLink 3 busbw
300 × 0.8 = 240 GB/s."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.training import timing
from clusterdesigner.engine.training.training import parse_problem
from clusterdesigner.engine.training.workload import SHARDING_MODES, layouts

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}
NIC = 50e9 / 8 * 0.9
NVLINK = 300e9 * 0.8
HBM = 2.039e12 * timing.HBM_EFFICIENCY


def _bloom(framework: str, **training: Any) -> Any:
    request = {
        "model": {
            "layers": 70,
            "hidden": 14336,
            "heads": 112,
            "seq_len": 2048,
            "vocab": 250880,
            "ffn_hidden": 4 * 14336,
        },
        "training": {
            "tokens": 1e12,
            "global_batch_seqs": 2048,
            "precision": "bf16",
            "flash_attention": False,
            "framework": framework,
            **training,
        },
        "cluster": {
            "accelerator": "a100-80gb",
            "gpus_per_node": 8,
            "nodes": 48,
            "fabric": "opa-100",
            "scaleout_gbps_per_gpu": 50.0,
        },
        "parallelism": {
            "tp": 4,
            "pp": 12,
            "dp": 8,
            "micro_batch": 2,
            "recompute": "full",
            "sharding": "zero1",
        },
    }
    return parse_problem(request, **SPECS)


def _lay() -> dict[str, Any]:
    return layouts(
        tp=4,
        pp=12,
        dp=8,
        cp=1,
        ep=1,
        vpp=1,
        micro_batch=2,
        recompute=2,
        sharding=SHARDING_MODES.index("zero1"),
        sequence_parallel=0,
    )


def test_partitioned_stage_sends_move_a_tp_th_then_gather_over_nvlink() -> None:
    # One activation of micro-batch 2: 2 B × 4,096 tokens × 14,336 = 117,440,512 B. The stage boundary leaves
    # the node (tp·dp = 32 ranks a stage), so it crosses Omni-Path. DeepSpeed sends 1/4 of it:
    # 29,360,128 / 5.625e9 = 5.2196 ms, then all-gathers it over the 4 TP ranks on NVLink:
    # 3/4 × 117,440,512 / 240e9 + 3 ring steps × 15 µs = 0.4120 ms; plus 5 µs fabric latency; twice per
    # micro-batch (activation forward, gradient backward): 11.273 ms. Megatron-Core without sequence
    # parallelism sends it whole: 2 × (117,440,512 / 5.625e9 + 5 µs) = 41.767 ms.
    act = 2.0 * 4096 * 14336
    split = 2 * (act / 4 / NIC + 0.75 * act / NVLINK + 3 * 15e-6 + 5e-6)
    whole = 2 * (act / NIC + 5e-6)
    assert split == pytest.approx(11.273e-3, abs=1e-6)
    for framework, expected in (("deepspeed-zero-2021", split), ("megatron-core", whole)):
        problem = _bloom(framework, tp_comm_overlap=False)
        assert timing._pp_p2p(timing._shape(problem, _lay()))[0] == pytest.approx(expected, rel=1e-9)


def test_the_tied_embedding_gradient_is_all_reduced_between_the_end_stages() -> None:
    # vocab × h / tp = 250,880 × 14,336 / 4 = 899,153,920 parameters, bf16 gradients: 1,798,307,840 B,
    # a 2-rank ring between ranks 4 × 8 × 11 = 352 apart (one GPU of each end node): 2 × 1/2 × X / 5.625e9
    # + 2 × (15 + 5) µs = 0.31974 s. Megatron-Core's profile leaves it out (0).
    x = 250880 * 14336 / 4 * 2.0
    expected = x / NIC + 2 * (15e-6 + 5e-6)
    assert expected == pytest.approx(0.31974, abs=1e-5)
    c = timing._shape(_bloom("deepspeed-zero-2021"), _lay())
    assert timing._tied_embedding_allreduce(c)[0] == pytest.approx(expected, rel=1e-9)
    assert timing._tied_embedding_allreduce(timing._shape(_bloom("megatron-core"), _lay())) == 0.0


def test_gradient_accumulation_outside_the_gemms() -> None:
    # P gradients held whole (ZeRO-1): 16-bit gradients add 3 × 2 B per parameter on 127 of 128 micro-batches
    # (autograd's in-place add), the BF16Optimizer's fp32 gradients 2 + 4 + 4 + 4 + 4 = 18 B on every one.
    # For P = 4.5e9 that is 6 × 127/128 × 4.5e9 / (2.039e12 × 0.85) = 15.45 ms and 18 × 4.5e9 / HBM =
    # 46.73 ms a micro-batch; Megatron's fused accumulation none.
    m = np.full(1, 128.0)
    assert 6 * 127 / 128 * 4.5e9 / HBM == pytest.approx(15.45e-3, abs=1e-5)
    assert 18 * 4.5e9 / HBM == pytest.approx(46.73e-3, abs=1e-5)
    for grad_dtype, per_param in (("bf16", 6 * 127 / 128), ("fp32", 18.0)):
        problem = _bloom("deepspeed-zero-2021", grad_dtype=grad_dtype)
        c, held = timing._shape(problem, _lay()), timing._held(problem, _lay())
        params = held.trained[0] + held.trained[1]
        assert timing._grad_accumulation_per_mb(c, held, m)[0] == pytest.approx(
            per_param * params[0] / HBM, rel=1e-9
        )
    core = _bloom("megatron-core")
    assert timing._grad_accumulation_per_mb(timing._shape(core, _lay()), timing._held(core, _lay()), m) == 0.0


def test_the_data_parallel_reduction_waits_for_the_last_micro_batch() -> None:
    # DeepSpeed's ReduceGrads follows the last BackwardPass: the whole bucketed all-reduce is exposed, however
    # long the backward. Megatron-Core's overlaps all but the last bucket with it. Under the BF16Optimizer
    # (fp32 gradients) DeepSpeed all-reduces the 4 B gradients whole and all-gathers the 2 B weights: timed
    # as an all-reduce at 4 + 2/2 = 5 B per parameter, not ZeRO-1's reduce-scatter at 4 B.
    long_bwd = np.full(1, 1e3)
    problem = _bloom("deepspeed-zero-2021", grad_dtype="fp32")
    c, held = timing._shape(problem, _lay()), timing._held(problem, _lay())
    full, _ = timing._bucketed_all_reduce(
        c, params=held.trained[0], size=c.dp, stride=c.tp, per_param=np.full(1, 5.0)
    )
    assert timing._dp_bytes_per_param(problem.training, _lay()["sharding"])[0] == 5.0
    assert timing._dp_exposed(c, held, long_bwd)[0] == pytest.approx(full[0], rel=1e-9)
    core = _bloom("megatron-core", grad_dtype="fp32")
    c, held = timing._shape(core, _lay()), timing._held(core, _lay())
    all_, last = timing._bucketed_all_reduce(
        c, params=held.trained[0], size=c.dp, stride=c.tp, per_param=np.full(1, 4.0)
    )
    assert timing._dp_exposed(c, held, long_bwd)[0] == pytest.approx(
        timing.OVERLAP_PENALTY * (all_[0] - last[0]) + last[0], rel=1e-9
    )
