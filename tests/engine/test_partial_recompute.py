"""Full recompute of part of the layers (training.recompute_num_layers, Megatron-Core --recompute-method
block) and FP8 weights (training.fp8_params, --fp8-param-gather). Golden numbers are hand calculations
written next to each test; with both off the estimates are the ones of before (the hash check in the
commit)."""

from __future__ import annotations

from typing import Any

import pytest
from specs import FABRICS, H100_SXM
from test_memory_levers import _llama_8b as memory_levers_request

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.training import estimate

GIB = 2**30
ACCS = {H100_SXM.slug: H100_SXM}


def _llama_8b(parallelism: dict[str, Any] | None = None, **training: Any) -> dict[str, Any]:
    # test_memory_levers' Llama 3 8B on one H100 node (tp 1, pp 1, dp 8, micro-batch 1 × 8,192 tokens, bf16,
    # flash attention), with full recompute: 32 layers, h 4,096, 8 KV heads of 128, SwiGLU f 14,336,
    # no dropout.
    request = memory_levers_request(**training)
    request["parallelism"].update({"recompute": "full", **(parallelism or {})})
    return request


def _run(request: dict[str, Any]) -> dict[str, Any]:
    return estimate(request, accelerators=ACCS, fabrics=FABRICS)


def test_block_recompute_of_8_of_32_layers_is_the_hand_computed_memory() -> None:
    # memory.activation_bytes_per_layer (Korthikanti 2022 Table 2, no dropout), t = 8,192 tokens:
    #   replicated 8·t·h = 8 × 8,192 × 4,096                                   =   268,435,456 B
    #   split t·(2(q + k + v) + 2·q + 6f) = 8,192 × (2 × 6,144 + 8,192 + 86,016)  =   872,415,232 B
    #   a whole layer                                                          = 1,140,850,688 B
    #   a recomputed layer keeps its input 2·t·h                               =    67,108,864 B
    # 8 of the stage's 32 layers recomputed (share 1/4):
    #   0.25 × 67,108,864 + 0.75 × 1,140,850,688                               =   872,415,232 B per layer
    # pp 1 holds 32 layers of one micro-batch, plus the recompute working set of two whole layers:
    #   (32 × 872,415,232 + 2 × 1,140,850,688) × 1.10 fragmentation = 33,218,887,680 B = 30.9375 GiB
    part = _run(_llama_8b(recompute_num_layers=8))
    assert part["memory_per_gpu_gib"]["activations"] == pytest.approx(33_218_887_680 / GIB, abs=0.001)
    full = _run(_llama_8b())
    none = _run(_llama_8b({"recompute": "none"}))
    assert full["memory_per_gpu_gib"]["activations"] < part["memory_per_gpu_gib"]["activations"]
    assert part["memory_per_gpu_gib"]["activations"] < none["memory_per_gpu_gib"]["activations"]


def test_block_recompute_repeats_that_share_of_the_forward() -> None:
    # 8 of 32 layers recomputed: a quarter of full recompute's repeated forward (tp 1: no TP collectives).
    part = _run(_llama_8b(recompute_num_layers=8))
    full = _run(_llama_8b())
    assert part["step_time_s"]["recompute"] == pytest.approx(full["step_time_s"]["recompute"] / 4, rel=1e-9)
    assert part["step_time_s"]["compute"] == pytest.approx(full["step_time_s"]["compute"], rel=1e-9)
    # HFU counts a quarter of the recomputed forward: 3 + 0.25 → (3.25 / 4) of full's FLOPs per token, at the
    # same model FLOPs.
    ratio = (part["hfu"] / part["mfu"]) / (full["hfu"] / full["mfu"])
    assert ratio == pytest.approx(3.25 / 4, rel=0.01)


def test_recompute_num_layers_equal_to_the_stage_is_full_recompute() -> None:
    # pp 4: 8 layers a stage; recomputing 8 of them is Megatron's uniform full recompute, byte for byte.
    pp4 = {"pp": 4, "dp": 2}
    block = _run(_llama_8b(pp4, recompute_num_layers=8))
    full = _run(_llama_8b(pp4))
    assert block["memory_per_gpu_gib"] == full["memory_per_gpu_gib"]
    assert block["step_time_s"]["total"] == pytest.approx(full["step_time_s"]["total"], rel=1e-12)


def test_rejects_more_layers_than_a_stage_or_a_model_chunk_holds() -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b({"pp": 4, "dp": 2}, recompute_num_layers=9))  # 32 / 4 = 8 layers a stage
    assert err.value.field == "training.recompute_num_layers"
    assert "more than the 8 layers" in err.value.message
    with pytest.raises(InputError) as err:
        # vpp 2: Megatron-Core counts N per model chunk, 32 / (4 × 2) = 4 layers.
        _run(_llama_8b({"pp": 4, "dp": 2, "vpp": 2}, recompute_num_layers=5))
    assert err.value.field == "training.recompute_num_layers" and "4 layers" in err.value.message
    with pytest.raises(InputError) as err:
        _run(_llama_8b(recompute_num_layers=33))
    assert err.value.field == "training.recompute_num_layers"


def test_rejects_block_recompute_with_a_given_recompute_that_is_not_full() -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b({"recompute": "none"}, recompute_num_layers=8))
    assert err.value.field == "training.recompute_num_layers" and "full" in err.value.message


def test_fp8_params_hold_the_weights_in_one_byte() -> None:
    # Llama 3 8B at tp 1, pp 1: 8.03 B weights × 2 B = 14.96 GiB in bf16, × 1 B = 7.48 GiB as FP8 params;
    # gradients and the optimizer's fp32 master copy unchanged (Megatron keeps it in the optimizer states).
    bf16 = _run(_llama_8b(precision="fp8"))
    fp8 = _run(_llama_8b(precision="fp8", fp8_params=True))
    half = bf16["memory_per_gpu_gib"]["weights"] / 2
    assert fp8["memory_per_gpu_gib"]["weights"] == pytest.approx(half, abs=1e-3)
    assert fp8["memory_per_gpu_gib"]["weights"] == pytest.approx(8_030_261_248 / GIB, abs=1e-3)
    for part in ("gradients", "optimizer", "activations"):
        assert fp8["memory_per_gpu_gib"][part] == bf16["memory_per_gpu_gib"][part]
    # The step is the same but for the data-parallel all-reduce (and the straggler term and total that
    # follow it): since issue 33 (h6) FP8 parameter gather moves the distributed optimizer's all-gather half
    # at 1 B a weight (timing._dp_bytes_per_param: (2 + 1) / 2 = 1.5 B a parameter against 2), so the
    # exposed DP time falls, by less than a quarter (each bucket's latency stays).
    moved = {"dp_comm_exposed", "straggler", "total"}
    assert {k: v for k, v in fp8["step_time_s"].items() if k not in moved} == {
        k: v for k, v in bf16["step_time_s"].items() if k not in moved
    }
    fp8_dp, bf16_dp = fp8["step_time_s"]["dp_comm_exposed"], bf16["step_time_s"]["dp_comm_exposed"]
    assert 0.75 * bf16_dp < fp8_dp < bf16_dp


def test_fp8_params_need_fp8_training() -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b(fp8_params=True))
    assert err.value.field == "training.fp8_params" and "precision fp8" in err.value.message
