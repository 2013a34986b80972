"""The training engine's typed result (engine.training.training_result) writes the JSON estimate() has always
returned, and reads that JSON back to the same object."""

from __future__ import annotations

import json

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.training.training import estimate, estimate_result
from clusterdesigner.engine.training.training_result import LayoutEstimate, TrainingEstimate

# GPT-3 175B on 48 × 8 A100-80GB (Narayanan et al. 2021, Table 1's 384-GPU row: tp 8, pp 12, dp 4).
REQUEST = {
    "model": {"preset": "gpt3-175b"},
    "training": {"tokens": 300e9, "global_batch_seqs": 1536, "precision": "bf16"},
    "cluster": {"accelerator": "a100-80gb", "gpus_per_node": 8, "nodes": 48, "fabric": "ib-hdr200"},
}
GIVEN = {"tp": 8, "pp": 12, "dp": 4, "micro_batch": 1, "recompute": "full", "sharding": "zero1"}


@pytest.mark.parametrize("parallelism", [GIVEN, {"tp": 8}], ids=["evaluate", "search"])
def test_the_typed_result_round_trips_through_stored_json(parallelism: dict[str, object]) -> None:
    typed = estimate_result(
        {**REQUEST, "parallelism": parallelism}, accelerators=ACCELERATORS, fabrics=FABRICS
    )
    stored = json.loads(json.dumps(typed.to_json()))  # as a JSON column gives it back
    assert TrainingEstimate.from_json(stored) == typed
    assert (
        estimate({**REQUEST, "parallelism": parallelism}, accelerators=ACCELERATORS, fabrics=FABRICS)
        == stored
    )


def test_a_search_keeps_its_candidates_and_counts_and_the_best_is_the_first_candidate() -> None:
    typed = estimate_result({**REQUEST, "parallelism": {"tp": 8}}, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert typed.mode == "search" and typed.search is not None
    assert typed.candidates[0] == typed.chosen and typed.chosen.parallelism.tp == 8
    assert typed.search.layouts_evaluated >= typed.search.layouts_valid >= typed.search.layouts_feasible > 0
    days = [c.time_to_train_days for c in typed.candidates]
    assert days == sorted(days)


def test_the_evaluate_json_has_exactly_the_keys_it_always_had_and_the_error_band() -> None:
    # error_band added by issue 19 (engine/training/error_band.py); every other key as before.
    data = estimate({**REQUEST, "parallelism": GIVEN}, accelerators=ACCELERATORS, fabrics=FABRICS)
    assert list(data) == [
        "mode",
        "parallelism",
        "fits",
        "memory_per_gpu_gib",
        "memory_capacity_gib",
        "headroom_gib",
        "step_time_s",
        "model_tflops_per_gpu",
        "hardware_tflops_per_gpu",
        "mfu",
        "hfu",
        "tokens_per_second",
        "time_to_train_days",
        "error_band",
        "warnings",
        "summary",
        "assumptions",
    ]
    assert set(data["memory_per_gpu_gib"]) >= {"total", "weights", "activations", "framework_reserve"}


def test_a_stored_result_missing_a_figure_is_an_error_naming_it() -> None:
    data = estimate({**REQUEST, "parallelism": GIVEN}, accelerators=ACCELERATORS, fabrics=FABRICS)
    del data["mfu"]
    with pytest.raises(ValueError, match="LayoutEstimate lacks mfu"):
        LayoutEstimate.from_json(data)
