"""Gradients reduced or accumulated every micro-batch: ZeRO-2's reduce-scatter of each micro-batch's
gradients into its shard, and FSDP2's FP32 upcast of a pipeline stage's unsharded gradients
(timing._zero2_reduce_scatter_per_mb, timing._pipeline_grad_upcast_per_mb), checked by hand."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training import timing
from clusterdesigner.engine.training.training import parse_problem
from clusterdesigner.engine.training.workload import SHARDING_MODES, layouts
from tests.engine.specs import ACCELERATORS, FABRICS

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}


def _llama405b(**training: Any) -> Any:
    """Meta's 8K-token layout at 8,192 H100s (tests/engine/test_llama3_405b.py): TP 8, PP 16 × vpp 8, DP 64,
    32 micro-batches of one sequence, no recompute."""
    return parse_problem(
        {
            "model": {"preset": "llama3-405b", "seq_len": 8192},
            "training": {
                "tokens": 15.6e12,
                "global_batch_tokens": 16 * 2**20,
                "precision": "bf16",
                "attention_kernel": "flash2",
                **training,
            },
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 1024, "fabric": "ib-ndr400"},
            "parallelism": {"tp": 8, "pp": 16, "dp": 64, "cp": 1, "vpp": 8, "micro_batch": 1},
        },
        **SPECS,
    )


def _lay(sharding: str, *, tp: int = 8, pp: int = 16, dp: int = 64, vpp: int = 8) -> Any:
    mode = SHARDING_MODES.index(sharding)
    one = {"cp": 1, "ep": 1, "micro_batch": 1, "sequence_parallel": 1}
    return layouts(tp=tp, pp=pp, dp=dp, vpp=vpp, recompute=[0], sharding=mode, **one)


def _parts(problem: Any, lay: Any) -> tuple[Any, Any, Any, Any]:
    c = timing._shape(problem, lay)
    layer = timing._layer(c)
    stage = timing._slowest_stage(c, lay, layer)
    return c, timing._held(problem, lay), stage.n_stage, stage.n_stage * (layer.bwd + layer.recompute)


def test_zero2_reduce_scatters_every_micro_batch_by_hand() -> None:
    # The heaviest stage trains P = 3.4506e9 parameters (8 layers of 405B / TP 8, and the output layer's
    # share): per layer 2 B × P / 8 = 862.65 MB reduce-scattered over the 64 DP ranks, 8 GPUs apart, so one
    # rank per node over 64 nodes: 63/64 × 862.65e6 / 48e9 (NDR 400 × 0.96) + 63 × (15 + 5) µs = 18.95 ms.
    # Eight layers 151.6 ms; the last layer's is exposed, the other 132.7 ms run under the micro-batch's 217.3
    # ms backward (217.0 before engine version 23: FlashAttention-2 at its published H100 rate, the Hopper
    # factor 0.81 -> 0.79) at 20 % (OVERLAP_PENALTY): 26.5 + 19.0 = 45.5 ms, on 31 of the 32 micro-batches
    # (the last one's is the reduce half of the step's DP reduction): × 31/32 = 44.1 ms a micro-batch.
    problem = _llama405b()
    c, held, n_stage, bwd = _parts(problem, _lay("zero2"))
    params = held.trained[0][0]
    assert params == pytest.approx(3.4506e9, rel=1e-4)
    one_layer = 63 / 64 * 2.0 * params / 8 / 48e9 + 63 * 20e-6
    assert one_layer == pytest.approx(18.95e-3, abs=1e-5)
    assert bwd[0] == pytest.approx(0.2173, abs=1e-4)
    per_mb = (0.2 * 7 * one_layer + one_layer) * 31 / 32
    assert per_mb == pytest.approx(44.06e-3, abs=1e-5)
    m = np.full(1, 32.0)
    got = timing._zero2_reduce_scatter_per_mb(c, held, n_stage=n_stage, m=m, bwd=bwd)
    assert got[0] == pytest.approx(per_mb, rel=1e-6)


def test_zero2_with_one_micro_batch_and_other_modes_reduce_once_per_step() -> None:
    # One micro-batch: its reduce-scatter is the step's reduction, already timed by _dp_exposed (the
    # llm-foundry SHARD_GRAD_OP rows, grad_accum 1, are unchanged). ZeRO-1 accumulates the gradients whole.
    problem = _llama405b()
    c, held, n_stage, bwd = _parts(problem, _lay("zero2"))
    assert timing._zero2_reduce_scatter_per_mb(c, held, n_stage=n_stage, m=np.ones(1), bwd=bwd)[0] == 0.0
    c, held, n_stage, bwd = _parts(problem, _lay("zero1"))
    m = np.full(1, 32.0)
    assert timing._zero2_reduce_scatter_per_mb(c, held, n_stage=n_stage, m=m, bwd=bwd)[0] == 0.0


def test_fsdp2_pipeline_keeps_gradients_whole_and_upcasts_them_every_micro_batch() -> None:
    # Under the fsdp2 profile a pipeline stage's gradients stay unsharded over the micro-batches (torch's
    # pipeline schedules skip the reduce-scatter but on the last one), so ZeRO-2 reduce-scatters once per
    # step; instead FSDP2 upcasts the first micro-batch's 2 B gradient to 4 B (read 2, write 4) and adds
    # each later one into the FP32 sum (read 4 + 2, write 4): (6 + 31 × 10) / 32 = 9.875 B per parameter a
    # micro-batch.
    # P = 3.4506e9 at 0.85 × 3.35 TB/s: 9.875 × 3.4506e9 / 2.8475e12 = 11.97 ms a micro-batch.
    problem = _llama405b(framework="fsdp2")
    c, held, n_stage, bwd = _parts(problem, _lay("zero2"))
    m = np.full(1, 32.0)
    assert timing._zero2_reduce_scatter_per_mb(c, held, n_stage=n_stage, m=m, bwd=bwd)[0] == 0.0
    params = held.trained[0][0]
    assert (6 + 31 * 10) / 32 == 9.875
    assert 9.875 * params / (0.85 * 3.35e12) == pytest.approx(11.97e-3, abs=1e-5)
    assert timing._pipeline_grad_upcast_per_mb(c, held, m)[0] == pytest.approx(
        9.875 * params / (0.85 * 3.35e12), rel=1e-9
    )
    # Without a pipeline FSDP2 reduce-scatters every micro-batch (no upcast of whole gradients), and the
    # Megatron-Core profile accumulates in the weight-gradient GEMM: neither pays the pass.
    flat = _lay("zero2", pp=1, dp=1024, vpp=1)
    assert timing._pipeline_grad_upcast_per_mb(timing._shape(problem, flat), timing._held(problem, flat), m)[
        0
    ] == pytest.approx(0.0)
    core = _llama405b()
    lay = _lay("zero2")
    assert timing._pipeline_grad_upcast_per_mb(timing._shape(core, lay), timing._held(core, lay), m) == 0.0


def test_fsdp2_reduce_scatters_in_its_fp32_reduce_dtype() -> None:
    # torchtitan's mixed_precision_reduce float32: FSDP2's reduce-scatters move 4 B a parameter where the
    # gradients are 2 B. ZeRO-2's step-end reduction (reduce-scatter + all-gather of the 2 B weights) is
    # timed as an all-reduce at (4 + 2) / 2 = 3 B; without a pipeline its earlier micro-batches' reduce-
    # scatters are rings of 4 B gradients.
    fsdp2, core = _llama405b(framework="fsdp2"), _llama405b()
    assert (timing.reduce_bytes(fsdp2.training), timing.reduce_bytes(core.training)) == (4.0, 2.0)
    sharding = _lay("zero2")["sharding"]
    assert timing._dp_bytes_per_param(fsdp2.training, sharding)[0] == 3.0
    assert timing._dp_bytes_per_param(core.training, sharding)[0] == 2.0
    # Without a pipeline (126 layers on one stage, dp 1,024: 2 micro-batches) the first micro-batch's
    # reduce-scatter is 126 rings of 4 B × P / 126 over 1,024 ranks, one per node.
    flat = _lay("zero2", pp=1, dp=1024, vpp=1)
    c, held, n_stage, bwd = _parts(fsdp2, flat)
    params, units = held.trained[0][0], n_stage[0]
    assert units == 126
    ring = 1023 / 1024 * 4.0 * params / units / 48e9 + 1023 * 20e-6
    rest = (units - 1) * ring
    hand = (max(0.0, rest - bwd[0]) + 0.2 * min(rest, bwd[0]) + ring) / 2
    m = np.full(1, 2.0)
    assert timing._zero2_reduce_scatter_per_mb(c, held, n_stage=n_stage, m=m, bwd=bwd)[0] == pytest.approx(
        hand, rel=1e-9
    )


def test_a_request_sets_the_reduce_dtype_of_its_stack() -> None:
    # training.reduce_bytes: a stack's FSDP reduce dtype, given by the request (Composer's FSDP
    # mixed_precision DEFAULT reduce-scatters in float32 under a bf16 param_dtype). Megatron-Core's profile
    # with 4 B: each ZeRO-3 micro-batch's reduce-scatter moves 4 B a parameter, where the gradients are 2 B.
    given, core = _llama405b(reduce_bytes=4), _llama405b()
    assert (given.training.reduce_bytes, core.training.reduce_bytes) == (4.0, 0.0)
    assert (timing.reduce_bytes(given.training), timing.reduce_bytes(core.training)) == (4.0, 2.0)
    # 8 layers a stage of 126 / 16 (the heaviest 8), P = 3.4506e9 trained parameters a rank, sharded over
    # the 64 DP ranks 8 apart (one a node): the stage's reduce-scatter ring is
    # 63/64 × b × P / 48e9 (NDR 400 × 0.96) + 63 × (15 + 5) µs, so 4 B moves twice the bytes of 2 B.
    lay = _lay("zero3")
    c, held, _, _ = _parts(given, lay)
    params = held.trained[0][0]
    assert params == pytest.approx(3.4506e9, rel=1e-4)

    def ring(nbytes: float) -> float:
        return float(timing._ring(c, factor=1.0, nbytes=np.array([nbytes]), size=c.dp, stride=c.tp)[0])

    latency = 63 * 20e-6
    assert ring(4.0 * params) == pytest.approx(63 / 64 * 4.0 * params / 48e9 + latency, rel=1e-6)
    assert ring(4.0 * params) - latency == pytest.approx(2.0 * (ring(2.0 * params) - latency), rel=1e-9)


def test_reduce_bytes_is_a_dtype_width() -> None:
    with pytest.raises(InputError) as err:
        _llama405b(reduce_bytes=8)
    assert err.value.field == "training.reduce_bytes"
