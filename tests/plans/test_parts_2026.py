"""A capacity plan with the 2026 parts (issue #32): a training run and the owned nodes taken from a saved B300
MXFP8 design, and from an MI350X one, plan on that part's own figures (its GPUs, its days to train, its
owning inputs)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.designs.test_parts_2026_api import _spec
from tests.plans.test_api import SPEC, URL


@pytest.mark.parametrize(("slug", "precision"), [("b300", "mxfp8"), ("mi350x", "mxfp8"), ("b300", "nvfp4")])
def test_a_plan_takes_its_run_and_owned_nodes_from_a_2026_part_design(
    user_client: Any, catalog: Any, slug: str, precision: str
) -> None:
    created = user_client.post(
        "/api/v1/designs/",
        {"name": f"{slug} {precision}", "spec": _spec(slug, 8, 64, None, precision)},
        format="json",
    )
    assert created.status_code == 201, created.json()
    design = created.json()["id"]
    evaluated = user_client.post(f"/api/v1/designs/{design}/evaluate/").json()
    # No cloud offering in the design: its owning option's days (with failures and restarts) are the
    # design's expected days.
    days = next(o for o in evaluated["options"] if o["key"] == "own")["days"]
    spec = copy.deepcopy(SPEC)
    spec["training"] = [{"design_id": design, "deadline_month": 6}]
    spec["supply"]["owned"] = {"design_id": design, "lead_time_months": 2}
    plan = user_client.post(URL, {"name": f"plan on {slug}", "spec": spec}, format="json")
    assert plan.status_code == 201, plan.json()
    solved = user_client.post(f"{URL}{plan.json()['id']}/solve/")
    assert solved.status_code == 200, solved.json()
    run = solved.json()["result"]["runs"][0]
    # 64 nodes x 8 GPUs of the design: node-hours = 64 x 24 h x the design's expected days on this part
    # (B300 MXFP8 at this commit: 64 x 24 x 8.0026 = 12,292), all placed before the deadline.
    assert run["name"] == f"{slug} {precision}"
    assert sum(run["node_hours_by_month"]) == pytest.approx(64 * 24 * days, rel=1e-9)
    assert run["finish_month"] <= 6
