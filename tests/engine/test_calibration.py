"""Calibration against the measured runs in tests/engine/data/runs.csv (targets from issue 3).

Each row is predicted with its stated layout and compared on the row's own basis (model or hardware
FLOPs); tests/engine/calibration_cases.py lists what is assumed where a row is silent. The per-row table:
``.venv/bin/python bench/calibration.py``.
"""

from __future__ import annotations

import pytest
from calibration_cases import Case, all_cases, summary


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


@pytest.mark.xfail(
    strict=True,
    reason="bloom_prequel_zero0 (72 GB read off a snapshot whose throughput "
    "cells the source marks as swapped) is predicted 19 % low; the 15 % target is not met there",
)
def test_bloom_memory_is_within_fifteen_percent_on_every_row(cases: list[Case]) -> None:
    assert summary(cases)["bloom_memory_max_abs_error"] <= 0.15
