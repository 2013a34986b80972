"""Issue #38 item 4: the plan solver is bounded by work (HiGHS's node limit, PLAN_SOLVE_NODE_LIMIT), not only
by the wall clock, and a solve stopped at the limit is reported as such, with the best plan found, never as
"infeasible". Before, the only limit was 60 s of wall clock and any stop answered "no mix of the offered
capacity serves the plan"."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from rest_framework.test import APIClient

from clusterdesigner.engine.capacity.capacity import CapacityPlan, plan_solve
from tests.plans.test_api import SPEC, URL, _client, _create

# A plan that needs branching at a zero MIP gap: 36 months, 10 unsplittable training runs at staggered
# windows, owned nodes with a lead time, two reservation terms, on-demand and capped spot (test inputs
# written here, priced like tests/plans/test_api.py's SPEC). At PLAN_SOLVE_MIP_GAP 0 HiGHS explores 11
# branch-and-bound nodes to prove its optimum (HiGHS in scipy 1.17).
BIG: dict[str, Any] = {
    **copy.deepcopy(SPEC),
    "horizon_months": 36,
    "training": [
        {
            "name": f"run {i}",
            "gpu_hours": 2000 * (i + 1) * 7 % 9000 + 3000,
            "gpus": 8 * ((i * 3) % 5 + 1),
            "earliest_start_month": (i * 5) % 30,
            "deadline_month": min(35, (i * 5) % 30 + 1 + i % 3),
            "splittable": False,
        }
        for i in range(10)
    ],
    "supply": {
        **copy.deepcopy(SPEC["supply"]),
        "reservations": [
            {"term_months": 12, "usd_per_node_hour": 38.50},
            {"term_months": 36, "usd_per_node_hour": 23.776},
        ],
        "spot": {"usd_per_node_hour": 20.784, "goodput": 0.85, "cap_nodes": 5},
    },
}
STOPPED = re.compile(
    r"stopped at the work limit after (\d+) nodes \([0-9.]+ s\); best plan found has NPV \$([0-9,]+), "
    r"gap ([0-9.]+)%"
)


def _solve_on_the_worker(client: APIClient, plan_id: int, capture: Any) -> dict[str, Any]:
    """POST solve (queued: the plan is above PLAN_SYNC_MAX_SIZE), then GET its run (tasks run in-process)."""
    with capture(execute=True):
        queued = client.post(f"{URL}{plan_id}/solve/")
    assert queued.status_code == 202, queued.json()
    return dict(client.get(queued.json()["url"]).json())


def _stopped_at_two_nodes(alice: Any, settings: Any, callbacks: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """BIG solved to a zero gap with a 2-node limit: (the plan, its finished run)."""
    settings.PLAN_SOLVE_MIP_GAP = 0.0
    settings.PLAN_SOLVE_NODE_LIMIT = 2
    client = _client(alice)
    plan = _create(client, BIG)
    run = _solve_on_the_worker(client, plan["id"], callbacks)
    assert run["status"] == "done", run
    return plan, run


@pytest.mark.django_db
def test_a_plan_stopped_at_the_work_limit_returns_its_best_plan_marked_as_such(
    alice: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    plan, run = _stopped_at_two_nodes(alice, settings, django_capture_on_commit_callbacks)
    result = run["solution"]["result"]
    assert result["solver_status"] == "work_limit"
    found = STOPPED.fullmatch(result["solver_message"])
    assert found, result["solver_message"]
    nodes, cost = int(found[1]), float(found[2].replace(",", ""))
    assert nodes == result["size"]["nodes"] == 2
    assert cost == pytest.approx(result["npv_usd"], abs=0.5)  # the objective
    assert float(found[3]) == pytest.approx(100 * result["size"]["mip_gap"], abs=0.005)
    assert "infeasible" not in result["solver_message"]

    # The optimum (no node limit; 11 nodes) costs no more than the best plan found at 2 nodes, and the
    # stopped plan is within its reported gap of it.
    optimum = plan_solve(plan=CapacityPlan.from_json(BIG), mip_gap=0.0, compare=False)
    assert optimum.solver_status == "optimal" and optimum.size.nodes > 2
    # (1e-8 relative: the optimal solve's second, lexicographic pass may spend 1e-9 of the cost on an earlier
    # finish; engine.capacity.capacity._Model._earliest.)
    assert optimum.npv_usd <= result["npv_usd"] * (1 + 1e-8)
    assert result["npv_usd"] - optimum.npv_usd <= result["size"]["mip_gap"] * result["npv_usd"] + 1e-6


@pytest.mark.django_db
def test_the_work_limit_gives_the_same_plan_on_every_solve(alice: Any) -> None:
    # Nodes, not seconds: the same stop, and the same best plan, however loaded the machine is.
    first, second = (
        plan_solve(plan=CapacityPlan.from_json(BIG), mip_gap=0.0, node_limit=2, compare=False)
        for _ in range(2)
    )
    assert (
        (first.solver_status, first.size.nodes)
        == (second.solver_status, second.size.nodes)
        == ("work_limit", 2)
    )
    assert first.npv_usd == second.npv_usd


@pytest.mark.django_db
def test_a_solve_stopped_before_any_plan_is_a_422_solver_limit_not_infeasible(
    alice: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.PLAN_SOLVE_NODE_LIMIT = 0  # HiGHS stops before its first node: no plan found
    client = _client(alice)
    small = _create(client)  # solved in the request
    answer = client.post(f"{URL}{small['id']}/solve/")
    assert answer.status_code == 422, answer.json()
    error = answer.json()["error"]
    assert error["code"] == "solver_limit"
    assert error["message"].startswith("stopped at the work limit after 0 nodes")
    assert (
        "before finding any plan" in error["message"] and "infeasible" not in error["message"].split(";")[0]
    )

    # On a worker, the run fails with the same message.
    big = _create(client, BIG)
    run = _solve_on_the_worker(client, big["id"], django_capture_on_commit_callbacks)
    assert run["status"] == "failed"
    assert run["error"].startswith("stopped at the work limit after 0 nodes"), run["error"]


@pytest.mark.django_db
def test_an_unlimited_solve_is_optimal_with_an_empty_message(alice: Any) -> None:
    client = _client(alice)
    plan = _create(client)
    body = client.post(f"{URL}{plan['id']}/solve/").json()
    assert body["result"]["solver_status"] == "optimal" and body["result"]["solver_message"] == ""
    assert body["result"]["size"]["nodes"] >= 1


@pytest.mark.django_db
def test_the_plan_page_says_a_plan_stopped_at_the_work_limit_is_not_proven_optimal(
    alice: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.test import Client

    plan, run = _stopped_at_two_nodes(alice, settings, django_capture_on_commit_callbacks)
    browser = Client()
    browser.force_login(alice)
    page = browser.get(f"/plans/{plan['id']}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert 'data-solver-status="work_limit"' in text
    assert "Not proven optimal: the solver stopped at the work limit after 2 nodes" in text
    assert run["solution"]["result"]["solver_message"].split("; ")[1] in text  # the cost and the gap
