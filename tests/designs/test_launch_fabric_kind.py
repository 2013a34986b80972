"""The launch exports take the fabric kind from the catalog row of the design's fabric (the one in the
evaluation's input snapshot), not from its slug: a fabric whose slug names no kind still gets its NCCL
settings, and the error for a fabric nowhere in the catalog asks for something a user can do."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.models import Fabric
from apps.designs.demo import demo_load
from apps.designs.launch import launch_torchrun
from apps.designs.services import design_create
from tests.designs.fixtures import evaluation_fixture, with_cluster

pytestmark = pytest.mark.django_db

OPAQUE = "dc7-spine"  # names no kind: not ib-*, roce, efa, eth*


def _opaque_roce_design(owner: Any) -> Any:
    # The seed's RoCE v2 400 GbE figures under a slug that tells nothing, on the demo 8 × 8 H200.
    roce = Fabric.objects.get(slug="roce-400g")
    roce.pk, roce.slug, roce.name = None, OPAQUE, "Site DC7 spine"
    roce.save()
    spec = demo_load()[3].current.spec
    return design_create(
        owner=owner, name="8B on DC7", spec={**spec, "cluster": {**spec["cluster"], "fabric": OPAQUE}}
    )


@pytest.mark.parametrize("fmt", ["torchrun", "sbatch"])
def test_an_opaque_slug_gets_the_catalog_rows_roce_settings(
    catalog: dict[str, int], user_client: Any, fmt: str
) -> None:
    design = _opaque_roce_design(user_client.user)
    response = user_client.get(f"/api/v1/designs/{design.pk}/export/?format={fmt}")
    assert response.status_code == 200, response.content[:300]
    text = response.content.decode()
    assert f"fabric {OPAQUE} (roce)" in text
    # The RoCE-only settings (launch._NCCL["roce"]): GID 3 = RoCE v2 over IPv4, the lossless traffic class.
    assert "export NCCL_IB_GID_INDEX=3  # " in text
    assert "export NCCL_IB_TC=106  # " in text
    assert "export NCCL_IB_QPS_PER_CONNECTION=4  # " in text


def test_a_fabric_nowhere_in_the_catalog_is_told_what_it_can_do() -> None:
    with pytest.raises(ValueError) as error:
        launch_torchrun(evaluation=with_cluster(evaluation_fixture(), fabric=OPAQUE))
    message = str(error.value)
    assert "pick a catalog fabric for spec.cluster.fabric" in message and "fabric_kind" not in message
