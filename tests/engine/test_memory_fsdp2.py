"""Memory on the torchtitan FSDP2 rows (tests/engine/data/memory_fsdp2.csv), issue 19's memory target:
median |error| ≤ 10 % on the rows with measured memory, FSDP2 rows included; no measured run predicted not
to fit. Nothing is fitted to these rows."""

from __future__ import annotations

import pytest
from memory_fsdp2_cases import SPECS, MemoryCase, all_memory_cases, load_rows, memory_medians, request_for

from clusterdesigner.engine.training.training import estimate

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


# torchtitan's eager F.cross_entropy(logits.float()) at its backward: three fp32 tensors of the logits' size
# (saved log-probabilities, nll_loss's dense gradient, log_softmax's gradient), 12 B per logit. Table 1's 8B
# row, local batch 2 × 8,192 tokens × vocab 128,256 × 12 B, no TP: 25,216,155,648 B.
LOSS_8B_T1_BYTES = 2 * 8192 * 128_256 * 12


def test_the_upcast_loss_is_charged_its_backward_peak() -> None:
    row = next(r for r in load_rows() if r["run_id"] == "tt2412_t1_fsdp")
    logits = estimate(request_for(row), **SPECS)["memory_per_gpu_gib"]["logits"]
    assert logits == pytest.approx(LOSS_8B_T1_BYTES / GIB, abs=5e-4)  # 23.48 GiB (19.57 at 10 B)


def test_the_engine_on_every_fsdp2_row(cases: list[MemoryCase]) -> None:
    """Today's figures: from −22.2 % (405B, PP 8, CP 8: 66.1 GiB against 84.9) to +0.1 % (8B, 128 GPUs,
    compile + Float8: 61.8 against 61.8). The pipeline rows −9 to −22 % (−39 to −48 % before the stage's
    unsharded fp32 gradients were charged), the 8B rows −8 to 0 % (−6 to −14 % at 10 B per logit), the 70B
    TP 8 rows −17 and −11 %. Median |error| 7.8 % on the 18 rows (13.1 % before both changes), 10.4 % on the
    24 BLOOM rows (unchanged), 9.6 % on both (11.9 %)."""
    errors = {c.run_id: c.error for c in cases}
    assert max(errors.values()) == pytest.approx(0.001, abs=0.002)
    assert min(errors.values()) == pytest.approx(-0.2215, abs=0.002)
    assert errors["tt2412_t5_interleaved"] == pytest.approx(-0.091, abs=0.002)
    assert errors["tt2412_t1_fsdp"] == pytest.approx(-0.079, abs=0.002)
    medians = memory_medians(cases)
    assert medians["fsdp2"] == pytest.approx(0.078, abs=0.002)
    assert medians["bloom"] == pytest.approx(0.104, abs=0.002)
    assert medians["both"] == pytest.approx(0.0956, abs=0.002)


def test_memory_median_on_bloom_and_fsdp2_rows_meets_the_target(cases: list[MemoryCase]) -> None:
    """Issue 19: median |error| ≤ 10 % on the rows with measured memory, FSDP2 rows included (9.6 %)."""
    assert memory_medians(cases)["both"] <= 0.10
