"""Design goals (spec.goals: a deadline in days, a budget in USD per run, a budget in USD of NPV over the
horizon) and the verdict on evaluation, for the option the rent-or-own verdict picks by NPV (issue #31)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clusterdesigner.engine.cost.verdict import usd_short

LAYOUT_32 = {
    "tp": 8,
    "pp": 4,
    "dp": 8,
    "cp": 1,
    "vpp": 1,
    "micro_batch": 1,
    "recompute": "selective",
    "sharding": "zero1",
    "sequence_parallel": True,
}
# Llama-3-70B shape on 1T tokens, 32 nodes × 8 H100: about 54 days, expected with failures and restarts.
SPEC = {
    "workload": {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_tokens": 4194304, "precision": "bf16"},
    },
    "cluster": {
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nodes": 32,
        "fabric": "ib-ndr400",
        "storage": "lustre",
    },
    "parallelism": LAYOUT_32,
    "costs": {
        "horizon_years": 2,
        "utilization": 0.7,
        "cloud": [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}],
        # Servers on hand: these tests are about node counts; the lead time's own test is in
        # test_cashflow_conventions.py (owned capacity starts after it, so a short deadline is missed).
        "cashflow": {"lead_time_months": 0},
    },
}


def _spec(**goals: float) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    if goals:
        spec["goals"] = goals
    return spec


def _evaluate(client: Any, spec: dict[str, Any]) -> dict[str, Any]:
    created = client.post("/api/v1/designs/", {"name": "goals", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    response = client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200, response.json()
    return response.json()


def _chosen(body: dict[str, Any]) -> dict[str, Any]:
    """The options-table row of the option the design's rent-or-own verdict picks (owning when it saves, else
    the rival): the one the goals are checked for."""
    verdict = body["design_verdict"]
    key = "own" if verdict["winner"] == "own" else verdict["rival"]["key"]
    return next(o for o in body["options"] if o["key"] == key)


def test_a_missed_deadline_names_a_larger_node_count_with_its_days(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(deadline_days=30))
    verdict, cheapest = body["verdict"], _chosen(body)
    # The design's days are the chosen option's expected days (with failures and restarts), over 30.
    assert cheapest["days"] > 30
    assert verdict["status"] == "misses" and verdict["days_basis"] == "expected"
    deadline = verdict["deadline"]
    assert deadline["days"] == pytest.approx(cheapest["days"])
    assert deadline["slack_days"] == pytest.approx(30 - cheapest["days"])
    # 64 nodes (dp 16) halve it: that count meets the deadline, and the sentence gives its days.
    larger = deadline["larger"]
    assert [r["nodes"] for r in larger] == [64] and deadline["meeting_nodes"] == 64
    assert larger[0]["days"] <= 30
    message = verdict["messages"][0]
    assert message.startswith(f"Misses the 30-day deadline: 32 nodes give {cheapest['days']:.1f} days; ")
    assert f"64 nodes give {larger[0]['days']:.1f} days" in message
    assert (
        f"expected, with failures and restarts, for the cheapest option by NPV, {cheapest['label']}"
        in message
    )


def test_the_larger_estimate_is_the_same_design_on_more_nodes(user_client: Any, catalog: Any) -> None:
    # The verdict's 64-node days and cost per run are what a 64-node design (dp 16) evaluates to.
    verdict = _evaluate(user_client, _spec(deadline_days=30, budget_usd=1e7))["verdict"]
    larger = verdict["deadline"]["larger"][0]
    spec_64 = _spec()
    spec_64["cluster"]["nodes"] = 64
    spec_64["parallelism"] = {**LAYOUT_32, "dp": 16}
    body_64 = _evaluate(user_client, spec_64)
    own_64 = next(o for o in body_64["options"] if o["key"] == "own")
    assert larger["days"] == pytest.approx(own_64["days"], rel=1e-9)
    assert larger["run_cost_usd"] == pytest.approx(own_64["run_cost_usd"], rel=1e-9)
    # Issue #31, one basis: each larger count states its NPV over the horizon (the verdict's figure for
    # owning at 64 nodes), the per-run cost beside it, each labelled in the sentence.
    assert larger["npv_usd"] == pytest.approx(body_64["design_verdict"]["own"]["npv_usd"], rel=1e-9)
    assert larger["npv_usd"] > larger["run_cost_usd"]
    assert (
        f"64 nodes give {larger['days']:.1f} days at {usd_short(larger['npv_usd'])} NPV over the horizon"
        f" ({usd_short(larger['run_cost_usd'])} per run, undiscounted)"
    ) in verdict["messages"][0]


def test_a_met_deadline_gives_its_slack_and_tries_no_larger_cluster(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(deadline_days=90))
    days = _chosen(body)["days"]
    assert body["verdict"]["status"] == "meets"
    assert body["verdict"]["deadline"]["larger"] == []
    assert body["verdict"]["messages"] == [
        f"Meets the 90-day deadline: {days:.1f} days on 32 nodes ({90 - days:.1f} days slack; expected, with "
        f"failures and restarts, for the cheapest option by NPV, {_chosen(body)['label']})"
    ]


def test_over_budget_says_by_how_much(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(budget_usd=100_000))
    cheapest = _chosen(body)
    budget = body["verdict"]["budget"]
    assert body["verdict"]["status"] == "misses" and budget["status"] == "misses"
    assert budget["run_cost_usd"] == pytest.approx(cheapest["run_cost_usd"])
    assert budget["margin_usd"] == pytest.approx(100_000 - cheapest["run_cost_usd"])
    assert body["verdict"]["messages"][0].startswith("Over the $100k budget by $")
    assert f"the cheapest option by NPV, {cheapest['label']}, costs $" in body["verdict"]["messages"][0]


def test_within_budget_and_deadline_meets(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(deadline_days=90, budget_usd=5e6))
    assert body["verdict"]["status"] == "meets"
    assert [m.split(":")[0] for m in body["verdict"]["messages"]] == [
        "Meets the 90-day deadline",
        "Within the $5.0M budget",
    ]


def test_a_design_without_goals_has_no_verdict(user_client: Any, catalog: Any) -> None:
    verdict = _evaluate(user_client, _spec())["verdict"]
    assert verdict["status"] == "none" and verdict["messages"] == []
    assert verdict["deadline"] is None and verdict["budget"] is None


@pytest.mark.parametrize(
    ("goals", "field"),
    [
        ({"deadline": 30}, "spec.goals.deadline"),
        ({"deadline_days": 30, "budget": 1e6}, "spec.goals.budget"),
        ({"deadline_days": 0}, "spec.goals.deadline_days"),
        ({"deadline_days": "soon"}, "spec.goals.deadline_days"),
        ({"budget_usd": -1}, "spec.goals.budget_usd"),
    ],
)
def test_bad_goals_are_a_400_naming_the_field(
    user_client: Any, catalog: Any, goals: dict[str, Any], field: str
) -> None:
    from apps.designs.models import Design

    spec = {**_spec(), "goals": goals}
    response = user_client.post("/api/v1/designs/", {"name": "bad goals", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"], response.json()
    assert not Design.objects.filter(name="bad goals").exists()


def test_a_searched_layout_is_searched_again_on_more_nodes(catalog: Any) -> None:
    from apps.catalog.selectors import engine_catalog_snapshot
    from apps.designs.services import spec_validate
    from tests.designs.fixtures import evaluated_json

    spec = spec_validate(
        spec={
            "workload": {
                "model": {"preset": "llama3-8b"},
                "training": {"tokens": 1.5e12, "global_batch_tokens": 4194304, "precision": "bf16"},
            },
            "cluster": {
                "accelerator": "h200",
                "gpus_per_node": 8,
                "nodes": 4,
                "fabric": "ib-ndr400",
                "storage": "lustre",
            },
            "parallelism": "search",
            "costs": {"cloud": [], "cashflow": {"lead_time_months": 0}},  # servers on hand
            "goals": {"deadline_days": 40},
        }
    )
    snapshot = engine_catalog_snapshot()
    result = evaluated_json(spec=spec, records=snapshot.records)
    deadline = result["verdict"]["deadline"]
    assert result["options"][0]["days"] > 40 and deadline["status"] == "misses"
    # Each larger count is searched afresh: its days fall as nodes grow, and the first under 40 stops it.
    days = [result["options"][0]["days"]] + [r["days"] for r in deadline["larger"]]
    assert days == sorted(days, reverse=True)
    assert deadline["meeting_nodes"] == deadline["larger"][-1]["nodes"] and days[-1] <= 40


def test_a_fixed_layout_that_cannot_scale_says_so(catalog: Any) -> None:
    # 8B, 512 sequences a step at micro-batch 2 over dp 64 on 8 nodes: on 64 nodes dp 512 × 2 = 1,024 > 512.
    from apps.catalog.selectors import engine_catalog_snapshot
    from apps.designs.demo import DEMOS
    from apps.designs.services import spec_validate
    from tests.designs.fixtures import evaluated_json

    spec = spec_validate(spec={**DEMOS[3]["spec"], "goals": {"deadline_days": 1}})
    snapshot = engine_catalog_snapshot()
    deadline = evaluated_json(spec=spec, records=snapshot.records)["verdict"]["deadline"]
    assert [r["nodes"] for r in deadline["larger"]] == [16, 32, 64]
    assert deadline["larger"][-1]["days"] is None and deadline["larger"][-1]["error"]
    assert deadline["meeting_nodes"] is None
    assert "64 nodes: no estimate (" in deadline["message"]


def test_the_goals_are_checked_for_the_option_the_rent_or_own_verdict_picks(
    user_client: Any, catalog: Any
) -> None:
    # Issue #31: one basis for the verdict and the goals. At 30 % utilization owning's cost per run (its
    # annualised cost per hour × the run's hours) is the lowest per run, so the goals used to name owning;
    # but over the 2-year horizon renting on-demand has the lower NPV of monthly cash flows, so the verdict
    # says rent. The goals now name the verdict's option, on-demand, and its figures.
    spec = _spec(budget_usd=1e6, budget_npv_usd=3e7)
    spec["costs"]["utilization"] = 0.3
    body = _evaluate(user_client, spec)
    per_run_cheapest = body["options"][0]
    assert per_run_cheapest["key"] == "own"  # cheapest per run ...
    design = body["design_verdict"]
    assert design["winner"] == "rent" and design["rival"]["key"] == "aws-p5-48xlarge:on_demand"  # ... not NPV
    chosen = _chosen(body)
    verdict = body["verdict"]
    assert verdict["option"] == chosen["label"] == "AWS p5.48xlarge on-demand"
    assert verdict["budget"]["run_cost_usd"] == pytest.approx(chosen["run_cost_usd"])
    assert verdict["budget"]["option"] == chosen["label"]
    # The horizon budget on the verdict's basis: budget − NPV of the rival's cash out, by hand.
    horizon = verdict["budget_npv"]
    assert horizon["npv_usd"] == pytest.approx(design["rival"]["npv_usd"])
    assert horizon["margin_usd"] == pytest.approx(3e7 - design["rival"]["npv_usd"])
    assert horizon["status"] == "meets" and horizon["horizon_years"] == 2
    assert horizon["basis"].startswith("NPV of the option's monthly cash flows over the horizon")
    assert verdict["messages"][1] == (
        f"Within the $30.0M budget over the horizon: AWS p5.48xlarge on-demand, the cheapest option by NPV,"
        f" costs ${design['rival']['npv_usd'] / 1e6:.1f}M (NPV of its cash out over 2 years;"
        f" ${(3e7 - design['rival']['npv_usd']) / 1e6:.1f}M to spare)"
    )


def test_a_horizon_budget_below_owning_npv_is_missed_by_the_difference(
    user_client: Any, catalog: Any
) -> None:
    # At 70 % owning wins on NPV; a horizon budget $1M below owning's NPV is missed by exactly $1M.
    first = _evaluate(user_client, _spec())
    own_npv = first["design_verdict"]["own"]["npv_usd"]
    assert first["design_verdict"]["winner"] == "own"
    body = _evaluate(user_client, _spec(budget_npv_usd=own_npv - 1e6))
    horizon = body["verdict"]["budget_npv"]
    assert horizon["status"] == "misses" and body["verdict"]["status"] == "misses"
    assert horizon["margin_usd"] == pytest.approx(-1e6)
    assert horizon["option"] == "Own (on-prem)"
    assert body["verdict"]["messages"] == [horizon["message"]]
    assert (
        horizon["message"].startswith("Over the $")
        and " over the horizon by $1.0M: Own (on-prem)" in (horizon["message"])
    )


def test_a_horizon_budget_without_a_cloud_option_cannot_be_checked(user_client: Any, catalog: Any) -> None:
    # No cloud option chosen: owning is compared with nothing, so no cash flows and no NPV to check against.
    spec = _spec(budget_npv_usd=1e7)
    spec["costs"]["cloud"] = []
    body = _evaluate(user_client, spec)
    assert [o["key"] for o in body["options"]] == ["own"]  # never an unchosen offering's option
    assert "design_verdict" not in body
    assert body["verdict"]["budget_npv"]["status"] == "unknown"
    assert body["verdict"]["status"] == "none"
    assert "cannot be checked: no cash flows are compared" in body["verdict"]["messages"][0]


def test_a_bad_horizon_budget_is_a_400_naming_the_field(user_client: Any, catalog: Any) -> None:
    from apps.designs.models import Design

    spec = {**_spec(), "goals": {"budget_npv_usd": 0}}
    response = user_client.post("/api/v1/designs/", {"name": "bad npv budget", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    assert "spec.goals.budget_npv_usd" in response.json()["error"]["fields"]
    assert not Design.objects.filter(name="bad npv budget").exists()
