"""Error bands by regime (issue 19): the generated table matches the calibration, and every estimate
carries its band."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from calibration_regimes import (  # noqa: E402
    band_of,
    compute,
    focus_regimes,
    render,
    weighted_percentile,
    widening,
)

from clusterdesigner.engine.training import error_band_table  # noqa: E402
from clusterdesigner.engine.training.error_band import band_for, band_keys, regime_key  # noqa: E402


@pytest.fixture(scope="module")
def computed() -> dict[str, object]:
    return compute()


@pytest.fixture(scope="module")
def regimes() -> dict[str, list[Any]]:
    """bench/calibration_regimes.py's two thin regimes (out-of-sample residuals of every row: ~10 s), once
    for the module's two tests of them."""
    return focus_regimes()


def test_the_generated_table_matches_the_calibration(computed: dict[str, object]) -> None:
    # Fails when the engine's predictions or runs.csv change: run bench/calibration_regimes.py --write.
    text = Path(error_band_table.__file__).read_text()
    assert text == render(computed), "error_band_table.py is stale: bench/calibration_regimes.py --write"


def test_the_memory_headroom_is_minus_the_p10_of_the_memory_error(computed: dict[str, object]) -> None:
    # 24 BLOOM rows with measured memory; sorted signed errors begin −14.95 %, −14.31 %, −14.26 %,
    # −13.86 %: p10 at rank 0.1 × 23 = 2.3 → −14.26 + 0.3 × (−13.86 + 14.26) = −14.14 % → 0.141.
    assert computed["memory_rows"] == 24
    assert computed["memory_headroom"] == pytest.approx(0.141, abs=5e-4)
    assert error_band_table.MEMORY_HEADROOM == computed["memory_headroom"]


# Since the ModelZoo rows are compared in their own causal FLOP count, the engine is 12-35 % slow on that
# source while it is fast on NeMo's MoE rows: left out, neither source's rows lie in the band the other
# builds. MoE 11/12 -> 4/12, FP8 33/40 -> 30/40, Blackwell 15/15 -> 10/15 (issue 33 item 1, not met). With
# the ModelZoo's Hopper kernel at its measured rates (training.attention_kernel flash3) MoE 4/12 -> 5/12; FP8
# and Blackwell unchanged (their ModelZoo rows are GB200's, which keeps the fused factor). The joint refit
# after the merge (MOE_ROUTED_PASSES 25 -> 11, Blackwell kernel 1.7 -> 1.6, FP8 0.69 -> 0.70) brings the
# ModelZoo rows in and sends NeMo 25.09's Blackwell MoE rows to +27 ... +53 %: MoE 8/12, FP8 30/40,
# Blackwell 11/15, still under 80 %.
_BELOW_TARGET = (
    "MoE rows split by source (MOE_ROUTED_PASSES 11 fits the ModelZoo and H100 rows; NeMo 25.09's Blackwell "
    "MoE rows +27 ... +53 %): MoE 8/12, FP8 30/40, Blackwell 11/15"
)


@pytest.mark.parametrize(
    "regime",
    [
        "dense",
        pytest.param("moe", marks=pytest.mark.xfail(strict=True, reason=_BELOW_TARGET)),
        pytest.param("fp8", marks=pytest.mark.xfail(strict=True, reason=_BELOW_TARGET)),
        "hopper",
        pytest.param("blackwell", marks=pytest.mark.xfail(strict=True, reason=_BELOW_TARGET)),
        "amd (cdna)",
        ">= 512 gpus",
        "long context (>= 32k)",
    ],
)
def test_the_bands_hold_eighty_percent_of_held_out_check_rows_in_the_regime(
    computed: dict[str, object], regime: str
) -> None:
    # Issue 33 item 3: the band called 80 % held 67 % of independent comparisons (2/8 MoE, 5/14 above 512
    # GPUs). Now each source's check rows are judged against the table built without that source, as an
    # unseen published run would be. Built that way from the old method (unweighted p10/p90 of the rows)
    # the bands held 63 % (MoE 58 %, FP8 60 %, Blackwell 47 %, >= 512 GPUs 45 %, long context 30 %).
    coverage = computed["coverage"]
    assert isinstance(coverage, dict)
    inside, rows = coverage[regime]
    assert rows >= 7, regime
    assert inside / rows >= 0.80, (regime, inside, rows)


def test_the_bands_hold_eighty_percent_of_all_held_out_check_rows(computed: dict[str, object]) -> None:
    coverage = computed["coverage"]
    assert isinstance(coverage, dict)
    # Every check row was judged (the all-rows key always has a band), and 80 % of them overall.
    bands = computed["bands"]
    assert isinstance(bands, dict)
    assert coverage["all"][1] == bands["*/*/*/*/*"][0] > 150
    assert coverage["all"][0] / coverage["all"][1] >= 0.80
    # No check row runs FP4 or the FSDP2 stack yet: the bench says so rather than a coverage.
    assert coverage["fp4"] == (0, 0) and coverage["fsdp2"] == (0, 0)


def test_a_band_weighs_each_source_once_and_widens_on_few_sources() -> None:
    # Two sources: A with rows −0.10, 0.00, +0.10, +0.20 (each weighs 1/4), B with one row +0.50 (weighs 1).
    # Sorted with cumulative weight: −0.10 .25, 0.00 .50, +0.10 .75, +0.20 1.00, +0.50 2.00 (total 2).
    # p10 needs 0.2: −0.10; median needs 1.0: +0.20; p90 needs 1.8: +0.50.
    items = [("A", -0.1), ("A", 0.0), ("A", 0.1), ("A", 0.2), ("B", 0.5)]
    assert [weighted_percentile(items, q) for q in (0.1, 0.5, 0.9)] == [-0.1, 0.2, 0.5]
    # k(2) = t(0.90, 1) · √(1 + 1/2) / z(0.90) = 3.0777 × 1.2247 / 1.2816 = 2.941; k(5) = 1.5332 × 1.0954 /
    # 1.2816 = 1.3105; k(20) = 1.3277 × 1.0247 / 1.2816 = 1.0616.
    assert widening(2) == pytest.approx(2.941, abs=1e-3)
    assert widening(5) == pytest.approx(1.3105, abs=1e-3)
    assert widening(20) == pytest.approx(1.0616, abs=1e-3)
    # The band: median 0.20, half-widths 0.30 below and 0.30 above, × 2.9412: −0.6824 … +1.0824.
    assert band_of(items) == (5, -0.6824, 0.2, 1.0824)


def test_a_regime_without_rows_falls_back_and_says_so() -> None:
    assert regime_key("hopper", "bf16", False, 2048, 4096) == "hopper/bf16/dense/lt32k/ge512"
    assert regime_key("hopper", "bf16", False, 512, 4096) == "hopper/bf16/dense/lt32k/ge512"
    assert regime_key("hopper", "fp8", True, 256, 131072) == "hopper/fp8/moe/ge32k/lt512"
    assert band_keys("hopper/bf16/dense/lt32k/ge512")[1:] == (
        "hopper/bf16/dense/lt32k/*",
        "hopper/bf16/dense/*/*",
        "hopper/*/dense/*/*",
        "*/bf16/dense/*/*",
        "*/*/dense/*/*",
        "*/*/*/*/*",
    )
    # Check rows only (issue 33): 4 Hopper BF16 check rows at ≥ 32K tokens (< 5) take the 40 Hopper BF16
    # check rows' band; under 32K at ≥ 512 GPUs there are 6 of their own.
    band = band_for("hopper/bf16/dense/ge32k/ge512")
    assert band.basis == "hopper/bf16/dense/*/*" and band.rows == 40
    assert band_for("hopper/bf16/dense/lt32k/ge512").rows == 6
    # MoE on Blackwell in FP8: 6 check rows from 4 sources (NeMo 25.02, 25.04, 25.09, ModelZoo): the
    # source-weighted p10 and p90 about the median −3.85 %, widened by k(4) = 1.6377 × 1.1180 / 1.2816 =
    # 1.429: −9.4 … +36.1 % (median −5.03 %, −10.7 … +36.4 % since the MoE dispatch physics, engine 13;
    # median −4.91 %, −10.5 … +36.3 % since the expected slowest rank is Blom's, with STRAGGLER_CV 0.2 % and
    # MOE_ROUTED_PASSES 26 refitted on the fit rows). Since the ModelZoo rows are compared in their own
    # causal FLOP count (the engine −20 … −33 % on them): median −8.79 %, −42.0 … +17.7 %.
    # MOE_ROUTED_PASSES 26 refitted on the fit rows; median −4.60 %, −10.3 … +36.7 % with the DeepSeek-V3
    # rows' recipe recompute and MOE_ROUTED_PASSES 25). The joint refit after the merge (MOE_ROUTED_PASSES
    # 25 -> 11, Blackwell kernel 1.7 -> 1.6, Blackwell FP8 0.69 -> 0.70, fit rows only) moves NeMo 25.09's
    # B200/GB200 MoE check rows to +27 ... +53 %: median −7.08 %, −43.4 … +54.3 %.
    moe = band_for("blackwell/fp8/moe/lt32k/lt512")
    assert moe.basis == "blackwell/fp8/moe/*/*" and moe.rows == 6
    assert (moe.p10, moe.median, moe.p90) == pytest.approx((-0.4341, -0.0708, 0.5428), abs=1e-4)
    assert band_for("unknown/bf16/moe/lt32k/lt512").basis == "*/bf16/moe/*/*"
    # AMD: 7 check rows over CDNA 3 (4) and CDNA 4 (3), fewer than 5 each: no CDNA key, so a CDNA estimate
    # takes every family's rows at its precision (its basis says which).
    cdna3_bf16 = band_for("cdna3/bf16/dense/lt32k/lt512")
    assert (cdna3_bf16.basis, cdna3_bf16.rows) == ("*/bf16/dense/*/*", 134)
    cdna4 = band_for("cdna4/fp8/dense/lt32k/lt512")
    assert (cdna4.basis, cdna4.rows) == ("*/fp8/dense/*/*", 33)


def test_a_band_divides_the_prediction_by_one_plus_the_residual_percentiles() -> None:
    band = band_for("ampere/bf16/dense/lt32k/lt512")
    n, p10, _, p90 = error_band_table.BANDS["ampere/bf16/dense/lt32k/lt512"]
    assert band.rows == n
    assert band.low(1000.0) == pytest.approx(1000.0 / (1 + p90))
    assert band.high(1000.0) == pytest.approx(1000.0 / (1 + p10))
    assert band.low(1000.0) < 1000.0 < band.high(1000.0)


def test_every_training_result_carries_its_band_in_tokens_and_days() -> None:
    from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

    from clusterdesigner.engine.training.training import estimate

    r = estimate(GPT3_1024_A100, accelerators=ACCELERATORS, fabrics=FABRICS)
    # 1,024 A100 BF16 dense, 2K tokens: the 9 A100 check rows at ≥ 512 GPUs, all Narayanan 2021: one
    # source, so its half-widths are widened by k(1) = 3.40 (−7.0 … +84.5 %).
    n, p10, _, p90 = error_band_table.BANDS["ampere/bf16/dense/lt32k/ge512"]
    for row in (r, *r["candidates"]):
        band = row["error_band"]
        assert (band["regime"], band["basis"], band["rows"]) == (
            "ampere/bf16/dense/lt32k/ge512",
            "ampere/bf16/dense/lt32k/ge512",
            n,
        )
        tps = row["tokens_per_second"]
        assert band["tokens_per_second_low"] == pytest.approx(tps / (1 + p90))
        assert band["tokens_per_second_high"] == pytest.approx(tps / (1 + p10))
        # days = 300e9 tokens / tokens/s / 86,400, at each end of the band.
        assert band["days_low"] == pytest.approx(300e9 / band["tokens_per_second_high"] / 86400)
        assert band["days_high"] == pytest.approx(300e9 / band["tokens_per_second_low"] / 86400)
        assert band["days_low"] < row["time_to_train_days"] < band["days_high"]
    fixed = {"tp": 8, "pp": 8, "micro_batch": 1, "recompute": "full", "sharding": "zero1"}
    evaluated = estimate({**GPT3_1024_A100, "parallelism": fixed}, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert evaluated["error_band"]["basis"] == "ampere/bf16/dense/lt32k/ge512"


def test_search_reports_the_candidates_within_the_band_as_ties_most_robust_first() -> None:
    from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

    from clusterdesigner.engine.training.training import estimate, exotic_features
    from clusterdesigner.engine.training.training_result import Layout

    r = estimate(GPT3_1024_A100, accelerators=ACCELERATORS, fabrics=FABRICS)
    low = r["error_band"]["tokens_per_second_low"]
    within = {i for i, c in enumerate(r["candidates"]) if c["tokens_per_second"] >= low}
    assert set(r["ties"]) == within and 0 in within
    # The top ten sit within 1 % of each other, far inside a band 25 % wide: all tie.
    assert len(r["ties"]) == 10
    keys = [
        (
            len(exotic_features(Layout.from_json(r["candidates"][i]["parallelism"]), 8)),
            -r["candidates"][i]["headroom_gib"],
        )
        for i in r["ties"]
    ]
    assert keys == sorted(keys)


def test_a_result_stored_before_the_band_reads_back_without_one() -> None:
    from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

    from clusterdesigner.engine.training.training import estimate
    from clusterdesigner.engine.training.training_result import TrainingEstimate

    data = estimate(GPT3_1024_A100, accelerators=ACCELERATORS, fabrics=FABRICS)
    typed = TrainingEstimate.from_json(data)
    assert typed.chosen.error_band is not None and typed.ties == tuple(data["ties"])
    assert typed.to_json() == data
    old = {k: v for k, v in data.items() if k not in ("error_band", "ties")}
    old["candidates"] = [{k: v for k, v in c.items() if k != "error_band"} for c in data["candidates"]]
    assert TrainingEstimate.from_json(old).chosen.error_band is None


def test_the_bench_prints_amd_and_scale_regimes_and_scale_meets_the_target(
    regimes: dict[str, list[Any]],
) -> None:
    # bench/calibration_regimes.py: both CSVs, residuals out of sample. ≥ 1,024 GPUs: 29 rows (Narayanan
    # A100, Megatron-Core H100, NeMo, MLPerf GPT-3 on 4,096-11,616 H100, Llama 3 405B on 8,192-16,384 H100),
    # 13 check rows at median |error| 5.95 % (target ≤ 12 %). AMD: 11 rows (MI355X llama31_8b, MI325X and
    # MI355X llama2_70b_lora), 5 check rows, out of sample under the CDNA 3/4 FP8 factors fitted on the
    # others; 13 rows and 7 check rows since the two MI300X llama2_70b_lora rows (21 of 80 layers recomputed,
    # training.recompute_num_layers) are predicted: +14.9 % and +10.1 %.
    scale, amd = regimes[">= 1,024 GPUs"], regimes["amd (cdna*)"]
    assert (len(scale), len(amd)) == (29, 13)
    scale_check = statistics.median(abs(e) for r, e in scale if not r.fit)
    assert sum(not r.fit for r, _ in scale) == 13
    # 5.95 % before issue 33's straggler term and bucketed all-reduce (the thousands-of-GPU rows, already
    # under-predicted, lose a little more); 6.46 % before the slowest rank was Blom's expected maximum (with
    # STRAGGLER_CV 0.2 %, MOE_ROUTED_PASSES 26 and the CDNA 3 FP8 factor 0.82 refitted on the fit rows).
    assert scale_check == pytest.approx(0.0660, abs=0.001) and scale_check <= 0.12
    checks = sorted((r.run_id, round(e, 3)) for r, e in amd if not r.fit)
    # Since that refit (the 8-rank straggler 1.0051 -> 1.0029, CDNA 3 FP8 0.83 -> 0.82); before it +15.0,
    # -1.9, -1.1, +10.1, -0.9, +0.8 and -0.7 %. The llama31_8b row -0.9 -> -0.5 % once its FP8 parameter
    # gather moves 1 B a parameter in the DP all-reduce (issue 33 h6; no constant chosen on it).
    assert checks == [
        ("mlperf50_lora70b_amd_mi300x", 0.146),
        ("mlperf50_lora70b_smc_mi325x", -0.022),
        ("mlperf51_llama8b_giga_mi355x", -0.005),
        ("mlperf51_lora70b_amd_mi300x", 0.098),
        ("mlperf51_lora70b_amd_mi355x", -0.007),
        ("mlperf51_lora70b_smc_mi325x", 0.004),
        ("mlperf51_lora70b_smc_mi355x", -0.005),
    ]


def test_amd_has_enough_check_rows_to_judge_and_meets_the_target(regimes: dict[str, list[Any]]) -> None:
    amd = regimes["amd (cdna*)"]
    assert sum(not r.fit for r, _ in amd) >= 3
    assert statistics.median(abs(e) for r, e in amd if not r.fit) <= 0.12
