"""Precision recipes and Muon in sweeps and recommendations (/api/v1/analyses/): an NVFP4 sweep runs on
Blackwell and says, on each Hopper row, that the part has no hardware for it; a recommendation takes any
recipe and refuses an unknown one naming params.precision."""

from __future__ import annotations

from typing import Any

from apps.analysis.models import Analysis
from tests.analysis.test_api import _post

NVFP4 = {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "nvfp4", "optimizer": "muon"}


def test_an_nvfp4_muon_sweep_runs_on_blackwell_and_refuses_hopper_on_its_rows(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    params = {
        "model": {"preset": "llama3-8b"},
        "training": NVFP4,
        "accelerators": ["h100-sxm", "b200"],
        "nodes": [1],
        "pricing_models": ["on_demand"],
    }
    response = _post(user_client, {"kind": "sweep", "params": params}, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    rows = user_client.get(response["Location"]).json()["result"]["rows"]
    h100 = [r for r in rows if r["accelerator"] == "h100-sxm"]
    b200 = [r for r in rows if r["accelerator"] == "b200"]
    assert h100 and all("no hardware support for NVFP4" in r["error"] for r in h100)
    assert b200 and all("error" not in r and r["days"] > 0 for r in b200)


def test_a_recommendation_takes_a_recipe_and_refuses_an_unknown_one(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    params = {"model": {"preset": "llama3-8b"}, "tokens": 1e11, "accelerators": ["b200"], "nodes": [1, 2]}
    bad = user_client.post(
        "/api/v1/analyses/", {"kind": "recommend", "params": {**params, "precision": "fp6"}}, format="json"
    )
    assert bad.status_code == 400
    assert "params.precision" in bad.json()["error"]["fields"]
    assert Analysis.objects.count() == 0
    payload = {"kind": "recommend", "params": {**params, "precision": "mxfp8"}}
    response = _post(user_client, payload, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    result = user_client.get(response["Location"]).json()["result"]
    assert result["rows"] and all("error" not in r for r in result["rows"])
