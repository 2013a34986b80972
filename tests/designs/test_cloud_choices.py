"""Issue 13, defects 4 and 5: what a design compares in the cloud must be priced, and priced for its
accelerator.

Before the fix the editor's default (AWS p5 with reserved 1 year and spot ticked, neither in the
catalog) saved, evaluated and showed on-demand only with "No findings"; and an MI300X cluster priced on
p5 (8 × H100) saved 201.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design

pytestmark = pytest.mark.django_db


def _post(client: Client, spec: dict[str, Any]) -> Any:
    return client.post("/api/v1/designs/", {"name": "d", "spec": spec}, content_type="application/json")


def test_a_ticked_pricing_model_without_a_price_is_a_400_naming_it(
    alice_client: Client, demos: list[Any]
) -> None:
    spec = copy.deepcopy(demos[0].current.spec)  # 64 × H100, AWS p5: the catalog prices on-demand only
    spec["costs"]["cloud"] = [
        {"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "reserved_1y", "spot"]}
    ]
    response = _post(alice_client, spec)
    assert response.status_code == 400
    message = response.json()["error"]["fields"]["spec.costs.cloud.0.pricing_models"][0]
    assert (
        "p5.48xlarge has no reserved 1 year price in the catalog" in message and "negotiated price" in message
    )
    assert not Design.objects.filter(owner__username="alice").exists()


def test_a_negotiated_price_makes_the_pricing_model_comparable(
    alice_client: Client, demos: list[Any]
) -> None:
    spec = copy.deepcopy(demos[0].current.spec)
    spec["costs"]["cloud"] = [
        {
            "offering": "aws-p5-48xlarge",
            "pricing_models": ["on_demand", "reserved_1y"],
            "usd_per_node_hour": {"reserved_1y": 30.0},
        }
    ]
    created = _post(alice_client, spec)
    assert created.status_code == 201, created.content
    result = alice_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/").json()
    keys = {o["key"] for o in result["options"]}
    assert keys == {"own", "aws-p5-48xlarge:on_demand", "aws-p5-48xlarge:reserved_1y"}


def test_omitted_pricing_models_compare_every_priced_model(alice_client: Client, demos: list[Any]) -> None:
    spec = copy.deepcopy(demos[0].current.spec)
    spec["costs"]["cloud"] = [
        {"offering": "aws-p6-b200-48xlarge"}
    ]  # catalog: on-demand, reserved 1 year, spot
    spec["cluster"]["accelerator"] = "b200"
    response = _post(alice_client, spec)
    assert response.status_code == 201, response.content
    saved = response.json()["spec"]["costs"]["cloud"][0]
    assert saved["pricing_models"] == ["on_demand", "reserved_1y", "spot"]


def test_an_offering_of_another_accelerator_is_a_400_naming_the_offering(
    alice_client: Client, demos: list[Any]
) -> None:
    spec = copy.deepcopy(demos[0].current.spec)
    spec["cluster"]["accelerator"] = "mi300x"
    response = _post(alice_client, spec)
    assert response.status_code == 400
    message = response.json()["error"]["fields"]["spec.costs.cloud.0.offering"][0]
    assert "p5.48xlarge rents 8 × h100-sxm, not the design's mi300x" in message


def test_a_prefilled_editor_prices_the_chosen_accelerator(alice_client: Client, catalog: Any) -> None:
    """A sweep's Pareto point "b200 × 64 nodes (own)" opened an editor priced on AWS p5 (8 × H100)."""
    body = alice_client.get("/designs/new/?accelerator=b200&nodes=64").content.decode()
    from apps.catalog.selectors import engine_catalog

    spec_json = body.split('id="initial-spec" type="application/json">')[1].split("</script>")[0]
    import json

    cloud = json.loads(spec_json)["costs"]["cloud"]
    offerings = engine_catalog().offerings
    assert [offerings[c["offering"]].accelerator for c in cloud] == ["b200"]


def test_the_default_offering_is_the_freshest_on_demand_price_of_the_accelerator() -> None:
    """The rule, not a price: same accelerator, on-demand priced, whole node of the design's size, newest
    on-demand date, then the lower price per GPU-hour. A 2025 row never wins over a 2026 row."""
    from clusterdesigner.engine.core.offerings import CloudOfferingSpec, default_offering

    def offering(slug: str, acc: str, gpus: int, usd: float, as_of: str) -> CloudOfferingSpec:
        return CloudOfferingSpec(
            slug=slug,
            provider="x",
            instance_type=slug,
            region="r",
            accelerator=acc,
            gpu_count=gpus,
            usd_per_hour={"on_demand": usd},
            price_as_of={"on_demand": as_of},
        )

    rows = {
        o.slug: o
        for o in [
            offering("old-cheap", "h100", 8, 10.0, "2025-01-01"),
            offering("new-dear", "h100", 8, 90.0, "2026-09-01"),
            offering("new-cheaper", "h100", 8, 60.0, "2026-09-01"),
            offering("new-single", "h100", 1, 2.0, "2026-10-01"),
            offering("other", "b200", 8, 1.0, "2026-11-01"),
        ]
    }
    assert default_offering(rows, accelerator="h100", gpus_per_node=8) == "new-cheaper"
    assert default_offering(rows, accelerator="h100", gpus_per_node=1) == "new-single"
    assert default_offering(rows, accelerator="mi300x", gpus_per_node=8) is None
    # Another pricing model: only offerings with that model's price count.
    spot = CloudOfferingSpec(
        slug="spot-only",
        provider="x",
        instance_type="s",
        region="r",
        accelerator="h100",
        gpu_count=8,
        usd_per_hour={"spot": 20.0},
        price_as_of={"spot": "2024-01-01"},
    )
    assert default_offering(
        {**rows, "spot-only": spot}, accelerator="h100", gpus_per_node=8, pricing_model="spot"
    ) == ("spot-only")
    assert default_offering(rows, accelerator="h100", gpus_per_node=8, pricing_model="spot") is None


def test_a_stored_design_whose_ticked_model_lost_its_price_says_so(
    alice: Any, alice_client: Client, demos: Any
) -> None:
    """A design saved before the check (or before a catalog row went) is not refused; its result says which
    ticked pricing model it could not compare, instead of dropping it with "No findings"."""
    from apps.designs.models import DesignVersion

    spec = copy.deepcopy(demos[0].current.spec)
    spec["costs"]["cloud"] = [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "reserved_1y"]}]
    design = Design.objects.create(owner=alice, name="old", version=1)
    DesignVersion.objects.create(design=design, number=1, name="old", spec=spec, created_by=alice)
    result = alice_client.post(f"/api/v1/designs/{design.pk}/evaluate/").json()
    unpriced = [f for f in result["findings"] if f["code"] == "pricing_model_unpriced"]
    assert [f["message"] for f in unpriced] == [
        "p5.48xlarge reserved 1 year: asked for but has no price (none in the catalog, none negotiated), "
        "so it is not compared."
    ]
    body = alice_client.get(f"/designs/{design.pk}/").content.decode()
    assert "p5.48xlarge reserved 1 year: asked for but has no price" in body


def test_a_prefill_layout_nested_past_the_parser_depth_is_ignored_not_a_500(
    alice_client: Client, catalog: Any
) -> None:
    response = alice_client.get("/designs/new/?layout=" + "[" * 100_000)
    assert response.status_code == 200 and 'id="design-form"' in response.content.decode()
