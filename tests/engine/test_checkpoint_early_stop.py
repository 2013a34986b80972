"""Full recompute under PyTorch's non-reentrant checkpoint with early stop (training.checkpoint_early_stop):
the recomputed forward ends before the dense MLP's output projection (timing._early_stop_skipped). Golden
numbers are hand calculations written next to each test; off, the estimates are the ones of before."""

from __future__ import annotations

from typing import Any

import pytest
from test_partial_recompute import _llama_8b, _run

from clusterdesigner.engine.core.errors import InputError

# Llama 3 8B on one H100 node (test_partial_recompute: tp 1, pp 1, dp 8, micro-batch 1 × 8,192 tokens,
# bf16, full recompute, 64 sequences a step → 8 micro-batches a rank): 32 layers, h 4,096, f 14,336.
T, H, F, LAYERS, MICROBATCHES = 8_192, 4_096, 14_336, 32, 8


def _fc2_seconds() -> float:
    # timing._gemm of the t × f by f × h output projection at H100's achievable BF16 rate (mamf 794.5 TFLOP/s)
    # × the Hopper family factor 0.79 (0.81 until engine version 23's joint refit), and its bytes over
    # 3.35 TB/s × HBM_EFFICIENCY 0.85:
    #   2 · 8,192 · 14,336 · 4,096 = 962,072,674,304 FLOP / 627.655e12  = 1.532805e-3 s
    #   2 · (8,192 · 14,336 + 14,336 · 4,096) + 2 · 8,192 · 4,096 = 419,430,400 B / 2.8475e12 = 1.472978e-4 s
    flops = 2.0 * T * F * H
    nbytes = 2.0 * (T * F + F * H) + 2.0 * T * H
    return flops / (794.5e12 * 0.79) + nbytes / (3.35e12 * 0.85)


def test_early_stop_skips_the_output_projection_of_every_recomputed_layer() -> None:
    # 8 micro-batches × 32 layers × 1.680103e-3 s = 0.430106 s less recompute a step; the rest of the step
    # (forward, backward, communication) unchanged.
    off = _run(_llama_8b())
    on = _run(_llama_8b(checkpoint_early_stop=True))
    skipped = MICROBATCHES * LAYERS * _fc2_seconds()
    assert skipped == pytest.approx(0.430106, rel=1e-5)
    saved = off["step_time_s"]["recompute"] - on["step_time_s"]["recompute"]
    assert saved == pytest.approx(skipped, rel=1e-9)
    for part in ("compute", "dp_comm_exposed", "optimizer"):
        assert on["step_time_s"][part] == pytest.approx(off["step_time_s"][part], rel=1e-12)
    assert on["memory_per_gpu_gib"] == off["memory_per_gpu_gib"]


def test_early_stop_hardware_flops_leave_out_the_output_projections() -> None:
    # HFU / MFU = hardware / model FLOPs per token; early stop takes 2 · f · h · 32 = 3,758,096,384 FLOPs a
    # token off the hardware count, so (HFU / MFU)_off − (HFU / MFU)_on = 3,758,096,384 / model FLOPs.
    off = _run(_llama_8b())
    on = _run(_llama_8b(checkpoint_early_stop=True))
    model_flops = off["summary"]["model"]["model_flops_per_token"]
    drop = off["hfu"] / off["mfu"] - on["hfu"] / on["mfu"]
    assert drop * model_flops == pytest.approx(2.0 * F * H * LAYERS, rel=1e-9)


def test_early_stop_changes_nothing_without_full_recompute() -> None:
    for recompute in ("none", "selective"):
        base = _run(_llama_8b({"recompute": recompute}))
        assert _run(_llama_8b({"recompute": recompute}, checkpoint_early_stop=True)) == base


def test_early_stop_is_a_flag() -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b(checkpoint_early_stop="yes"))
    assert err.value.field == "training.checkpoint_early_stop"


def test_moe_layers_skip_nothing() -> None:
    # Every layer of an all-MoE model ends in the combine, which saves the experts' outputs: no matmul is
    # skipped, so the recompute is the one without early stop.
    request: dict[str, Any] = _llama_8b()
    request["model"] = {"preset": "mixtral-8x7b"}
    request["parallelism"].update({"ep": 8, "dp": 8})
    off = _run(request)
    request["training"]["checkpoint_early_stop"] = True
    assert _run(request)["step_time_s"] == off["step_time_s"]


def test_the_fsdp2_profile_stops_early_and_megatron_core_does_not() -> None:
    # torchtitan's full activation checkpoint is torch's non-reentrant checkpoint (framework.py sources);
    # Megatron-Core's full recompute (its own CheckpointFunction) reruns the whole layer. A request may say
    # otherwise.
    fsdp2 = _llama_8b(framework="fsdp2")
    fsdp2["parallelism"]["sharding"] = "zero3"
    default, off = (
        _run(fsdp2),
        _run({**fsdp2, "training": {**fsdp2["training"], "checkpoint_early_stop": False}}),
    )
    saved = off["step_time_s"]["recompute"] - default["step_time_s"]["recompute"]
    assert saved == pytest.approx(MICROBATCHES * LAYERS * _fc2_seconds(), rel=1e-9)
    core = _llama_8b()
    assert _run(core) == _run(_llama_8b(checkpoint_early_stop=False))
