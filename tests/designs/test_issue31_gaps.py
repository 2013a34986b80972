"""Issue #31 gaps closed after the w1–w3 merge, each through the API with its hand calculation beside it.

- The lead-time bridge is chosen by a rule in which order plays no part (engine/cashflow.py bridge_option):
  the cheapest chosen on-demand option; without one, spot; without either, the cheapest reservation billed
  monthly. Before, it was the first non-spot pay-as-you-go option, else whatever option came first: with
  reserved 1-year and spot ticked (no on-demand), four lead months were bridged with a 1-year reservation
  billed every hour ($199,718 a month) rather than the spot hours used ($86,169).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.designs.test_design_verdict import _b200_spec, _evaluate, _npv


def _bridge_spec(models: list[str], offerings: list[str]) -> dict[str, Any]:
    spec = _b200_spec(offerings)
    spec = copy.deepcopy(spec)
    chosen = {"aws-p6-b200-48xlarge": models, "coreweave-8x-b200-node": ["on_demand"]}
    spec["costs"]["cloud"] = [{"offering": o, "pricing_models": chosen[o]} for o in offerings]
    spec["costs"]["cashflow"] = {"lead_time_months": 4}
    return spec


def test_the_lead_time_bridge_and_the_verdict_do_not_depend_on_any_order(
    user_client: Any, catalog: Any
) -> None:
    aws, cw = "aws-p6-b200-48xlarge", "coreweave-8x-b200-node"
    one = _evaluate(user_client, _bridge_spec(["reserved_1y", "spot"], [aws]))
    other = _evaluate(user_client, _bridge_spec(["spot", "reserved_1y"], [aws]))
    assert one["design_verdict"] == other["design_verdict"]
    assert one["costs"][aws]["cashflow"]["own"] == other["costs"][aws]["cashflow"]["own"]

    # By hand: no on-demand is ticked, so spot bridges the 4 lead months. Spot bills the hours used, 4 nodes
    # × 730 h × 0.7 × $42.088/node-h × the spot hours factor (hours bought per hour of progress) a month,
    # plus the cloud storage and egress spread over the months: owning's months 1–4 equal spot's, with the
    # capex paid at delivery at the end of month 4 on top.
    cashflow = one["costs"][aws]["cashflow"]
    inputs = cashflow["inputs"]
    assert inputs["lead_time_months"] == 4
    spot = next(o for o in inputs["rent"] if o["model"] == "spot")
    assert spot["usd_per_node_hour"] == pytest.approx(42.088)
    month = 4 * 730 * 0.7 * 42.088 * spot["hours_factor"] + inputs["rent_extra_usd_per_month"]
    own = cashflow["own"]["monthly_usd"]
    capex = inputs["capex_usd"]
    assert own[1:5] == pytest.approx([month, month, month, month + capex], rel=1e-12)
    spot_flows = next(r for r in cashflow["rent"] if r["name"] == "spot")["monthly_usd"]
    assert own[1:4] == pytest.approx(spot_flows[1:4], rel=1e-12)

    # Two offerings, in both orders and with both tick orders: one verdict. The rival's offering bridges
    # with its own cheapest on-demand option; CoreWeave on-demand at $68.80 is below AWS's $113.9328.
    runs = [
        _evaluate(user_client, _bridge_spec(models, offerings))
        for models in (["reserved_1y", "on_demand"], ["on_demand", "reserved_1y"])
        for offerings in ([aws, cw], [cw, aws])
    ]
    assert all(r["design_verdict"] == runs[0]["design_verdict"] for r in runs)
    assert all(r["ranking"] == runs[0]["ranking"] for r in runs)
    verdict = runs[0]["design_verdict"]
    rival = runs[0]["costs"][verdict["rival"]["offering"]]["cashflow"]
    rate = rival["inputs"]["discount_rate"]
    assert verdict["own"]["npv_usd"] == pytest.approx(_npv(rival["own"]["monthly_usd"], rate), abs=1.0)
    on_demand = next(o for o in rival["inputs"]["rent"] if o["model"] == "on_demand")["usd_per_node_hour"]
    bridged = 4 * 730 * 0.7 * on_demand + rival["inputs"]["rent_extra_usd_per_month"]
    bridge = [bridged, bridged, bridged, bridged + rival["inputs"]["capex_usd"]]
    assert rival["own"]["monthly_usd"][1:5] == pytest.approx(bridge, rel=1e-12)


def _goals_spec(models: list[str], server_usd: float | None = None) -> dict[str, Any]:
    from tests.designs.test_goals import SPEC as GOALS_SPEC

    spec = copy.deepcopy(GOALS_SPEC)
    spec["costs"]["cloud"] = [{"offering": "aws-p5-48xlarge", "pricing_models": models}]
    if server_usd is not None:  # a dear server, so that a rent option is cheapest per run
        spec["costs"]["on_prem"] = {"server_usd": server_usd}
    spec["goals"] = {"budget_usd": 5e6}
    return spec


def test_the_budget_states_its_basis_and_what_the_cheapest_option_commits(
    user_client: Any, catalog: Any
) -> None:
    # Issue #31: goals and budget on a stated basis. A budget is a sum for one run, so it is checked against
    # one run's cost, labelled as such, with what choosing the option commits beside it (issue item 7).
    body = _evaluate(user_client, _goals_spec(["on_demand", "reserved_3y"]))
    budget, cheapest = body["verdict"]["budget"], body["options"][0]
    assert budget["basis"].startswith("cost per run") and "NPV" in budget["basis"]
    assert cheapest["key"] == "own"
    assert budget["run_cost_usd"] == pytest.approx(cheapest["run_cost_usd"])
    # Owning commits its capex at delivery: the capex its cash flows pay (inputs.capex_usd).
    capex = body["costs"]["aws-p5-48xlarge"]["cashflow"]["inputs"]["capex_usd"]
    assert budget["commitment_usd"] == pytest.approx(capex, rel=1e-12)
    assert budget["message"].endswith("; choosing it commits $11.7M (capex at delivery)")

    # A $5M server: the 3-year reservation is cheapest per run and commits every hour of its term, 32 nodes
    # × 730 h × 36 months × $23.776/node-h × (1 + the managed overhead) = $19,993,466.88 × (1 + overhead).
    body = _evaluate(user_client, _goals_spec(["reserved_3y"], server_usd=5e6))
    budget, cheapest = body["verdict"]["budget"], body["options"][0]
    assert cheapest["key"] == "aws-p5-48xlarge:reserved_3y"
    over = 1.0 + body["costs"]["aws-p5-48xlarge"]["cashflow"]["inputs"]["managed_overhead_fraction"]
    assert budget["commitment_usd"] == pytest.approx(32 * 730 * 36 * 23.776 * over, rel=1e-12)
    assert budget["commitment"] == "a 36-month term"
    assert budget["message"].endswith("(a 36-month term)")

    # On-demand cheapest: nothing is committed beyond the run, and the message says nothing of it.
    body = _evaluate(user_client, _goals_spec(["on_demand"], server_usd=5e6))
    budget = body["verdict"]["budget"]
    assert body["options"][0]["key"] == "aws-p5-48xlarge:on_demand"
    assert budget["commitment_usd"] is None and "commits" not in budget["message"]
    assert budget["basis"].startswith("cost per run")

    # The design page shows the basis beside the budget check.
    from django.test import Client

    from apps.designs.models import Design

    page_client = Client()
    page_client.force_login(user_client.user)
    design = Design.objects.filter(owner=user_client.user).order_by("-pk").first()
    assert design is not None
    page = page_client.get(f"/designs/{design.pk}/").content.decode()
    assert "Basis: cost per run" in page


def test_the_design_verdict_states_owning_capex_and_each_chosen_reservations_commitment(
    user_client: Any, catalog: Any
) -> None:
    from tests.designs.test_design_verdict import _p5_spec

    body = _evaluate(user_client, _p5_spec())  # 64 × p5, 3 years, on-demand and reserved 3-year ticked
    verdict, cost = body["design_verdict"], body["costs"]["aws-p5-48xlarge"]
    inputs = cost["cashflow"]["inputs"]
    committed = {c["key"]: c for c in verdict["commitments"]}
    assert list(committed) == ["own", "aws-p5-48xlarge:reserved_3y"]  # on-demand commits nothing
    own = committed["own"]
    assert own["kind"] == "capex" and own["usd"] == pytest.approx(inputs["capex_usd"], rel=1e-12)
    assert own["end_month"] == inputs["lead_time_months"] == 4  # the sourced default lead time
    # By hand: one 36-month term over the 3-year horizon, 64 nodes × 730 h × 36 months × $23.776/node-h ×
    # (1 + managed overhead) = $39,986,933.76 × (1 + overhead), all within the horizon.
    reserved = committed["aws-p5-48xlarge:reserved_3y"]
    over = 1.0 + inputs["managed_overhead_fraction"]
    assert reserved["usd"] == pytest.approx(64 * 730 * 36 * 23.776 * over, rel=1e-12)
    assert (reserved["terms"], reserved["term_months"], reserved["end_month"]) == (1, 36, 36)
    assert reserved["beyond_horizon_usd"] == 0.0
    assert reserved["label"] == next(o["label"] for o in verdict["options"] if o["key"] == reserved["key"])
