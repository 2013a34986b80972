"""The Megatron-Bridge 25.11-26.08 performance-summary rows (data/runs_megatron_bridge.csv, bench/
calibration_releases.py): read as published, and every row either estimated or listed with its reason.

The figures below are copied from the published tables, NVIDIA-NeMo/Megatron-Bridge at 4ab94dfad3
(2026-08-11): docs/performance-summary.md, '26.08 NeMo Container', Model: DeepSeekV3, DGX-GB300 row (256
GPUs, MXFP8, GBS 4096, TP 1, PP 2, VP 8, EP 32: 6288 tokens/s/GPU, 1635 model TFLOP/s/GPU); docs/
performance-summary-archive.md, '25.11 NeMo Container', System: DGX-H100, LLAMA3_8B row (8 GPUs, FP8-CS,
GBS 128, MBS 1, FSDP 8: 14451 tokens/s/GPU, 744 TFLOP/s) and '26.04 NeMo Container', Model: LLAMA3_70B,
DGX-GB300 NVFP4 row (7397 tokens/s/GPU).
"""

from __future__ import annotations

import statistics
from collections import Counter

import pytest
from frontier_cases import catalog_specs
from frontier_cases import load_rows as frontier_rows
from release_cases import fit_run_ids, load_rows, predict, request_for

from clusterdesigner.engine.training.timing import (
    CALIBRATION_RELEASE_ASSUMPTION,
    LATER_RELEASES_CHECK_ERROR,
    TIMING_ASSUMPTIONS,
)

ROWS = {row["run_id"]: row for row in load_rows()}


def test_rows_are_the_published_tables() -> None:
    assert len(ROWS) == len(load_rows()) == 251
    assert {row["release"] for row in ROWS.values()} == {
        "25.11",
        "26.02",
        "26.02.01",
        "26.04",
        "26.04.01",
        "26.06",
        "26.06.01",
        "26.08",
    }
    dsv3 = ROWS["mb2608_gb300_deepseekv3_mxfp8"]
    assert (dsv3["num_gpus"], dsv3["global_batch_seqs"], dsv3["pp"], dsv3["vpp"], dsv3["ep"]) == (
        "256",
        "4096",
        "2",
        "8",
        "32",
    )
    assert (dsv3["tokens_per_s_per_gpu"], dsv3["model_tflops_per_gpu"]) == ("6288", "1635")
    llama = ROWS["mb2511_h100_llama38b_fp8cs"]
    assert (llama["fsdp"], llama["micro_batch"], llama["tokens_per_s_per_gpu"]) == ("8", "1", "14451")
    assert request_for(llama)["parallelism"]["sharding"] == "zero3"
    assert ROWS["mb2604_gb300_llama370b_nvfp4"]["tokens_per_s_per_gpu"] == "7397"
    assert all("4ab94dfad3" in row["citation"] for row in ROWS.values())


def test_a_row_is_entered_as_the_table_prints_it() -> None:
    request = request_for(ROWS["mb2608_gb300_deepseekv3_mxfp8"])
    layout = request["parallelism"]
    assert (layout["tp"], layout["pp"], layout["vpp"], layout["ep"], layout["dp"]) == (1, 2, 8, 32, 128)
    cluster = {"accelerator": "gb300", "gpus_per_node": 4, "nodes": 64, "fabric": "ib-ndr400"}
    assert request["cluster"] == cluster
    assert request["training"]["precision"] == "mxfp8"
    assert request["training"]["moe_load_balance"] == "balanced"
    # The recipe's settings the engine has inputs for (deepseek_v3_pretrain_256gpu_gb300_fp8mx_config at
    # 4ab94dfad3, src/megatron/bridge/perf_recipes/deepseek/common.py: flex dispatcher with the hybridep
    # backend, --overlap-moe-expert-parallel-comm, its 16-chunk layout); what it sets without an engine input
    # stays in the row (full-iteration CUDA graphs, the fused grouped MLP, FP8 attention).
    training = request["training"]
    assert (training["moe_dispatcher"], training["moe_a2a_overlap"]) == ("hybridep", True)
    assert training["pipeline_layout"] == "Et*4|(t*4|)*14tmL" and training["fp8_params"] is True
    row = ROWS["mb2608_gb300_deepseekv3_mxfp8"]
    assert (row["cuda_graph"], row["fused_grouped_mlp"], row["fp8_attention"]) == ("full_iteration", "1", "1")
    assert "cuda_graph" not in training and "fp8_attention" not in training
    # A 25.11 row whose preset's layout is not the table's keeps only the preset's performance flags, and
    # the DeepSeek-V3 (4, 4) split falls back to the recipe's layout map: the string the 25.09 GB200 row
    # (runs_frontier.csv) carries.
    gb200 = request_for(ROWS["mb2511_gb200_deepseekv3womtp_bf16"])
    assert ROWS["mb2511_gb200_deepseekv3womtp_bf16"]["recipe_matches_row"] == "0"
    assert (gb200["parallelism"]["pp"], gb200["parallelism"]["vpp"]) == (4, 4)
    frontier = {row["run_id"]: row for row in frontier_rows()}
    assert gb200["training"]["pipeline_layout"] == frontier["nemo2509_gb200_4"]["pipeline_layout"].replace(
        "mL", "L"
    )
    assert gb200["model"]["mtp_depth"] == 0
    # Qwen3-235B on H100 at TP 2, EP 32 over 256 GPUs: EP spans tp × dp under expert TP 1.
    qwen = request_for(ROWS["mb2604_h100_qwen3235ba22b_fp8"])
    assert (qwen["parallelism"]["dp"], qwen["training"]["etp"]) == (16, 1)


@pytest.fixture(scope="module")
def cases() -> list:
    specs = catalog_specs()
    return [predict(row, specs) for row in ROWS.values()]


def test_the_split_is_every_other_row_of_a_release() -> None:
    rows = load_rows()
    fit = fit_run_ids(rows)
    first = {}
    for row in rows:
        first.setdefault(row["release"], row["run_id"])
    assert set(first.values()) <= fit and len(fit) == sum(
        (n + 1) // 2 for n in Counter(row["release"] for row in rows).values()
    )
    assert "mb2608_gb300_deepseekv3_mxfp8" in fit and "mb2608_gb200_deepseekv3_mxfp8" not in fit


def test_every_row_is_estimated_or_listed_with_its_reason(cases: list) -> None:
    """The 2026 parts (GB300, B300) and recipes (MXFP8, NVFP4) are entered and estimated; what is not
    estimated is a model the engine has no layer for, or a DeepSeek-V3 / Kimi K2 pipeline split outside
    the recipe's layout map, which the engine refuses by name."""
    skipped = [c for c in cases if c.skip]
    for case in skipped:
        model = case.row["model"]
        if model.startswith(("Nemotron_3", "DeepSeekV4")):
            continue
        assert model.startswith(("DeepSeekV3", "Kimi_K2")), (case.row["run_id"], case.skip)
        assert case.skip.startswith("engine rejected the row: parallelism.vpp"), case.skip
    estimated = [c for c in cases if c.predicted is not None]
    assert len(estimated) + len(skipped) == 251
    systems = {"DGX-GB300", "DGX-GB200", "DGX-B300", "DGX-B200", "DGX-H100"}
    assert {c.row["system"] for c in estimated} == systems
    assert {c.recipe for c in estimated} == {"bf16", "fp8_current", "mxfp8", "nvfp4"}
    assert all(c.predicted and c.predicted > 0 for c in estimated)
    # Every estimate carries the engine's 80 % band, and the estimate lies inside it.
    assert all(c.band and c.band[0] < c.predicted < c.band[1] for c in estimated)


def test_the_estimates_state_the_calibrations_vintage_and_its_error_on_later_releases(cases: list) -> None:
    """timing.LATER_RELEASES_CHECK_ERROR, which every estimate's assumptions quote, is what the check rows
    give today: a change to the engine that moves them must restate them."""
    rows = load_rows()
    fit = fit_run_ids(rows)
    check = [c for c in cases if c.error is not None and c.row["run_id"] not in fit]

    def median_abs(group: list) -> float:
        return round(statistics.median(abs(c.error) for c in group), 3)

    assert {
        "all": median_abs(check),
        "dense": median_abs([c for c in check if not c.moe]),
        "moe": median_abs([c for c in check if c.moe]),
    } == LATER_RELEASES_CHECK_ERROR
    assert CALIBRATION_RELEASE_ASSUMPTION in TIMING_ASSUMPTIONS
    assert "13.5 %" in CALIBRATION_RELEASE_ASSUMPTION.source
