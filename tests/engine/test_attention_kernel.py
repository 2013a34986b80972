"""training.attention_kernel: Transformer Engine's fused attention vs FlashAttention-2 (timing._attention),
its default from the framework profile, and the source an estimate's ``assumptions`` gives for it."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.framework import PROFILES
from clusterdesigner.engine.training.timing import (
    AMPERE_KERNEL_SPEEDUP,
    FLASH_BWD_FRACTION,
    FLASH_FWD_FRACTION,
    FUSED_ATTENTION_SPEEDUP,
    KERNEL_RATES_TFLOPS,
    flash_attention_flops,
    flash_attention_seconds,
    kernel_head_dim,
)
from clusterdesigner.engine.training.training import estimate, parse_problem
from clusterdesigner.engine.training.workload import Problem


def _request(accelerator: str, kernel: str | None, **training: Any) -> dict[str, Any]:
    request = {**GPT3_1024_A100, "cluster": {**GPT3_1024_A100["cluster"], "accelerator": accelerator}}
    request["training"] = {**request["training"], **training}
    if kernel is not None:
        request["training"]["attention_kernel"] = kernel
    return request


def _estimate(accelerator: str, kernel: str | None, **training: Any) -> dict[str, Any]:
    return estimate(_request(accelerator, kernel, **training), accelerators=ACCELERATORS, fabrics=FABRICS)


def _compute_s(accelerator: str, kernel: str | None, **training: Any) -> float:
    return float(_estimate(accelerator, kernel, **training)["step_time_s"]["compute"])


def _kernel_assumption(r: dict[str, Any]) -> dict[str, Any]:
    (found,) = [a for a in r["assumptions"] if a["name"].startswith("attention_kernel[")]
    return dict(found)


def test_fused_attention_is_faster_than_flash2_on_h100() -> None:
    # Attention at 1.5x FA2's rate takes 1/1.5 of its time; the GEMMs and element-wise passes are unchanged,
    # so the compute part drops by less than a third (GPT-3 175B at 2,048 tokens: attention is a minor part).
    fa2, fused = _compute_s("h100-sxm", "flash2"), _compute_s("h100-sxm", "fused")
    assert fa2 * 2 / 3 < fused < fa2
    r = _estimate("h100-sxm", "fused")
    named = {a["name"]: a["value"] for a in r["assumptions"]}
    assert named["flash_attention_fwd_fraction"] == FLASH_FWD_FRACTION
    assert named["flash_attention_bwd_fraction"] == FLASH_BWD_FRACTION
    assert named["attention_kernel[fused]"] == 1.5
    assert "arXiv:2407.08608" in _kernel_assumption(r)["source"]


def test_blackwell_runs_its_fitted_fused_factor() -> None:
    # Fitted on the Blackwell fit rows of runs_frontier.csv (timing.FUSED_ATTENTION_SPEEDUP); 1.7 until the
    # joint refit after the ModelZoo rows' causal count (with MOE_ROUTED_PASSES 25 -> 11), 1.6 until each
    # NeMo row was timed in its own FP8 recipe (issue 33 h6: 1.9, MOE_ROUTED_PASSES 11 -> 14).
    # Joint refit after merging flash2's measured Hopper rate and the Hopper family refit 0.75 -> 0.81: 1.7;
    # joint refit after the DeepSeek-V3 rows' gated MLP (frontier harness): 1.6; engine version 23's joint
    # refit once FlashAttention-2 runs at its published rates (the family factors refitted): 1.8.
    assert FUSED_ATTENTION_SPEEDUP["blackwell"] == 1.8
    assert _compute_s("gb200", "fused") < _compute_s("gb200", "flash2")
    kernel = _kernel_assumption(_estimate("gb200", None))
    assert (kernel["name"], kernel["value"]) == ("attention_kernel[fused]", 1.8)
    assert "fitted" in kernel["source"]


def test_ampere_runs_both_kernels_alike() -> None:
    assert _compute_s("a100-80gb", "flash2") == pytest.approx(_compute_s("a100-80gb", "fused"), rel=1e-12)
    # ... at FlashAttention-2's published A100 rates, which the family factor no longer derates, and the
    # assumption says so.
    for kernel in ("flash2", "fused"):
        a = _kernel_assumption(_estimate("a100-80gb", kernel))
        assert "published A100 rates" in a["source"] and "without the family" in a["source"]


@pytest.mark.parametrize(
    ("framework", "kernel"),
    [
        ("megatron-core", "fused"),
        ("megatron-lm-2022", "flash2"),
        ("deepspeed-zero-2021", "flash2"),
        ("fsdp2", "flash2"),
        ("nemo-automodel", "flash2"),
    ],
)
def test_the_kernel_defaults_to_the_framework_profiles(framework: str, kernel: str) -> None:
    # Megatron-Core calls Transformer Engine's cuDNN fused attention; torchtitan and AutoModel PyTorch SDPA,
    # whose flash backend is FlashAttention-2; Megatron-LM 2022 and Megatron-DeepSpeed flash-attn.
    assert PROFILES[framework].attention_kernel == kernel
    a = _kernel_assumption(_estimate("h100-sxm", None, framework=framework))
    assert a["name"] == f"attention_kernel[{kernel}]"
    assert a["source"].startswith(f"{PROFILES[framework].name} profile default")


def test_a_request_overrides_the_profiles_kernel_and_the_assumption_says_so() -> None:
    fsdp2 = _estimate("h100-sxm", None, framework="fsdp2")
    fused = _estimate("h100-sxm", "fused", framework="fsdp2")
    assert fused["step_time_s"]["compute"] < fsdp2["step_time_s"]["compute"]
    assert _kernel_assumption(fused)["source"].startswith("set by training.attention_kernel")


def test_an_unknown_kernel_is_refused_on_its_field() -> None:
    with pytest.raises(InputError) as err:
        _estimate("h100-sxm", "sdpa")
    assert err.value.field == "training.attention_kernel"


def _problem(accelerator: str, kernel: str) -> Problem:
    return parse_problem(_request(accelerator, kernel), accelerators=ACCELERATORS, fabrics=FABRICS)


def test_flash3_on_h100_runs_the_causal_half_at_cudnns_measured_rates() -> None:
    # Hand calculation: 1e15 FLOPs on the full s x s count is 5e14 causal; H100 SXM's dense BF16 peak is the
    # measuring GPU's (989.4), so forward 5e14 / 539e12 = 0.92764 s, backward 2.5 x 5e14 / 516e12 = 2.42248 s.
    fwd, bwd = flash_attention_seconds(1e15, _problem("h100-sxm", "flash3"), rate_bf16=1.0)
    assert fwd == pytest.approx(0.92764, rel=1e-4)
    assert bwd == pytest.approx(2.42248, rel=1e-4)
    assert KERNEL_RATES_TFLOPS[("flash3", "hopper")] == (539.0, 516.0, 989.4)


def test_fused_on_h100_keeps_its_factor_over_flash2s_fractions() -> None:
    # Hand calculation at a stub calibrated rate of 500 TFLOP/s: forward 1e15 / (500e12 x 0.84 x 1.5) =
    # 1.5873 s, backward 2.5e15 / (500e12 x 0.72 x 1.5) = 4.6296 s. On A100, where FlashAttention-2's rates
    # were measured, flash2 runs at them whatever the calibrated rate: A100 SXM4's mamf 271.2 x 0.84 =
    # 227.8 TFLOP/s (FA2's 73 % of 312), forward 1e15 / 227.808e12 = 4.38966 s, backward 2.5e15 /
    # (271.2e12 x 0.72) = 12.80318 s; fused (no factor on Ampere) the same.
    fwd, bwd = flash_attention_seconds(1e15, _problem("h100-sxm", "fused"), rate_bf16=500e12)
    assert (fwd, bwd) == (pytest.approx(1.5873, rel=1e-4), pytest.approx(4.6296, rel=1e-4))
    for kernel in ("flash2", "fused"):
        fwd2, bwd2 = flash_attention_seconds(1e15, _problem("a100-80gb", kernel), rate_bf16=500e12)
        assert (fwd2, bwd2) == (pytest.approx(4.38966, rel=1e-5), pytest.approx(12.80318, rel=1e-5))


def test_flash2_on_h100_runs_at_its_a100_rate_times_fa2s_measured_speedup() -> None:
    # An Ampere-design kernel (mma.sync, no warpgroup MMA) gains on H100 what FlashAttention-2 gains, not the
    # matmul rate's 2.93x. Hand calculation: A100 reference 271.2e12 (its mamf, no end-to-end factor: FA2's
    # rates are the kernel's own); forward speedup 370 / (0.73 x 312) = 370 / 227.76 = 1.62452, backward
    # 322 / (0.63 x 312) = 322 / 196.56 = 1.63818. Forward 1e15 / (271.2e12 x 0.84 x 1.62452) = 2.70213 s
    # (370.1 TFLOP/s, FA2's measured H100 forward); backward 2.5e15 / (271.2e12 x 0.72 x 1.63818) = 7.81551 s,
    # whatever H100's own rate (the stub 500e12 is not used).
    fwd, bwd = flash_attention_seconds(1e15, _problem("h100-sxm", "flash2"), rate_bf16=500e12)
    assert fwd == pytest.approx(2.70213, rel=1e-4)
    assert bwd == pytest.approx(7.81551, rel=1e-4)
    fwd_speedup, bwd_speedup = AMPERE_KERNEL_SPEEDUP["hopper"]
    assert (fwd_speedup, bwd_speedup) == (pytest.approx(1.62452, rel=1e-5), pytest.approx(1.63818, rel=1e-5))


def test_the_flash2_assumption_on_h100_names_fa2s_measured_speedup() -> None:
    a = _kernel_assumption(_estimate("h100-sxm", "flash2"))
    assert a["value"] == pytest.approx(1.62452, rel=1e-5)
    assert "arXiv:2407.08608" in a["source"] and "1.64× backward" in a["unit"]


def test_flash3_without_a_measured_rate_times_as_fused() -> None:
    # Blackwell has no backward figure on the causal count: flash3 runs the fused kernel's fitted factor.
    assert _compute_s("gb200", "flash3") == pytest.approx(_compute_s("gb200", "fused"), rel=1e-12)
    assert _compute_s("h100-sxm", "flash3") < _compute_s("h100-sxm", "fused")


def test_the_flash3_assumption_gives_its_measured_rate_and_source() -> None:
    a = _kernel_assumption(_estimate("h100-sxm", "flash3"))
    assert (a["name"], a["value"]) == ("attention_kernel[flash3]", pytest.approx(539.0))
    assert "516 backward" in a["unit"] and "arXiv:2407.08608" in a["source"]


def test_flash2_computes_at_the_head_dimension_it_pads_to() -> None:
    # FlashAttention-2 rounds a head up to a multiple of 32 up to 128 and of 64 above (flash_api.cpp,
    # round_multiple(head_size, head_size <= 128 ? 32 : 64)); cuDNN's fused attention takes it as it is.
    assert [kernel_head_dim("flash2", d) for d in (64, 80, 96, 112, 128, 160, 192, 256)] == [
        64,
        96,
        96,
        128,
        128,
        192,
        192,
        256,
    ]
    assert [kernel_head_dim(k, 112) for k in ("fused", "flash3")] == [112, 112]
    # By hand, one layer, 4,096 tokens scoring 4,096 keys, 64 heads of 112 (q width 7,168): the full count
    # 4 · 4,096 · 4,096 · 64 · 112 = 481.0 GFLOP as given, × 128/112 padded: 549.8 GFLOP.
    model = parse_problem(
        {**_request("a100-80gb", "flash2"), "model": {**_MPT_LIKE, "heads": 64, "kv_heads": 64}},
        accelerators=ACCELERATORS,
        fabrics=FABRICS,
    ).model
    assert flash_attention_flops(model, "fused", tokens=4096, keys=4096) == 4 * 4096 * 4096 * 64 * 112
    assert flash_attention_flops(model, "flash2", tokens=4096, keys=4096) == 4 * 4096 * 4096 * 64 * 128


def test_the_padding_reaches_the_step_time_and_nothing_else_moves() -> None:
    # Two models with the same GEMMs (q width 7,168 = 64 heads × 112 = 56 heads × 128): under cuDNN's
    # fused attention (on A100, at FA2's rates) they take the same compute time; under FlashAttention-2 the
    # 112-wide heads compute as 128-wide, 8/7 of the attention FLOPs, so the step is longer.
    def compute(kernel: str, heads: int) -> float:
        request = {**_request("a100-80gb", kernel), "model": {**_MPT_LIKE, "heads": heads, "kv_heads": heads}}
        return float(estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)["step_time_s"]["compute"])

    assert compute("fused", 64) == pytest.approx(compute("fused", 56), rel=1e-12)
    assert compute("flash2", 56) == pytest.approx(compute("fused", 56), rel=1e-12)
    assert compute("flash2", 64) > compute("flash2", 56) * 1.01


_MPT_LIKE = {
    "name": "MPT-30B-shaped",
    "layers": 48,
    "hidden": 7168,
    "ffn_hidden": 28672,
    "seq_len": 4096,
    "vocab": 50368,
    "gated_mlp": False,
}
