"""Memory on the torchtitan FSDP2 rows (tests/engine/data/memory_fsdp2.csv), issue 19's memory target:
median |error| ≤ 10 % on the rows with measured memory, FSDP2 rows included; no measured run predicted not
to fit. Nothing is fitted to these rows."""

from __future__ import annotations

import pytest
from memory_fsdp2_cases import SPECS, MemoryCase, all_memory_cases, load_rows, memory_medians, request_for

from clusterdesigner.engine.training import estimate

GIB = 2**30


@pytest.fixture(scope="module")
def cases() -> list[MemoryCase]:
    return all_memory_cases()


def test_every_measured_fsdp2_run_is_predicted_to_fit(cases: list[MemoryCase]) -> None:
    assert len(cases) == 18
    assert all(c.fits for c in cases)


# Llama 3.1 405B's first pipeline stage at tp 8, pp 8 (126 layers: 15 + 6 × 16 + 15, the engine's balanced
# split and torchtitan's generated split points alike), by hand: a layer's matrices q, o 16,384² each,
# k, v 16,384 × 1,024 each, w1, w2, w3 16,384 × 53,248 each = 3,187,671,040, ÷ tp 8 = 398,458,880, plus its
# two norms' 2 × 16,384 (the engine keeps them whole) = 398,491,648; × 15 = 5,977,374,720; plus the
# embedding 128,256 × 16,384 ÷ 8 = 262,668,288: 6,240,043,008 parameters on the GPU.
STAGE0_405B_PARAMS = 15 * (3_187_671_040 // 8 + 2 * 16_384) + 128_256 * 16_384 // 8


def _first_pipeline_row() -> dict[str, str]:
    return next(r for r in load_rows() if r["run_id"] == "tt2412_t5_1f1b")


def test_fsdp2_under_a_pipeline_keeps_the_stage_unsharded_with_fp32_gradients() -> None:
    """torch's pipeline stage turns off FSDP2's resharding and gradient reduce-scatter for every micro-batch
    but the last (memory._pipeline_unsharded): the bf16 parameters (2 B) and fp32 accumulated gradients
    (4 B) of the whole stage, not the ZeRO-2 shard of the gradients (2 B ÷ 8 FSDP ranks, as Megatron-Core
    is still charged)."""
    request = request_for(_first_pipeline_row())
    fsdp2 = estimate(request, **SPECS)["memory_per_gpu_gib"]
    assert fsdp2["gradients"] == pytest.approx(4 * STAGE0_405B_PARAMS / GIB, abs=5e-4)  # 23.25 GiB
    assert fsdp2["weights"] == pytest.approx(2 * STAGE0_405B_PARAMS / GIB, abs=5e-4)
    core_request = {**request, "training": {**request["training"], "framework": "megatron-core"}}
    core = estimate(core_request, **SPECS)["memory_per_gpu_gib"]
    assert core["gradients"] == pytest.approx(2 * STAGE0_405B_PARAMS / 8 / GIB, abs=5e-4)  # 1.45 GiB
    unpipelined = estimate(
        {**request, "parallelism": {**request["parallelism"], "pp": 1, "sharding": "zero2"}}, **SPECS
    )["memory_per_gpu_gib"]
    assert unpipelined["gradients"] < fsdp2["gradients"] / 8


def test_the_engine_runs_low_on_every_fsdp2_row(cases: list[MemoryCase]) -> None:
    """Today's figures: every row under-predicted, from −6.3 % (8B, 128 GPUs, compile + Float8: 57.9 GiB
    against 61.8) to −22.2 % (405B, PP 8, CP 8: 66.1 against 84.9; the pipeline rows −9 to −22 %, −39 to
    −48 % before the stage's unsharded fp32 gradients were charged); median |error| 12.5 % on the 18 rows
    (13.1 % before), 10.4 % on the 24 BLOOM rows, 11.7 % on both (11.9 % before)."""
    errors = {c.run_id: c.error for c in cases}
    assert max(errors.values()) == pytest.approx(-0.063, abs=0.002)
    assert min(errors.values()) == pytest.approx(-0.2215, abs=0.002)
    assert errors["tt2412_t5_interleaved"] == pytest.approx(-0.091, abs=0.002)
    medians = memory_medians(cases)
    assert medians["fsdp2"] == pytest.approx(0.125, abs=0.002)
    assert medians["bloom"] == pytest.approx(0.104, abs=0.002)
    assert medians["both"] == pytest.approx(0.117, abs=0.002)


@pytest.mark.xfail(strict=True, reason="median |error| 11.7 % on BLOOM + FSDP2 rows (FSDP2 alone 12.5 %)")
def test_memory_median_on_bloom_and_fsdp2_rows_meets_the_target(cases: list[MemoryCase]) -> None:
    assert memory_medians(cases)["both"] <= 0.10
