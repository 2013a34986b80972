"""Serving calibration: the engine against measured serving results (tests/engine/data/serving_runs.csv).

Targets (issue 18) on the held-out ``check`` rows: median |error| of tokens/s ≤ 15 %, p90 ≤ 30 %, and the
direction of every pairwise ranking across accelerators right in ≥ 90 % of pairs. Targets not met are
marked ``xfail(strict=True)`` with the true figure, so they fail loudly the day they start passing.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import serving_calibration_cases as cal

from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving

CHECK = [c for c in cal.cases() if c.row["split"] == "check"]
SUMMARY = cal.summary(CHECK)


def test_the_table_has_twenty_points_on_three_accelerators_with_sources() -> None:
    rows = cal.rows()
    assert len(rows) >= 20
    assert len({r["accelerator"] for r in rows}) >= 3
    assert all(r["source"].startswith("https://") and r["verification"] for r in rows)


@pytest.mark.parametrize("stack", sorted(serving.STACKS))
def test_the_engine_constants_are_what_the_declared_fit_rows_give(stack: str) -> None:
    assert cal.fit(cal.rows(), stack) == serving.STACKS[stack]


def test_the_fit_does_not_depend_on_the_constants_it_starts_from() -> None:
    # the fit's walk is bounded by the score of the constants it is handed (the engine's, above), which only
    # prunes: handed vllm-rocm's constants with the compute efficiency one grid step off (0.80 -> 0.75), a
    # worse point, it still finds 0.80, so the test above would fail if the engine held 0.75
    engine = serving.STACKS["vllm-rocm"]
    off = replace(engine, compute_efficiency=0.75)
    assert cal.fit(cal.rows(), "vllm-rocm", hint=off) == engine != off


def test_every_held_out_row_is_predicted() -> None:
    assert SUMMARY["compared"] == len(CHECK) >= 15


def test_median_error_on_held_out_rows_is_within_15_percent() -> None:
    assert SUMMARY["median_abs_error"] <= 0.15


# The attention-DP MoE rows of TensorRT-LLM 1.0's perf overview (110: Llama 4 Scout/Maverick, Qwen3
# 30B-A3B/235B-A22B on H100, H200, B200, GB200), predicted with their published layout since issue #37 made it
# expressible (ServingInput.attention_dp) and split by the rule their regime's other rows follow (every
# third row check, declared before the first fit): 75 fit, 35 check.
ADP = [c for c in CHECK if c.row.get("attention_dp") == "1"]
DENSE_AND_MLPERF = [c for c in CHECK if c.row.get("attention_dp") != "1"]


def test_issue_37_targets_hold_on_the_check_rows_other_than_the_attention_dp_moe_ones() -> None:
    # issue #37: on check rows throughput median |error| ≤ 12 % and p90 ≤ 30 %. 82 check rows on five
    # accelerators and four stacks (the third of each regime declared before fitting): 7.4 % and 20.8 %
    # (8.2 % and 24.3 % before the single-step host time of vllm-rocm-2025, host_sequence_us)
    assert len(DENSE_AND_MLPERF) == 82
    s = cal.summary(DENSE_AND_MLPERF)
    assert s["median_abs_error"] <= 0.12 and s["p90_abs_error"] <= 0.30


# All 117 check rows, the 35 attention-DP MoE rows among them: median 9.1 %, p90 27.3 % (9.9 % / 39.9 % before
# the MoE decode physics of issue #37 h8, a strict xfail until then). The MoE rows alone: 19.7 % / 41.0 % with
# the routed experts' rows padded to the grouped GEMM's 128-row tile, the busiest expert-parallel rank's load,
# and the tiles' fixed work (moe_tile_overhead_k 2,048, moe_compute_scale 0.40, both fitted on their 75 fit
# rows); 33.0 % / 65.3 % with one flat scale (0.15), 54.6 % / 165.3 % with the tensor-parallel layout they
# were predicted with before. The form of the new terms was chosen after seeing these rows' errors (fit and
# check alike): the check rows held out of the fit, not blind.
def test_issue_37_targets_hold_on_every_check_row() -> None:
    assert len(CHECK) == 117 and len(ADP) == 35
    assert SUMMARY["median_abs_error"] <= 0.12 and SUMMARY["p90_abs_error"] <= 0.30


def test_the_attention_dp_moe_check_rows_median_is_what_the_fit_gives() -> None:
    # a regression guard on the figures above, not the issue's target: 19.7 % median, 41.0 % p90
    s = cal.summary(ADP)
    assert s["compared"] == 35 and s["median_abs_error"] <= 0.20 and s["p90_abs_error"] <= 0.42


# The dense TensorRT-LLM 1.0 perf-overview check rows pooled (32 on H100, H200, B200, GB200): 10.4 % and
# 23.2 %. Per regime (bench/serving_calibration.py prints them) the medians are 12.7 % (H100), 8.7 % (H200),
# 11.7 % (B200) and 15.8 % (GB200, +15.8 % signed: the FP4 scale fitted on B200 and GB200 together).
def test_the_tensorrt_llm_2025_check_rows_meet_the_targets_pooled() -> None:
    rows = [c for c in CHECK if c.row["stack"] == "tensorrt-llm-2025" and c.row.get("attention_dp") != "1"]
    assert len(rows) == 32
    s = cal.summary(rows)
    assert s["median_abs_error"] <= 0.12 and s["p90_abs_error"] <= 0.30


def test_the_attention_dp_moe_rows_keep_the_split_their_regime_rule_declared() -> None:
    # every third row of a regime (stack, accelerator, precision, dense/MoE, scenario) in the file's order
    # is check; the 110 rows were set apart as adp-fit/adp-check with that split and brought back with it
    adp = [r for r in cal.rows() if r.get("attention_dp") == "1"]
    assert len(adp) == 110 and all(PRESETS[r["model"]].is_moe for r in adp)
    by: dict[tuple[str, ...], list[str]] = {}
    for r in adp:
        by.setdefault(cal.regime(r), []).append(r["split"])
    for splits in by.values():
        assert splits == [("check" if i % 3 == 2 else "fit") for i in range(len(splits))]


# Issue 18's p90 ≤ 30 % on every held-out row (27.8 % on its 50 check rows, 20.8 % on the 82 before the MoE
# rows came back) is test_issue_37_targets_hold_on_every_check_row above: 27.3 % on 117.


EARLIER = [
    c
    for c in CHECK
    if "added by w7" not in c.row["verification"] and "added by w8" not in c.row["verification"]
]


def test_median_error_on_the_earlier_check_rows_is_within_15_percent() -> None:
    assert len(EARLIER) == 22
    assert cal.summary(EARLIER)["median_abs_error"] <= 0.15  # 6.2 %


# Was a strict xfail at 33.5 % (AMD's rocm/vllm 0.8.3 throughput table −22 … −49 %: the 2025 stack's
# constants were fitted on batch 1 and 128 only, compute 0.15 and 50 µs a sequence, so 1,500–3,200 sequences
# were predicted compute- and overhead-bound). The 2025 stack's fit rows now include the large-batch
# throughput table of ROCm/vllm's v0.10.0 README (8 rows, fit; the four AMD-page rows are that regime's
# third kept as check), and the TensorRT-LLM rows moved with the KV reservation policy.
def test_p90_error_on_the_earlier_check_rows_is_within_30_percent() -> None:
    assert cal.summary(EARLIER)["p90_abs_error"] <= 0.30


# The "fresh" rows (MLPerf Inference v4.0, NVIDIA Llama 2 70B on H100 × 2, H100 × 8, H200 × 8, offline and
# server) were collected after the model change was committed: the blind test, reported on its own.
FRESH = [c for c in cal.cases() if c.row["split"] == "fresh"]
FRESH_SUMMARY = cal.summary(FRESH)


def test_fresh_rows_are_all_predicted() -> None:
    # never fitted: cal.fit reads only the split == "fit" rows (the constants test above checks that)
    assert FRESH_SUMMARY["compared"] == len(FRESH) >= 6


def test_median_error_on_fresh_rows_is_within_15_percent() -> None:
    # 15.5 % when collected (before Poisson arrivals were modelled), 12.1 % after: see docs/serving-engine.md
    assert FRESH_SUMMARY["median_abs_error"] <= 0.15


def test_p90_error_on_fresh_rows_is_within_30_percent() -> None:
    assert FRESH_SUMMARY["p90_abs_error"] <= 0.30


@pytest.mark.parametrize("split", ["check", "fresh"])
def test_pairwise_ranking_direction_is_right_in_90_percent_of_pairs(split: str) -> None:
    right, total = cal.pairwise_direction({"check": CHECK, "fresh": FRESH}[split])
    assert total >= 3
    assert right / total >= 0.9


# The "blind" rows (MLPerf Inference v4.1 Supermicro 8 × H100, Llama 2 70B and Mixtral, offline and server)
# were read after the last model change was committed. Same accelerator and software round as the H100 fit
# rows, so they test the scenarios and a second system, not a new accelerator.
# Also blind: 32 rows of an earlier ROCm/vllm README (vLLM 0.7.3 image, Llama 3.1 70B and 405B, batch 1-128,
# FP8 KV), read after the collective-latency fit and the vllm-rocm-2025 stack were committed: −14.6 … +31.4 %,
# median |error| 8.9 %, p90 21.6 % (a second software release of that stack, so not an independent stack).
BLIND = [c for c in cal.cases() if c.row["split"] == "blind"]


def test_blind_rows_meet_the_median_target() -> None:
    s = cal.summary(BLIND)
    assert s["compared"] == len(BLIND) >= 4
    assert s["median_abs_error"] <= 0.15  # 7.9 % on 36 rows (10.2 % before host_sequence_us)


# Was a strict xfail at 37.7 %: issue #37's refit of vllm-rocm-2025 on the large-batch throughput table
# (compute 0.20, 25 µs a sequence) left batch 32–128 of the vLLM 0.7.3 README's latency table +29 … +56 %.
# The physics: its latency runs (benchmark_latency.py) step one iteration at a time and return every token,
# so each running sequence's host work (scheduling, input preparation, sampler output) is on the step's
# critical path; its throughput runs set --num-scheduler-steps 10 (0.7.3) or --disable-detokenize (v0.10.0).
# ServingEfficiency.host_sequence_us, fitted second on the stack's fit rows only (the v0.10.0 README's
# batch-1/128 latency rows against its throughput rows): 50 µs. Blind rows: median 10.2 → 7.9 %, p90
# 37.7 → 15.2 % (the 32 vLLM 0.7.3 rows alone 11.9 / 37.8 → 8.8 / 15.6 %, worst now +24 % at 405B batch 64).
# The term's form was chosen knowing these rows' errors (its constant was fitted on fit rows only), so from
# here on they are no longer a blind test.
def test_blind_rows_meet_the_p90_target() -> None:
    assert cal.summary(BLIND)["p90_abs_error"] <= 0.30


def test_blind_rows_have_no_ranking_pairs_so_ranking_is_judged_on_check_rows_only() -> None:
    # 32 MI300X rows of one README and 4 H100 MLPerf rows: no model and setting on two accelerators. A blind
    # row that makes a pair should come with a ranking test here.
    assert cal.pairwise_direction(BLIND) == (0, 0)
