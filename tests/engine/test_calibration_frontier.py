"""The frontier rows (tests/engine/data/runs_frontier.csv) and the baseline bench built on them.

These are measured runs outside the calibration set. Issue 19's accuracy targets are not met yet, so nothing
here asserts an error bound: the tests hold the data to its standards (a citation, a regime that matches the
row, a measured figure) and the error computation to a hand calculation. The table:
``.venv/bin/python bench/calibration_frontier.py``.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import calibration_cases
import frontier_cases
import pytest
from calibration_cases import RUNS_CSV
from frontier_cases import REGIMES, FrontierCase, load_rows, predict, summary

from clusterdesigner.engine.training.training import estimate

ROOT = frontier_cases.ROOT


@pytest.fixture(scope="module")
def rows() -> list[dict[str, str]]:
    return load_rows()


# Each estimates every row once for the whole module (a few seconds each; the tests only read them).
@pytest.fixture(scope="module")
def cases() -> list[FrontierCase]:
    return frontier_cases.all_cases()


@pytest.fixture(scope="module")
def runs() -> list[calibration_cases.Case]:
    return calibration_cases.all_cases()


def _row(rows: list[dict[str, str]], run_id: str) -> dict[str, str]:
    return next(r for r in rows if r["run_id"] == run_id)


def test_frontier_csv_has_the_calibration_columns_then_its_own(rows: list[dict[str, str]]) -> None:
    base = RUNS_CSV.read_text().splitlines()[0].split(",")
    columns = list(rows[0])
    assert columns[: len(base)] == base
    assert columns[len(base)] == "regime"


def test_every_row_has_a_citation_a_verification_a_regime_and_a_measured_figure(
    rows: list[dict[str, str]],
) -> None:
    assert len(rows) == 92
    assert len({r["run_id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["citation"].strip() and r["source_id"].strip(), r["run_id"]
        assert r["verification"].split(":")[0] in ("primary", "secondary"), r["run_id"]
        regimes = r["regime"].split(";")
        assert regimes and set(regimes) <= set(REGIMES), r["run_id"]
        measured = r["tokens_per_s_per_gpu"] or r["measured_tflops_per_gpu"]
        assert float(measured) > 0, r["run_id"]


def test_regime_tags_follow_from_the_row_itself(rows: list[dict[str, str]]) -> None:
    for r in rows:
        tags = set(r["regime"].split(";"))
        assert ("moe" in tags) == bool(r["experts"]), r["run_id"]
        assert ("fp8" in tags) == ("fp8" in r["precision"]), r["run_id"]
        assert ("blackwell" in tags) == r["gpu_type"].startswith(("B200", "GB200")), r["run_id"]
        assert ("long_context" in tags) == (int(r["seq_len"]) >= 32768), r["run_id"]
        assert ("scale_1024" in tags) == (int(r["num_gpus"]) >= 1024), r["run_id"]
        assert ("amd" in tags) == r["gpu_type"].startswith("MI"), r["run_id"]


def test_secondary_rows_say_so_and_recalled_shapes_say_check(rows: list[dict[str, str]]) -> None:
    for r in rows:
        if r["source_id"] in ("nemo_perf_2504", "nemo_perf_2502"):
            assert r["verification"].startswith("secondary"), r["run_id"]
        if any(m in r["model_name"] for m in ("Nemotron", "8x22B")):
            assert "recalled, check" in r["verification"], r["run_id"]


def _stub_estimate(result: dict[str, Any]) -> Any:
    def fake(request: Any, **_: Any) -> dict[str, Any]:
        return result

    return fake


def test_tokens_error_is_the_hand_computed_one(rows: list[dict[str, str]], monkeypatch: Any) -> None:
    # nemo2502_b200_2: Llama 3 8B on 8 × B200, NeMo 25.02, measured 26,006 tokens/s/GPU.
    # Hand calculation: an engine answer of 218,248 tokens/s for the cluster is
    # 218,248 / 8 GPUs = 27,281.0 tokens/s/GPU; error = 27,281.0 / 26,006 − 1 = +0.04903 (+4.90 %).
    row = _row(rows, "nemo2502_b200_2")
    monkeypatch.setattr(
        frontier_cases,
        "estimate",
        _stub_estimate(
            {"tokens_per_second": 218_248.0, "model_tflops_per_gpu": 1580.0, "mfu": 0.35, "fits": True}
        ),
    )
    case = predict(row, {"accelerators": {}, "fabrics": {}})
    assert case.metric == "tokens/s/GPU"
    assert case.measured == 26006.0
    assert case.predicted == pytest.approx(27281.0)
    assert case.error == pytest.approx(0.04903, abs=5e-5)


def test_tflops_error_is_used_where_only_tflops_were_published(
    rows: list[dict[str, str]], monkeypatch: Any
) -> None:
    # nemo_lc_h100_1: Llama 2 7B, 4K tokens, 4 × H100, measured 768 TFLOP/s/GPU, no tokens/s published.
    # Hand calculation: a predicted 681.7 model TFLOP/s/GPU gives 681.7 / 768 − 1 = −0.11237 (−11.24 %).
    row = _row(rows, "nemo_lc_h100_1")
    monkeypatch.setattr(
        frontier_cases,
        "estimate",
        _stub_estimate({"tokens_per_second": 1.0, "model_tflops_per_gpu": 681.7, "mfu": 0.34, "fits": True}),
    )
    case = predict(row, {"accelerators": {}, "fabrics": {}})
    assert case.metric == "model TFLOP/s/GPU"
    assert case.error == pytest.approx(-0.11237, abs=5e-5)


def test_a_causal_basis_row_is_compared_on_the_causal_flop_count(
    rows: list[dict[str, str]], monkeypatch: Any
) -> None:
    # moezoo_qwen3_h100_1: Qwen3 235B-A22B on 256 H100, measured 245 TFLOP/s/GPU in Megatron-LM's count,
    # which halves the s² attention core (num_floating_point_operations since 8873b55d6a). The ModelZoo's
    # own table says so: 2,048 × 4,096 tokens / 19.7 s / 256 GPUs = 1,663.4 tokens/s/GPU, and 245e12 /
    # 1,663.4 = 1.473e11 FLOPs per token, the causal count of the row's shape (1.4833e11: 1.6728e11 − half of
    # 3 × 4 × 4,096 × 64 × 128 × 94) and not the full one (1.6728e11).
    row = _row(rows, "moezoo_qwen3_h100_1")
    assert "causal half" in row["tflops_basis"]
    assert 245e12 / (2048 * 4096 / 19.7 / 256) == pytest.approx(1.4833e11, rel=0.01)
    # Hand calculation: an engine answer of 425,728 tokens/s on 256 GPUs is 1,663.0 tokens/s/GPU, × 1.4833e11
    # = 246.67 TFLOP/s/GPU; error = 246.67 / 245 − 1 = +0.0068 (the full count would say 278.2, +13.5 %).
    monkeypatch.setattr(
        frontier_cases,
        "estimate",
        _stub_estimate(
            {"tokens_per_second": 425_728.0, "model_tflops_per_gpu": 278.2, "mfu": 0.3, "fits": True}
        ),
    )
    case = predict(row, {"accelerators": {}, "fabrics": {}})
    assert case.metric == "model TFLOP/s/GPU"
    assert case.predicted == pytest.approx(246.67, rel=1e-3)
    assert case.error == pytest.approx(0.0068, abs=5e-4)


def test_rows_the_engine_cannot_express_are_listed_with_the_reason(rows: list[dict[str, str]]) -> None:
    reasons = {r["run_id"]: frontier_cases.not_expressible(r) for r in rows}
    # MLA, MTP, head_dim and pipeline layouts are inputs now (issue 19 item 3): DeepSeek-V3 and Qwen3 rows
    # are expressible.
    assert reasons["nemo2509_h100_15"] == ""  # DeepSeek-V3
    assert reasons["nemo2509_gb200_5"] == ""  # Qwen3 30B-A3B, head_dim 128 ≠ hidden/heads 64
    assert reasons["moezoo_qwen3_gb200_3"] == ""  # Qwen3 235B-A22B
    # NeMo's B200 long-sequence table prints layouts that cover a quarter of its GPU column: the run is taken
    # on the layout's GPUs (frontier_cases.run_gpus), which alone fits the batch column.
    assert reasons["nemo_lc_b200_1"] == ""
    assert reasons["nemo2502_b200_2"] == ""


def test_a_published_layout_that_covers_fewer_gpus_than_its_gpu_column_is_the_run(
    rows: list[dict[str, str]],
) -> None:
    # NeMo B200 long-sequence table, 1,024K tokens: "# of GPUs" 1,024, batch 4, TP 4 PP 1 DP 4 CP 16. The
    # GPU column would make DP = 1,024 / (4 · 16) = 16 replicas for 4 sequences; the layout is
    # 4 · 1 · 4 · 16 = 256 GPUs, DP 4 = the batch of 4 at micro-batch 1. 8K: TP 1 PP 1 DP 2 CP 1 -> 2 GPUs.
    by_id = {r["run_id"]: r for r in rows}
    assert frontier_cases.run_gpus(by_id["nemo_lc_b200_8"]) == 256
    assert frontier_cases.run_gpus(by_id["nemo_lc_b200_1"]) == 2
    # A row whose layout covers its GPU column keeps it: NeMo H100 long-sequence 1,024K, 8 · 1 · 4 · 32.
    assert frontier_cases.run_gpus(by_id["nemo_lc_h100_9"]) == 1024
    request = frontier_cases.request_for(by_id["nemo_lc_b200_8"])
    assert request["cluster"]["nodes"] * request["cluster"]["gpus_per_node"] == 256


def test_every_row_is_compared_or_listed_never_dropped(cases: list[FrontierCase]) -> None:
    s = summary(cases)
    assert s["rows"] == 92
    assert s["compared"] + len(s["skipped"]) == s["rows"]
    assert all(why for _, why in s["skipped"])
    for regime in ("moe", "fp8", "blackwell", "long_context", "scale_1024", "amd"):
        assert s["by_regime"][regime]["n"] > 0, regime
    assert isinstance(cases[0], FrontierCase)


def test_bench_prints_the_table_and_the_per_regime_summary(
    cases: list[FrontierCase], runs: list[calibration_cases.Case], capsys: pytest.CaptureFixture[str]
) -> None:
    # The bench's own main with no arguments, in this process on the module's estimates (a subprocess
    # estimated every row of both CSVs again: ~2 s).
    sys.path.insert(0, str(ROOT / "bench"))
    from calibration_frontier import main

    main([], cases=cases, runs=runs)
    out = capsys.readouterr().out
    assert "nemo2502_b200_2" in out
    assert "nemo_lc_b200_1" in out
    assert "nemo2509_h100_15   DeepSeek-V3" in out  # predicted, in the table
    for label in ("overall", *REGIMES):
        assert f"  {label} " in out
    assert "MFU basis" in out


def test_deepseek_v3_rows_go_to_the_engine_with_mla_mtp_and_their_pipeline_layout(
    rows: list[dict[str, str]],
) -> None:
    request = frontier_cases.request_for(_row(rows, "nemo2509_gb200_4"))
    model = request["model"]
    assert (model["q_lora_rank"], model["kv_lora_rank"], model["v_head_dim"], model["mtp_depth"]) == (
        1536,
        512,
        128,
        1,
    )
    assert "head_dim" not in model  # a head's width under MLA is qk_nope + qk_rope
    # PP 4 × VP 4 = 16 virtual stages for 61 layers: Megatron-Bridge's layout_map[(4, 4)].
    assert request["training"]["pipeline_layout"] == "Etttt|(tttt|)*14,tmL"
    case = predict(_row(rows, "nemo2509_gb200_4"), frontier_cases.catalog_specs())
    assert case.skip == "" and case.predicted is not None and case.metric == "tokens/s/GPU"


# ---- issue 19 item 7 targets on the check rows (calibration_cases.fit_run_ids; factors fit on fit rows) ----
# Figures printed by bench/calibration_frontier.py ("by regime, split"). Each figure is pinned; a met target
# is asserted, an unmet one is an xfail(strict) naming the figure, so the day it is met the test says so.

# Check-row median |error| per regime. MoE: the all-to-all and expert-gather timing (issue 19 items 1-2),
# not a factor. FP8: its dense rows under 32K meet the target (test_calibration_fit.py); MoE and long-context
# FP8 rows do not. Long context: NeMo's H100 FP8 rows at 32K-1M tokens are under-predicted by 20-32 %
# while llm-foundry's H100 BF16 rows at 32K-64K are over-predicted by ~17 %: one factor cannot serve both,
# so none is fitted. Blackwell: 10.3 % before the Blackwell FP8 factor on its dense rows, 11.3 % after; 14.3 %
# since expert tensor parallelism (training.etp) made the GB200 Qwen3 235B rows of NeMo 25.09 (tp2 ep64,
# +52 %) and the ModelZoo (128K, −16 %) expressible: more rows compared, not a change to the others. FP8 and
# overall were 14.4 % and 15.4 % before the MLPerf and Llama 3 rows were appended (15 rows, most of them dense
# FP8 and predicted within 10 %: 10.4 % and 11.2 %), then rose with the Qwen3 etp rows to 12.7 % and 12.7 %;
# overall fell back to 11.2 % when the Qwen3 long-context rows got their recipe's --recompute-modules
# layernorm moe (the CSV's recompute_modules: −15…−22 % with etp alone, now −8…+4 %).
# >= 1,024 GPUs: 6 check rows (MLPerf GPT-3 on 6,144-11,616 H100, Llama 3 405B on 16,384), 1 before.
# MoE rows now carry their recipes' dispatcher and overlaps (the CSV's moe_dispatcher, moe_a2a_overlap,
# moe_shared_expert_overlap) and the engine times the memory-bound passes over the routed token copies
# (timing.MOE_ROUTED_PASSES, fitted on the 13 MoE fit rows): check medians MoE 21.1 → 13.5 %, FP8 12.7 → 9.7 %
# (met), Blackwell 14.3 → 11.2 % (met), overall 11.2 → 10.1 %; long context 20.7 → 24.9 % (its MoE rows,
# already under-predicted at 32K-128K, take the per-token term too).
# The 14 MLPerf llama2_70b_lora rows (12 predicted, all dense FP8 at 8K on 8 GPUs) and the Hopper/Blackwell
# FP8 refit they moved (0.95 -> 0.96, 0.72 -> 0.74): FP8 9.7 -> 7.8 %, overall 10.1 -> 9.0 %, MoE 13.5 %,
# Blackwell 11.2 -> 12.7 % (unmet again), long context 24.9 -> 24.5 %, >= 1,024 GPUs 3.5 -> 4.0 % (the GPT-3
# FP8 rows under the Hopper FP8 refit); AMD 5 check rows, 0.7 % (CDNA3/CDNA4 FP8 factors fitted on the rest).
# The 2 MI300X llama2_70b_lora rows (check rows: 2nd and 12th of their sources), predicted since
# training.recompute_num_layers (21 of 80 layers), come out +14.9 % (v5.0) and +10.1 % (v5.1) with the CDNA3
# FP8 factor fitted on the MI325X rows: FP8 7.8 -> 9.0 %, overall 9.0 -> 10.1 %, AMD 5 -> 7 check rows,
# 0.7 -> 0.8 %; the other regimes keep their figures.
# Flash attention on Hopper by kernel (training.attention_kernel; timing.FUSED_ATTENTION_SPEEDUP 1.5, the low
# end of FlashAttention-3's published 1.5-2.0x over FA2, not fitted): Megatron-Core/NeMo rows run Transformer
# Engine's fused attention, llm-foundry's rows FlashAttention-2 (unchanged). NeMo's H100 FP8 long-sequence
# rows -16.5…-32.0 % -> -1.5…+11.4 % (+0.3 % at 1M); ModelZoo Qwen3 H100 32K-128K -11 % -> +10…+24 %;
# Llama 3 405B 128K -1.6 -> +24.7 %; with the Hopper FP8 factor refitted on its fit rows (0.96 -> 0.86)
# NeMo's long-sequence rows are -1.6…+8.7 %. Check medians: long context 24.5 -> 17.0 % (unmet), overall
# 10.1 -> 7.8 %, FP8 9.0 -> 4.0 %, MoE 13.5 -> 15.6 %, >= 1,024 GPUs 4.0 -> 3.5 %, Blackwell 12.7 % unchanged.
# The kernel is the framework profile's (Megatron-Core: fused; the llm-foundry rows and Meta's Llama 3 405B
# rows, frontier_cases.FLASH2_SOURCES, flash2: Llama 3 405B 128K stays -1.6 %), and Blackwell's fused kernel
# runs 1.7x FA2's rates (fitted on the 16 Blackwell fit rows with the Blackwell FP8 factor, refitted 0.74 ->
# 0.69, and timing.MOE_ROUTED_PASSES, refitted 21 -> 26 on the 13 MoE fit rows, to a fixed point): Mixtral
# 8x22B 64K B200/GB200 -24.7/-24.5 % -> -7.8/-3.9 %, Llama 3 8B 8K B200/GB200 -13…-18 % -> -7…+13 %,
# ModelZoo Qwen3 235B 128K GB200 -19.5 % -> +24.1 % (ModelZoo TFLOP/s likely count the causal half of the
# core attention: Megatron-LM num_floating_point_operations since 8873b55d6a, 2025-03-06; not converted
# here). Check medians: long context 17.0 -> 7.8 % (met), Blackwell 12.7 -> 10.5 % (met), MoE 15.6 -> 11.2 %
# (met), overall 7.8 -> 7.0 %, FP8 4.0 -> 5.2 %, >= 1,024 GPUs 3.5 %.
# Issue 33: the dispatchers as Megatron-Core counts them (DeepEP/HybridEP one NVLink copy per destination GPU,
# the ModelZoo GB200 rows' hybridep), grouped GEMMs' half-empty last tile, routing per row (moe_load_balance),
# MOE_ROUTED_PASSES refitted 26 -> 25; the straggler term (STRAGGLER_CV 0.25 %, fitted) and the bucketed NCCL
# all-reduce of the gradients; regime factors refitted. Check medians: MoE 11.2 -> 10.5 %, FP8 5.2 -> 5.0 %,
# long context 7.8 -> 7.7 %, overall 7.0 -> 6.3 %, Blackwell 10.5 %, >= 1,024 GPUs 3.5 -> 2.9 %.
# Issue 33, the expected slowest of N ranks as Blom's approximation of the normal order statistic instead of
# the Gumbel limit √(2 ln N), with STRAGGLER_CV (0.25 -> 0.2 %), MOE_ROUTED_PASSES (25 -> 26) and the CDNA 3
# FP8 factor (0.83 -> 0.82) refitted on the fit rows: MoE 10.5 -> 9.6 %, FP8 5.0 -> 4.9 %, long context
# 7.7 -> 8.0 %, overall 6.3 -> 6.6 %, Blackwell 10.5 -> 9.5 %, >= 1,024 GPUs 2.9 -> 2.6 %.
# Issue 33, the ModelZoo rows compared in Megatron-LM's causal count (their TFLOP/s halve the attention core,
# frontier_cases.CAUSAL_BASIS; the ModelZoo's own step times confirm it): the engine is 12-35 % slow on them
# (Qwen3 235B long context -26 … -33 % with no trend in the sequence length; +2 … +24 % rising with it under
# the full count). MoE 9.6 -> 15.8 %, overall 6.6 -> 7.3 %, Blackwell 9.5 -> 9.7 %, long context 8.0 %.
# Issue 33, the ModelZoo's stack (Transformer Engine 2.9, cuDNN 9.14: frontier_cases.FLASH3_SOURCES) timed at
# cuDNN's measured H100 rates on the causal count (timing.KERNEL_RATES_TFLOPS, training.attention_kernel
# flash3; not fitted): Qwen3 235B H100 16K-128K -25.6/-29.4/-31.9/-32.8 % -> -17.0/-15.2/-11.9/-7.1 %, the
# 4K H100 rows -17.7/-12.2/-35.4/-0.1/+28.5 -> -15.1/-8.9/-33.1/+2.2/+32.8 %; GB200 unchanged (no backward
# figure for Blackwell). MoE 15.8 -> 10.8 %, overall 7.3 %, Blackwell 9.7 %, long context 8.0 %.
# The DeepSeek-V3 and ModelZoo H100 rows' selective recompute (their recipes' recompute_modules) with
# MOE_ROUTED_PASSES refitted 26 -> 25 on the fit rows: MoE 9.6 -> 9.7 %, FP8 4.9 -> 4.6 %, Blackwell
# 9.5 -> 8.7 %.
# The DeepSeek-V3 GB200/B200 rows' recompute as the configuration the 25.09 summary's layouts name (#832:
# mla_up_proj only) and the ModelZoo GB200 128K row's moe_act, layernorm from its command: MoE 9.7 -> 10.1 %,
# Blackwell 8.7 -> 9.4 % (no constant moves: MOE_ROUTED_PASSES 25 stays the fit rows' best, 7.36 %).
# Joint refit on the fit rows after the merge of both (ModelZoo causal count, flash3, recipes corrected):
# MOE_ROUTED_PASSES 25 -> 11 (MoE fit rows 14.6 -> 5.6 %), FUSED_ATTENTION_SPEEDUP["blackwell"] 1.7 -> 1.6,
# Blackwell FP8 0.69 -> 0.70: MoE 10.8 -> 7.3 % (p90 35.5 %: NeMo 25.09's Blackwell MoE rows +27 ... +53 %),
# FP8 4.9 -> 2.7 %, long context 8.0 -> 4.7 %, overall 7.3 -> 5.1 %, Blackwell 9.7 -> 11.6 %.
# Issue 33 h6, each NeMo row timed in the FP8 recipe it ran (current scaling's amax read,
# precision.CAST_PASSES_CURRENT; the 25.02 rows corrected to delayed scaling with FP8 parameter gather, which
# the DP all-gather moves at 1 B, on the 25.02 rows' delayed scaling and the 25.04/25.09 current scaling)
# and the documented joint refit on the fit rows that follows (FUSED_ATTENTION_SPEEDUP["blackwell"] 1.6 ->
# 1.9, Blackwell FP8 0.70 -> 0.67, MOE_ROUTED_PASSES 11 -> 14): MoE 7.3 -> 7.8 %, FP8 2.7 -> 3.1 %, long
# context 4.7 -> 2.9 %, overall 5.1 -> 5.5 %, Blackwell 11.6 -> 8.3 %, >= 1,024 GPUs 2.6 -> 2.9 % (with
# Blackwell's per-tensor FP8 casts writing no transpose copy, precision.PER_TENSOR_TRANSPOSE_PASSES).
# Merged with h5's alltoall re-sort (timing.MOE_A2A_SORT_PASSES, counted) and jointly refitted on the fit
# rows (h8: MOE_ROUTED_PASSES 14 -> 13; FUSED_ATTENTION_SPEEDUP["blackwell"] 1.9, Blackwell FP8 0.67 and
# Hopper FP8 0.85 stay). Merged at 14 passes: MoE 8.0 %, FP8 3.1 %, long context 2.9 %, overall 6.2 %;
# refitted: MoE 7.9 %, FP8 3.3 %, long context 3.3 %, overall 5.7 %; Blackwell 8.3 % and >= 1,024 GPUs
# 2.9 % unchanged throughout (h6's pins before the merge: 7.8, 3.1, 2.9, 5.5 %). Once an Ampere-design
# kernel (flash2) on Hopper runs at its A100 rate x FA2's measured H100 speedup (timing.AMPERE_KERNEL_SPEEDUP:
# the Llama 3 405B rows, Meta's stack timed as flash2): overall 5.7 -> 4.8 %, >= 1,024 GPUs 2.9 -> 2.6 %.
# Merged with the overlapped interleaved sends and full recompute's repeated all-to-alls, then jointly
# refitted on the fit rows (Hopper family 0.75 -> 0.81, Hopper FP8 0.81 -> 0.80, Blackwell kernel 1.9 ->
# 1.7, MOE_ROUTED_PASSES 13 -> 16, CDNA 0.82/1.08 -> 0.79/1.03): merged 6.8 / 3.7 / 3.7 / 5.0 / 9.5 / 1.5 %,
# refitted: 8.0 / 5.1 / 5.0 / 6.8 / 9.3 / 1.5 %. Since the DeepSeek-V3 rows run their gated (SwiGLU) MLP
# (frontier_cases.request_for: the harness had left DeepSeek out of its gated names, so the rows were timed
# at 451 B parameters, not 671 B): MoE 8.0 -> 7.7 %, Blackwell 9.3 -> 8.3 %, the rest unchanged; after the
# joint refit that followed (Blackwell kernel 1.7 -> 1.6, Blackwell FP8 0.67 -> 0.68, MOE_ROUTED_PASSES 16
# stays): MoE 7.5 %, FP8 4.7 %, Blackwell 8.9 %; since ZeRO-2 reduce-scatters every micro-batch's gradients
# (timing._zero2_reduce_scatter_per_mb, Llama 3 405B's FSDP rows): overall 6.8 -> 6.3 %; since NeMo's B200
# long-sequence rows run on their published layout's GPUs (frontier_cases.run_gpus; they were listed as not
# expressible: 4 more check rows) and FP8 recipes quantize every routed copy of the experts' inputs
# (timing._moe_expert_input_casts), merged: MoE 7.8 %, FP8 4.6 %, long context 4.9 %, overall 4.7 %, Blackwell
# 7.5 %. Engine version 23 (FlashAttention-2 at its published rates, no longer derated by the family factor)
# and its joint refit on the fit rows (Ampere 0.90 -> 0.88, Hopper 0.81 -> 0.79, Blackwell kernel 1.6 -> 1.8,
# Blackwell FP8 0.68 -> 0.67, MOE_ROUTED_PASSES 16 -> 14, STRAGGLER_CV 0.2 -> 0.4 %): MoE 7.8 -> 7.4 %,
# FP8 4.6 %, long context 4.9 -> 4.8 %, overall 4.7 -> 5.0 %, Blackwell 7.5 -> 5.8 %, >= 1,024 GPUs 1.5 ->
# 1.6 %:
CHECK_MEDIANS = {
    "moe": 0.074,
    "fp8": 0.046,
    "long_context": 0.048,
    "overall": 0.050,
    "blackwell": 0.058,
    "scale_1024": 0.016,
}


@pytest.fixture(scope="module")
def split(cases: list[FrontierCase]) -> dict[str, dict[str, dict[str, float | int]]]:
    return summary(cases)["by_regime_split"]


def _check(split: dict[str, dict[str, dict[str, float | int]]], regime: str) -> float:
    check = split[regime]["check"]
    assert check["n"] >= 3, f"{regime}: {check['n']} check rows"
    return float(check["median_abs_error"])


def test_check_row_medians_are_the_printed_ones(split: dict[str, dict[str, dict[str, float | int]]]) -> None:
    for regime, measured in CHECK_MEDIANS.items():
        assert _check(split, regime) == pytest.approx(measured, abs=0.001), regime
    assert split["scale_1024"]["check"]["n"] == 6 and split["amd"]["check"]["n"] == 7


@pytest.mark.parametrize(
    "regime",
    [
        "fp8",
        "long_context",
        "blackwell",
        "moe",
    ],
)
def test_each_regimes_check_rows_meet_the_target(
    split: dict[str, dict[str, dict[str, float | int]]], regime: str
) -> None:
    # FP8 7.8 % (31 check rows): met since the MoE rows' recipe settings and routed passes (the MoE rows were
    # its largest errors, +34 … +73 % on NeMo 25.09 B200/GB200) and the MLPerf LoRA rows. Long context 7.8 %,
    # Blackwell 10.5 % and MoE 11.2 % since the attention kernel is timed by framework and GPU family and the
    # routed passes refitted with it (xfails until then: 24.5 %, 12.7 %, 13.5 %). MoE 15.8 % once the ModelZoo
    # rows were compared in their causal count (xfail), 10.8 % since their stack's kernel runs at its measured
    # rates (training.attention_kernel flash3).
    assert _check(split, regime) <= 0.12


def test_scale_1024_check_rows_meet_the_regime_target(
    split: dict[str, dict[str, dict[str, float | int]]],
) -> None:
    # MLPerf Training v3.1/v4.0 GPT-3 175B FP8 on 6,144-11,616 H100 (tokens per logged block / block time)
    # and Llama 3 405B on 16,384 H100 (Table 4): 4.0 %, no scale trend.
    assert _check(split, "scale_1024") <= 0.12


# AMD: 11 predicted rows, all FP8 on 8 GPUs: MLPerf Training v5.1 llama31_8b on MI355X (2) and
# llama2_70b_lora on MI325X (v5.0, v5.1: 5) and MI355X (v5.1: 4); the two MI300X LoRA rows recompute 21 of 80
# layers, not an input, and are listed. 6 fit rows, 5 check rows. With the mean of the NVIDIA families'
# factors (0.825) the check rows were -8.4 % (8B, MI355X), -1.6 % and +1.0 % (MI325X), -10.8 % and -10.6 %
# (MI355X LoRA): median |error| 8.4 %. With the CDNA 3 / CDNA 4 FP8 factors fitted on the fit rows only
# (timing.REGIME_EFFICIENCY: 0.82 and 1.07, bench/calibration_fit.py): 0.7 % on the check rows, 1.5 % on the
# fit rows.
def test_amd_check_rows_meet_the_regime_target(split: dict[str, dict[str, dict[str, float | int]]]) -> None:
    assert _check(split, "amd") <= 0.12


def test_amd_rows_are_the_printed_ones(split: dict[str, dict[str, dict[str, float | int]]]) -> None:
    # 0.8 % and 1.5 % before issue 33's straggler term and the CDNA refits (0.82 -> 0.83, 1.07 -> 1.08);
    # 1.1 % and 1.4 % until Blom's expected slowest rank, with STRAGGLER_CV 0.2 % and CDNA 3 0.83 -> 0.82.
    # 0.85 % -> 0.73 % once the MLPerf rows' FP8 parameter gather moves 1 B a parameter (issue 33 h6).
    # 0.90 % and 1.38 % at the joint refit after the merge: the default family factor (CDNA's BF16 parts)
    # 0.825 -> 0.855 follows Hopper's 0.75 -> 0.81, CDNA 3 / 4 FP8 refitted 0.82 -> 0.79, 1.08 -> 1.03.
    # 0.80 % and 1.53 % at engine version 23's joint refit: the default 0.855 -> 0.835 follows Ampere 0.88 and
    # Hopper 0.79, CDNA 3 / 4 FP8 refitted 0.79 -> 0.82, 1.03 -> 1.07.
    assert split["amd"]["check"]["median_abs_error"] == pytest.approx(0.0080, abs=0.001)
    assert split["amd"]["fit"]["median_abs_error"] == pytest.approx(0.0153, abs=0.001)


@pytest.fixture(scope="module")
def all_rows(cases: list[FrontierCase], runs: list[calibration_cases.Case]) -> list[float]:
    sys.path.insert(0, str(ROOT / "bench"))
    from calibration_frontier import all_rows_errors

    return all_rows_errors(cases, runs=runs)


def test_all_rows_median_meets_the_target(all_rows: list[float]) -> None:
    # 365 rows of runs.csv and runs_frontier.csv (351, then 12 predicted MLPerf llama2_70b_lora rows, then the
    # 2 MI300X ones once training.recompute_num_layers expressed their 21-of-80 block recompute):
    # median |error| 5.1 % (5.0 % at 363; target ≤ 7 %); p90 18.8 % (18.9 % at 363; 20.7 % before the MoE
    # rows' recipe settings and timing.MOE_ROUTED_PASSES). Hopper's fused attention
    # (training.attention_kernel): median 5.1 -> 4.8 %, p90 18.8 -> 16.9 % (with the Hopper FP8 factor
    # refitted, 0.96 -> 0.86). The kernel by framework profile, Blackwell's fused kernel (1.7x, fitted;
    # Blackwell FP8 0.74 -> 0.69) and the routed passes refitted 21 -> 26: median 4.8 %, p90 16.9 -> 16.0 %.
    # 373 since NeMo's 8 B200 long-sequence rows run on their layout's GPUs (frontier_cases.run_gpus).
    assert len(all_rows) == 373
    # Issue 33 (MoE dispatch, losses of scale, refits): median 4.8 -> 4.7 %, p90 16.0 -> 15.8 %; Blom's
    # expected slowest rank with STRAGGLER_CV, MOE_ROUTED_PASSES and CDNA 3 FP8 refitted: 4.5 %, 15.7 %.
    # The ModelZoo rows in Megatron-LM's causal FLOP count: 4.6 %, 17.5 %; runs.csv rows with tokens/s
    # compared on tokens/s (calibration_cases._predicted_in_the_rows_count): 4.4 %, 17.7 %; the ModelZoo
    # rows' Hopper-native kernel at its measured rates (flash3): 4.4 %, 17.0 %.
    # expected slowest rank with STRAGGLER_CV, MOE_ROUTED_PASSES and CDNA 3 FP8 refitted: 4.5 %, 15.7 %. The
    # DeepSeek-V3 and ModelZoo H100 rows' recipe recompute with MOE_ROUTED_PASSES 26 -> 25: 4.5 %, 16.0 %.
    # The joint refit after the merge (MOE_ROUTED_PASSES 25 -> 11, Blackwell kernel 1.7 -> 1.6, Blackwell FP8
    # 0.69 -> 0.70, on the fit rows): 4.4 -> 4.2 %, p90 17.0 -> 16.7 %. Each NeMo row in its own FP8 recipe
    # and FP8 parameter gather, with the joint refit that follows (issue 33 h6): 4.2 -> 4.3 %, p90 16.7 %.
    # Merged with h5's alltoall re-sort (the MoE rows' tail: p90 16.7 -> 16.2 %) and jointly refitted (h8:
    # MOE_ROUTED_PASSES 14 -> 13): 4.3 %, 16.2 %. Joint refit after the merge (Hopper family 0.75 -> 0.81,
    # Blackwell kernel 1.9 -> 1.7, MOE_ROUTED_PASSES 13 -> 16, regime factors): 4.0 %, p90 14.1 %. ZeRO-2's
    # reduce-scatter of every micro-batch's gradients (the Llama 3 405B rows), NeMo's B200 long-sequence
    # rows (373 rows) and the FP8 casts of the routed copies: 3.9 %. llm-foundry's amp tables' full recompute
    # stopping early, before each block's MLP output projection (training.checkpoint_early_stop): 3.5 %;
    # with their float32 reduce-scatters (training.reduce_bytes) 3.5 %. FlashAttention-2 at its published
    # rates with engine version 23's joint refit: 2.8 %.
    assert statistics.median(all_rows) == pytest.approx(0.028, abs=0.001)
    # p90 16.2 -> 14.6 % once an Ampere-design flash2 kernel on H100 runs at its A100 rate x FA2's measured
    # H100 speedup (timing.AMPERE_KERNEL_SPEEDUP: llm-foundry's H100 long-sequence rows); 14.1 % refitted.
    # 13.7 % once llm-foundry's amp tables reduce-scatter in Composer's DEFAULT float32
    # (training.reduce_bytes). 12.0 % once FlashAttention-2 runs at its published rates (engine version 23).
    assert frontier_cases.percentile(all_rows, 0.9) == pytest.approx(0.120, abs=0.001)
    assert statistics.median(all_rows) <= 0.07


def test_all_rows_p90_meets_the_target(all_rows: list[float]) -> None:
    # 16.0 % since the fused attention kernel is timed (18.8 % before; xfail until then).
    assert frontier_cases.percentile(all_rows, 0.9) <= 0.18


# ---- issue 19 memory target: "no measured run predicted not to fit" ----


def test_no_measured_run_is_predicted_not_to_fit(cases: list[FrontierCase]) -> None:
    # Issue 19: "no measured run predicted not to fit". The six rows that did not (NeMo 25.09's GB200 FSDP
    # rows offloading 40 of 80 and 95 of 126 layers' activations, the Megatron-MoE-ModelZoo Qwen3
    # long-context rows recomputing layernorm and moe) carry their levers in the CSV's
    # activation_offload_layers and recompute_modules columns; the MLPerf llama2_70b_lora rows keep their
    # weights in FP8 (the fp8_params column → training.fp8_params: 128.6 → 64.3 GiB). The last three carry
    # theirs in the activation_offload_modules and activation_func_fp8_input_store columns:
    # - moezoo_qwen3_gb200_2 offloads the experts' FC1 inputs and activation inputs ("activation offloading
    #   required": --offload-modules expert_fc1 moe_act): 197.8 → 92.0 GiB of 186
    #   (test_qwen3_gb200_module_offload_is_the_hand_computed_one);
    # - mlperf50_lora70b_nv_b200 and mlperf41_lora70b_nv_h200 store the SwiGLU input in FP8 (FP8_ACT /
    #   FP8_ACTIVATION → activation_func_fp8_input_store): 216.9 → 178.4 GiB of 180 and 141.9 → 122.7 of 141.
    # A new "does not fit" is an engine or row error and fails here; a row naming a lever the engine lacks
    # (frontier_cases.MISSING_MEMORY_LEVERS, empty now) would be listed by the bench.
    oom = [c.row["run_id"] for c in cases if c.fits is False]
    assert oom == []


def test_llama2_70b_lora_b200_memory_with_the_fp8_swiglu_input_is_near_the_logged_peak() -> None:
    # mlperf50_lora70b_nv_b200: Llama 2 70B LoRA, FP8, fp8_params, tp 1, pp 1, 8,192 tokens, no recompute.
    # activation_func_fp8_input_store keeps the SwiGLU input (2f = 57,344 elements per token) in 1 byte:
    # 2 × 28,672 × 8,192 = 469,762,048 B less per layer → 80 × 469,762,048 × 1.1 allocator = 38.5 GiB, so
    # activations 148.5 → 110.0 GiB and the total 216.9 → 178.4 GiB of 180. The run logged max_memory_usage
    # 168.8 GiB (the CSV's measured memory, torch.cuda.max_memory_allocated): +5.7 % (+28.5 % before). The
    # rest is FP8 attention (FP8_DPA=1) and the frozen linears' inputs under LoRA, neither an engine input.
    # Throughput is unchanged by it (the cast is fused into the SwiGLU kernel): 5,469.0 tokens/s/GPU, +1.0 %
    # (4,909.9, -9.4 %, before Blackwell timed fused attention and the Blackwell FP8 factor was refitted).
    specs = frontier_cases.catalog_specs()
    row = next(r for r in frontier_cases.load_rows() if r["run_id"] == "mlperf50_lora70b_nv_b200")
    result = estimate(frontier_cases.request_for(row), **specs)
    memory = result["memory_per_gpu_gib"]
    assert memory["activations"] == pytest.approx(110.0, abs=0.01)
    assert memory["total"] == pytest.approx(178.39, abs=0.01) and result["fits"]
    assert memory["total"] / float(row["measured_mem_per_gpu_gb"]) - 1 == pytest.approx(0.057, abs=0.001)
    # 5,441.0 since issue 33's straggler term (8 ranks: 1 + 0.25 % × √(2 ln 8) = 1.0051) and bucketed
    # all-reduce; 5,453.1 = 5,441.0 × 1.0051 / 1.00287 since the slowest of 8 ranks is Blom's expected
    # maximum with STRAGGLER_CV refitted (1 + 0.2 % × Φ⁻¹(7.625 / 8.25) = 1 + 0.2 % × 1.434); 5,426.3 since
    # the joint refit after the ModelZoo causal count (Blackwell fused attention 1.7 -> 1.6x FA2 with the
    # Blackwell FP8 factor 0.69 -> 0.70, both fitted on the fit rows); 5,478.7 since the NeMo rows are timed
    # in their own FP8 recipes and the refit that followed (1.6 -> 1.9x FA2, 0.70 -> 0.67; issue 33 h6);
    # 5,504.9 since B200's per-tensor FP8 casts write no transpose copy (4.5 cast passes, not 6); 5,420.1 at
    # the joint refit after the merge (Blackwell fused attention 1.9 -> 1.7x FA2, Blackwell FP8 0.67 stays);
    # 5,399.1 at the joint refit after the DeepSeek-V3 rows' gated MLP (Blackwell fused attention 1.7 ->
    # 1.6x FA2, Blackwell FP8 0.67 -> 0.68); 5,442.4 at engine version 23's joint refit (1.6 -> 1.8x FA2,
    # 0.68 -> 0.67, STRAGGLER_CV 0.2 -> 0.4 %).
    assert result["tokens_per_second"] / 8 == pytest.approx(5442.4, abs=0.1)


def test_deepseek_v3_rows_run_a_gated_mlp_at_671b_parameters() -> None:
    # DeepSeek-V3's experts, shared expert and first 3 dense MLPs are SwiGLU (config.json: hidden_act silu,
    # gate_proj / up_proj / down_proj; the project's deepseek-v3 preset has gated_mlp True). By hand, from the
    # row's columns: embedding and output 2 x 129,280 x 7,168 = 1.853e9; MLA per layer 7,168 x 1,536 + 1,536 x
    # 128 x 192 + 7,168 x 576 + 512 x 128 x 256 + 128 x 128 x 7,168 = 187.1e6, x 61 = 11.41e9; dense MLP
    # 3 x 7,168 x 18,432 x 3 layers = 1.189e9; MoE (256 + 1) x 3 x 7,168 x 2,048 + router 7,168 x 256 =
    # 11.32e9 per layer, x 58 = 656.6e9; total 671.1e9 (the model card's 671 B). Ungated, as the harness ran
    # them before, the MLPs lose a third: 451.8e9.
    specs = frontier_cases.catalog_specs()
    row = next(r for r in load_rows() if r["run_id"] == "nemo2509_b200_9")
    request = frontier_cases.request_for(row)
    assert request["model"]["gated_mlp"] is True
    model = estimate(request, **specs)["summary"]["model"]
    assert model["params"] == pytest.approx(671.1e9, rel=1e-3)
    assert model["active_params"] == pytest.approx(37.6e9, rel=1e-2)


def test_qwen3_gb200_module_offload_is_the_hand_computed_one() -> None:
    # moezoo_qwen3_gb200_2: Qwen3 235B-A22B, MXFP8, tp 1, pp 4 × vpp 6, micro-batch 3 × 4,096 = 12,288 tokens,
    # 94 MoE layers (top-8 of 128, f_e 1,536, SwiGLU), recompute moe_act + layernorm, --offload-modules
    # expert_fc1 moe_act. Offloaded per layer and micro-batch:
    #   expert_fc1: the routed copies, top_k·h·t·(1 + 1/32) B (MXFP8: one E8M0 scale per 32; the row is
    #   estimated in its recipe since issue 33 h6, 1 B as fp8 before) = 8 × 4,096 × 12,288 × 1.03125
    #                                                                                =   415,236,096 B
    #   moe_act: the FC1 output, 2f_e elements at 2 B per routed copy = 4 × 1,536 × 8 × 12,288 = 603,979,776 B
    # The first stage (23 of ⌈94/4⌉ = 24 layers, balanced split) holds 27 chunks of 4 layers in flight
    # (2(p−1) + (v−1)p + 1, Korthikanti eq. 5) × 23/24 = 103.5 layers, all but one offloaded:
    #   102.5 × 1,019,215,872 × 1.1 = 114,916,614,566 B = 107.02 GiB less.
    # The copies, 1.007 GB per layer at 225 GB/s (NVLink-C2C, the catalog's host_link_gbps) = 4.5 ms, hide
    # under each layer's forward and backward compute, so the throughput is unchanged (865.7 model
    # TFLOP/s/GPU, -5.8 %).
    specs = frontier_cases.catalog_specs()
    row = next(r for r in frontier_cases.load_rows() if r["run_id"] == "moezoo_qwen3_gb200_2")
    request = frontier_cases.request_for(row)
    offloaded = estimate(request, **specs)
    request["training"].pop("activation_offload_modules")
    kept = estimate(request, **specs)
    drop = kept["memory_per_gpu_gib"]["activations"] - offloaded["memory_per_gpu_gib"]["activations"]
    assert drop == pytest.approx(102.5 * 1_019_215_872 * 1.1 / 2**30, abs=0.002)
    assert offloaded["memory_per_gpu_gib"]["total"] == pytest.approx(92.06, abs=0.01) and offloaded["fits"]
    assert offloaded["step_time_s"]["activation_offload"] == 0.0
    assert offloaded["tokens_per_second"] == pytest.approx(kept["tokens_per_second"], rel=1e-12)


def test_llama3_70b_gb200_activation_offload_is_the_hand_computed_one(rows: list[dict[str, str]]) -> None:
    # nemo2509_gb200_2: Llama 3 70B, FP8, tp 1 (no SP), pp 1, micro-batch 2 × 8192 = 16,384 tokens, flash
    # attention, no dropout, no recompute (memory.activation_bytes_per_layer, Korthikanti 2022 Table 2):
    #   replicated (8 − 2 FP8-saved)·t·h = 6 × 16,384 × 8,192             =   805,306,368 B
    #   split t·(2(q + 2 kv) + 2q + 6f − (q + f)), q 8,192, kv 1,024, f 28,672
    #       = 16,384 × (20,480 + 16,384 + 172,032 − 36,864) = 16,384 × 172,032 = 2,818,572,288 B
    #   one layer 3,623,878,656 B; pp 1 holds all 80 layers of one micro-batch; × 1.1 allocator
    #   → 80 × 3,623,878,656 × 1.1 = 318,901,321,728 B = 297.0 GiB, against 186 GiB of HBM.
    # The recipe offloads 40 of the 80 layers' activations (cpu_offloading_num_layers 40, the CSV's
    # activation_offload_layers): 40 × 3,623,878,656 × 1.1 = 159,450,660,864 B = 148.5 GiB stay, and the
    # total falls from 330.9 to 182.4 GiB ≤ 186; 179.7 GiB since the row carries its recipe's FP8 parameter
    # gather (issue 33 h6): its 64 weight shards weigh 1 B a weight, 1.03 GiB instead of 2.05. The copies,
    # 40 × 3,623,878,656 B = 145.0 GB each way over NVLink-C2C at 225 GB/s (the seed catalog's gb200
    # host_link_gbps) = 0.64 s, hide under the forward and backward passes of 80 layers: no time exposed.
    row = _row(rows, "nemo2509_gb200_2")
    response = estimate(frontier_cases.request_for(row), **frontier_cases.catalog_specs())
    mem = response["memory_per_gpu_gib"]
    assert mem["activations"] == pytest.approx(159_450_660_864 / 2**30, abs=0.01)
    assert mem["weights"] == pytest.approx(1.027, abs=0.001)
    assert mem["total"] == pytest.approx(179.7, abs=0.1) and response["fits"]
    assert response["step_time_s"]["activation_offload"] == 0.0


def test_qwen3_long_context_recompute_modules_are_the_hand_computed_ones(rows: list[dict[str, str]]) -> None:
    # moezoo_qwen3_h100_lc_1: Qwen3 235B-A22B (h 4,096, 64 heads × 128, 4 KV heads, 128 experts top-8 of
    # width 1,536), tp 4 with SP, pp 8 × vpp 4, cp 1, micro-batch 1 × 16,384 tokens, bf16. With nothing
    # recomputed a layer stores per token
    #   replicated 8·h/tp = 8 × 4,096 / 4 = 8,192 B
    #   split (2(q + 2 kv) + 2q + 6 · top_k · f_e)/tp = (18,432 + 16,384 + 73,728) / 4 = 27,136 B
    #   routed FC1 input (memory.routed_token_bytes) 2 B × top_k 8 × 4,096 × etp 1 / 4 = 16,384 B
    # and the first stage holds 117 layers × 11/12 (interleaved warm-up of 39 three-layer chunks; 94 layers
    # on 8 stages, the first holds 11 of 12): 93.1 GiB of activations, 119.1 GiB in all against 80, with
    # 23.5 GiB of states (the recipe's expert TP 1: experts split ep 8 ways, not ep × tp = 32).
    # The recipe's --recompute-modules layernorm moe (the CSV's recompute_modules) keeps neither the two
    # norm outputs, 4·h/tp = 4,096 B, nor the MoE block's intermediates, 6 · 8 · 1,536 / 4 = 18,432 B, nor
    # its routed inputs (16,384 B):
    #   (8,192 − 4,096) + (27,136 − 18,432) = 12,800 B per token × 16,384 = 209,715,200 B per layer
    #   × 117 × 11/12 × 1.1 = 24,741,883,320 B = 23.04 GiB; 23.5 + 23.04 + 2.5 reserve = 49.0 GiB: it fits.
    row = _row(rows, "moezoo_qwen3_h100_lc_1")
    response = estimate(frontier_cases.request_for(row), **frontier_cases.catalog_specs())
    mem = response["memory_per_gpu_gib"]
    assert response["parallelism"]["recompute"] == "selective"
    assert mem["activations"] == pytest.approx(24_741_883_320 / 2**30, abs=0.01)
    assert mem["total"] == pytest.approx(49.0, abs=0.1) and response["fits"]


# ---- MoE recipe settings and routed-copy passes (issue 19 item 2) ----


def test_moe_rows_go_to_the_engine_with_their_recipes_dispatcher_and_overlaps(
    rows: list[dict[str, str]],
) -> None:
    # Megatron-Bridge fa0315ae2 scripts/performance/run_script.py: DeepSeek-V3 on H100 runs DeepEP with
    # overlap_moe_expert_parallel_comm and without moe_shared_expert_overlap; on B200/GB200 token drop, the
    # alltoall dispatcher and the shared-expert overlap. ModelZoo qwen3/readme.md: '+1f1b overlap' (row 2),
    # the A2A dispatcher (row 4), HybridEP (GB200, taken as deepep).
    h100 = frontier_cases.request_for(_row(rows, "nemo2509_h100_15"))["training"]
    assert (h100["moe_dispatcher"], h100["moe_a2a_overlap"], h100["moe_shared_expert_overlap"]) == (
        "deepep",
        True,
        False,
    )
    gb200 = frontier_cases.request_for(_row(rows, "nemo2509_gb200_4"))["training"]
    assert (gb200["moe_dispatcher"], gb200["moe_a2a_overlap"], gb200["moe_shared_expert_overlap"]) == (
        "alltoall",
        False,
        True,
    )
    assert frontier_cases.request_for(_row(rows, "moezoo_qwen3_h100_2"))["training"]["moe_a2a_overlap"]
    assert frontier_cases.request_for(_row(rows, "moezoo_qwen3_h100_4"))["training"]["moe_dispatcher"] == (
        "alltoall"
    )
    # A row that states none (Mixtral, NeMo 25.02/25.04) and a dense row get none: the engine's defaults.
    assert "moe_dispatcher" not in frontier_cases.request_for(_row(rows, "nemo2502_b200_7"))["training"]
    assert "moe_a2a_overlap" not in frontier_cases.request_for(_row(rows, "nemo2502_b200_2"))["training"]


def test_moe_rows_carry_the_selective_recompute_their_recipes_ran(rows: list[dict[str, str]]) -> None:
    # Megatron-Bridge scripts/performance/run_script.py as of #832 (main 47ff48829; the 25.09 release branch's
    # a28844195, v0.1.0rc4), the configuration whose layouts the 25.09 summary prints (GB200 PP 4 VP 4, B200
    # TP 1 with GA 128), keeps the DeepSeek-V3 recipe's selective granularity and sets recompute_modules per
    # GPU: h100 mla_up_proj, mlp; gb200 with token drop and b200 mla_up_proj. The ModelZoo H100 table's
    # "norm, act" is layernorm, moe_act; its GB200 128K command says --recompute-modules moe_act layernorm.
    expected = {
        "nemo2509_h100_15": ["mla_up_proj", "mlp"],
        "nemo2509_gb200_4": ["mla_up_proj"],
        "nemo2509_b200_9": ["mla_up_proj"],
        "moezoo_qwen3_gb200_3": ["moe_act", "layernorm"],
        "moezoo_qwen3_h100_1": ["layernorm", "moe_act"],
        "moezoo_qwen3_h100_2": ["layernorm", "moe_act"],
        "moezoo_qwen3_h100_4": ["layernorm", "moe_act"],
    }
    for run_id, modules in expected.items():
        request = frontier_cases.request_for(_row(rows, run_id))
        assert request["parallelism"]["recompute"] == "selective", run_id
        assert request["training"]["recompute_modules"] == modules, run_id
    # moezoo_qwen3_h100_4 (Qwen3 235B-A22B, tp 2, pp 32, vpp 3, 512 micro-batches of 4,096 tokens, h 4,096,
    # top-8 of 1,536-wide experts in all 94 layers): per layer and micro-batch the norms re-read and re-write
    # 2 × 2 × 2 B × 4,096 × 4,096 / sp 2 = 67.1 MB and the experts' activation reads 2f and writes f of
    # 2 B × 4,096 × 8 × 1,536 / tp 2 (151.0 MB), at 3.35 TB/s × 0.85: 7.6595e-5 s. The slowest stage is the
    # last, 2 layers (balanced split 2 + 30 × 3 + 2) and the loss: 512 × 2 × 7.6595e-5 = 0.07843 s per step.
    request = frontier_cases.request_for(_row(rows, "moezoo_qwen3_h100_4"))
    recompute = estimate(request, **frontier_cases.catalog_specs())["step_time_s"]["recompute"]
    per_layer = (8 * 4096 * 4096 / 2 + 3 * 2 * 4096 * 8 * 1536 / 2) / (3.35e12 * 0.85)
    assert recompute == pytest.approx(512 * 2 * per_layer, rel=1e-9)
    assert recompute == pytest.approx(0.07843, abs=1e-5)


def test_routed_copy_passes_are_the_hand_computed_ones(
    rows: list[dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # nemo2509_b200_10: Qwen3 30B-A3B on 8 × B200, tp 1, pp 1, ep 8, micro-batch 1 × 4,096 tokens, global
    # batch 512 → 64 micro-batches, 48 layers all MoE, top-8, h 2,048, no recompute. The routed copies of a
    # layer: 4,096 × 8 = 32,768 rows of 2,048 × 2 B; 14 passes forward, twice that backward (3 × forward):
    # 48 × 64 × 3 × 14 × 2 × 32,768 × 2,048 B / (8.0 TB/s × HBM_EFFICIENCY 0.85) = 2.5467 s per step (3.8200 s
    # at 21 passes, before the refit with the fused attention kernel; 4.7295 s at 26, from Blom's expected
    # slowest rank until the DeepSeek-V3 and ModelZoo rows carried their recipes' recompute; 4.5476 s at 25
    # until the joint refit after the ModelZoo rows' causal count, 25 -> 11: × 11 / 25 = 2.0009 s; 11 -> 14 at
    # the fixed point once the NeMo rows carry their FP8 recipes, issue 33 h6: 2.5467 s; 14 -> 13 at the joint
    # refit after h5's alltoall re-sort merged, h8: × 13 / 14 = 2.3648 s; 13 -> 16 at the joint refit after
    # flash2's Hopper rate and the Hopper family refit merged: × 16 / 13 = 2.9105 s; 16 -> 14 at engine
    # version 23's joint refit, FlashAttention-2 at its published rates: × 14 / 16 = 2.5467 s). The row ran
    # token drop padded to capacity: no load imbalance factor. Only MOE_ROUTED_PASSES is zeroed: the alltoall
    # re-sort (timing.MOE_A2A_SORT_PASSES, 16 local experts) stays in both estimates and cancels.
    from clusterdesigner.engine.training import timing

    request = frontier_cases.request_for(_row(rows, "nemo2509_b200_10"))
    specs = frontier_cases.catalog_specs()
    with_passes = estimate(request, **specs)["step_time_s"]["compute"]
    monkeypatch.setattr(timing, "MOE_ROUTED_PASSES", 0.0)
    without = estimate(request, **specs)["step_time_s"]["compute"]
    assert with_passes - without == pytest.approx(2.5467, abs=1e-4)


def test_bench_reports_issue_32s_parts_and_recipes_as_fit_or_check(
    capsys: Any, monkeypatch: Any, cases: list[FrontierCase], runs: list[calibration_cases.Case]
) -> None:
    """The bench's issue-32 section: no measured row of GB300, B300, MI350X or Rubin exists in either CSV
    (so nothing is fitted or checked on them and their band is the family's widest); the two MXFP8 rows
    (Qwen3 235B on GB200, Megatron MoE model zoo) are one fit row and one check row, each printed with its
    error estimated in MXFP8; no row was measured in NVFP4 or FP8 blockwise."""
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    from calibration_frontier import _issue32_rows

    from clusterdesigner.engine.training.error_band import MEASURED_PARTS

    _issue32_rows(cases, 4, runs=runs)
    out = capsys.readouterr().out
    every = load_rows() + calibration_cases.load_runs()
    for slug, prefix in (("gb300", "GB300"), ("b300", "B300"), ("mi350x", "MI350X"), ("vera-rubin", "Rubin")):
        assert not [r for r in every if prefix in r["gpu_type"]]
        assert slug not in MEASURED_PARTS
        line = next(x for x in out.splitlines() if x.startswith(f"  {slug} "))
        assert "no measured run in either CSV" in line and "widest band of its family" in line
    specs = frontier_cases.catalog_specs()
    errors = {
        run_id: predict(_row(load_rows(), run_id), specs, precision="mxfp8").error
        for run_id in ("moezoo_qwen3_gb200_2", "moezoo_qwen3_gb200_3")
    }
    fit = calibration_cases.fit_run_ids(load_rows())
    assert "moezoo_qwen3_gb200_2" in fit and "moezoo_qwen3_gb200_3" not in fit
    mxfp8 = next(x for x in out.splitlines() if x.startswith("  mxfp8 "))
    assert "2 rows on gb200" in mxfp8
    assert f"fit n=1, median |error| {100 * abs(errors['moezoo_qwen3_gb200_2']):.1f} %" in mxfp8
    assert f"check n=1, median |error| {100 * abs(errors['moezoo_qwen3_gb200_3']):.1f} %" in mxfp8
    for recipe in ("nvfp4", "fp8_blockwise"):
        line = next(x for x in out.splitlines() if x.startswith(f"  {recipe} "))
        assert "no measured run in either CSV" in line
