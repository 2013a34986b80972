"""The owner's calibration reaches every answer built on a design's training estimate (issue 40): the goals'
deadline exploration, a comparison, a searched-layout evaluation analysis, a sweep (the requester's own
calibration), and a capacity plan's run taken from a design; switching it on changes each, and switching it
off gives the published answer again. The runs are measured at 1.1, 1.21 and 1.331 × the engine, so every key
they count under has the factor 1.1² = 1.21 (the geometric mean)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.designs.services import design_create
from apps.plans.models import PlanSolution
from tests.measurements.test_calibration import RUNS, _add_runs
from tests.plans.test_api import SPEC as PLAN_SPEC
from tests.plans.test_api import URL as PLANS

FACTOR = 1.21


def _switch(client: Any, enabled: bool) -> None:
    assert client.post(f"{RUNS}calibration/", {"enabled": enabled}, format="json").status_code == 200


def _analysis(client: Any, payload: dict[str, Any], capture: Any) -> dict[str, Any]:
    with capture(execute=True):
        started = client.post("/api/v1/analyses/", payload, format="json")
    assert started.status_code == 202, started.json()
    body = client.get(started.json()["url"]).json()
    assert body["status"] == "succeeded", body
    return dict(body["result"])


def test_the_deadline_exploration_is_calibrated_as_the_design_is(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    from tests.designs.test_goals import _spec

    design = user_client.post(
        "/api/v1/designs/", {"name": "g", "spec": _spec(deadline_days=30)}, format="json"
    )
    url = f"/api/v1/designs/{design.json()['id']}/evaluate/"
    off = user_client.post(url).json()
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    _switch(user_client, True)
    on = user_client.post(url).json()
    assert on["calibration"]["applied"] is True and on["calibration"]["factor"] == pytest.approx(FACTOR)
    before = {r["nodes"]: r for r in off["verdict"]["deadline"]["larger"]}
    after = {r["nodes"]: r for r in on["verdict"]["deadline"]["larger"]}
    assert before and set(after) >= set(before)
    # Every larger node count's estimate is calibrated like the design's: its expected days (failure-free
    # days × the failures model's overhead, linear in the days) and its run cost (GPU-hours × price) × 1.21.
    for nodes, row in before.items():
        assert after[nodes]["days"] == pytest.approx(row["days"] * FACTOR, rel=1e-9), nodes
        assert after[nodes]["run_cost_usd"] == pytest.approx(row["run_cost_usd"] * FACTOR, rel=1e-9), nodes
    _switch(user_client, False)
    assert user_client.post(url).json()["verdict"] == off["verdict"]


def test_compare_and_a_searched_evaluation_take_the_design_owners_calibration(
    user_client: Any, catalog: Any, run_data: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    from tests.designs.test_api import SPEC

    fixed = user_client.post("/api/v1/designs/", {"name": "70B", "spec": SPEC}, format="json").json()
    searched_spec = {**copy.deepcopy(SPEC), "parallelism": "search"}
    searched = user_client.post(
        "/api/v1/designs/", {"name": "s", "spec": searched_spec}, format="json"
    ).json()
    other = user_client.post("/api/v1/designs/", {"name": "70B too", "spec": SPEC}, format="json").json()
    compare = {"kind": "compare", "params": {"designs": [fixed["id"], other["id"]]}}
    evaluate = {"kind": "evaluate", "params": {"design": searched["id"]}}
    capture = django_capture_on_commit_callbacks
    off_compare, off_eval = (
        _analysis(user_client, compare, capture),
        _analysis(user_client, evaluate, capture),
    )
    assert off_compare["designs"][0]["calibration"]["applied"] is False
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    _switch(user_client, True)
    on_compare, on_eval = _analysis(user_client, compare, capture), _analysis(user_client, evaluate, capture)
    row_off, row_on = off_compare["designs"][0], on_compare["designs"][0]
    assert row_on["calibration"]["applied"] is True and row_on["calibration"]["runs"] == 3
    assert row_on["days_failure_free"] == pytest.approx(row_off["days_failure_free"] * FACTOR, rel=1e-9)
    assert on_eval["calibration"]["factor"] == pytest.approx(FACTOR, rel=1e-9)
    assert on_eval["training"]["time_to_train_days"] == pytest.approx(
        off_eval["training"]["time_to_train_days"] * FACTOR, rel=1e-9
    )
    _switch(user_client, False)
    assert _analysis(user_client, compare, capture)["designs"] == off_compare["designs"]
    assert _analysis(user_client, evaluate, capture)["training"] == off_eval["training"]


def test_a_sweep_takes_the_requesters_own_calibration(
    user_client: Any, catalog: Any, run_data: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    from tests.analysis.test_api import SWEEP

    sweep = copy.deepcopy(SWEEP)
    sweep["params"]["accelerators"] = ["h100-sxm"]
    capture = django_capture_on_commit_callbacks
    off = _analysis(user_client, sweep, capture)
    assert off["calibration"] == {"enabled": False, "scope": "personal", "holder": "alice"}
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    _switch(user_client, True)
    on = _analysis(user_client, sweep, capture)
    assert on["calibration"]["enabled"] is True
    factors = {f["key"]: f for f in on["calibration"]["calibration"]["factors"]}
    assert factors["hopper/bf16/dense/lt32k/lt512"]["runs"] == 3
    rows_off = {(r["nodes"], r["pricing_model"]): r for r in off["rows"]}
    rows_on = {(r["nodes"], r["pricing_model"]): r for r in on["rows"]}
    for key, row in rows_off.items():
        # The sweep's 8B points on 1 to 4 nodes are the runs' regime: MFU ÷ 1.21, days and cost per run
        # × 1.21 (both linear in the failure-free days).
        assert rows_on[key]["mfu"] == pytest.approx(row["mfu"] / FACTOR, rel=1e-9), key
        assert rows_on[key]["days"] == pytest.approx(row["days"] * FACTOR, rel=1e-9), key
        assert rows_on[key]["cost_usd"] == pytest.approx(row["cost_usd"] * FACTOR, rel=1e-9), key
    _switch(user_client, False)
    assert _analysis(user_client, sweep, capture)["rows"] == off["rows"]


def test_a_plans_run_from_a_design_takes_the_calibrated_days_and_names_the_calibration(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    from tests.designs.test_api import SPEC

    design = design_create(owner=user_client.user, name="70B", spec=copy.deepcopy(SPEC))
    spec = copy.deepcopy(PLAN_SPEC)
    spec["training"] = [{"design_id": design.pk, "deadline_month": 2}]
    plan = user_client.post(PLANS, {"name": "p", "spec": spec}, format="json").json()
    solve = f"{PLANS}{plan['id']}/solve/"
    off = user_client.post(solve).json()["result"]["runs"][0]
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    _switch(user_client, True)
    on = user_client.post(solve).json()["result"]["runs"][0]
    hours_off, hours_on = sum(off["node_hours_by_layer"].values()), sum(on["node_hours_by_layer"].values())
    # GPU-hours = GPUs × 24 h × expected days, and the expected days are × 1.21 calibrated.
    assert hours_on == pytest.approx(hours_off * FACTOR, rel=1e-9)
    # The solution is stored beside the calibration it was made with (switch, factors, their runs).
    stored = PlanSolution.objects.latest("pk").snapshot["calibrations"][str(design.pk)]
    assert stored["enabled"] is True and stored["holder"] == "alice"
    assert {f["key"]: f["runs"] for f in stored["calibration"]["factors"]}["hopper/bf16/dense/lt32k/*"] == 3
    _switch(user_client, False)
    assert user_client.post(solve).json()["result"]["runs"][0] == off


def test_a_version_diff_evaluates_both_versions_with_the_design_owners_calibration(
    user_client: Any, catalog: Any, run_data: dict[str, Any]
) -> None:
    from tests.designs.test_diff_api import _two_versions

    design_id = _two_versions(user_client)
    url = f"/api/v1/designs/{design_id}/diff/"
    published = {row["name"]: row for row in user_client.get(url).json()["outputs"]}
    _add_runs(user_client, run_data, [1.1, 1.21, 1.331])
    _switch(user_client, True)
    calibrated = {row["name"]: row for row in user_client.get(url).json()["outputs"]}
    evaluated = user_client.post(f"/api/v1/designs/{design_id}/evaluate/").json()
    assert evaluated["calibration"]["applied"] is True
    factor = evaluated["calibration"]["factor"]
    # Both ends of the diff are estimated as the design's own evaluation is: failure-free days × factor.
    row, before = calibrated["days_failure_free"], published["days_failure_free"]
    assert row["new"] == pytest.approx(evaluated["training"]["time_to_train_days"], rel=1e-12)
    assert row["old"] == pytest.approx(before["old"] * factor, rel=1e-9)
    assert row["new"] == pytest.approx(before["new"] * factor, rel=1e-9)
