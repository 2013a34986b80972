"""Issue 19 item 3 through the API: MLA, MTP, head_dim and pipeline layouts in a design spec are evaluated,
and a bad one is a 400 naming its spec path."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db

NO_CLOUD = {"horizon_years": 3, "utilization": 0.7, "cloud": []}


def _spec(training: dict[str, Any], model: dict[str, Any]) -> dict[str, Any]:
    return {
        "workload": {
            "model": model,
            "training": {"tokens": 1e12, "global_batch_seqs": 1024, "precision": "bf16", **training},
        },
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 128, "fabric": "ib-ndr400"},
        "parallelism": {
            "tp": 2,
            "pp": 16,
            "ep": 32,
            "micro_batch": 1,
            "recompute": "full",
            "sharding": "zero1",
        },
        "costs": NO_CLOUD,
    }


def test_deepseek_v3_with_its_pipeline_layout_is_evaluated(user_client: Any, catalog: Any) -> None:
    spec = _spec({"pipeline_layout": "Et*3|(tt|)*29,m|L"}, {"preset": "deepseek-v3"})
    response = user_client.post("/api/v1/designs/", {"name": "dsv3", "spec": spec}, format="json")
    assert response.status_code == 201, response.content


@pytest.mark.parametrize(
    ("training", "model", "path"),
    [
        (
            {"pipeline_layout": "Et*3|(tt|)*28,m|L"},
            {"preset": "deepseek-v3"},
            "spec.workload.training.pipeline_layout",
        ),
        (
            {"pipeline_layout": [4, "x"]},
            {"preset": "deepseek-v3"},
            "spec.workload.training.pipeline_layout.1",
        ),
        ({}, {"preset": "deepseek-v3", "kv_heads": 8}, "spec.workload.model.kv_heads"),
        ({}, {"preset": "qwen3-30b-a3b", "head_dim": 0}, "spec.workload.model.head_dim"),
        ({}, {"preset": "deepseek-v3", "mtp_depth": 2.5}, "spec.workload.model.mtp_depth"),
    ],
)
def test_a_bad_shape_or_layout_is_a_400_naming_the_field(
    user_client: Any, catalog: Any, training: dict[str, Any], model: dict[str, Any], path: str
) -> None:
    response = user_client.post(
        "/api/v1/designs/", {"name": "bad", "spec": _spec(training, model)}, format="json"
    )
    assert response.status_code == 400, response.content
    assert path in response.json()["error"]["fields"], response.json()
