"""An engine's error names the field by the path the user sent (``spec.costs.cloud.1.offering``), at save
(POST /api/v1/designs/), at evaluation (POST /api/v1/designs/<id>/evaluate/) and for a sweep
(POST /api/v1/analyses/): the cost engine's inputs carry each part's path (engine.cost.cost_inputs), the
training, RL and serving parsers are told where each section sits (training.workload.Sections), so nothing
maps an engine path back afterwards."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.catalog.models import CloudOffering
from apps.designs.models import Design, DesignVersion

SPEC: dict[str, Any] = {
    "workload": {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_tokens": 4194304, "precision": "bf16"},
    },
    "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8, "fabric": "ib-ndr400"},
    "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "recompute": "full", "sharding": "zero3"},
    "costs": {
        "cloud": [{"offering": "aws-p5-48xlarge"}, {"offering": "gcp-a3-highgpu-8g"}],
    },
}
SWEEP = {
    "model": {"preset": "llama3-8b"},
    "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
    "accelerators": ["h100-sxm"],
    "nodes": [1, 2],
    "pricing_models": ["on_demand", "own"],
}


def _fields(response: Any) -> dict[str, list[str]]:
    assert response.status_code == 400, response.content[:500]
    fields: dict[str, list[str]] = response.json()["error"]["fields"]
    return fields


def _post_design(client: Any, spec: dict[str, Any]) -> Any:
    return client.post("/api/v1/designs/", {"name": "paths", "spec": spec}, format="json")


def _evaluate_stored(client: Any, edit: Any) -> Any:
    """Save SPEC, then change the stored version behind the API's back (a spec saved under an older catalog
    or rule), and evaluate it through the API."""
    response = _post_design(client, copy.deepcopy(SPEC))
    assert response.status_code == 201, response.json()
    version = DesignVersion.objects.get(design_id=response.json()["id"])
    edit(version.spec)
    version.save()
    return client.post(f"/api/v1/designs/{version.design_id}/evaluate/", format="json")


def test_an_unknown_offering_at_cloud_index_1_is_named_at_index_1_on_save(
    user_client: Any, catalog: Any
) -> None:
    spec = copy.deepcopy(SPEC)
    spec["costs"]["cloud"][1]["offering"] = "aws-p99"
    fields = _fields(_post_design(user_client, spec))
    assert fields == {"spec.costs.cloud.1.offering": ["unknown offering 'aws-p99'"]}
    assert not Design.objects.exists()


def test_an_offering_gone_from_the_catalog_is_named_at_its_cloud_index_on_evaluate(
    user_client: Any, catalog: Any
) -> None:
    # The cost engine raises this one (the service's reference check runs at save only): its request's
    # ``cloud.offering`` is the spec's second cloud choice.
    def drop_second(spec: dict[str, Any]) -> None:
        CloudOffering.objects.filter(slug=spec["costs"]["cloud"][1]["offering"]).delete()

    fields = _fields(_evaluate_stored(user_client, drop_second))
    assert list(fields) == ["spec.costs.cloud.1.offering"]
    assert fields["spec.costs.cloud.1.offering"][0].startswith("unknown cloud offering 'gcp-a3-highgpu-8g'")


def test_an_unknown_accelerator_is_named_by_its_spec_path_on_save_and_on_evaluate(
    user_client: Any, catalog: Any
) -> None:
    spec = copy.deepcopy(SPEC)
    spec["cluster"]["accelerator"] = "h9000"
    assert list(_fields(_post_design(user_client, spec))) == ["spec.cluster.accelerator"]

    def rename(stored: dict[str, Any]) -> None:
        stored["cluster"]["accelerator"] = "h9000"

    fields = _fields(_evaluate_stored(user_client, rename))
    assert list(fields) == ["spec.cluster.accelerator"]
    assert fields["spec.cluster.accelerator"][0].startswith("unknown accelerator 'h9000'")


def test_a_tp_that_does_not_divide_the_heads_is_named_spec_parallelism_tp(
    user_client: Any, catalog: Any
) -> None:
    # Llama-3-70B has 64 query heads and 8 KV heads: TP 3 divides neither.
    spec = copy.deepcopy(SPEC)
    spec["parallelism"]["tp"] = 3
    fields = _fields(_post_design(user_client, spec))
    assert list(fields) == ["spec.parallelism.tp"], fields


def test_a_bad_serving_field_is_named_under_spec_serving(user_client: Any, catalog: Any) -> None:
    spec = copy.deepcopy(SPEC)
    spec["serving"] = {"targets": {"ttft_s": 2.0, "tpot_s": 0.05}, "demand": {"requests_per_s": -1}}
    fields = _fields(_post_design(user_client, spec))
    assert list(fields) == ["spec.serving.demand.requests_per_s"], fields


@pytest.mark.parametrize(
    ("params", "field"),
    [
        # 2,097,151 tokens is not a whole number of 8,192-token sequences.
        (
            {"training": {**SWEEP["training"], "global_batch_tokens": 2097151}},
            "params.training.global_batch_tokens",
        ),
        (
            {"models": [{"preset": "llama3-8b"}, {"preset": "llama3-70b", "heads": 0}]},
            "params.models.1.heads",
        ),
    ],
)
def test_a_sweep_refused_by_the_engines_names_the_sweep_parameter(
    user_client: Any, catalog: Any, params: dict[str, Any], field: str
) -> None:
    response = user_client.post(
        "/api/v1/analyses/", {"kind": "sweep", "params": {**SWEEP, **params}}, format="json"
    )
    assert list(_fields(response)) == [field]
