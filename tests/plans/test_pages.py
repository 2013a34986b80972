"""Capacity plan pages through the URL: the new-plan form with a run picked from a saved design, the result
page with its charts, errors named on the page, and other people's plans as 404."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from apps.designs.demo import demo_load
from apps.plans.models import CapacityPlan
from apps.plans.views import EXAMPLE_SPEC


def _signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_a_plan_made_from_a_demo_design_in_the_form_shows_its_result_and_charts(
    catalog: Any, alice: Any, bob: Any
) -> None:
    demo = demo_load()[0]
    client = _signed_in(alice)
    form = client.get("/plans/")
    assert form.status_code == 200 and demo.name in form.content.decode()
    response = client.post(
        "/plans/",
        {
            "name": "FY27",
            "spec": json.dumps(EXAMPLE_SPEC),
            "design": [str(demo.pk)],
            f"deadline-{demo.pk}": "2",
        },
    )
    assert response.status_code == 302
    plan = CapacityPlan.objects.get(name="FY27")
    assert plan.versions.get().spec["training"] == [{"design_id": demo.pk, "deadline_month": 2}]
    page = client.get(response["Location"]).content.decode()
    for chart in ("capacity", "cost", "utilization"):
        assert f'id="chart-data-{chart}"' in page
    assert demo.name in page and 'id="plan-total"' in page
    # Issue #31, one basis: the mix is chosen on the NPV of its monthly cash flows (owned nodes from a design
    # carry their capital share, so capex at delivery and market resale), the page says so at the plan's
    # rate, and labels the undiscounted cash out as such.
    summary = page.split('id="plan-summary"')[1].split("</table>")[0]
    rate = f"{100 * EXAMPLE_SPEC['discount_rate']:g} % a year"
    assert f"Cheapest mix: NPV of its monthly cash flows at {rate} (the plan's objective: capex at" in summary
    assert (
        "resale at market value, book value where no series, at the horizon; the design verdict's" in summary
    )
    assert "Cash out, undiscounted" in summary and 'id="plan-npv"' in summary
    assert "owning annualised" not in summary and "resale at book value)" not in summary
    assert _signed_in(bob).get(response["Location"]).status_code == 404


@pytest.mark.django_db
def test_a_bad_spec_in_the_form_is_named_on_the_page(alice: Any) -> None:
    spec = {**EXAMPLE_SPEC, "supply": {"on_demand": {}}}
    response = _signed_in(alice).post("/plans/", {"name": "x", "spec": json.dumps(spec)})
    assert response.status_code == 400
    assert "spec.supply.on_demand.usd_per_node_hour: is required" in response.content.decode()
    response = _signed_in(alice).post("/plans/", {"name": "x", "spec": "{nope"})
    assert response.status_code == 400 and "spec: is not JSON" in response.content.decode()
    assert not CapacityPlan.objects.exists()


@pytest.mark.django_db
def test_a_share_link_shows_finance_the_frozen_result_and_never_writes(alice: Any) -> None:
    from apps.plans.models import PlanShareLink
    from apps.plans.services import plan_share_link_revoke
    from clusterdesigner.logging import redact

    owner = _signed_in(alice)
    created = owner.post("/plans/", {"name": "FY27", "spec": json.dumps(EXAMPLE_SPEC)})
    page = owner.post(created["Location"], follow=True).content.decode()  # "Create a read-only share link"
    link = PlanShareLink.objects.get()
    url = page.split('id="share-url">Share link (shown once): <code>')[1].split("</code>")[0]
    path = url.split("testserver")[1]
    assert redact(f"Not Found: {path}") == "Not Found: /plans/share/[redacted]/"
    finance = Client()
    shared = finance.get(path)
    assert shared.status_code == 200
    body = shared.content.decode()
    assert 'id="share-notice"' in body and 'id="chart-data-capacity"' in body and "share-plan" not in body
    # Finance reads the objective's basis and figure as the owner's page states them (issue #31, one basis).
    solution = link.solution.result
    assert "Cheapest mix: NPV of its monthly cash flows at 8 % a year (the plan's objective: capex at" in body
    assert f'id="plan-npv">${solution["npv_usd"]:,.0f}</td>' in body
    assert f'id="plan-total">${solution["total_usd"]:,.0f}</td>' in body
    xlsx = finance.get(f"{path}xlsx/")
    assert xlsx.status_code == 200 and xlsx["Content-Type"].startswith("application/vnd.openxmlformats")
    assert finance.post(path).status_code == 405
    plan_share_link_revoke(link=link)
    assert finance.get(path).status_code == 404
    assert finance.get("/plans/share/not-a-token/").status_code == 404


@pytest.mark.django_db
def test_a_large_plans_page_says_a_worker_is_solving_it(alice: Any, settings: Any) -> None:
    settings.PLAN_SYNC_MAX_SIZE = 1
    client = _signed_in(alice)
    created = client.post("/plans/", {"name": "Big", "spec": json.dumps(EXAMPLE_SPEC)})
    page = client.get(
        created["Location"]
    ).content.decode()  # on_commit never fires inside the test's transaction
    assert 'id="plan-run"' in page and "a worker is solving it (queued)" in page


@pytest.mark.django_db
def test_plan_share_links_take_an_expiry_are_listed_on_the_plan_page_and_revoke_there(
    alice: Any, bob: Any
) -> None:
    import datetime as dt

    from apps.plans.models import PlanShareLink

    owner = _signed_in(alice)
    created = owner.post("/plans/", {"name": "FY27", "spec": json.dumps(EXAMPLE_SPEC)})
    page_url = created["Location"]
    before = dt.datetime.now(dt.UTC)
    made = owner.post(page_url, {"expiry": "30"})
    # Post/redirect/get: the address is shown once on the page the POST redirects to, and a reload of
    # that page neither shows it again nor makes a second link.
    assert made.status_code == 302 and made["Location"] == page_url
    page = owner.get(page_url).content.decode()
    link = PlanShareLink.objects.get()
    reloaded = owner.get(page_url).content.decode()
    assert 'id="share-url"' not in reloaded and PlanShareLink.objects.count() == 1
    assert link.expires_at is not None
    assert dt.timedelta(days=30) <= link.expires_at - before < dt.timedelta(days=30, minutes=5)
    path = (
        page.split('id="share-url">Share link (shown once): <code>')[1]
        .split("</code>")[0]
        .split("testserver")[1]
    )
    # The list on the page: the link's hint, the version it serves, its expiry, active, and a Revoke button.
    row = page.split(f'id="share-link-{link.pk}"')[1].split("</tr>")[0]
    assert f"{link.token_hint}…" in row and "version 1" in row
    assert link.expires_at.strftime("%Y-%m-%d") in row and "active" in row and 'name="revoke"' in row
    owner.post(page_url, {"expiry": ""})
    assert PlanShareLink.objects.filter(expires_at=None).count() == 1  # "never"
    refused = owner.post(page_url, {"expiry": "5"})
    assert refused.status_code == 400 and 'id="share-error">expiry: must be never, 7, 30 or 90 days' in (
        refused.content.decode()
    )
    assert PlanShareLink.objects.count() == 2
    # Someone else cannot revoke it (404, as for a plan that is not theirs); the owner can, from the page.
    assert _signed_in(bob).post(page_url, {"revoke": str(link.pk)}).status_code == 404
    assert Client().get(path).status_code == 200
    done = owner.post(page_url, {"revoke": str(link.pk)})
    assert done.status_code == 302 and done["Location"] == page_url
    assert Client().get(path).status_code == 404
    row = owner.get(page_url).content.decode().split(f'id="share-link-{link.pk}"')[1].split("</tr>")[0]
    assert "revoked" in row and 'name="revoke"' not in row
    assert owner.post(page_url, {"revoke": "x"}).status_code == 404


@pytest.mark.django_db
def test_inference_given_in_tokens_per_day_shows_its_serving_sizing_on_the_result_page(
    catalog: Any, alice: Any
) -> None:
    from tests.plans.test_api import TOKENS_CHAT

    client = _signed_in(alice)
    spec = {**EXAMPLE_SPEC, "inference": [TOKENS_CHAT]}
    response = client.post("/plans/", {"name": "Tokens", "spec": json.dumps(spec)})
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    table = page.split('id="plan-inference-sizing"')[1].split("</table>")[0]
    # The figures of tests/plans/test_api.py's hand check: 1e9 tokens/day, peak/mean 1.333, 60.28 requests/s
    # at the peak, 9 replicas of tp2 pp1 at batch 114 = 18 GPUs, 952.1 output tokens/s per GPU.
    for text in ("chat", "1,000,000,000", "1.333", "60.28", "tp2 pp1, batch 114", '<td class="num">18</td>'):
        assert text in table, text
    assert "952.1" in table
    bad = {**EXAMPLE_SPEC, "inference": [{**TOKENS_CHAT, "tokens_per_day": 0}]}
    refused = client.post("/plans/", {"name": "Bad", "spec": json.dumps(bad)})
    assert refused.status_code == 400 and "spec.inference.0.tokens_per_day" in refused.content.decode()


@pytest.mark.django_db
def test_the_plan_page_shows_the_prices_a_design_gave_it_and_where_from(catalog: Any, alice: Any) -> None:
    """A plan whose supply is ``from_design`` (demo 1 with a negotiated on-demand price of $40 a node-hour,
    a TEST INPUT) states on its page and its share view each price the solve used and its source."""
    import copy
    import re

    from apps.designs.demo import DEMOS
    from apps.designs.services import design_create
    from apps.plans.services import plan_share_link_create

    spec_design = copy.deepcopy(DEMOS[0]["spec"])
    spec_design["costs"]["cloud"] = [
        {
            "offering": "aws-p5-48xlarge",
            "pricing_models": ["on_demand"],
            "usd_per_node_hour": {"on_demand": 40.0},
        }
    ]
    design = design_create(owner=alice, name="negotiated", spec=spec_design)
    spec = {**EXAMPLE_SPEC, "supply": {"from_design": {"design_id": design.pk, "lead_time_months": 2}}}
    client = _signed_in(alice)
    response = client.post("/plans/", {"name": "from a design", "spec": json.dumps(spec)})
    assert response.status_code == 302, response.content.decode()[:500]
    page = client.get(response["Location"]).content.decode()
    table = page[page.index('id="plan-prices"') : page.index("</table>", page.index('id="plan-prices"'))]
    cells = [re.sub(r"<[^>]+>", "", row).strip() for row in re.findall(r"<td>(.*?)</td>", table)]
    assert cells[3:] == [
        "On-demand",
        "$40.000 a node-hour",
        f"design {design.pk} v1: aws-p5-48xlarge on_demand $40/node-hour",
    ]
    assert cells[0] == "Owned nodes" and cells[2].startswith(f"design {design.pk} v1: ")
    # Owned as the design owns it: $10,536.57 a node-month (by hand in tests/plans/test_api.py).
    assert cells[1].startswith("$10,536.57 a node-month")
    plan = CapacityPlan.objects.get(name="from a design")
    _, token = plan_share_link_create(plan=plan, user=alice)
    shared = Client().get(f"/plans/share/{token}/").content.decode()
    assert f"design {design.pk} v1: aws-p5-48xlarge on_demand $40/node-hour" in shared
