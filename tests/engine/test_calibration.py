"""Calibration against the measured runs in tests/engine/data/runs.csv (targets from issue 3).

Each row is predicted with its stated layout and compared on the row's own basis (model or hardware
FLOPs; tokens/s where the row gives them: calibration_cases._predicted_in_the_rows_count);
tests/engine/calibration_cases.py lists what is assumed where a row is silent. The per-row table:
``.venv/bin/python bench/calibration.py``.
"""

from __future__ import annotations

import calibration_cases
import pytest
from calibration_cases import ACCELERATORS, FABRICS, Case, all_cases, load_runs, request_for, summary

from clusterdesigner.engine.training.training import estimate


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return all_cases()


def test_every_row_is_predicted_or_its_skip_is_explained(cases: list[Case]) -> None:
    assert len(cases) == 292
    skipped = summary(cases)["skipped"]
    # NeMo GPT3-5B/20B and Nemotron-8B/22B give no shape; the two Megatron-Core strong-scaling end points
    # give no layout. Nothing else is left out.
    assert skipped == {"model shape not stated": 4, "parallel layout not stated": 2}
    assert summary(cases)["tflops_compared"] == 281


def test_median_tflops_error_is_within_ten_percent(cases: list[Case]) -> None:
    assert summary(cases)["median_abs_error"] <= 0.10


def test_p90_tflops_error_is_within_twenty_five_percent(cases: list[Case]) -> None:
    assert summary(cases)["p90_abs_error"] <= 0.25


def test_a_row_with_tokens_per_second_is_compared_on_them() -> None:
    # llm-foundry MPT-7B, 65,536 tokens, 8 × H100: 282 TFLOP/s and 1,956 tokens/s per GPU, i.e. 1.4417e11
    # FLOPs per token in its own count, 6 · n_params + 12 · s · d · L = 6 × 6.919e9 + 12 × 65,536 × 4,096 × 32
    # = 1.4459e11 (the two published figures rounded: 0.3 %), whose n_params holds the learned position
    # table 65,536 × 4,096 = 2.68e8 (NumParams 6,918,905,856 at 65,536 tokens, 6,658,859,008 at 2,048: the
    # difference is 63,488 × 4,096 exactly). Hand calculation: an engine answer of 16,000 tokens/s on 8 GPUs
    # is 2,000 per GPU, × 282 / 1,956 = 288.34 TFLOP/s in the row's count; error 2,000 / 1,956 − 1 = +2.25 %.
    row = next(r for r in load_runs() if r["run_id"] == "llmfoundry_h100_80gb_amp_bf16_7b_s65536_g8")
    assert 6 * 6.919e9 + 12 * 65536 * 4096 * 32 == pytest.approx(282e12 / 1956, rel=0.005)
    predicted = calibration_cases._predicted_in_the_rows_count(row, {"tokens_per_second": 16_000.0}, 300.0)
    assert predicted == pytest.approx(288.34, abs=0.01)
    assert predicted / 282.0 - 1 == pytest.approx(2000 / 1956 - 1, rel=1e-9)
    # A row without tokens/s keeps the engine's own count.
    narayanan = next(r for r in load_runs() if r["source_id"] == "narayanan2021")
    assert (
        calibration_cases._predicted_in_the_rows_count(narayanan, {"tokens_per_second": 1.0}, 300.0) == 300.0
    )


def test_every_source_is_calibrated_within_twenty_percent_median(cases: list[Case]) -> None:
    # One factor per accelerator family must serve every framework, not just the largest source.
    for source, stats in summary(cases)["by_source"].items():
        assert stats["median_abs_error"] <= 0.20, source


def test_every_bloom_fit_or_oom_verdict_is_right(cases: list[Case]) -> None:
    s = summary(cases)
    assert s["bloom_verdicts"] == 31
    assert s["bloom_verdicts_wrong"] == []


def test_bloom_memory_is_mostly_within_fifteen_percent(cases: list[Case]) -> None:
    errors = [
        abs(e)
        for c in cases
        if c.row["source_id"] == "bloom_tr11_prequel" and (e := c.memory_error) is not None
    ]
    assert len(errors) == 24
    assert sum(e <= 0.15 for e in errors) >= 22
    assert sorted(errors)[len(errors) // 2] <= 0.12


def test_bloom_memory_is_within_fifteen_percent_on_every_row(cases: list[Case]) -> None:
    # Worst rows here: sweep_9 −14.95 %, 176b_final_5 −14.3 %, 176b_final_2 −14.3 %.
    assert summary(cases)["bloom_memory_max_abs_error"] <= 0.15


def test_bloom_zero0_memory_counts_what_deepspeed_fp16_optimizer_allocates_at_the_step(
    cases: list[Case],
) -> None:
    # 72 GB measured without ZeRO vs 37 GB with ZeRO-1 (same layout, DP 4). Predicted: 58.1 GiB of allocated
    # peak + 8 B/param of fp32 gradient copies made inside FP16_Optimizer.step = 66.7 GiB (−7.4 %).
    by_id = {c.row["run_id"]: c for c in cases}
    zero0, zero1 = by_id["bloom_prequel_zero0"], by_id["bloom_prequel_zero1"]
    assert zero0.predicted_mem_gib == pytest.approx(66.7, abs=0.1)
    assert zero1.predicted_mem_gib == pytest.approx(32.4, abs=0.1)
    assert zero0.predicted_fits and zero1.predicted_fits


def test_every_run_that_was_measured_is_predicted_to_fit_but_two_explained(cases: list[Case]) -> None:
    # A run that produced a throughput ran, so it fit. Two are predicted over their memory:
    # - megatron21_t2_4, DeepSpeed ZeRO-3 for the 530B model with no model parallelism: 70 GiB of
    #   checkpointed activations on an 80 GB A100; the run must have offloaded or partitioned them, which
    #   the engine does not model (it also predicts that row 55 % too fast; see docs/training-engine.md).
    # - llmfoundry_a100_40gb_bf16_1b_s2048_g32 at 40.2 GiB of 40: at the edge, and measured 18 % slower
    #   than the same micro-batch on 64 GPUs (141 vs 172 TFLOP/s), as a run retrying allocations would be.
    over = sorted(
        c.row["run_id"] for c in cases if c.measured_tflops is not None and c.predicted_fits is False
    )
    assert over == ["llmfoundry_a100_40gb_bf16_1b_s2048_g32", "megatron21_t2_4"]


def test_llm_foundry_fused_cross_entropy_keeps_four_bytes_per_logit() -> None:
    # MPT-350m, 16 × A100-40GB, micro-batch 18 of 2,048 tokens, vocab 50,368: 36,864 × 50,368 logits.
    # Fused (bf16 logits + bf16 gradient): 4 B each = 6.92 GiB; Megatron's fp32 loss path, 6 B = 10.38 GiB.
    row = next(r for r in load_runs() if r["run_id"] == "llmfoundry_a100_40gb_bf16_350m_s2048_g16")
    request, _ = request_for(row)
    assert request is not None
    fused = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["memory_per_gpu_gib"]
    request["training"]["cross_entropy"] = "fp32"
    fp32 = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["memory_per_gpu_gib"]
    assert fused["logits"] == pytest.approx(
        36864 * 50368 * 4 / 2**30, abs=5e-4
    )  # 6.917 GiB, to the response rounding
    assert fp32["logits"] == pytest.approx(36864 * 50368 * 6 / 2**30, abs=5e-4)  # 10.375 GiB
    assert fp32["total"] - fused["total"] == pytest.approx(3.458, abs=0.01)


def test_deepspeed_zero3_rows_are_bound_by_per_tensor_gather_latency(cases: list[Case]) -> None:
    # Narayanan 2021 Table 2: ZeRO-3 at a fixed global batch keeps the same total throughput as the GPUs
    # double (144 → 88 → 44 TFLOP/s per GPU on 384 → 768 → 1,536), the signature of a step spent in
    # (n − 1)-hop ring latencies: 12 per-tensor all-gathers per layer per pass, waited for.
    by_id = {c.row["run_id"]: c for c in cases}
    errors = {f"megatron21_t2_{i}": by_id[f"megatron21_t2_{i}"].tflops_error for i in range(1, 7)}
    assert all(e is not None and abs(e) <= 0.22 for e in errors.values()), errors


def test_fsdp_gather_latency_counts_each_collective_of_each_layer() -> None:
    # GPT 175B, ZeRO-3 over 1,536 GPUs (megatron21_t2_3), one micro-batch, gathers waited for. Going from 1 to
    # 12 all-gathers per layer per pass adds 2 × 11 collectives × 96 layers × 1,535 ring steps × 15 µs
    # = 48.63 s of latency to the step.
    row = next(r for r in load_runs() if r["run_id"] == "megatron21_t2_3")
    request, _ = request_for(row)
    assert request is not None
    steps = {}
    for collectives in (1, 12):
        request["training"]["fsdp_collectives_per_layer"] = collectives
        response = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
        steps[collectives] = response["step_time_s"]["fsdp_comm_exposed"]
    assert steps[12] - steps[1] == pytest.approx(2 * 11 * 96 * 1535 * 15e-6, abs=0.01)
