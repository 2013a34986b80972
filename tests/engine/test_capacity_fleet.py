"""A capacity plan of two node types solved as one MILP (clusterdesigner.engine.capacity.capacity_fleet): each
type's demand met by its own nodes, an RL run's two pools coupled to the same months, by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusterdesigner.engine.capacity.capacity import CapacityPlan, PlanResult, plan_solve
from clusterdesigner.engine.capacity.capacity_fleet import Coupling, FleetPlan, NodeType, fleet_solve
from clusterdesigner.engine.core.errors import InfeasibleError, InputError

GOLDEN = Path(__file__).parent / "data" / "capacity_one_type_golden.json"


def trainer_type() -> dict[str, Any]:
    """Part A (8 GPUs a node): 2 nodes already owned, more at $10,000 a node-month from arrival to the end
    (owning annualised, no energy), on-demand at $100 a node-hour; inference of 16 GPUs (2 nodes) every hour
    from month 1. Test inputs written here."""
    return {
        "horizon_months": 3,
        "gpus_per_node": 8,
        "inference": [{"name": "chat", "peak_gpus": 16, "start_month": 1}],
        "training": [
            {"name": "trainer", "gpu_hours": 16 * 730, "gpus": 16, "deadline_month": 2, "splittable": True}
        ],
        "supply": {
            "owned": {
                "lead_time_months": 0,
                "capex_usd_per_node": 100_000,
                "fixed_usd_per_node_month": 10_000,
                "usd_per_node_hour_used": 0.0,
                "existing_nodes": 2,
            },
            "on_demand": {"usd_per_node_hour": 100.0},
        },
    }


def rollout_type() -> dict[str, Any]:
    """Part B (4 GPUs a node): owned nodes arrive only in month 2 (lead time 2) at $1,000 a node-month,
    on-demand at $20 a node-hour."""
    return {
        "horizon_months": 3,
        "gpus_per_node": 4,
        "training": [
            {"name": "rollout", "gpu_hours": 8 * 730, "gpus": 8, "deadline_month": 2, "splittable": True}
        ],
        "supply": {
            "owned": {
                "lead_time_months": 2,
                "capex_usd_per_node": 20_000,
                "fixed_usd_per_node_month": 1_000,
                "usd_per_node_hour_used": 0.0,
            },
            "on_demand": {"usd_per_node_hour": 20.0},
        },
    }


def fleet(*, coupled: bool) -> FleetPlan:
    types = (
        NodeType("h100", CapacityPlan.from_json(trainer_type())),
        NodeType("l40s", CapacityPlan.from_json(rollout_type())),
    )
    return FleetPlan(types, (Coupling("RL run", ((0, 0), (1, 0))),) if coupled else ())


# Hand calculation (3 months of 730 h, a zero rate, so the NPV is the cash out). Each pool's work: trainer
# 11,680 GPU-hours / 8 = 1,460 node-hours (2 nodes for one month), rollout 5,840 / 4 = 1,460 (2 nodes, one
# month); both may be split over layers. The 2 owned H100 nodes cost 2 × 10,000 × 3 = $60,000 whatever is
# decided, and serve the inference in months 1 and 2 (on-demand would cost $146,000 a node-month).
#
# Apart (no coupling): the trainer runs in month 0 on the 2 owned nodes, idle then ($0 more); the rollout
# waits for 2 owned L40S nodes arriving in month 2, 2 × 1,000 × 1 = $2,000 (on-demand: 1,460 × 20 =
# $29,200). Total $62,000.
#
# Coupled (both pools do the same share s of their work in month 2, 1 − s in month 0; month 1 is no cheaper
# than month 2): month 0 is free for the trainer but the rollout pays on-demand there, 29,200 · (1 − s);
# month 2 needs ⌈2s⌉ new nodes of each type (H100 $10,000 for the month, L40S $1,000; an on-demand H100
# node-hour at $100 is dearer than a node from 100 node-hours on). s = 1: 20,000 + 2,000 = $22,000;
# s ∈ (0.5, 1): 22,000 + 29,200 · (1 − s), more; s ∈ (0, 0.5]: 11,000 + 29,200 · (1 − s) ≥ $25,600;
# s = 0: $29,200. So the optimum is s = 1, 60,000 + 22,000 = $82,000: 2 H100 and 2 L40S nodes bought,
# both arriving in month 2 (capex listed: 2 × 100,000 + 2 × 20,000 = $240,000).
APART_USD = 60_000 + 0 + 2 * 1_000 * 1
COUPLED_USD = 60_000 + 2 * 10_000 * 1 + 2 * 1_000 * 1
BOTH_IN_MONTH_0_USD = 60_000 + 1_460 * 20


def test_two_types_apart_cost_the_sum_of_each_types_own_plan_by_hand() -> None:
    result = fleet_solve(plan=fleet(coupled=False), mip_gap=1e-9)
    alone = [plan_solve(plan=t.plan, mip_gap=1e-9, compare=False) for t in fleet(coupled=False).node_types]
    assert result.npv_usd == pytest.approx(APART_USD, abs=1e-3)
    assert result.npv_usd == pytest.approx(sum(r.npv_usd for r in alone), abs=1e-6)
    h100, l40s = result.node_types
    assert (h100.accelerator, h100.gpus_per_node, l40s.accelerator, l40s.gpus_per_node) == (
        "h100",
        8,
        "l40s",
        4,
    )
    assert h100.result.owned_purchases == ()  # the trainer fits on the 2 owned nodes in month 0
    assert h100.result.runs[0].node_hours_by_month == pytest.approx((1_460, 0, 0), abs=1e-3)
    assert [(p.arrival_month, p.nodes) for p in l40s.result.owned_purchases] == [(2, 2)]
    assert l40s.result.runs[0].node_hours_by_month == pytest.approx((0, 0, 1_460), abs=1e-3)


def test_coupled_pools_run_in_the_same_months_at_the_hand_calculated_cost() -> None:
    result = fleet_solve(plan=fleet(coupled=True), mip_gap=1e-9)
    assert COUPLED_USD < BOTH_IN_MONTH_0_USD
    assert result.npv_usd == pytest.approx(COUPLED_USD, abs=1e-3)
    assert result.total_usd == pytest.approx(COUPLED_USD, abs=1e-3)
    assert result.capex_usd == pytest.approx(2 * 100_000 + 2 * 20_000)
    h100, l40s = result.node_types
    assert [(p.arrival_month, p.nodes) for p in h100.result.owned_purchases] == [(2, 2)]
    assert [(p.arrival_month, p.nodes) for p in l40s.result.owned_purchases] == [(2, 2)]
    assert h100.result.npv_usd == pytest.approx(80_000, abs=1e-3)
    assert l40s.result.npv_usd == pytest.approx(2_000, abs=1e-3)
    for run in result.runs:
        assert run.node_hours_by_month == pytest.approx((0, 0, 1_460), abs=1e-3)
    # The whole plan's months sum the types: 2 + 2 owned H100 nodes and 2 L40S nodes in month 2.
    assert [m.owned_nodes for m in result.months] == [2, 2, 6]
    assert sum(m.cost_usd["owned"] for m in result.months) == pytest.approx(COUPLED_USD, abs=1e-3)
    assert result.cost_by_layer_usd["owned"] == pytest.approx(COUPLED_USD, abs=1e-3)
    # The notes both types share once (here all of them: both own on the annualised basis, no cash view).
    assert sum(n.startswith("No cash view") for n in result.notes) == 1
    assert not any(n.startswith(("h100: ", "l40s: ")) for n in result.notes)
    assert set(h100.result.notes) < set(result.notes)
    # Comparisons for the whole fleet: all-rent puts both pools and the inference on-demand.
    rent = next(a for a in result.alternatives if a.name == "all rent")
    assert rent.npv_usd == pytest.approx(1_460 * 100 + 1_460 * 20 + 2 * 730 * 100 * 2, abs=1e-3)


def test_a_fleet_result_survives_a_json_round_trip() -> None:
    result = fleet_solve(plan=fleet(coupled=True), compare=False)
    again = PlanResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result
    assert again.node_types[1].result.owned_purchases == result.node_types[1].result.owned_purchases


def test_a_type_that_cannot_serve_its_own_demand_is_named() -> None:
    spec = rollout_type()
    del spec["supply"]["on_demand"]
    spec["training"][0]["deadline_month"] = 1  # owned L40S nodes arrive only in month 2
    types = (
        NodeType("h100", CapacityPlan.from_json(trainer_type())),
        NodeType("l40s", CapacityPlan.from_json(spec)),
    )
    with pytest.raises(InfeasibleError) as caught:
        fleet_solve(plan=FleetPlan(types), compare=False)
    assert caught.value.field == "node_types.1.supply"
    assert caught.value.message.startswith("l40s: no mix of the offered capacity")


def test_coupling_that_no_month_can_hold_is_named_on_training() -> None:
    # Each type alone can serve its run, but not in a common month: the H100 type has only a 12-month
    # reservation capped at 2 nodes, which the inference fills from month 1, so its trainer fits only in
    # month 0; the L40S rollout fits only in month 2 (owned nodes arriving then, no on-demand).
    a, b = trainer_type(), rollout_type()
    a["supply"] = {"reservations": [{"term_months": 12, "usd_per_node_hour": 5.0, "cap_nodes": 2}]}
    del b["supply"]["on_demand"]
    types = (NodeType("h100", CapacityPlan.from_json(a)), NodeType("l40s", CapacityPlan.from_json(b)))
    for t in types:
        plan_solve(plan=t.plan, compare=False)  # each alone is served
    with pytest.raises(InfeasibleError) as caught:
        fleet_solve(plan=FleetPlan(types, (Coupling("RL run", ((0, 0), (1, 0))),)), compare=False)
    assert caught.value.field == "training"
    assert "coupled runs" in caught.value.message


def test_refuses_one_type_twice_and_coupled_runs_of_different_months() -> None:
    one = NodeType("h100", CapacityPlan.from_json(trainer_type()))
    with pytest.raises(InputError) as caught:
        fleet_solve(plan=FleetPlan((one, one)))
    assert caught.value.field == "node_types.1.accelerator"
    b = rollout_type()
    b["training"][0]["earliest_start_month"] = 1
    types = (one, NodeType("l40s", CapacityPlan.from_json(b)))
    with pytest.raises(InputError) as caught:
        fleet_solve(plan=FleetPlan(types, (Coupling("RL run", ((0, 0), (1, 0))),)))
    assert caught.value.field == "couplings"


@pytest.mark.parametrize(
    "name", ["worked_example", "own_or_reserve", "two_runs_tie_break", "unsplit_run_on_capped_spot"]
)
def test_a_one_type_plan_is_solved_exactly_as_before_plans_of_several_types(name: str) -> None:
    """Today's result of each plan equals the one stored before the change (data/README.md): every key, every
    choice and count exactly, every figure to 1e-12 of itself. Not bit for bit: numpy picks its summation
    kernels by the CPU's vector extensions (AVX-512 here), so a demand mean summed on another machine differs
    in the last bit (34.021816684428586 vs 34.02181668442859 on this one)."""
    case = json.loads(GOLDEN.read_text())[name]
    result = plan_solve(plan=CapacityPlan.from_json(case["spec"])).to_json()
    del result["size"]["solve_seconds"]
    _assert_same(json.loads(json.dumps(result, sort_keys=True)), case["result"], name)


def _assert_same(got: Any, want: Any, path: str) -> None:
    """``got`` equals ``want`` key for key and item for item, floats to a relative 1e-12."""
    if isinstance(want, float) and isinstance(got, (int, float)):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), path
    elif isinstance(want, dict):
        assert isinstance(got, dict) and got.keys() == want.keys(), path
        for key in want:
            _assert_same(got[key], want[key], f"{path}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), path
        for index, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_same(a, b, f"{path}[{index}]")
    else:
        assert got == want, path
