"""The analyses' stored rows read back as typed rows and write out key for key, in the stored order."""

from __future__ import annotations

from typing import Any

import pytest

from clusterdesigner.engine.cost.defaults import FABRIC, GPUS_PER_NODE, OVERSUBSCRIPTION, STORAGE
from clusterdesigner.engine.design.analysis_result import CompareRow, SweepParams, SweepRow

PRICED = {
    "accelerator": "h100-sxm",
    "nodes": 2,
    "gpus": 16,
    "model": "llama3-8b",
    "pricing_model": "on_demand",
    "fits": True,
    "offering": "aws-p5",
    "days": 3.25,
    "cost_usd": 41000.0,
    "usd_per_gpu_hour": 4.1,
    "mfu": 0.41,
    "layout": {"dp": 16, "tp": 1, "pp": 1},
    "params_b": 8.03,
}
UNPRICED = {**PRICED, "pricing_model": "spot", "cost_usd": None, "error": "aws-p5 has no spot price"}
FAILED = {
    "accelerator": "a100-80gb",
    "nodes": 1,
    "gpus": 8,
    "model": "llama3-8b",
    "pricing_model": "own",
    "fits": False,
    "error": "a100-80gb has no dense fp8 peak",
}
# A row stored before sweeps held gpus and layout.
OLD = {k: v for k, v in PRICED.items() if k not in {"gpus", "layout"}}
COMPARED = {
    "design": 7,
    "name": "70B on H100",
    "version": 2,
    "accelerator": "h100-sxm",
    "nodes": 64,
    "gpus": 512,
    "fits": True,
    "days": 30.5,
    "days_failure_free": 28.0,
    "mfu": 0.4,
    "best_option": "AWS p5 On-demand",
    "best_run_cost_usd": None,
    "options": [{"key": "own", "days": 30.5}],
}
COMPARE_FAILED = {"design": 8, "name": "x", "version": 1, "error": "no layout fits"}


@pytest.mark.parametrize("row", [PRICED, UNPRICED, FAILED, OLD])
def test_a_stored_sweep_row_round_trips_key_for_key(row: dict[str, Any]) -> None:
    out = SweepRow.from_json(row).to_json()
    assert list(out.items()) == list(row.items())


@pytest.mark.parametrize("row", [COMPARED, COMPARE_FAILED])
def test_a_stored_compare_row_round_trips_key_for_key(row: dict[str, Any]) -> None:
    out = CompareRow.from_json(row).to_json()
    assert list(out.items()) == list(row.items())


def test_a_sweep_row_reads_as_attributes() -> None:
    priced, unpriced, failed = (SweepRow.from_json(r) for r in (PRICED, UNPRICED, FAILED))
    assert (priced.priced, priced.cost_usd, priced.error) == (True, 41000.0, None)
    assert (unpriced.priced, unpriced.error) == (False, "aws-p5 has no spot price")
    assert (failed.priced, failed.days, failed.layout) == (False, None, None)


def test_sweep_params_fill_the_engines_defaults_and_pass_on_only_the_cost_figures_given() -> None:
    params = SweepParams.from_json({"training": {"tokens": 1e11}, "utilization": 0.5, "accelerators": ["x"]})
    assert params.cluster("h100-sxm", 4) == {
        "accelerator": "h100-sxm",
        "gpus_per_node": GPUS_PER_NODE.value,
        "nodes": 4,
        "fabric": FABRIC.value,
        "oversubscription": OVERSUBSCRIPTION.value,
    }
    assert params.cost_overrides() == {"utilization": 0.5}
    assert params.storage_or_default == STORAGE.value
    given = SweepParams.from_json({"training": {}, "gpus_per_node": 4, "fabric": "roce-400", "storage": "s3"})
    assert given.cluster("b200", 2)["gpus_per_node"] == 4 and given.cluster("b200", 2)["fabric"] == "roce-400"
    assert given.storage_or_default == "s3"
