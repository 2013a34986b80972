"""Memory on the torchtitan FSDP2 rows (tests/engine/data/memory_fsdp2.csv), issue 19's memory target:
median |error| ≤ 10 % on the rows with measured memory, FSDP2 rows included; no measured run predicted not
to fit. Nothing is fitted to these rows."""

from __future__ import annotations

import pytest
from memory_fsdp2_cases import MemoryCase, all_memory_cases, memory_medians


@pytest.fixture(scope="module")
def cases() -> list[MemoryCase]:
    return all_memory_cases()


def test_every_measured_fsdp2_run_is_predicted_to_fit(cases: list[MemoryCase]) -> None:
    assert len(cases) == 18
    assert all(c.fits for c in cases)


def test_the_engine_runs_low_on_every_fsdp2_row(cases: list[MemoryCase]) -> None:
    """Today's figures: every row under-predicted, from −6.3 % (8B, 128 GPUs, compile + Float8: 57.9 GiB
    against 61.8) to −47.8 % (405B, PP 8, CP 8: 44.3 against 84.9; the pipeline rows run −39 to −48 %);
    median |error| 13.1 % on the 18 rows (30.9 % before torchtitan's upcast cross-entropy was charged its
    10 B per logit), 10.4 % on the 24 BLOOM rows, 11.9 % on both."""
    errors = {c.run_id: c.error for c in cases}
    assert max(errors.values()) == pytest.approx(-0.063, abs=0.002)
    assert min(errors.values()) == pytest.approx(-0.478, abs=0.002)
    medians = memory_medians(cases)
    assert medians["fsdp2"] == pytest.approx(0.131, abs=0.002)
    assert medians["bloom"] == pytest.approx(0.104, abs=0.002)
    assert medians["both"] == pytest.approx(0.119, abs=0.002)


@pytest.mark.xfail(strict=True, reason="median |error| 11.9 % on BLOOM + FSDP2 rows (FSDP2 alone 13.1 %)")
def test_memory_median_on_bloom_and_fsdp2_rows_meets_the_target(cases: list[MemoryCase]) -> None:
    assert memory_medians(cases)["both"] <= 0.10
