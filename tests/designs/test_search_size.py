"""What a request computes is bounded: a layout search over more GPUs than a search may cover is refused at
save naming spec.cluster.nodes, and page views reuse the stored evaluation instead of searching again
(issue #20, part C)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from apps.designs import services
from apps.designs.models import Design, Evaluation
from clusterdesigner.engine.training import layout_search as search

NO_CLOUD = {"horizon_years": 3, "utilization": 0.7, "cloud": []}


def _spec(preset: str, accelerator: str, nodes: int, gpus_per_node: int) -> dict[str, Any]:
    return {
        "workload": {
            "model": {"preset": preset},
            "training": {"tokens": 1e12, "global_batch_tokens": 4194304, "precision": "bf16"},
        },
        "cluster": {
            "accelerator": accelerator,
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "fabric": "ib-ndr400",
        },
        "parallelism": "search",
        "costs": NO_CLOUD,
    }


def test_a_search_over_100000_nodes_of_72_gpus_is_refused_at_once_naming_the_nodes(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "At once": refused on the GPU count before a layout is counted or searched (either would raise here).
    # The wall-clock bound is loose on purpose: the CI machine is shared; a search this size would take hours.
    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the layouts were counted or searched")

    monkeypatch.setattr("clusterdesigner.engine.training.layout_search._grid", never)
    monkeypatch.setattr("clusterdesigner.engine.training.layout_search._structures", never)
    started = time.monotonic()
    response = user_client.post(
        "/api/v1/designs/", {"name": "huge", "spec": _spec("llama3-70b", "gb200", 100_000, 72)}, format="json"
    )
    assert time.monotonic() - started < 5.0
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {
        "spec.cluster.nodes": [
            "a layout search over 7,200,000 GPUs is too large to run here (at most 131,072); use fewer "
            "nodes, or give the whole layout (tp, pp, micro_batch, recompute, sharding)"
        ]
    }
    assert not Design.objects.filter(name="huge").exists()


def test_a_moe_search_of_many_layouts_saves(user_client: Any, catalog: Any) -> None:
    # DeepSeek-V3 on 512 × 8 H100: its 256 experts multiply the layouts; a 1.5 M-layout cap refused it
    # (1,680,000 layouts) until issue 33. The search now skips what cannot be a layout and runs.
    response = user_client.post(
        "/api/v1/designs/", {"name": "moe", "spec": _spec("deepseek-v3", "h100-sxm", 512, 8)}, format="json"
    )
    assert response.status_code == 201, response.content
    design = Design.objects.get(name="moe")
    training = services.design_evaluate(version=design.current).result["training"]
    assert training["layouts_evaluated"] > 100_000
    assert training["parallelism"]["ep"] > 1


def test_a_whole_layout_on_as_many_gpus_is_not_a_search_and_saves(user_client: Any, catalog: Any) -> None:
    spec = _spec("llama3-405b", "h100-sxm", 16_384, 8)
    spec["parallelism"] = {
        "tp": 8,
        "pp": 16,
        "dp": 1024,
        "cp": 1,
        "vpp": 1,
        "micro_batch": 1,
        "recompute": "full",
        "sharding": "zero1",
        "sequence_parallel": True,
    }
    spec["workload"]["training"]["global_batch_tokens"] = 16_777_216
    response = user_client.post("/api/v1/designs/", {"name": "131072 GPUs", "spec": spec}, format="json")
    assert response.status_code == 201, response.content


def test_page_views_reuse_the_stored_evaluation_and_search_no_more(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    searches: list[int] = []
    real = search.search

    def counted(*args: Any, **kwargs: Any) -> Any:
        searches.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr("clusterdesigner.engine.training.training.search", counted)
    created = user_client.post(
        "/api/v1/designs/", {"name": "8B search", "spec": _spec("llama3-8b", "h100-sxm", 8, 8)}, format="json"
    )
    assert created.status_code == 201, created.content
    design_id = created.json()["id"]
    assert len(searches) == 1  # the save evaluates and stores (its check of the spec is that evaluation)
    browser = Client()
    browser.force_login(user_client.user)
    assert browser.get(f"/designs/{design_id}/").status_code == 200
    for url in (f"/designs/{design_id}/", f"/designs/{design_id}/results/", f"/designs/{design_id}/edit/"):
        assert browser.get(url).status_code == 200
    assert user_client.get(f"/api/v1/designs/{design_id}/export/?format=csv").status_code == 200
    assert len(searches) == 1
    assert Evaluation.objects.filter(version__design_id=design_id).count() == 1
    assert (
        services.design_evaluate(version=Design.objects.get(pk=design_id).current).result["training"][
            "layouts_evaluated"
        ]
        > 1000
    )


def test_a_node_of_16_h100_is_refused_naming_gpus_per_node(user_client: Any, catalog: Any) -> None:
    # HGX H100 joins 8 GPUs by NVSwitch (seed catalog scaleup_domain_gpus 8): no 16-GPU H100 node exists.
    response = user_client.post(
        "/api/v1/designs/", {"name": "h100x16", "spec": _spec("llama3-70b", "h100-sxm", 4, 16)}, format="json"
    )
    assert response.status_code == 400, response.content
    message = response.json()["error"]["fields"]["spec.cluster.gpus_per_node"][0]
    assert "at most 8 GPUs in one NVLink 4 (NVSwitch gen3) domain" in message
    assert not Design.objects.filter(name="h100x16").exists()
