"""A key the design spec does not define is refused, naming it; before, it was dropped in silence (a misspelt
"goal" saved as "no goals", ``parallelism: {"bogus": 1}`` saved as ``{}``). Keys the engine reads are kept."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design

pytestmark = pytest.mark.django_db


def _post(client: Client, spec: dict[str, Any]) -> Any:
    return client.post("/api/v1/designs/", {"name": "d", "spec": spec}, content_type="application/json")


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ((), "spec.goal"),
        (("cluster",), "spec.cluster.node"),
        (("costs",), "spec.costs.horizon"),
        (("workload", "training"), "spec.workload.training.token"),
        (("parallelism",), "spec.parallelism.bogus"),
    ],
)
def test_an_unknown_spec_key_is_a_400_naming_it_and_nothing_is_saved(
    alice_client: Client, demos: list[Any], where: tuple[str, ...], field: str
) -> None:
    spec = copy.deepcopy(demos[3].current.spec)
    target = spec
    for key in where:
        target = target[key]
    target[field.rsplit(".", 1)[1]] = 1
    response = _post(alice_client, spec)
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == [field] and fields[field][0].startswith("unknown field; known: ")
    assert not Design.objects.filter(owner__username="alice").exists()


def test_model_keys_the_engine_reads_are_kept(alice_client: Client, demos: list[Any]) -> None:
    spec = copy.deepcopy(demos[3].current.spec)
    spec["workload"]["model"] = {"preset": "llama3-8b", "tied_embeddings": False, "name": "8B, untied"}
    response = _post(alice_client, spec)
    assert response.status_code == 201, response.content
    assert response.json()["spec"]["workload"]["model"] == spec["workload"]["model"]


def test_an_unknown_pricing_model_in_negotiated_prices_is_a_400_naming_it(
    alice_client: Client, demos: list[Any]
) -> None:
    """``usd_per_node_hour: {"bogus": 1}`` used to be stored as given (a dict of any keys)."""
    spec = copy.deepcopy(demos[3].current.spec)
    spec["costs"]["cloud"][0]["usd_per_node_hour"] = {"on_demand": 50.0, "bogus": 1}
    response = _post(alice_client, spec)
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["spec.costs.cloud.0.usd_per_node_hour.bogus"]
    assert fields["spec.costs.cloud.0.usd_per_node_hour.bogus"][0].startswith(
        "unknown field; known: on_demand"
    )
    spec["costs"]["cloud"][0].update(usd_per_node_hour={"on_demand": 50.0}, pricing_models=["on_demand"])
    saved = _post(alice_client, spec)
    assert saved.status_code == 201, saved.content
    assert saved.json()["spec"]["costs"]["cloud"][0]["usd_per_node_hour"] == {"on_demand": 50.0}
