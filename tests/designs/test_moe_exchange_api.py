"""The MoE token-exchange fields of a design's training (``workload.training.moe_dispatcher``,
``moe_load_balance``, ``moe_a2a_overlap``, ``moe_shared_expert_overlap``; issue 33 item 1): accepted by the
designs API and timed by the engine, refused with a 400 naming the field, and written to the Megatron launch
export as Megatron-Core's flags (--moe-token-dispatcher-type, --moe-flex-dispatcher-backend,
--overlap-moe-expert-parallel-comm, --moe-pad-expert-input-to-capacity), tested through the URLs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from apps.designs.demo import demo_load
from apps.designs.services import design_create

pytestmark = pytest.mark.django_db


def _mixtral_spec(**training: Any) -> dict[str, Any]:
    # Mixtral 8x7B on the demo's 64 × 8 H100 with tp2 pp4 vpp2 dp64 ep8 (the ep ranks 2 apart: 2 nodes).
    spec = demo_load()[0].current.spec
    train: dict[str, Any] = {"tokens": 1e12, "global_batch_seqs": 1024, "precision": "bf16", **training}
    layout = {"tp": 2, "pp": 4, "dp": 64, "cp": 1, "ep": 8, "vpp": 2, "micro_batch": 1}
    layout.update(recompute="none", sharding="zero1", sequence_parallel=True)
    workload = {"model": {"preset": "mixtral-8x7b"}, "training": train}
    return {**spec, "workload": workload, "parallelism": layout}


def _flag(text: str, flag: str) -> str | None:
    found = re.search(rf"{re.escape(flag)} (\S+)", text)
    return found.group(1) if found else None


def _export(user_client: Any, **training: Any) -> str:
    design = design_create(owner=user_client.user, name="Mixtral", spec=_mixtral_spec(**training))
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:400]
    return str(response.content.decode())


def test_export_writes_the_profiles_dispatcher_when_the_spec_is_silent(
    catalog: dict[str, int], user_client: Any
) -> None:
    # Megatron-Core's own default is allgather; the estimate timed the Megatron-Core profile's alltoall.
    text = _export(user_client)
    assert _flag(text, "--moe-token-dispatcher-type") == "alltoall"
    assert "--overlap-moe-expert-parallel-comm" not in text
    assert "--moe-pad-expert-input-to-capacity" not in text


def test_export_writes_hybridep_overlap_and_capacity_padding(
    catalog: dict[str, int], user_client: Any
) -> None:
    text = _export(
        user_client,
        moe_dispatcher="hybridep",
        moe_a2a_overlap=True,
        moe_load_balance="balanced",
        moe_shared_expert_overlap=False,
    )
    assert _flag(text, "--moe-token-dispatcher-type") == "flex"
    assert _flag(text, "--moe-flex-dispatcher-backend") == "hybridep"
    assert "--overlap-moe-expert-parallel-comm" in text and "--delay-wgrad-compute" in text
    assert _flag(text, "--moe-expert-capacity-factor") == "1.0"
    assert "--moe-pad-expert-input-to-capacity" in text


def test_the_dispatcher_moves_the_evaluated_all_to_all(catalog: dict[str, int], user_client: Any) -> None:
    # One design per dispatcher through the API: DeepEP sends fewer copies over the fabric (one per remote
    # node, not one per remote expert) and allgather gathers every token of the tp × ep group.
    times = {}
    for dispatcher in ("alltoall", "deepep", "allgather"):
        spec = _mixtral_spec(moe_dispatcher=dispatcher)
        response = user_client.post("/api/v1/designs/", {"name": dispatcher, "spec": spec}, format="json")
        assert response.status_code == 201, response.content[:400]
        evaluated = user_client.post(f"/api/v1/designs/{response.json()['id']}/evaluate/")
        assert evaluated.status_code == 200, evaluated.content[:400]
        times[dispatcher] = evaluated.json()["training"]["step_time_s"]["moe_all_to_all"]
    assert times["deepep"] < times["alltoall"] < times["allgather"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("moe_dispatcher", "nccl"),
        ("moe_load_balance", "even"),
        ("moe_a2a_overlap", "on"),
    ],
)
def test_a_bad_moe_field_is_a_400_naming_it(
    catalog: dict[str, int], user_client: Any, field: str, value: Any
) -> None:
    spec = _mixtral_spec(**{field: value})
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": spec}, format="json")
    assert response.status_code == 400, response.content[:400]
    assert f"spec.workload.training.{field}" in response.json()["error"]["fields"]
