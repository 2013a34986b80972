"""Issue #31 gaps closed after the w1–w3 merge, each through the API with its hand calculation beside it.

- The lead-time bridge is chosen by a rule in which order plays no part (engine/cost/cashflow.py
bridge_option):
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


def test_the_three_figures_for_owning_are_reconciled_through_the_api(user_client: Any, catalog: Any) -> None:
    # Issue #31 item 5: owning showed $25.05M "over the horizon", $21.25M "cash out" and $22.56M NPV with no
    # link between them. The design verdict states all three, each with its basis and its distance from the
    # NPV, and only the NPV decides. By hand from the monthly flows the API returns.
    from tests.designs.test_design_verdict import _p5_spec

    body = _evaluate(user_client, _p5_spec())
    verdict, cost = body["design_verdict"], body["costs"]["aws-p5-48xlarge"]
    figures = {f["name"]: f for f in verdict["owning_figures"]}
    assert list(figures) == ["npv", "cash_out", "annualised"]
    own = cost["cashflow"]["own"]["monthly_usd"]
    rate = cost["cashflow"]["inputs"]["discount_rate"]
    npv = _npv(own, rate)
    assert figures["npv"]["usd"] == pytest.approx(npv, abs=1.0) == verdict["own"]["npv_usd"]
    assert figures["cash_out"]["usd"] == pytest.approx(sum(own), abs=1.0)  # undiscounted: the plain sum
    assert figures["annualised"]["usd"] == pytest.approx(cost["on_prem"]["total_usd"], abs=1.0)
    for f in figures.values():
        assert f["minus_npv_usd"] == pytest.approx(f["usd"] - npv, abs=1.0)
        assert f["basis"]
    assert "decides the verdict" in figures["npv"]["label"]
    # The saving the verdict states is on the NPV basis, never the annualised or undiscounted figure.
    assert verdict["saving_usd"] == pytest.approx(verdict["rival"]["npv_usd"] - npv, abs=1.0)


def test_the_monte_carlo_through_the_api_decides_first_and_10000_draws_take_well_under_a_second(
    user_client: Any, catalog: Any
) -> None:
    # Issue #31 item 6: the rent option is fixed before the draws (the deterministic verdict's), every
    # percentile has its standard error, and the draws are vectorised.
    import time

    from clusterdesigner.engine.cost.cashflow import CashflowInputs, RentOption, monte_carlo
    from tests.designs.test_design_verdict import _p5_spec

    body = _evaluate(user_client, _p5_spec())
    cashflow = body["costs"]["aws-p5-48xlarge"]["cashflow"]
    mc = cashflow["uncertainty"]
    assert mc["option"] == cashflow["reference"] == body["design_verdict"]["rival"]["pricing_model"]
    assert mc["samples"] == 100_000 and mc["batches"] == 20
    spread = mc["p90_usd"] - mc["p10_usd"]
    for q in ("p10", "p50", "p90"):
        assert 0 < mc[f"{q}_se_usd"] < 0.01 * spread

    data = dict(cashflow["inputs"])
    data["rent"] = tuple(RentOption.from_json(o) for o in data["rent"])
    inputs = CashflowInputs(**data)
    monte_carlo(inputs=inputs, spread=0.25, samples=10_000, seed=0)  # warm numpy
    start = time.perf_counter()
    out = monte_carlo(inputs=inputs, spread=0.25, samples=10_000, seed=1)
    assert time.perf_counter() - start < 0.5  # some 5 ms on one core (bench/cashflow_monte_carlo.py)
    assert out.option == mc["option"]


def test_the_break_even_stated_is_against_the_verdicts_rival_and_the_npvs_cross_there(
    user_client: Any, catalog: Any
) -> None:
    # Issue #31 item 5: the break-even printed was always against on-demand, even when the verdict's rival
    # was spot (whose real crossing, 72.1 %, was never stated). Now the verdict states the crossing against
    # its rival (here spot, 76.8 %; on-demand's is 21.8 %), and each chosen option its own; evaluated again
    # at that utilization through the API, that option's NPV and owning's are equal within $1.
    from tests.designs.test_design_verdict import _p5_spec

    spec = _p5_spec()
    spec["costs"]["cloud"] = [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "spot"]}]
    spec["costs"]["spot_capacity_nodes"] = 64  # the design states it can get 64 spot nodes
    # A $200k server: at the list price spot is cheaper at every utilization (no crossing to state).
    spec["costs"]["on_prem"] = {"server_usd": 200_000}
    body = _evaluate(user_client, spec)
    verdict = body["design_verdict"]
    by_key = {o["key"]: o for o in verdict["options"]}
    rival = verdict["rival"]
    assert verdict["break_even_utilization"] == rival["break_even_utilization"] is not None
    assert set(by_key) == {"aws-p5-48xlarge:on_demand", "aws-p5-48xlarge:spot"}
    for key, option in by_key.items():
        be = option["break_even_utilization"]
        assert be is not None and 0 < be <= 1, key
        again = copy.deepcopy(spec)
        again["costs"]["utilization"] = be
        moved = _evaluate(user_client, again)
        rows = {r["name"]: r for r in moved["costs"]["aws-p5-48xlarge"]["cashflow"]["rent"]}
        own = moved["costs"]["aws-p5-48xlarge"]["cashflow"]["own"]["npv_usd"]
        assert rows[option["pricing_model"]]["npv_usd"] == pytest.approx(own, abs=1.0), key
    assert f"{verdict['break_even_utilization']:.1%}" in verdict["sentence"]


# How the verdict writes each unit, and half its last digit: a threshold parsed back from the sentence is the
# API's within that rounding.
_UNITS = {
    "fraction": (r"([0-9.]+)%", 0.01 * 0.05 + 1e-12),
    "fraction of capex": (r"([0-9.]+)% of capex", 0.01 * 0.05 + 1e-12),
    "USD/node": (r"\$([0-9,]+) per node", 0.5 + 1e-9),
    "USD/node-hour": (r"\$([0-9,.]+) per node-hour", 0.005 + 1e-12),
    "USD/kWh": (r"\$([0-9,.]+) per kWh", 0.00005 + 1e-12),
}


def test_the_verdict_sentence_and_the_share_view_state_the_prices_that_flip_it(
    user_client: Any, catalog: Any
) -> None:
    """Issue #31, "the price that flips it": the thresholds stand in the verdict sentence (API) and on the
    share view, each the API's own figure (a number parsed back from the sentence is the threshold the API
    states, to the sentence's rounding), and each is where the two NPVs meet (tests/engine/test_npv_basis.py
    holds that within $1)."""
    import html
    import re

    from django.test import Client

    from apps.designs.models import Design
    from apps.designs.services import share_link_create
    from tests.designs.test_design_verdict import _p5_spec

    created = user_client.post("/api/v1/designs/", {"name": "p5", "spec": _p5_spec()}, format="json")
    design_id = created.json()["id"]
    verdict = user_client.post(f"/api/v1/designs/{design_id}/evaluate/").json()["design_verdict"]
    sentence = verdict["sentence"]
    stated = [f for f in verdict["flips"] if f["threshold"] is not None and f["name"] != "utilization"]
    assert stated, verdict["flips"]
    assert "the verdict flips at " in sentence and sentence.endswith("(each alone).")
    flips_part = sentence.split("the verdict flips at ", 1)[1]
    for flip in stated:
        word = "at" if flip["unit"] == "fraction" else "of"
        pattern, tolerance = _UNITS[flip["unit"]]
        found = re.search(re.escape(f"{flip['label']} {word} ") + pattern, flips_part)
        assert found, (flip, flips_part)
        value = float(found[1].replace(",", ""))
        scale = 0.01 if flip["unit"].startswith("fraction") else 1.0
        assert value * scale == pytest.approx(flip["threshold"], abs=tolerance)
    # The share view states the same sentence, and one row per flip with its input's name.
    _, token = share_link_create(design=Design.objects.get(pk=design_id), user=user_client.user)
    page = html.unescape(Client().get(f"/share/{token}/").content.decode())
    assert sentence in page
    table = page.split('id="verdict-flips"', 1)[1].split("</table>", 1)[0]
    assert {f["name"] for f in verdict["flips"]} == set(re.findall(r'data-input="([^"]+)"', table))


def test_the_resale_flip_moves_the_resale_the_cash_flows_take_and_the_npvs_meet_there(
    user_client: Any, catalog: Any
) -> None:
    """Issue #31, "the price that flips it" for resale. The verdict stated its resale threshold by moving
    on_prem.residual_fraction, the book value's residual, which no longer reaches the cash flows (the resale
    is the market series' value, resolved before): every design read "no flip" for the resale value, even
    where owning wins by less than the resale is worth. Now the flip moves cashflow.resale_fraction.

    512 × H100 for 3 years at 70 %, on-demand only at a negotiated $28 a node-hour (TEST INPUT), no lead time:
    owning's NPV falls by capex / 1.08³ for each 1.0 of resale, received at month 36, and nothing else moves,
    so by hand the gap rent − own is zero at f* = f₀ − gap₀ · 1.08³ / capex, f₀ the market resale (GLRI H100
    series at 3 years, 0.30)."""
    from tests.designs.test_design_verdict import _p5_spec

    spec = _p5_spec()
    spec["costs"]["cloud"] = [
        {
            "offering": "aws-p5-48xlarge",
            "pricing_models": ["on_demand"],
            "usd_per_node_hour": {"on_demand": 28.0},
        }
    ]
    spec["costs"]["cashflow"] = {"lead_time_months": 0}
    body = _evaluate(user_client, spec)
    verdict = body["design_verdict"]
    cash = body["costs"]["aws-p5-48xlarge"]["cashflow"]
    assert cash["resale"]["basis"] == "market" and cash["resale"]["fraction"] == pytest.approx(0.30)
    flip = next(f for f in verdict["flips"] if f["name"] == "cashflow.resale_fraction")
    assert flip["label"] == "the resale value" and flip["base"] == pytest.approx(0.30)
    rent = next(r for r in cash["rent"] if r["name"] == "on_demand")
    gap = rent["npv_usd"] - cash["own"]["npv_usd"]
    by_hand = 0.30 - gap * 1.08**3 / cash["inputs"]["capex_usd"]
    assert 0.0 < by_hand < 0.999  # the resale decides this verdict
    assert flip["threshold"] == pytest.approx(by_hand, abs=1e-9)
    assert "the resale value of " in verdict["sentence"]
    # The design re-evaluated with the resale at the threshold (a dealer's quote, cashflow.resale_fraction):
    # the two NPVs meet within $1.
    spec["costs"]["cashflow"]["resale_fraction"] = flip["threshold"]
    again = _evaluate(user_client, spec)["costs"]["aws-p5-48xlarge"]["cashflow"]
    rent_again = next(r for r in again["rent"] if r["name"] == "on_demand")
    assert abs(rent_again["npv_usd"] - again["own"]["npv_usd"]) < 1.0
    # The tornado moves the same resale: its bar is the NPV of ± the spread of it, not a book residual that
    # moves nothing before tax.
    names = {row["name"] for row in body["costs"]["aws-p5-48xlarge"]["sensitivity"]["rows"]}
    assert "cashflow.resale_fraction" in names and "on_prem.residual_fraction" not in names


def test_staff_scales_with_the_fleet_through_the_design_api_with_no_floor_of_one_person(
    user_client: Any, catalog: Any
) -> None:
    """Issue #31 item 11: one staff FTE ($180,000 a year) was charged even for a single 8-GPU node, $2.57 a
    GPU-hour. By hand, the sourced default is 1 FTE per 75 nodes (defaults.NODES_PER_FTE, "1 FTE per 50-100
    GPU servers"): one node is 1/75 FTE × $180,000 = $2,400 a year; 64 nodes 64/75 × $180,000 = $153,600."""
    from tests.designs.test_stale_prices import SPEC

    staff = {}
    for nodes in (1, 64):
        spec = copy.deepcopy(SPEC)
        spec["cluster"]["nodes"] = nodes
        spec["parallelism"]["dp"] = 8 * nodes
        cost = _evaluate(user_client, spec)["costs"]["aws-p5-48xlarge"]
        staff[nodes] = cost["on_prem"]["annual"]["staff"]["usd"]
    assert staff[1] == pytest.approx(2_400.0, abs=0.01)
    assert staff[64] == pytest.approx(153_600.0, abs=0.01)


def _usd(value: float) -> str:
    """As the pages print dollars (the dashboard's usd filter)."""
    return f"-${abs(value):,.0f}" if value < 0 else f"${value:,.0f}"


def test_the_design_page_and_the_share_view_print_the_apis_verdict_figures_to_the_dollar(
    user_client: Any, catalog: Any
) -> None:
    """Done when: "every number on the design page, share view, XLSX and API agrees to the dollar and states
    its basis" (the XLSX against the API: tests/designs/test_xlsx_recalculates.py). The 32 × B200 design with
    two offerings: each option's NPV and undiscounted cash in the verdict's NPV table, owning's three figures
    and their distance from the NPV, and the commitments, on both pages exactly as the API states them,
    beside the basis the API names."""
    import html
    import re

    from django.test import Client

    from apps.designs.models import Design
    from apps.designs.services import share_link_create
    from tests.designs.test_design_verdict import _b200_spec

    spec = _b200_spec(["aws-p6-b200-48xlarge", "coreweave-8x-b200-node"])
    created = user_client.post("/api/v1/designs/", {"name": "b200", "spec": spec}, format="json")
    design_id = created.json()["id"]
    verdict = user_client.post(f"/api/v1/designs/{design_id}/evaluate/").json()["design_verdict"]
    _, token = share_link_create(design=Design.objects.get(pk=design_id), user=user_client.user)
    owner = Client()
    owner.force_login(user_client.user)
    pages = {
        "design page": owner.get(f"/designs/{design_id}/").content.decode(),
        "share view": Client().get(f"/share/{token}/").content.decode(),
    }
    expected = {"own": (verdict["own"]["npv_usd"], verdict["own"]["cash_usd"])} | {
        o["key"]: (o["npv_usd"], o["cash_usd"]) for o in verdict["options"]
    }
    for where, raw in pages.items():
        page = html.unescape(raw)
        summary = page.split('id="finance-summary"', 1)[1].split("</section>", 1)[0]
        assert f"Basis: {verdict['basis']}" in summary, where
        table = summary.split('id="verdict-npv-table"', 1)[1].split("</table>", 1)[0]
        rows = dict(re.findall(r'<tr data-verdict-option="([^"]+)"[^>]*>(.*?)</tr>', table, re.S))
        assert set(rows) == set(expected), where
        for key, (npv, cash) in expected.items():
            cells = re.findall(r'<td class="num">([^<]*)</td>', rows[key])
            assert cells[:2] == [_usd(npv), _usd(cash)], (where, key)
        figures = summary.split('id="owning-figures"', 1)[1].split("</table>", 1)[0]
        for f in verdict["owning_figures"]:
            row = figures.split(f'data-figure="{f["name"]}"', 1)[1].split("</tr>", 1)[0]
            assert _usd(f["usd"]) in row and _usd(f["minus_npv_usd"]) in row and f["basis"] in row, where
        for c in verdict["commitments"]:
            row = summary.split(f'data-commitment="{c["key"]}"', 1)[1].split("</tr>", 1)[0]
            assert _usd(c["usd"]) in row and _usd(c["beyond_horizon_usd"]) in row, where
