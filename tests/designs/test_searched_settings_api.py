"""The run settings a layout search chooses (engine/training/search_settings.py) reach the user: the design's
evaluation states them beside the layout, and the launch export carries the offload the search chose
(--cpu-offloading-num-layers, Megatron-LM arguments.py at d98e8a64), read through the URLs a user calls."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.designs.demo import demo_load
from apps.designs.services import design_create
from tests.designs.test_launch import flags

pytestmark = pytest.mark.django_db


def _design(owner: Any, parallelism: dict[str, Any], training: dict[str, Any] | None = None) -> Any:
    spec = copy.deepcopy(demo_load()[3].current.spec)
    # The search chooses the offloads only when asked (search_settings.py: host memory is not modelled).
    spec["workload"]["training"].update({"search_offload": True, **(training or {})})
    spec["parallelism"] = parallelism
    return design_create(owner=owner, name="8B searched settings", spec=spec)


# The demo's Llama 3 8B on 64 H200 at tp 1, pp 1, cp 1, no recompute and micro-batch 8: the activations of
# 32 layers (about 300 GiB) do not fit in 141 GB without offload, so the search (over the sharding modes)
# offloads most layers' activations to the host over its PCIe Gen5 link.
LAYOUT = {"tp": 1, "pp": 1, "cp": 1, "micro_batch": 8, "recompute": "none"}


def test_evaluation_states_the_searched_settings_and_the_export_carries_the_offload(
    catalog: dict[str, int], user_client: Any
) -> None:
    design = _design(user_client.user, LAYOUT)
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:300]
    offloaded = flags(response.content.decode().split())["--cpu-offloading-num-layers"]
    evaluated = user_client.post(f"/api/v1/designs/{design.pk}/evaluate/", {}, format="json")
    assert evaluated.status_code in (200, 201), evaluated.content[:300]
    training = evaluated.json()["training"]
    assert training["mode"] == "search"
    assert 0 < training["settings"]["activation_offload_layers"] == int(offloaded) < 32
    assert training["settings"]["tp_comm_overlap"] is True


def test_an_offload_the_spec_fixes_is_not_searched(catalog: dict[str, int], user_client: Any) -> None:
    design = _design(user_client.user, {**LAYOUT, "micro_batch": 1}, {"activation_offload_layers": 0})
    evaluated = user_client.post(f"/api/v1/designs/{design.pk}/evaluate/", {}, format="json")
    assert evaluated.status_code in (200, 201), evaluated.content[:300]
    assert "activation_offload_layers" not in evaluated.json()["training"]["settings"]
