"""The launch export carries the model flags the presets need (issue #32): RMSNorm, RoPE with the model's
base, SwiGLU, untied embeddings and grouped-query attention for Llama; sliding windows and attention sinks
for GPT-OSS; NoPE global layers and a chunked-attention note for Llama 4. Tested through the export URL.

Flag names from Megatron-LM megatron/training/arguments.py (--normalization, --position-embedding-type,
--rotary-base, --window-size, --window-attn-skip-freq, --softmax-type, --no-rope-freq) and its GPT-OSS
example (--window-size 128,0 --window-attn-skip-freq 2 --softmax-type learnable)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.designs.demo import demo_load
from apps.designs.services import design_create
from tests.designs.test_launch_expert_tp import _flag

pytestmark = pytest.mark.django_db


def _export(user_client: Any, model: dict[str, Any], layout: dict[str, Any]) -> str:
    spec = demo_load()[0].current.spec  # 64 nodes x 8 H100 on NDR400
    training = {"tokens": 1e12, "global_batch_seqs": 1024, "precision": "bf16"}
    layout = {"cp": 1, "vpp": 1, "micro_batch": 1, "recompute": "selective", "sharding": "zero1", **layout}
    layout.setdefault("sequence_parallel", layout["tp"] > 1)
    spec = {**spec, "workload": {"model": model, "training": training}, "parallelism": layout}
    design = design_create(owner=user_client.user, name=str(model), spec=spec)
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:600]
    return response.content.decode()


def test_llama3_export_carries_rmsnorm_rope_base_swiglu_untied_and_gqa(
    catalog: dict[str, int], user_client: Any
) -> None:
    text = _export(user_client, {"preset": "llama3-70b"}, {"tp": 8, "pp": 4, "dp": 16})
    assert _flag(text, "--normalization") == "RMSNorm"
    assert _flag(text, "--position-embedding-type") == "rope"
    assert _flag(text, "--rotary-base") == "500000"  # Llama 3 config.json rope_theta
    assert _flag(text, "--num-query-groups") == "8"
    for flag in ("--swiglu", "--untie-embeddings-and-output-weights", "--group-query-attention"):
        assert f"{flag} " in text or text.rstrip().endswith(flag), flag
    assert "norm and position-embedding flags are not part of the design" not in text
    assert "--window-size" not in text and "--softmax-type" not in text


def test_gpt_oss_export_carries_the_sliding_window_pattern_and_sinks(
    catalog: dict[str, int], user_client: Any
) -> None:
    # GPT-OSS-20B: 24 layers alternating window 128 / full, so one full layer after every windowed one.
    text = _export(user_client, {"preset": "gpt-oss-20b"}, {"tp": 1, "pp": 4, "dp": 128, "ep": 8})
    assert _flag(text, "--window-size") == "128,0"
    assert _flag(text, "--window-attn-skip-freq") == "2"
    assert _flag(text, "--softmax-type") == "learnable"
    assert _flag(text, "--rotary-base") == "150000"
    assert _flag(text, "--kv-channels") == "64"  # 64 heads of 64 is not hidden 2880 / 64
    assert _flag(text, "--num-experts") == "32" and _flag(text, "--moe-router-topk") == "4"


def test_llama4_export_marks_nope_global_layers_and_says_chunking_is_not_a_flag(
    catalog: dict[str, int], user_client: Any
) -> None:
    text = _export(user_client, {"preset": "llama4-scout"}, {"tp": 8, "pp": 4, "dp": 16, "ep": 16})
    assert _flag(text, "--no-rope-freq") == "4"  # every fourth layer global and NoPE
    assert _flag(text, "--rotary-base") == "500000"
    assert "chunked attention (8192 tokens on 36 of 48 layers) has no Megatron-LM flag" in text
    assert "--window-size" not in text


def test_a_custom_shape_without_norm_or_rope_says_megatrons_defaults_apply(
    catalog: dict[str, int], user_client: Any
) -> None:
    model = {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 50304, "seq_len": 2048}
    text = _export(user_client, model, {"tp": 8, "pp": 1, "dp": 64})
    command = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "--normalization" not in command and "--rotary-base" not in command
    assert "the model does not set rms_norm or rope_theta: Megatron's defaults apply" in text
