"""Issue #38 item 2: a catalog row that a design, plan, unfinished sweep or default uses cannot be deleted;
the API's DELETE and the admin's delete page answer 409 naming who uses it, and nothing is deleted.
Retiring the row (``retired: true``) hides it from the pickers and keeps it for the designs that use it.

Before: ``DELETE /api/v1/fabrics/ib-ndr400/`` answered 204 and every design on that fabric then answered 400
"unknown fabric" on evaluate, clone and export."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from django.utils import timezone

from apps.analysis.models import Analysis
from apps.catalog.models import CloudOffering, Fabric, ServerType, StorageTier
from apps.plans.models import CapacityPlan, PlanVersion
from tests.designs.test_stale_prices import SPEC

# A design on rows that no default names (defaults protect h100-sxm, ib-ndr400, lustre, aws-p5-48xlarge),
# so that each row here is protected by the design alone.
A100_SPEC = copy.deepcopy(SPEC)
A100_SPEC["cluster"].update(accelerator="a100-80gb", fabric="roce-400g", storage="nfs")
A100_OFFERING = "azure-standard-nd96amsr-a100-v4"
A100_SPEC["costs"]["cloud"] = [{"offering": A100_OFFERING, "pricing_models": ["on_demand"]}]


def _design(client: Any, name: str = "A100 on RoCE") -> int:
    response = client.post("/api/v1/designs/", {"name": name, "spec": A100_SPEC}, format="json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def _conflict(response: Any, *needles: str) -> str:
    assert response.status_code == 409, response.content[:500]
    message = response.json()["error"]["message"]
    for needle in needles:
        assert needle in message, message
    return str(message)


@pytest.mark.parametrize(
    ("url", "model"),
    [
        ("/api/v1/fabrics/roce-400g/", Fabric),
        ("/api/v1/storage-tiers/nfs/", StorageTier),
        (f"/api/v1/cloud-offerings/{A100_OFFERING}/", CloudOffering),
        # Owning an 8 × A100 80GB cluster buys this server type: the design's on-prem price comes from it.
        ("/api/v1/server-types/dgx-a100-640gb/", ServerType),
    ],
)
def test_delete_of_a_row_a_design_uses_is_409_naming_the_design(
    staff_client: Any, user_client: Any, catalog: Any, url: str, model: Any
) -> None:
    design_id = _design(user_client)
    _conflict(staff_client.delete(url), f"design {design_id} “A100 on RoCE”", "retire")
    assert model.objects.filter(slug=url.rstrip("/").rsplit("/", 1)[1]).exists()
    # The design still evaluates, as before the attempt.
    assert user_client.post(f"/api/v1/designs/{design_id}/evaluate/").status_code == 200


def test_delete_of_an_unused_row_still_works(staff_client: Any, catalog: Any) -> None:
    assert staff_client.delete("/api/v1/fabrics/eth-10g/").status_code == 204
    assert not Fabric.objects.filter(slug="eth-10g").exists()


def test_the_defaults_protect_their_rows(staff_client: Any, catalog: Any) -> None:
    _conflict(staff_client.delete("/api/v1/fabrics/ib-ndr400/"), "the default fabric")
    _conflict(staff_client.delete("/api/v1/storage-tiers/lustre/"), "the default storage tier")
    _conflict(staff_client.delete("/api/v1/cloud-offerings/aws-p5-48xlarge/"), "the default cloud offering")
    assert Fabric.objects.filter(slug="ib-ndr400").exists()


def test_a_capacity_plan_protects_the_offering_it_names(
    staff_client: Any, user_client: Any, catalog: Any
) -> None:
    plan = CapacityPlan.objects.create(owner=user_client.user, name="2027 capacity")
    spec = {
        "cloud_options": [{"name": "burst", "offering": "coreweave-8x-b200-node", "pricing_model": "spot"}]
    }
    PlanVersion.objects.create(plan=plan, number=1, spec=spec, created_by=user_client.user)
    _conflict(
        staff_client.delete("/api/v1/cloud-offerings/coreweave-8x-b200-node/"),
        f"capacity plan {plan.pk} “2027 capacity”",
    )


def test_a_running_sweep_protects_its_accelerators_but_a_finished_one_does_not(
    staff_client: Any, user_client: Any, catalog: Any
) -> None:
    # The accelerator's server types and offerings point at it (a database PROTECT, its own 409): remove
    # them first, so that only the sweep stands in the way.
    ServerType.objects.filter(accelerator__slug="mi300x").delete()
    CloudOffering.objects.filter(accelerator__slug="mi300x").delete()
    sweep = Analysis.objects.create(
        owner=user_client.user,
        kind=Analysis.Kind.SWEEP,
        status=Analysis.Status.RUNNING,
        params={"accelerators": ["mi300x"], "nodes": [8]},
        snapshot={},
        input_hash="x" * 64,
        deadline_at=timezone.now() + dt.timedelta(hours=1),
    )
    _conflict(staff_client.delete("/api/v1/accelerators/mi300x/"), f"sweep {sweep.pk} (running)")
    sweep.status = Analysis.Status.SUCCEEDED  # a finished sweep's result keeps its own snapshot
    sweep.save()
    assert staff_client.delete("/api/v1/accelerators/mi300x/").status_code == 204


def test_retiring_hides_a_row_from_pickers_and_keeps_it_for_its_designs(
    client: Any, staff_client: Any, user_client: Any, catalog: Any
) -> None:
    design_id = _design(user_client)
    response = staff_client.patch("/api/v1/fabrics/roce-400g/", {"retired": True}, format="json")
    assert response.status_code == 200 and response.json()["retired"] is True
    listed = staff_client.get("/api/v1/fabrics/?retired=false").json()["results"]
    assert "roce-400g" not in {f["slug"] for f in listed}
    client.force_login(user_client.user)
    new_page = client.get("/designs/new/").content.decode()
    assert 'value="roce-400g"' not in new_page and 'value="ib-ndr400"' in new_page
    # The editor of the design on it still offers it (else saving would silently change the fabric).
    assert 'value="roce-400g"' in client.get(f"/designs/{design_id}/edit/").content.decode()
    # Evaluate and clone still work on the retired row.
    assert user_client.post(f"/api/v1/designs/{design_id}/evaluate/").status_code == 200
    assert user_client.post(f"/api/v1/designs/{design_id}/clone/", {}, format="json").status_code == 201


def test_admin_delete_page_of_a_used_row_is_409_and_deletes_nothing(
    client: Any, user_client: Any, catalog: Any, django_user_model: Any
) -> None:
    design_id = _design(user_client)
    admin = django_user_model.objects.create_superuser("root", password="pw-root-123")
    client.force_login(admin)
    fabric = Fabric.objects.get(slug="roce-400g")
    url = f"/admin/catalog/fabric/{fabric.pk}/delete/"
    for response in (client.get(url), client.post(url, {"post": "yes"})):
        assert response.status_code == 409
        assert f"design {design_id} “A100 on RoCE”" in response.content.decode()
    assert Fabric.objects.filter(slug="roce-400g").exists()
    # An unused row deletes as before.
    unused = Fabric.objects.get(slug="eth-10g")
    response = client.post(f"/admin/catalog/fabric/{unused.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302 and not Fabric.objects.filter(slug="eth-10g").exists()
    # The bulk action retires instead of deleting.
    changelist = client.post(
        "/admin/catalog/fabric/", {"action": "retire_selected", "_selected_action": [fabric.pk]}
    )
    assert changelist.status_code == 302
    fabric.refresh_from_db()
    assert fabric.retired is True


def test_delete_of_a_cloud_price_is_not_a_reference_check(staff_client: Any, catalog: Any) -> None:
    from apps.catalog.models import CloudPrice

    price = CloudPrice.objects.filter(offering__slug=A100_OFFERING).first()
    assert price is not None
    assert staff_client.delete(f"/api/v1/cloud-prices/{price.pk}/").status_code == 204
    assert not CloudPrice.objects.filter(pk=price.pk).exists()
