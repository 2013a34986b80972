"""Error bands by regime (issue 19): the generated table matches the calibration, and every estimate
carries its band."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from calibration_regimes import compute, focus_regimes, render  # noqa: E402

from clusterdesigner.engine import error_band_table  # noqa: E402
from clusterdesigner.engine.error_band import band_for, band_keys, regime_key  # noqa: E402


@pytest.fixture(scope="module")
def computed() -> dict[str, object]:
    return compute()


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


@pytest.mark.parametrize(
    "key",
    [
        "*/*/*/*/*",
        "ampere/bf16/dense/lt32k/lt1024",
        "hopper/bf16/dense/lt32k/lt1024",
        # MoE: 17 of 25 held-out residuals (68 %) fell inside the band of the other folds after the routed
        # passes (timing.MOE_ROUTED_PASSES) narrowed the MoE residuals to a few far rows; 72 % (18 of 25)
        # since Hopper's fused attention (training.attention_kernel) spread the Qwen3 H100 rows.
        "*/*/moe/*/*",
    ],
)
def test_out_of_fold_bands_hold_about_eighty_percent_of_held_out_rows(
    computed: dict[str, object], key: str
) -> None:
    checks = computed["checks"]
    assert isinstance(checks, dict)
    # The regimes with many rows: ~80 % of held-out residuals inside the band fitted on the other folds.
    assert 0.70 <= checks[key]["coverage"] <= 0.90, key


def test_a_regime_without_rows_falls_back_and_says_so() -> None:
    assert regime_key("hopper", "bf16", False, 2048, 4096) == "hopper/bf16/dense/lt32k/ge1024"
    assert regime_key("hopper", "fp8", True, 256, 131072) == "hopper/fp8/moe/ge32k/lt1024"
    assert band_keys("hopper/bf16/dense/lt32k/ge1024")[1:] == (
        "hopper/bf16/dense/lt32k/*",
        "hopper/bf16/dense/*/*",
        "hopper/*/dense/*/*",
        "*/bf16/dense/*/*",
        "*/*/dense/*/*",
        "*/*/*/*/*",
    )
    # 1 Hopper BF16 row at ≥ 32K tokens and ≥ 1,024 GPUs (Llama 3 405B at 128K, < 5): the band of the 9
    # Hopper BF16 rows at ≥ 32K tokens. Under 32K, ≥ 1,024 GPUs has its own 6 rows since the Llama 3 Table 4
    # rows joined the 4 Narayanan/Megatron-Core ones (4 before: it fell back to the 71 Hopper BF16 rows).
    band = band_for("hopper/bf16/dense/ge32k/ge1024")
    assert band.basis == "hopper/bf16/dense/ge32k/*" and band.rows == 9
    assert band_for("hopper/bf16/dense/lt32k/ge1024").rows == 6
    # MoE on Blackwell in FP8 has its own rows now (runs_frontier.csv: 8 NeMo/ModelZoo rows under 32K).
    moe = band_for("blackwell/fp8/moe/lt32k/lt1024")
    assert moe.basis == "blackwell/fp8/moe/lt32k/lt1024" and moe.rows == 9
    # Its band, −3.4 … +21.4 % (0.248 wide; with the Blackwell FP8 refit 0.74), was wider than 0.4
    # before the routed passes (timing.MOE_ROUTED_PASSES) moved the NeMo 25.09 rows from +34 … +73 % toward 0.
    all_rows = band_for("unknown/bf16/moe/lt32k/lt1024")
    # −3.6 … +22.5 % since Blackwell times its fused attention (its FP8 factor refits 0.74 → 0.69, the routed
    # passes 21 → 26).
    assert (moe.p10, moe.p90) == pytest.approx((-0.0361, 0.225), abs=1e-4)
    assert all_rows.basis == "*/bf16/moe/*/*"
    # AMD CDNA 3 BF16: no measured row. The family's rows are 5 MI325X FP8 LoRA rows (MLPerf llama2_70b_lora,
    # about ±2 %), too narrow for a BF16 estimate on the mean factor: a family key whose rows share one
    # precision is not written (bench/calibration_regimes.py), so it falls back to every family's BF16 rows.
    cdna3_bf16 = band_for("cdna3/bf16/dense/lt32k/lt1024")
    assert (cdna3_bf16.basis, cdna3_bf16.rows) == ("*/bf16/dense/*/*", 269)
    assert cdna3_bf16.p90 - cdna3_bf16.p10 > 0.2
    # CDNA 4 FP8: 6 MLPerf MI355X rows (2 llama31_8b, 4 llama2_70b_lora), its own band.
    cdna4 = band_for("cdna4/fp8/dense/lt32k/lt1024")
    assert (cdna4.basis, cdna4.rows) == ("cdna4/fp8/dense/lt32k/lt1024", 6)


def test_a_band_divides_the_prediction_by_one_plus_the_residual_percentiles() -> None:
    band = band_for("ampere/bf16/dense/lt32k/lt1024")
    n, p10, _, p90 = error_band_table.BANDS["ampere/bf16/dense/lt32k/lt1024"]
    assert band.rows == n
    assert band.low(1000.0) == pytest.approx(1000.0 / (1 + p90))
    assert band.high(1000.0) == pytest.approx(1000.0 / (1 + p10))
    assert band.low(1000.0) < 1000.0 < band.high(1000.0)


def test_every_training_result_carries_its_band_in_tokens_and_days() -> None:
    from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

    from clusterdesigner.engine.training import estimate

    r = estimate(GPT3_1024_A100, accelerators=ACCELERATORS, fabrics=FABRICS)
    # 1,024 A100 BF16 dense, 2K tokens: the 11 Narayanan 2021 rows at ≥ 1,024 GPUs, p10 −8.3 %, p90 +16.4 %.
    n, p10, _, p90 = error_band_table.BANDS["ampere/bf16/dense/lt32k/ge1024"]
    for row in (r, *r["candidates"]):
        band = row["error_band"]
        assert (band["regime"], band["basis"], band["rows"]) == (
            "ampere/bf16/dense/lt32k/ge1024",
            "ampere/bf16/dense/lt32k/ge1024",
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
    assert evaluated["error_band"]["basis"] == "ampere/bf16/dense/lt32k/ge1024"


def test_search_reports_the_candidates_within_the_band_as_ties_most_robust_first() -> None:
    from specs import ACCELERATORS, FABRICS, GPT3_1024_A100

    from clusterdesigner.engine.training import estimate, exotic_features
    from clusterdesigner.engine.training_result import Layout

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

    from clusterdesigner.engine.training import estimate
    from clusterdesigner.engine.training_result import TrainingEstimate

    data = estimate(GPT3_1024_A100, accelerators=ACCELERATORS, fabrics=FABRICS)
    typed = TrainingEstimate.from_json(data)
    assert typed.chosen.error_band is not None and typed.ties == tuple(data["ties"])
    assert typed.to_json() == data
    old = {k: v for k, v in data.items() if k not in ("error_band", "ties")}
    old["candidates"] = [{k: v for k, v in c.items() if k != "error_band"} for c in data["candidates"]]
    assert TrainingEstimate.from_json(old).chosen.error_band is None


def test_the_bench_prints_amd_and_scale_regimes_and_scale_meets_the_target() -> None:
    # bench/calibration_regimes.py: both CSVs, residuals out of sample. ≥ 1,024 GPUs: 29 rows (Narayanan
    # A100, Megatron-Core H100, NeMo, MLPerf GPT-3 on 4,096-11,616 H100, Llama 3 405B on 8,192-16,384 H100),
    # 13 check rows at median |error| 5.95 % (target ≤ 12 %). AMD: 11 rows (MI355X llama31_8b, MI325X and
    # MI355X llama2_70b_lora), 5 check rows, out of sample under the CDNA 3/4 FP8 factors fitted on the
    # others; 13 rows and 7 check rows since the two MI300X llama2_70b_lora rows (21 of 80 layers recomputed,
    # training.recompute_num_layers) are predicted: +14.9 % and +10.1 %.
    regimes = focus_regimes()
    scale, amd = regimes[">= 1,024 GPUs"], regimes["amd (cdna*)"]
    assert (len(scale), len(amd)) == (29, 13)
    scale_check = statistics.median(abs(e) for r, e in scale if not r.fit)
    assert sum(not r.fit for r, _ in scale) == 13
    # 5.95 % before issue 33's straggler term and bucketed all-reduce (the thousands-of-GPU rows, already
    # under-predicted, lose a little more).
    assert scale_check == pytest.approx(0.0646, abs=0.001) and scale_check <= 0.12
    checks = sorted((r.run_id, round(e, 3)) for r, e in amd if not r.fit)
    assert checks == [
        ("mlperf50_lora70b_amd_mi300x", 0.150),
        ("mlperf50_lora70b_smc_mi325x", -0.019),
        ("mlperf51_llama8b_giga_mi355x", -0.011),
        ("mlperf51_lora70b_amd_mi300x", 0.101),
        ("mlperf51_lora70b_amd_mi355x", -0.009),
        ("mlperf51_lora70b_smc_mi325x", 0.008),
        ("mlperf51_lora70b_smc_mi355x", -0.007),
    ]


def test_amd_has_enough_check_rows_to_judge_and_meets_the_target() -> None:
    amd = focus_regimes()["amd (cdna*)"]
    assert sum(not r.fit for r, _ in amd) >= 3
    assert statistics.median(abs(e) for r, e in amd if not r.fit) <= 0.12
