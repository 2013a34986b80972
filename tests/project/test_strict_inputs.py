"""Issue #38 item 6: unknown top-level fields are a 400 naming them on every write (designs, clone, share
links, capacity plans, analyses, catalog), as unknown keys inside ``spec`` already were; catalog numbers
have upper bounds from one table (apps.catalog.models.CATALOG_MAX), enforced by the API, the SkyPilot import
and the admin alike.

Before: ``{"name": "x", "spec": {...}, "colour": "red"}`` saved as if "colour" were not there; a cloud price
of 1.7e308 was saved (then every evaluation answered "overflowed"); a SkyPilot AcceleratorCount of 8.5 or
1e20 was accepted."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.analysis.models import Analysis
from apps.catalog.models import CATALOG_MAX, CloudOffering, CloudPrice, Fabric
from apps.designs.models import Design, ShareLink
from apps.plans.models import CapacityPlan
from tests.designs.test_stale_prices import SPEC
from tests.plans.test_api import SPEC as PLAN_SPEC


def _refused(response: Any, field: str, reason: str = "unknown field") -> None:
    assert response.status_code == 400, response.content[:500]
    fields = response.json()["error"]["fields"]
    assert field in fields, fields
    assert any(reason in message for message in fields[field]), fields[field]


def _design(client: Any) -> int:
    response = client.post("/api/v1/designs/", {"name": "d", "spec": SPEC}, format="json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def test_unknown_fields_on_design_writes_are_refused(user_client: Any, catalog: Any) -> None:
    _refused(user_client.post("/api/v1/designs/", {"name": "d", "spec": SPEC, "colour": 1}), "colour")
    assert not Design.objects.exists()
    design_id = _design(user_client)
    patch = {"version": 1, "name": "renamed", "visibilty": "org"}  # a misspelt field is not ignored
    _refused(user_client.patch(f"/api/v1/designs/{design_id}/", patch, format="json"), "visibilty")
    assert Design.objects.get(pk=design_id).name == "d"
    _refused(user_client.post(f"/api/v1/designs/{design_id}/clone/", {"nmae": "x"}, format="json"), "nmae")
    assert Design.objects.count() == 1
    link = {"label": "finance", "expires": "2030-01-01T00:00:00Z"}
    _refused(user_client.post(f"/api/v1/designs/{design_id}/share-links/", link, format="json"), "expires")
    assert not ShareLink.objects.exists()


def test_unknown_fields_on_plans_and_analyses_are_refused(user_client: Any, catalog: Any) -> None:
    body = {"name": "Plan 2027", "spec": PLAN_SPEC, "owner": 1}
    _refused(user_client.post("/api/v1/capacity-plans/", body, format="json"), "owner")
    assert not CapacityPlan.objects.exists()
    sweep = {"kind": "sweep", "params": {"accelerators": ["h100-sxm"], "nodes": [1]}, "priority": "high"}
    _refused(user_client.post("/api/v1/analyses/", sweep, format="json"), "priority")
    assert not Analysis.objects.exists()


def test_unknown_fields_on_catalog_writes_are_refused_but_read_only_ones_round_trip(
    staff_client: Any, catalog: Any
) -> None:
    _refused(staff_client.patch("/api/v1/fabrics/eth-10g/", {"latency": 3}, format="json"), "latency")
    # A GET's body sent back (read-only fields included) is still a valid PUT.
    fabric = staff_client.get("/api/v1/fabrics/eth-10g/").json()
    assert staff_client.put("/api/v1/fabrics/eth-10g/", fabric, format="json").status_code == 200


@pytest.mark.parametrize("price", [1.7e308, 1e6 + 1])
def test_a_cloud_price_above_its_bound_is_refused(staff_client: Any, catalog: Any, price: float) -> None:
    body = {
        "offering": "aws-p5-48xlarge",
        "pricing_model": "on_demand",
        "usd_per_hour": price,
        "currency": "USD",
        "region": "us-east-1",
        "as_of": "2026-11-01",
        "source": "a quote",
    }
    before = CloudPrice.objects.count()
    _refused(
        staff_client.post("/api/v1/cloud-prices/", body, format="json"),
        "usd_per_hour",
        "less than or equal to 1000000",
    )
    assert CloudPrice.objects.count() == before
    assert CATALOG_MAX["cloudprice.usd_per_hour"] == 1e6
    body["usd_per_hour"] = 1e6  # the bound itself is accepted
    assert staff_client.post("/api/v1/cloud-prices/", body, format="json").status_code == 201


def test_catalog_bounds_apply_to_every_bounded_field(staff_client: Any, catalog: Any) -> None:
    _refused(
        staff_client.patch("/api/v1/fabrics/eth-10g/", {"collective_efficiency": 1.5}, format="json"),
        "collective_efficiency",
        "less than or equal to 1.0",
    )
    assert Fabric.objects.get(slug="eth-10g").collective_efficiency <= 1
    _refused(
        staff_client.patch("/api/v1/server-types/dgx-h100/", {"gpus_per_node": 10**20}, format="json"),
        "gpus_per_node",
        "less than or equal to 72",
    )


SKYPILOT = "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"


@pytest.mark.parametrize("count", ["8.5", "1e20", "100"])
def test_a_skypilot_accelerator_count_that_is_no_whole_node_is_refused(
    staff_client: Any, catalog: Any, count: str
) -> None:
    text = SKYPILOT + f"p9.weird,H100,{count},98.32,,us-east-1\n"
    upload = SimpleUploadedFile("vms.csv", text.encode(), content_type="text/csv")
    offerings = CloudOffering.objects.count()
    response = staff_client.post(
        "/api/v1/cloud-prices/import-skypilot/", {"cloud": "aws", "file": upload}, format="multipart"
    )
    _refused(response, "line 2.AcceleratorCount", "whole number of GPUs from 1 to 72")
    assert CloudOffering.objects.count() == offerings


def test_a_skypilot_price_above_the_bound_is_refused(staff_client: Any, catalog: Any) -> None:
    text = SKYPILOT + "p5.48xlarge,H100,8,1.7e308,,us-east-1\n"
    upload = SimpleUploadedFile("vms.csv", text.encode(), content_type="text/csv")
    response = staff_client.post(
        "/api/v1/cloud-prices/import-skypilot/", {"cloud": "aws", "file": upload}, format="multipart"
    )
    _refused(response, "line 2.Price", "at most 1e+06")


def test_a_shared_fractional_gpu_is_still_skipped_not_refused(staff_client: Any, catalog: Any) -> None:
    text = SKYPILOT + "g5g.shared,H100,0.25,1.0,,us-east-1\n"
    upload = SimpleUploadedFile("vms.csv", text.encode(), content_type="text/csv")
    response = staff_client.post(
        "/api/v1/cloud-prices/import-skypilot/", {"cloud": "aws", "file": upload}, format="multipart"
    )
    assert response.status_code == 200, response.content[:300]
    assert "shared or fractional" in str(response.json()["skipped"])


# --- errors name the deepest field at fault, and a plan reports all of them ---------------------------------


def test_a_huge_peak_to_mean_is_blamed_on_peak_to_mean(user_client: Any, catalog: Any) -> None:
    body = {"demand": {"requests_per_s": 5, "peak_to_mean": 1e40}}
    response = user_client.post("/api/v1/serving/estimate/", body, format="json")
    # The busiest hour is at most 24 × the mean hour; before, the error named demand.requests_per_s.
    _refused(response, "demand.peak_to_mean", "less than or equal to 24")
    assert "demand.requests_per_s" not in response.json()["error"]["fields"]


def test_nesting_past_64_levels_names_the_deepest_path(user_client: Any, catalog: Any) -> None:
    deep: Any = 1
    for _ in range(70):
        deep = {"a": deep}
    response = user_client.post("/api/v1/designs/", {"name": "d", "spec": {"workload": deep}}, format="json")
    # 64 open objects: the body, spec, workload and 61 × "a"; the 65th is the one refused.
    _refused(response, "spec.workload" + ".a" * 62, "nested more than 64 levels deep")


def test_a_partial_cluster_with_an_unknown_accelerator_names_the_accelerator_too(
    user_client: Any, catalog: Any
) -> None:
    body = {"name": "d", "spec": {"cluster": {"accelerator": "h9000"}}}
    response = user_client.post("/api/v1/designs/", body, format="json")
    _refused(response, "spec.cluster.accelerator", "unknown accelerator 'h9000'")
    _refused(response, "spec.cluster.nodes", "required")


def _plan_errors(client: Any, **changes: Any) -> dict[str, list[str]]:
    import copy

    spec = copy.deepcopy(PLAN_SPEC)
    for path, value in changes.items():
        *parents, key = path.split("__")
        node: Any = spec
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[key] = value
    response = client.post("/api/v1/capacity-plans/", {"name": "p", "spec": spec}, format="json")
    assert response.status_code == 400, response.content[:500]
    assert not CapacityPlan.objects.exists()
    return dict(response.json()["error"]["fields"])


def test_a_huge_training_run_is_blamed_on_gpu_hours_not_the_deadline(user_client: Any, catalog: Any) -> None:
    fields = _plan_errors(user_client, training__0__gpu_hours=1e300)
    assert fields == {"spec.training.0.gpu_hours": ["must be at most 10,000,000,000"]}


def test_a_plan_reports_all_its_errors_at_once(user_client: Any, catalog: Any) -> None:
    # Three values out of range in three sections: all three in one answer.
    fields = _plan_errors(
        user_client,
        training__0__gpu_hours=-1,
        inference__0__offpeak_fraction=2,
        growth_pct_per_month=500,
    )
    assert fields == {
        "spec.growth_pct_per_month": ["must be −50 to 100 (% per month)"],
        "spec.training.0.gpu_hours": ["must be more than zero"],
        "spec.inference.0.offpeak_fraction": ["must be 0 to 1"],
    }
    # Three values of the wrong type: all three too.
    fields = _plan_errors(
        user_client, training__0__gpus="many", inference__0__peak_gpus="x", discount_rate="high"
    )
    assert set(fields) == {"spec.training.0.gpus", "spec.inference.0.peak_gpus", "spec.discount_rate"}
