"""A measured run the engine can express: Llama 3 8B on one node of 8 H100 SXM, TP 2 × DP 4, 128 sequences of
8,192 tokens a step (1,048,576 tokens)."""

from __future__ import annotations

from typing import Any

import pytest

RUN: dict[str, Any] = {
    "model": {"preset": "llama3-8b"},
    "accelerator": "h100-sxm",
    "nodes": 1,
    "gpus_per_node": 8,
    "fabric": "ib-ndr400",
    "tp": 2,
    "pp": 1,
    "dp": 4,
    "micro_batch": 1,
    "global_batch": 128,
    "seq_len": 8192,
    "recompute": "selective",
    "sharding": "zero1",
    "precision": "bf16",
    "framework": "megatron-core",
    "framework_version": "0.12.0",
    "step_time_s": 12.0,
    "measured_on": "2026-11-02",
    "note": "steady state, iterations 50-100",
}


@pytest.fixture
def run_data() -> dict[str, Any]:
    return {**RUN, "model": dict(RUN["model"])}
