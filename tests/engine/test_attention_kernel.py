"""training.attention_kernel: Transformer Engine's fused attention vs FlashAttention-2 (timing._attention)."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

from clusterdesigner.engine.errors import InputError
from clusterdesigner.engine.timing import FLASH_BWD_FRACTION, FLASH_FWD_FRACTION
from clusterdesigner.engine.training import estimate


def _request(accelerator: str, kernel: str) -> dict[str, Any]:
    request = {**GPT3_1024_A100, "cluster": {**GPT3_1024_A100["cluster"], "accelerator": accelerator}}
    request["training"] = {**request["training"], "attention_kernel": kernel}
    return request


def _compute_s(accelerator: str, kernel: str) -> float:
    r = estimate(_request(accelerator, kernel), accelerators=ACCELERATORS, fabrics=FABRICS)
    return float(r["step_time_s"]["compute"])


def test_fused_attention_is_faster_than_flash2_on_h100() -> None:
    # Attention at 1.5x FA2's rate takes 1/1.5 of its time; the GEMMs and element-wise passes are unchanged,
    # so the compute part drops by less than a third (GPT-3 175B at 2,048 tokens: attention is a minor part).
    fa2, fused = _compute_s("h100-sxm", "flash2"), _compute_s("h100-sxm", "fused")
    assert fa2 * 2 / 3 < fused < fa2
    r = estimate(_request("h100-sxm", "flash2"), accelerators=ACCELERATORS, fabrics=FABRICS)
    named = {a["name"]: a["value"] for a in r["assumptions"]}
    assert named["flash_attention_fwd_fraction"] == FLASH_FWD_FRACTION
    assert named["flash_attention_bwd_fraction"] == FLASH_BWD_FRACTION
    assert named["fused_attention_speedup_hopper"] == 1.5


def test_ampere_runs_both_kernels_alike() -> None:
    assert _compute_s("a100-80gb", "flash2") == pytest.approx(_compute_s("a100-80gb", "fused"), rel=1e-12)


def test_an_unknown_kernel_is_refused_on_its_field() -> None:
    with pytest.raises(InputError) as err:
        estimate(_request("h100-sxm", "sdpa"), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert err.value.field == "training.attention_kernel"
