"""A capacity plan resolves through the site as it does through the price book (issue #35): owned supply
taken from a design (``supply.from_design``) is priced as that design owns its nodes, and a design at a saved
site owns them at the site's power price, PUE and colocation. Checked as an equivalence through the URLs: the
same design with the site's three figures typed into ``costs.on_prem`` gives the same owned node-month, and
with no site (the catalog's defaults) another one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.designs.demo import DEMOS
from apps.designs.services import design_create
from apps.plans.models import PlanSolution
from tests.plans.test_api import SPEC, URL, _client, _create
from tests.sites.test_api import SITE

pytestmark = pytest.mark.django_db

# The site's figures (tests/sites/test_api.py): $0.12/kWh, PUE 1.5 for air cooling, $200 per kW-month.
TYPED = {"usd_per_kwh": 0.12, "pue": 1.5, "colo_usd_per_kw_month": 200}


def _owned(client: Any, spec_design: dict[str, Any], name: str, owner: Any) -> dict[str, Any]:
    design = design_create(owner=owner, name=name, spec=spec_design)
    spec = copy.deepcopy(SPEC)
    spec["supply"] = {"from_design": {"design_id": design.pk, "lead_time_months": 2}}
    plan = _create(client, spec)
    answer = client.post(f"{URL}{plan['id']}/solve/")
    assert answer.status_code == 200, answer.json()
    solution = PlanSolution.objects.get(version__plan_id=plan["id"])
    return dict(solution.snapshot["plan"]["supply"]["owned"])


def test_owned_supply_from_a_design_at_a_site_is_priced_at_the_sites_figures(
    catalog: Any, alice: Any
) -> None:
    client = _client(alice)
    site = client.post("/api/v1/sites/", {**SITE, "cooling": ["air"], "pue": {"air": 1.5}}, format="json")
    assert site.status_code == 201, site.json()
    base = copy.deepcopy(DEMOS[0]["spec"])  # 64 × 8 H100, air cooled
    at_site = _owned(client, {**copy.deepcopy(base), "site": {"id": site.json()["id"]}}, "at the site", alice)
    typed_spec = copy.deepcopy(base)
    typed_spec["costs"]["on_prem"] = {**typed_spec["costs"].get("on_prem", {}), **TYPED}
    typed = _owned(client, typed_spec, "typed in", alice)
    plain = _owned(client, copy.deepcopy(base), "no site", alice)
    assert at_site["fixed_usd_per_node_month"] == pytest.approx(typed["fixed_usd_per_node_month"], rel=1e-12)
    assert at_site["usd_per_node_hour_used"] == pytest.approx(typed["usd_per_node_hour_used"], rel=1e-12)
    assert at_site["capex_usd_per_node"] == pytest.approx(typed["capex_usd_per_node"], rel=1e-12)
    moved = (plain["fixed_usd_per_node_month"], plain["usd_per_node_hour_used"])
    assert moved != pytest.approx((at_site["fixed_usd_per_node_month"], at_site["usd_per_node_hour_used"]))
