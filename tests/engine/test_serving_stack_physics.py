"""The stack physics of issue #37 item 3: how much KV a scheduler holds for a running sequence, the attention
core's precision under FP4 weights, and a prompt's prefill sharing the decode step's weight read. Hand
calculations beside each test; figures from the seed catalog (H100 SXM: 80 GiB, 3.35 TB/s, 1,978.9 FP8
TFLOP/s; B200: 4,500 FP8 and 9,000 FP4 TFLOP/s)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving

SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"
ACC = dict(specs_from_records(json.loads(SEED.read_text())).accelerators)


def _inp(stack: str, *, acc: str = "h100-sxm", precision: str = "fp8", n_in: int = 128, n_out: int = 128):
    return serving.ServingInput(
        model=PRESETS["llama3-8b"],
        accelerator=ACC[acc],
        input_tokens=n_in,
        output_tokens=n_out,
        requests_per_s=1.0,
        weight_precision=precision,
        kv_precision="fp8",
        efficiency=serving.STACKS[stack],
    )


def test_tensorrt_llm_1_0_reserves_the_whole_request_and_vllm_half_its_output() -> None:
    # Llama 3 8B FP8 on one H100, 128/128. KV a token: 32 layers × 8 heads × 128 × 2 × 1 B = 65,536 B.
    # Free: 80 GiB × 0.9 − 8,030,261,248 B of weights = 77,309,411,328 − 8,030,261,248 = 69,279,150,080 B.
    # TensorRT-LLM (GUARANTEED_NO_EVICT) holds 128 + 128 = 256 tokens: 69,279,150,080 / 16,777,216 = 4,129.3
    # → 4,129 sequences; vLLM-style paging holds 128 + 64 = 192 on average: / 12,582,912 = 5,505.8 → 5,505.
    trt, vllm = _inp("tensorrt-llm-2025"), _inp("vllm-rocm-2025")
    assert trt.reserved_context_tokens == 256 and vllm.reserved_context_tokens == 192
    assert int(serving.batch_that_fits(trt, tp=1, pp=1)) == 4129
    assert int(serving.batch_that_fits(vllm, tp=1, pp=1)) == 5505


def test_the_reserved_share_of_the_output_is_bounded() -> None:
    with pytest.raises(InputError) as err:
        serving.ServingEfficiency(kv_reserved_output_fraction=0.4)
    assert err.value.field == "efficiency.kv_reserved_output_fraction"


def test_fp4_weights_leave_the_attention_core_at_fp8() -> None:
    # B200, FP4 weights: the matmuls' reachable peak is 9,000 × compute × fp4 scale, the attention core's
    # 4,500 × compute (FP8 FMHA over the FP8 KV cache), not 9,000 × compute.
    eff = serving.STACKS["tensorrt-llm-2025"]
    inp = _inp("tensorrt-llm-2025", acc="b200", precision="fp4")
    assert serving._peak_flops(inp) == pytest.approx(9000e12 * eff.compute_efficiency * eff.fp4_compute_scale)
    assert serving._attention_peak_flops(inp) == pytest.approx(4500e12 * eff.compute_efficiency)
    bf16 = replace(inp, weight_precision="bf16")
    assert serving._attention_peak_flops(bf16) == pytest.approx(2250e12 * eff.compute_efficiency)


def test_a_prompt_riding_in_a_decode_step_does_not_read_the_weights_again() -> None:
    # Llama 3 8B FP8 on one H100, a 128-token prompt, tensorrt-llm (compute c, bandwidth b):
    # matmuls 2 × 7,504,658,432 × 128 = 1.921e12 FLOPs; attention core 2 × 128 × 128 × 32 heads × 128 × 32
    # layers = 4.295e9 FLOPs; at c × 1,978.9 TFLOP/s. Alone, the 8.03 GB weight read at b × 3.35 TB/s binds
    # (about 4 ms against 1.8 ms of compute); inside a decode iteration only the compute is added.
    eff = serving.STACKS["tensorrt-llm"]
    inp = _inp("tensorrt-llm")
    peak = 1978.9e12 * eff.compute_efficiency
    compute = 2 * 7_504_658_432 * 128 / peak + 2 * 128 * 128 * 32 * 128 * 32 / peak
    read = 8_030_261_248 / (3.35e12 * eff.bandwidth_efficiency)
    assert read > compute
    assert float(serving.prefill_s(inp, tp=1, pp=1, shared_read=True)) == pytest.approx(compute, rel=1e-9)
    assert float(serving.prefill_s(inp, tp=1, pp=1)) == pytest.approx(read, rel=1e-9)


def test_only_a_stack_that_mixes_prompts_into_decode_steps_shares_the_read_in_its_rate() -> None:
    # One replica's rate R = 1 / (t_prefill + n_out · TPOT(B) / B): tensorrt-llm-2025 (mixed batches) puts
    # the compute-only prefill in it; the MLPerf-fitted tensorrt-llm the prefill with its own weight read.
    for stack, shared in (("tensorrt-llm-2025", True), ("tensorrt-llm", False)):
        inp = _inp(stack)
        assert inp.efficiency.prefill_shares_weight_read is shared
        prefill = float(serving.prefill_s(inp, tp=1, pp=1, shared_read=shared))
        step = float(serving.decode_step_s(inp, batch=256, tp=1, pp=1))
        rate = float(serving.replica_rate(inp, batch=256, tp=1, pp=1)["requests_per_s"])
        assert rate == pytest.approx(1 / (prefill + 128 * step / 256), rel=1e-12)


def test_a_single_step_loop_adds_the_host_time_of_every_running_sequence_to_each_step() -> None:
    # vllm-rocm-2025 (host_sequence_us 50, fitted on ROCm/vllm's v0.10.0 README rows): Llama 3 8B FP8 on
    # one H100 at batch 64. A server (the planner's deployment) waits for the host's per-sequence work each
    # step: 64 × 50 µs = 3.2 ms more than a run that overlaps it (multi-step scheduling, no detokenising).
    # The stack's 25 µs a sequence (sequence_overhead_us) is paid by both.
    inp = _inp("vllm-rocm-2025")
    assert inp.efficiency.host_sequence_us == 50.0 and inp.host_overlapped is False
    served = float(serving.decode_step_s(inp, batch=64, tp=1, pp=1))
    overlapped = float(serving.decode_step_s(replace(inp, host_overlapped=True), batch=64, tp=1, pp=1))
    assert served - overlapped == pytest.approx(64 * 50e-6, rel=1e-9)
    none = replace(inp, efficiency=replace(inp.efficiency, host_sequence_us=0.0, sequence_overhead_us=0.0))
    assert overlapped - float(serving.decode_step_s(none, batch=64, tp=1, pp=1)) == pytest.approx(64 * 25e-6)
    # the other stacks were fitted without a single-step host term (no fit rows of both kinds of run)
    assert all(serving.STACKS[s].host_sequence_us == 0 for s in serving.STACKS if s != "vllm-rocm-2025")


def test_the_host_time_is_bounded() -> None:
    with pytest.raises(InputError) as err:
        serving.ServingEfficiency(host_sequence_us=-1.0)
    assert err.value.field == "efficiency.host_sequence_us"
