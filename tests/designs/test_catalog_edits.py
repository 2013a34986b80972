"""Catalog edits do not break saved designs: a design's evaluation does not depend on catalog rows it does
not use; one whose row changed or went shows that on its page (never a 500), and its share links keep
serving what they froze (issue #20, part B)."""

from __future__ import annotations

import io
from typing import Any

from django.test import Client

from apps.catalog.models import CloudPrice, StorageTier
from apps.designs.services import design_create, share_link_create

CANNOT = "This design cannot be evaluated"
P5_ON_DEMAND = "aws-p5-48xlarge:on_demand"


def _browser(user: Any = None) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def _run_cost(client: Any, design_id: int, key: str) -> float:
    response = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert response.status_code == 200, response.content
    return next(o["run_cost_usd"] for o in response.json()["options"] if o["key"] == key)


def _zero_spot_price_for_p5() -> None:
    """A spot price of 0 for p5.48xlarge, saved as the admin saves rows (the database allows 0)."""
    offering = CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge").first().offering
    CloudPrice.objects.create(
        offering=offering, pricing_model="spot", usd_per_hour=0, as_of="2030-01-01", source="staff edit"
    )


def test_importing_a_spot_price_of_zero_is_refused_naming_the_row(
    staff_client: Any, demos: list[Any]
) -> None:
    csv = b"offering,pricing_model,usd_per_hour,as_of,source\naws-p5-48xlarge,spot,0,2030-01-01,staff\n"
    response = staff_client.post(
        "/api/v1/cloud-prices/import/", {"file": io.BytesIO(csv)}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {
        "line 2.usd_per_hour": ["must be a finite number above 0, got 0.0"]
    }
    zero = CloudPrice.objects.filter(pricing_model="spot", offering__slug="aws-p5-48xlarge", usd_per_hour=0)
    assert not zero.exists()


def test_a_zero_spot_price_does_not_stop_demo_1_which_uses_no_spot_price(
    user_client: Any, demos: list[Any]
) -> None:
    before = _run_cost(user_client, demos[0].pk, P5_ON_DEMAND)
    _zero_spot_price_for_p5()
    assert _run_cost(user_client, demos[0].pk, P5_ON_DEMAND) == before
    browser = _browser(user_client.user)
    page = browser.get(f"/designs/{demos[0].pk}/")
    assert page.status_code == 200 and CANNOT not in page.content.decode()
    assert 'data-chart="chart-data-memory"' in page.content.decode()
    # The editor's offering prices and a new design's prefill read the whole catalog too.
    assert browser.get("/designs/new/").status_code == 200
    assert browser.get(f"/compare/?ids={demos[0].pk},{demos[2].pk}").status_code == 200
    sweep = {
        "kind": "sweep",
        "params": {"accelerators": ["h100-sxm"], "nodes": [8], "pricing_models": ["on_demand"]},
    }
    assert user_client.post("/api/v1/analyses/", sweep, format="json").status_code == 202


def test_a_design_asking_for_the_zero_spot_price_says_why_it_is_not_compared(
    user_client: Any, demos: list[Any]
) -> None:
    spec = {
        **demos[0].current.spec,
        "costs": {
            **demos[0].current.spec["costs"],
            "cloud": [
                {
                    "offering": "aws-p5-48xlarge",
                    "pricing_models": ["on_demand", "spot"],
                    "usd_per_node_hour": {"spot": 40.0},
                }
            ],
            # Spot for all 64 nodes (the default caps spot at 8 nodes obtainable).
            "spot_capacity_nodes": 64,
        },
    }
    design = design_create(owner=user_client.user, name="p5 spot", spec=spec)
    _zero_spot_price_for_p5()
    # A negotiated spot price does not need the catalog's: both options are compared.
    response = user_client.post(f"/api/v1/designs/{design.pk}/evaluate/")
    assert response.status_code == 200
    assert {o["key"] for o in response.json()["options"]} >= {P5_ON_DEMAND, "aws-p5-48xlarge:spot"}
    # A design saved now asking for the catalog's spot price is told why there is none.
    catalog_spot = {"offering": "aws-p5-48xlarge", "pricing_models": ["spot"]}
    asked = {**spec, "costs": {**spec["costs"], "cloud": [catalog_spot]}}
    refused = user_client.post("/api/v1/designs/", {"name": "catalog spot", "spec": asked}, format="json")
    assert refused.status_code == 400
    assert "no spot price" in refused.json()["error"]["fields"]["spec.costs.cloud.0.pricing_models"][0]


def test_a_renamed_storage_tier_shows_on_the_design_page_and_share_links_keep_their_figures(
    user_client: Any, demos: list[Any]
) -> None:
    design = design_create(owner=user_client.user, name="70B on lustre", spec=demos[0].current.spec)
    frozen = _run_cost(user_client, design.pk, P5_ON_DEMAND)
    _link, token = share_link_create(design=design, user=user_client.user)
    tier = StorageTier.objects.get(slug="lustre")
    tier.slug = "lustre-2"
    tier.save()

    evaluate = user_client.post(f"/api/v1/designs/{design.pk}/evaluate/")
    assert evaluate.status_code == 400
    assert list(evaluate.json()["error"]["fields"]) == ["spec.cluster.storage"]
    browser = _browser(user_client.user)
    for url in (f"/designs/{design.pk}/", f"/designs/{design.pk}/edit/", f"/designs/{demos[0].pk}/"):
        page = browser.get(url)
        assert page.status_code == 200, url
        assert (
            CANNOT in page.content.decode()
            and "unknown storage tier &#x27;lustre&#x27;" in page.content.decode()
        )
    shared = _browser().get(f"/share/{token}/")
    assert shared.status_code == 200
    assert f"${frozen:,.0f}" in shared.content.decode()
    csv = _browser().get(f"/share/{token}/export/csv/")
    assert csv.status_code == 200 and b"aws-p5-48xlarge" in csv.content


def test_a_malformed_row_a_design_uses_is_named_on_its_page_and_others_still_evaluate(
    user_client: Any, demos: list[Any]
) -> None:
    spec = demos[0].current.spec
    design = design_create(
        owner=user_client.user, name="on nfs", spec={**spec, "cluster": {**spec["cluster"], "storage": "nfs"}}
    )
    tier = StorageTier.objects.get(slug="lustre")
    tier.read_gbps = 0  # the model's validators refuse it, but save() (a migration, a script) does not
    tier.save()
    page = _browser(user_client.user).get(f"/designs/{demos[0].pk}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert CANNOT in body
    assert "the catalog&#x27;s storage tier &#x27;lustre&#x27; cannot be used" in body
    assert "storage_tier.read_gbps: must be more than zero, got 0.0" in body
    assert user_client.post(f"/api/v1/designs/{design.pk}/evaluate/").status_code == 200
