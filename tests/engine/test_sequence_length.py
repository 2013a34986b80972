"""Odd sequence lengths (2049, 8191: a 2,048-token context plus the shifted target, or a 8K window minus one)
train without context parallelism: only CP > 1 needs seq_len in 2·cp equal chunks, and only sequence
parallelism needs tp to divide seq_len / cp (Megatron-Core scatters the sequence over the TP ranks)."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.training.training import estimate


def _request(seq_len: int, **parallelism: object) -> dict[str, Any]:
    return {
        "model": {"preset": "llama3-8b", "seq_len": seq_len},
        "training": {"tokens": 1e12, "global_batch_seqs": 64, "precision": "bf16"},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 2, "fabric": "ib-ndr400"},
        **({"parallelism": parallelism} if parallelism else {}),
    }


@pytest.mark.parametrize("seq_len", [2049, 8191])
def test_an_odd_sequence_length_is_searched_without_context_parallelism(seq_len: int) -> None:
    # Refused before: "cp 1 does not split seq_len 2049 into 2·cp equal chunks".
    result = estimate(_request(seq_len), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert result["parallelism"]["cp"] == 1
    assert result["tokens_per_second"] > 0


def test_one_more_token_per_sequence_costs_about_one_token_of_work() -> None:
    # Same layout, 2,049 vs 2,048 tokens: model FLOPs per token grow only by the attention term,
    # 12·L·h·s per token (Narayanan et al. 2021 eq. 3) → +1/2,048 of it; tokens/s moves by < 0.1 %.
    layout = {"tp": 1, "pp": 1, "dp": 16, "micro_batch": 4, "recompute": "none", "sharding": "zero2"}
    even = estimate(_request(2048, **layout), accelerators=ACCELERATORS, fabrics=FABRICS)
    odd = estimate(_request(2049, **layout), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert odd["tokens_per_second"] == pytest.approx(even["tokens_per_second"], rel=1e-3)


@pytest.mark.parametrize(
    ("parallelism", "field", "message"),
    [
        ({"cp": 2}, "parallelism.cp", "cp 2 does not split seq_len 2049 into 2·cp equal chunks"),
        (
            {"tp": 8, "sequence_parallel": True},
            "parallelism.sequence_parallel",
            "sequence parallelism splits seq_len 2049 / cp 1 over tp 8 ranks",
        ),
    ],
)
def test_an_odd_sequence_length_still_refuses_what_needs_it_split(
    parallelism: dict[str, object], field: str, message: str
) -> None:
    with pytest.raises(EngineError) as exc:
        estimate(_request(2049, **parallelism), accelerators=ACCELERATORS, fabrics=FABRICS)
    assert exc.value.field == field
    assert message in exc.value.message


def test_tp_without_sequence_parallelism_takes_an_odd_sequence_length() -> None:
    result = estimate(
        _request(2049, tp=8, sequence_parallel=False), accelerators=ACCELERATORS, fabrics=FABRICS
    )
    assert result["parallelism"]["tp"] == 8 and result["parallelism"]["sequence_parallel"] is False
