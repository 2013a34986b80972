"""Design goals (spec.goals: a deadline in days, a budget in USD per run) and the verdict on evaluation."""

from __future__ import annotations

import copy
from typing import Any

import pytest

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


def test_a_missed_deadline_names_a_larger_node_count_with_its_days(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(deadline_days=30))
    verdict, cheapest = body["verdict"], body["options"][0]
    # The design's days are the cheapest option's expected days (with failures and restarts), over 30.
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
    assert f"expected, with failures and restarts, for the cheapest option, {cheapest['label']}" in message


def test_the_larger_estimate_is_the_same_design_on_more_nodes(user_client: Any, catalog: Any) -> None:
    # The verdict's 64-node days and cost per run are what a 64-node design (dp 16) evaluates to.
    verdict = _evaluate(user_client, _spec(deadline_days=30, budget_usd=1e7))["verdict"]
    larger = verdict["deadline"]["larger"][0]
    spec_64 = _spec()
    spec_64["cluster"]["nodes"] = 64
    spec_64["parallelism"] = {**LAYOUT_32, "dp": 16}
    own_64 = next(o for o in _evaluate(user_client, spec_64)["options"] if o["key"] == "own")
    assert larger["days"] == pytest.approx(own_64["days"], rel=1e-9)
    assert larger["run_cost_usd"] == pytest.approx(own_64["run_cost_usd"], rel=1e-9)


def test_a_met_deadline_gives_its_slack_and_tries_no_larger_cluster(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(deadline_days=90))
    days = body["options"][0]["days"]
    assert body["verdict"]["status"] == "meets"
    assert body["verdict"]["deadline"]["larger"] == []
    assert body["verdict"]["messages"] == [
        f"Meets the 90-day deadline: {days:.1f} days on 32 nodes ({90 - days:.1f} days slack; expected, with "
        f"failures and restarts, for the cheapest option, {body['options'][0]['label']})"
    ]


def test_over_budget_says_by_how_much(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec(budget_usd=100_000))
    cheapest = body["options"][0]
    budget = body["verdict"]["budget"]
    assert body["verdict"]["status"] == "misses" and budget["status"] == "misses"
    assert budget["run_cost_usd"] == pytest.approx(cheapest["run_cost_usd"])
    assert budget["margin_usd"] == pytest.approx(100_000 - cheapest["run_cost_usd"])
    assert body["verdict"]["messages"][0].startswith("Over the $100k budget by $")
    assert f"the cheapest option, {cheapest['label']}, costs $" in body["verdict"]["messages"][0]


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
    from apps.designs.services import evaluate_spec, spec_validate

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
    result = evaluate_spec(spec=spec, records=snapshot.records, specs=snapshot.specs)
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
    from apps.designs.services import evaluate_spec, spec_validate

    spec = spec_validate(spec={**DEMOS[3]["spec"], "goals": {"deadline_days": 1}})
    snapshot = engine_catalog_snapshot()
    deadline = evaluate_spec(spec=spec, records=snapshot.records, specs=snapshot.specs)["verdict"]["deadline"]
    assert [r["nodes"] for r in deadline["larger"]] == [16, 32, 64]
    assert deadline["larger"][-1]["days"] is None and deadline["larger"][-1]["error"]
    assert deadline["meeting_nodes"] is None
    assert "64 nodes: no estimate (" in deadline["message"]
