"""training.attention_kernel: Transformer Engine's fused attention vs FlashAttention-2 (timing._attention),
its default from the framework profile, and the source an estimate's ``assumptions`` gives for it."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.framework import PROFILES
from clusterdesigner.engine.training.timing import (
    FLASH_BWD_FRACTION,
    FLASH_FWD_FRACTION,
    FUSED_ATTENTION_SPEEDUP,
)
from clusterdesigner.engine.training.training import estimate


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
    # Fitted on the Blackwell fit rows of runs_frontier.csv (timing.FUSED_ATTENTION_SPEEDUP).
    assert FUSED_ATTENTION_SPEEDUP["blackwell"] == 1.7
    assert _compute_s("gb200", "fused") < _compute_s("gb200", "flash2")
    kernel = _kernel_assumption(_estimate("gb200", None))
    assert (kernel["name"], kernel["value"]) == ("attention_kernel[fused]", 1.7)
    assert "fitted" in kernel["source"]


def test_ampere_runs_both_kernels_alike() -> None:
    assert _compute_s("a100-80gb", "flash2") == pytest.approx(_compute_s("a100-80gb", "fused"), rel=1e-12)


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
