"""Error bands by regime (issue 19): the generated table matches the calibration, and every estimate
carries its band."""

from __future__ import annotations

import dataclasses
import math
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from calibration_fit import Row, all_rows  # noqa: E402
from calibration_regimes import (  # noqa: E402
    THIN_SOURCES,
    band_of,
    bands_from,
    compute,
    focus_regimes,
    parent_key,
    random_effects,
    render,
)

from clusterdesigner.engine.training import error_band_table, timing  # noqa: E402
from clusterdesigner.engine.training.error_band import band_for, band_keys, regime_key  # noqa: E402


@pytest.fixture(scope="module")
def rows() -> list[Row]:
    """The bench's rows (calibration_fit.all_rows), each keeping its error per value of
    timing.REGIME_EFFICIENCY, the one engine constant the bench moves (calibration_fit.regime_factor):
    compute() and focus_regimes() both predict every check row at the engine's own factors, once here."""

    def kept(row: Row) -> Row:
        errors: dict[tuple[Any, ...], float | None] = {}

        def error() -> float | None:
            key = tuple(sorted(timing.REGIME_EFFICIENCY.items()))
            if key not in errors:
                errors[key] = row.error()
            return errors[key]

        return dataclasses.replace(row, error=error)

    return [kept(row) for row in all_rows()]


@pytest.fixture(scope="module")
def computed(rows: list[Row]) -> dict[str, object]:
    return compute(rows=rows)


@pytest.fixture(scope="module")
def regimes(rows: list[Row]) -> dict[str, list[Any]]:
    """bench/calibration_regimes.py's two thin regimes (out-of-sample residuals of every row: ~10 s), once
    for the module's two tests of them."""
    return focus_regimes(rows=rows)


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


# A regime whose held-out coverage is under 80 % is a strict xfail, read from the generated table (which the
# first test holds to what the bench computes): after ``bench/calibration_regimes.py --write`` a regime that
# reaches 80 % loses the mark and passes, and one that falls under it gains the mark, with no edit here.
# With the random-effects bands (check rows only, each source left out): dense 148/167, MoE 12/12, FP8
# 35/40, Hopper 48/63 (76 %, under target), Blackwell 14/15, AMD 7/7, >= 512 GPUs 19/22, long context 17/20.
# After the NeMo rows' FP8 recipes (h6), h5's alltoall re-sort and the joint refit (h8, MOE_ROUTED_PASSES
# 14 -> 13): dense 147/167, FP8 34/40, AMD 6/7 (86 %), the others unchanged; Hopper stays the one xfail.
# Before them (source-weighted p10/p90 widened by t on the sources): MoE 8/12, FP8 30/40, Blackwell 11/15.
def _regime(name: str) -> Any:
    inside, rows, half = error_band_table.COVERAGE[name]
    if rows and inside / rows < 0.80:
        reason = f"{inside}/{rows} held-out check rows in band (median half-width {100 * half:.1f} %)"
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))
    return name


@pytest.mark.parametrize(
    "regime",
    [
        _regime(name)
        for name in (
            "dense",
            "moe",
            "fp8",
            "hopper",
            "blackwell",
            "amd (cdna)",
            ">= 512 gpus",
            "long context (>= 32k)",
        )
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
    inside, rows, half = coverage[regime]
    assert rows >= 7, regime
    # Not by being useless: no regime's median band is ±100 % or wider.
    assert half < 1.0, (regime, half)
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
    assert coverage["fp4"][:2] == (0, 0) and coverage["fsdp2"][:2] == (0, 0)


def test_a_band_is_the_random_effects_prediction_interval_of_an_unseen_source() -> None:
    # Three sources of two rows each on y = ln(1 + e): A 0.00, 0.02; B 0.04, 0.06; C 0.08, 0.10 (by hand).
    # Within: each source's squares about its mean 2 × 0.01² = 0.0002, pooled over 3 df: σ² = 0.0002; a
    # mean's variance v = σ² / 2 = 0.0001. Balanced, REML has the closed form τ² = var(means) − v: means
    # 0.01, 0.05, 0.09, variance 0.0016 → τ² = 0.0015; μ = 0.05; SE(μ)² = (v + τ²) / 3 = 0.000533.
    # h = t(0.90, 1) · √(0.0015 + 0.0002 + 0.000533) = 3.07768 × 0.047258 = 0.145446.
    items = [("A", 0.0), ("A", 0.02), ("B", 0.04), ("B", 0.06), ("C", 0.08), ("C", 0.10)]
    fit = random_effects(items)
    assert (fit.sources, fit.centre, fit.tau2, fit.sigma2) == pytest.approx((3, 0.05, 0.0015, 0.0002))
    assert fit.se2 == pytest.approx(0.0016 / 3) and fit.half == pytest.approx(0.145446, abs=1e-6)
    # e = expm1(y): expm1(0.05 − 0.145446) = −9.10 %, expm1(0.05) = +5.13 %, expm1(0.195446) = +21.59 %.
    assert band_of(fit, fit.half) == (6, -0.091, 0.0513, 0.2159)
    # Two sources leave t on s − 2 = 0 degrees of freedom: no interval of their own.
    with pytest.raises(ValueError, match="2 sources"):
        random_effects(items[:4])


def test_the_between_source_variance_maximises_the_restricted_likelihood() -> None:
    from scipy import optimize

    # Unbalanced: A has three rows 0.0, 0.1, 0.2 (σ² = 0.01 over 2 df), B, C and D one each.
    items = [("A", 0.0), ("A", 0.1), ("A", 0.2), ("B", 0.3), ("C", -0.1), ("D", 0.05)]
    means, v = [0.1, 0.3, -0.1, 0.05], [0.01 / 3, 0.01, 0.01, 0.01]

    def minus_restricted_log_likelihood(tau2: float) -> float:
        w = [1 / (vi + tau2) for vi in v]
        mu = sum(wi * m for wi, m in zip(w, means, strict=True)) / sum(w)
        return 0.5 * (
            sum(math.log(vi + tau2) for vi in v)
            + math.log(sum(w))
            + sum(wi * (m - mu) ** 2 for wi, m in zip(w, means, strict=True))
        )

    best = optimize.minimize_scalar(
        minus_restricted_log_likelihood, bounds=(0, 1), method="bounded", options={"xatol": 1e-12}
    )
    fit = random_effects(items)
    assert fit.sigma2 == pytest.approx(0.01)
    assert fit.tau2 == pytest.approx(best.x, rel=1e-6) and fit.tau2 == pytest.approx(0.015252, abs=1e-6)


def _row(source: str, family: str, precision: str, moe: bool, e: float) -> tuple[Row, float]:
    row = Row("runs.csv", f"{source}-{e}", source, family, precision, moe, 4096, 64, False, lambda: e)
    return row, e


def test_a_key_with_few_sources_is_never_narrower_than_its_parent() -> None:
    # Hopper BF16 dense, three sources that agree to ±1 %; Hopper FP8 dense, five sources from −20 % to +20 %.
    agree = [_row(s, "hopper", "bf16", False, e) for s, e in (("A", -0.01), ("B", 0.0), ("C", 0.01))] * 2
    spread = [_row(f"S{i}", "hopper", "fp8", False, (i - 2) / 10) for i in range(5)]
    table = bands_from(agree + spread)
    thin, parent = "hopper/bf16/dense/lt32k/lt512", parent_key("hopper/bf16/dense/lt32k/lt512")
    assert parent == "hopper/bf16/dense/lt32k/*" and THIN_SOURCES == 5
    # The thin key keeps its own centre (its rows' mean, 0 on y = ln(1 + e) to 1e-4) but takes the half-width
    # of its nearest written ancestor, the eight sources of hopper/*/dense (all keys between have 3): on y,
    # ln(1 + high) − ln(1 + centre) is the same for both.
    _, low, centre, high = table[thin]
    _, a_low, a_centre, a_high = table["hopper/*/dense/*/*"]
    assert centre == pytest.approx(0.0, abs=1e-4) and a_centre != pytest.approx(centre, abs=1e-3)
    assert math.log1p(high) - math.log1p(centre) == pytest.approx(
        math.log1p(a_high) - math.log1p(a_centre), abs=2e-4
    )
    own = random_effects([(r.source, math.log1p(e)) for r, e in agree])
    assert own.half < 0.05 < math.log1p(a_high) - math.log1p(a_centre)


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
    # Check rows only (issue 33): the 4 Hopper BF16 check rows at ≥ 32K tokens are one source's (fewer than
    # MIN_SOURCES, 3, no interval of their own), so the regime takes the 40 Hopper BF16 check rows' band;
    # under 32K at ≥ 512 GPUs there are 6 of their own, from 3 sources.
    band = band_for("hopper/bf16/dense/ge32k/ge512")
    assert band.basis == "hopper/bf16/dense/*/*" and band.rows == 40
    assert band_for("hopper/bf16/dense/lt32k/ge512").rows == 6
    # MoE on Blackwell in FP8 since engine version 23's joint refit (FlashAttention-2 at its published
    # rates; Blackwell kernel 1.6 -> 1.8, Blackwell FP8 0.68 -> 0.67, MOE_ROUTED_PASSES 16 -> 14): centre
    # ln(1 − 0.0325) = −0.0330, h = 0.421: −36.5 … +47.4 %.
    # Since the FP8 recipes quantize every routed copy of the experts' inputs (timing._moe_expert_input_casts,
    # issue 33 c2; MOE_ROUTED_PASSES not refitted) until then: centre ln(1 − 0.0767) = −0.0798, h = 0.461:
    # −41.8 … +46.5 %.
    # Since the joint refit after the DeepSeek-V3 rows' gated MLP (Blackwell kernel 1.7 -> 1.6, Blackwell FP8
    # 0.67 -> 0.68) until then: centre ln(1 − 0.0582) = −0.0600, h = 0.490: −42.3 … +53.8 %.
    # With the gated MLP before that refit: centre ln(1 − 0.0343) = −0.0349, h = 0.453: −38.6 … +51.9 %
    # (the frontier harness had timed the DeepSeek-V3 rows ungated, at 451 B parameters). Since the joint
    # refit after the merge (Blackwell kernel 1.9 -> 1.7, MOE_ROUTED_PASSES 13 -> 16) until then: centre
    # ln(1 − 0.0328) = −0.0333, h = 0.463, its own (above blackwell/*/moe's 0.404): −39.1 … +53.7 %.
    # Before it, as follows.
    # MoE on Blackwell in FP8: its own regime's 3 check rows are one source's; blackwell/fp8/moe has 6 from
    # 4 sources (NeMo 25.02, 25.04, 25.09, ModelZoo). On ln(1 + e): μ = +0.0040, τ = 0.199, σ = 0.077,
    # SE(μ) = 0.105; h = t(0.90, 2) · √(τ² + σ² + SE²) = 1.8856 × 0.2379 = 0.449. Four sources are fewer than
    # THIN_SOURCES, so h is the larger of its own and its parent's (blackwell/*/moe, 7 rows, 4 sources,
    # h 0.401): 0.449. e = expm1(0.0040 ∓ 0.449): −35.9 … +57.2 %, centre +0.4 %. (Before the NeMo rows ran
    # their FP8 recipes (h6), h5's alltoall re-sort and the joint refit (h8, MOE_ROUTED_PASSES 14 -> 13):
    # μ = −0.0359, τ = 0.287, σ = 0.092, SE 0.149, h 0.634: −48.8 … +81.9 %, centre −3.5 %; the NeMo
    # sources' offsets drew closer. Source-weighted p10/p90 widened by t before that: −43.4 … +54.3 %.)
    moe = band_for("blackwell/fp8/moe/lt32k/lt512")
    assert moe.basis == "blackwell/fp8/moe/*/*" and moe.rows == 6
    assert (moe.p10, moe.median, moe.p90) == pytest.approx((-0.3651, -0.0325, 0.4742), abs=1e-4)
    # BF16 MoE: the 5 check rows are one source's, so every family's MoE rows (12 from 4 sources) stand in.
    assert band_for("unknown/bf16/moe/lt32k/lt512").basis == "*/*/moe/*/*"
    # AMD: 7 check rows over CDNA 3 (4) and CDNA 4 (3), fewer than 5 each: no CDNA key, so a CDNA estimate
    # takes every family's rows at its precision (its basis says which). FP8 dense: 37 check rows since NeMo's
    # B200 long-sequence rows are predicted (frontier_cases.run_gpus), 33 before.
    cdna3_bf16 = band_for("cdna3/bf16/dense/lt32k/lt512")
    assert (cdna3_bf16.basis, cdna3_bf16.rows) == ("*/bf16/dense/*/*", 134)
    cdna4 = band_for("cdna4/fp8/dense/lt32k/lt512")
    assert (cdna4.basis, cdna4.rows) == ("*/fp8/dense/*/*", 37)


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
    # 1,024 A100 BF16 dense, 2K tokens: the 9 A100 check rows at ≥ 512 GPUs are all Narayanan 2021's, one
    # source (no interval of its own), so the band is that of the 85 A100 BF16 check rows under 32K tokens
    # (3 sources: −23.9 … +33.8 %).
    n, p10, _, p90 = error_band_table.BANDS["ampere/bf16/dense/lt32k/*"]
    for row in (r, *r["candidates"]):
        band = row["error_band"]
        assert (band["regime"], band["basis"], band["rows"]) == (
            "ampere/bf16/dense/lt32k/ge512",
            "ampere/bf16/dense/lt32k/*",
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
    assert evaluated["error_band"]["basis"] == "ampere/bf16/dense/lt32k/*"


def test_search_reports_the_candidates_within_the_band_as_ties_most_robust_first() -> None:
    from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

    from clusterdesigner.engine.training.training import estimate, exotic_features
    from clusterdesigner.engine.training.training_result import Layout

    r = estimate(GPT3_1024_A100, accelerators=ACCELERATORS, fabrics=FABRICS)
    low = r["error_band"]["tokens_per_second_low"]
    within = {i for i, c in enumerate(r["candidates"]) if c["tokens_per_second"] >= low}
    assert set(r["ties"]) == within and 0 in within
    # The top ten sit within 1 % of each other, far inside a band 33.8 % below the estimate: all tie.
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
    # STRAGGLER_CV 0.2 %, MOE_ROUTED_PASSES 26 and the CDNA 3 FP8 factor 0.82 refitted on the fit rows);
    # 6.60 % before the Llama 3 405B rows' flash2 kernel on H100 ran at its A100 rate x FA2's measured H100
    # speedup (timing.AMPERE_KERNEL_SPEEDUP); 6.19 % before engine version 23 (FlashAttention-2 at its
    # published rates, the joint refit with STRAGGLER_CV 0.2 -> 0.4 %).
    assert scale_check == pytest.approx(0.0464, abs=0.001) and scale_check <= 0.12
    checks = [e for r, e in amd if not r.fit]
    # Until the joint refit after the merge this listed each AMD check row's error; issue 33's calibration
    # rule reads check rows only in aggregate, so their count and median: 7 rows, median |error| 0.73 % and
    # signed -0.46 % before it; 0.90 % and -0.07 % since (the default family factor, which the FP8 runs' BF16
    # work takes on CDNA, 0.825 -> 0.855 after Hopper's 0.75 -> 0.81; CDNA 3 / 4 FP8 refitted 0.79 / 1.03);
    # 0.80 % and -0.46 % since engine version 23's joint refit (default 0.835, CDNA 3 / 4 FP8 0.82 / 1.07).
    assert len(checks) == 7
    assert statistics.median(abs(e) for e in checks) == pytest.approx(0.0080, abs=0.0005)
    assert statistics.median(checks) == pytest.approx(-0.0046, abs=0.0005)


def test_amd_has_enough_check_rows_to_judge_and_meets_the_target(regimes: dict[str, list[Any]]) -> None:
    amd = regimes["amd (cdna*)"]
    assert sum(not r.fit for r, _ in amd) >= 3
    assert statistics.median(abs(e) for r, e in amd if not r.fit) <= 0.12
