"""The launch export passes the design's expert tensor-parallel size (``workload.training.etp``) to
Megatron as ``--expert-tensor-parallel-size`` (megatron/training/arguments.py; absent, Megatron-Core uses
tp), tested through the export URL a user downloads."""

from __future__ import annotations

import re
from typing import Any

import pytest

from apps.designs.demo import demo_load
from apps.designs.services import design_create

pytestmark = pytest.mark.django_db


def _mixtral_spec(*, etp: int | None) -> dict[str, Any]:
    # Mixtral 8x7B on the demo's 64 × 8 H100 with tp4 pp32 dp4 ep8: ep 8 > dp 4, which Megatron-Core runs
    # only with the experts laid over the TP ranks as well (etp 1: etp × ep = 8 divides tp × dp = 16).
    spec = demo_load()[0].current.spec
    training: dict[str, Any] = {"tokens": 1e12, "global_batch_seqs": 1024, "precision": "bf16"}
    if etp is not None:
        training["etp"] = etp
    layout = {"tp": 4, "pp": 32, "dp": 4, "cp": 1, "ep": 8, "vpp": 1, "micro_batch": 1}
    layout.update(recompute="none", sharding="zero1", sequence_parallel=True)
    workload = {"model": {"preset": "mixtral-8x7b"}, "training": training}
    return {**spec, "workload": workload, "parallelism": layout}


def _flag(text: str, flag: str) -> str | None:
    found = re.search(rf"{re.escape(flag)} (\S+)", text)
    return found.group(1) if found else None


def test_export_passes_the_expert_tensor_parallel_size(catalog: dict[str, int], user_client: Any) -> None:
    design = design_create(owner=user_client.user, name="Mixtral etp 1", spec=_mixtral_spec(etp=1))
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:400]
    text = response.content.decode()
    assert _flag(text, "--expert-model-parallel-size") == "8"
    assert _flag(text, "--expert-tensor-parallel-size") == "1"
    assert _flag(text, "--tensor-model-parallel-size") == "4"


def test_the_same_layout_without_etp_is_refused_naming_the_field(
    catalog: dict[str, int], user_client: Any
) -> None:
    spec = _mixtral_spec(etp=None)
    response = user_client.post("/api/v1/designs/", {"name": "no etp", "spec": spec}, format="json")
    assert response.status_code == 400, response.content[:400]
    fields = response.json()["error"]["fields"]
    assert fields["spec.parallelism.ep"] == ["ep 8 must divide 8 experts and dp × cp 4"]


def test_an_etp_that_does_not_divide_the_expert_width_is_refused(
    catalog: dict[str, int], user_client: Any
) -> None:
    spec = _mixtral_spec(etp=3)
    response = user_client.post("/api/v1/designs/", {"name": "etp 3", "spec": spec}, format="json")
    assert response.status_code == 400, response.content[:400]
    fields = response.json()["error"]["fields"]
    assert fields["spec.workload.training.etp"] == ["etp 3 does not divide expert_ffn_hidden 14336"]
