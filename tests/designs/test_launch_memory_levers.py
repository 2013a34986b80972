"""The launch export carries the spec's memory levers as Megatron-LM flags (--recompute-modules,
--recompute-method block, --fp8-param-gather, --cpu-offloading-num-layers, --optimizer-cpu-offload; names
from megatron/training/arguments.py and the config dataclasses at NVIDIA/Megatron-LM d98e8a64), read
through the export URL a user downloads."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.designs.demo import demo_load
from apps.designs.services import design_create
from tests.designs.test_launch import flags

pytestmark = pytest.mark.django_db


def _design(owner: Any, training: dict[str, Any], parallelism: dict[str, Any]) -> Any:
    spec = copy.deepcopy(demo_load()[3].current.spec)
    spec["workload"]["training"].update(training)
    spec["parallelism"] = parallelism
    return design_create(owner=owner, name="8B with levers", spec=spec)


def _layout(**fields: Any) -> dict[str, Any]:
    return {"tp": 1, "pp": 1, "dp": 64, "micro_batch": 1, "sharding": "zero1", **fields}


def _export_argv(user_client: Any, training: dict[str, Any], layout: dict[str, Any]) -> list[str]:
    """The torchrun export's arguments of a design with these training fields and layout."""
    design = _design(user_client.user, training, layout)
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:300]
    argv: list[str] = response.content.decode().split()
    return argv


def _list_after(argv: list[str], flag: str, n: int) -> list[str]:
    i = argv.index(flag)
    return argv[i + 1 : i + 1 + n]


def test_export_emits_recompute_modules_and_optimizer_offload(
    catalog: dict[str, int], user_client: Any
) -> None:
    argv = _export_argv(
        user_client,
        {"recompute_modules": ["core_attn", "layernorm"], "optimizer_offload": True},
        _layout(recompute="selective"),
    )
    assert _list_after(argv, "--recompute-modules", 2) == ["core_attn", "layernorm"]
    f = flags(argv)
    assert f["--recompute-granularity"] == "selective" and "--optimizer-cpu-offload" in f


def test_export_emits_activation_offload(catalog: dict[str, int], user_client: Any) -> None:
    design = _design(user_client.user, {"activation_offload_layers": 8}, _layout(recompute="none"))
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:300]
    assert flags(response.content.decode().split())["--cpu-offloading-num-layers"] == "8"


def test_export_emits_module_offload_and_the_fp8_swiglu_input_store(
    catalog: dict[str, int], user_client: Any
) -> None:
    # Megatron-LM: --fine-grained-activation-offloading (store_true), --offload-modules (nargs="*"),
    # --activation-func-fp8-input-store (store_true); the demo's accelerator has a host link.
    argv = _export_argv(
        user_client,
        {"activation_offload_modules": ["core_attn", "attn_proj"], "activation_func_fp8_input_store": True},
        _layout(recompute="selective"),
    )
    assert _list_after(argv, "--offload-modules", 2) == ["core_attn", "attn_proj"]
    f = flags(argv)
    assert "--fine-grained-activation-offloading" in f and "--activation-func-fp8-input-store" in f


def test_design_offloading_attn_proj_alone_is_a_400_on_the_field(
    catalog: dict[str, int], user_client: Any
) -> None:
    spec = copy.deepcopy(demo_load()[3].current.spec)
    spec["workload"]["training"]["activation_offload_modules"] = ["attn_proj"]
    response = user_client.post(
        "/api/v1/designs/", {"name": "attn_proj alone", "spec": spec}, content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    fields = response.json()["error"]["fields"]
    assert "spec.workload.training.activation_offload_modules" in fields, fields


def test_export_emits_block_recompute_and_fp8_param_gather(catalog: dict[str, int], user_client: Any) -> None:
    # Megatron-LM arguments.py @d98e8a64: --recompute-method {uniform,block}, --recompute-num-layers,
    # --fp8-param-gather (store_true).
    design = _design(
        user_client.user,
        {"recompute_num_layers": 4, "fp8_params": True, "precision": "fp8"},
        _layout(recompute="full"),
    )
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:300]
    f = flags(response.content.decode().split())
    assert f["--recompute-granularity"] == "full" and f["--recompute-method"] == "block"
    assert f["--recompute-num-layers"] == "4" and "--fp8-param-gather" in f


def test_design_with_more_block_recompute_layers_than_a_stage_is_a_400_on_the_field(
    catalog: dict[str, int], user_client: Any
) -> None:
    spec = copy.deepcopy(demo_load()[3].current.spec)
    spec["workload"]["training"]["recompute_num_layers"] = 9
    spec["parallelism"] = _layout(pp=4, dp=16, recompute="full")
    response = user_client.post(
        "/api/v1/designs/", {"name": "too many", "spec": spec}, content_type="application/json"
    )
    assert response.status_code == 400, response.content[:300]
    error = response.json()["error"]
    assert any("recompute_num_layers" in path for path in error["fields"]), error


@pytest.mark.parametrize(
    ("kernel", "backend"), [("fused", "fused"), ("flash2", "flash"), ("flash3", "auto"), (None, None)]
)
def test_export_names_the_attention_kernel_the_spec_chose(
    catalog: dict[str, int], user_client: Any, kernel: str | None, backend: str | None
) -> None:
    # Megatron-LM arguments.py @d98e8a64: --attention-backend {flash,fused,unfused,local,auto}, default auto
    # (Transformer Engine's fused attention on Hopper/Blackwell, the Megatron-Core profile's kernel).
    training = {"attention_kernel": kernel} if kernel else {}
    design = _design(user_client.user, training, _layout(recompute="none"))
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:300]
    assert flags(response.content.decode().split()).get("--attention-backend") == backend
