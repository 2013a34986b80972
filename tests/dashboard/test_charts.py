"""Chart builders against a real evaluation: the traces, titles and the values they plot."""

from __future__ import annotations

from typing import Any

import pytest

from apps.dashboard import charts
from apps.designs.selectors import evaluation_read
from clusterdesigner.charts import PRICING_LABELS
from clusterdesigner.engine.design.analysis_result import SweepRow

pytestmark = pytest.mark.django_db


def _names(figure: dict[str, Any]) -> list[str]:
    return [trace["name"] for trace in figure["data"]]


def test_memory_chart_stacks_the_parts_under_the_capacity(h200_evaluation: dict[str, Any]) -> None:
    figure = charts.memory_chart(evaluation_read(result=h200_evaluation))
    memory = h200_evaluation["training"]["memory_per_gpu_gib"]
    assert _names(figure) == [
        "Weights",
        "Gradients",
        "Optimizer",
        "Activations",
        "Logits",
        "Framework reserve",
        "Capacity 141 GiB",
    ]
    bars = [t for t in figure["data"] if t["type"] == "bar"]
    # The stacked bars add up to the engine's total (parts are rounded to 3 decimals by the engine).
    assert sum(t["y"][0] for t in bars) == pytest.approx(memory["total"], abs=0.01)
    assert figure["data"][-1]["y"] == [141.0]  # H200: 141 GiB HBM3e (catalog)
    assert figure["layout"]["barmode"] == "stack"
    assert "fits" in figure["layout"]["title"]["text"]


def test_cost_chart_marks_only_break_evens_inside_zero_to_one(h200_evaluation: dict[str, Any]) -> None:
    figure = charts.cost_utilization_chart(evaluation_read(result=h200_evaluation))
    assert _names(figure) == ["Own (on-prem)", "Cloud on-demand", "Cloud reserved 1 y", "Break-even"]
    marks = figure["data"][-1]
    result = h200_evaluation["costs"]["aws-p5e-48xlarge"]
    on_demand = result["break_even_utilization"]["on_demand"]["utilization"]
    # The reserved 1-year NPV line never meets owning's in (0, 1] (the result says none), so only on-demand
    # gets a marker; the curves are NPVs of the monthly cash flows, the verdict's basis (issue #31).
    assert result["break_even_utilization"]["reserved_1y"]["utilization"] is None
    assert marks["x"] == [pytest.approx(on_demand * 100)]
    # The mark sits where the two NPV lines cross: on owning's curve and on on-demand's (both affine in u).
    curves = result["curves"]
    assert curves["basis"] == "NPV of the monthly cash flows"
    for key in ("on_prem_usd", "on_demand_usd"):
        (u0, *_, u1), (y0, *_, y1) = curves["utilization"], curves[key]
        assert marks["y"] == [pytest.approx(y0 + (y1 - y0) * (on_demand - u0) / (u1 - u0), abs=1.0)], key
    own_npv = result["cashflow"]["own"]["npv_usd"]
    # The design's utilization is on the grid (0.05, 0.10, ... 1.00): owning's NPV there is the cash flows'.
    at_design = curves["utilization"].index(result["verdict"]["utilization"])
    assert curves["on_prem_usd"][at_design] == pytest.approx(own_npv, abs=1e-6)
    assert figure["layout"]["xaxis"]["title"]["text"] == "Utilization (%)"
    assert (
        figure["layout"]["title"]["text"] == "NPV of the monthly cash flows over 2 years against utilization"
    )


def test_cumulative_cost_ends_at_each_options_total(h200_evaluation: dict[str, Any]) -> None:
    figure = charts.cumulative_cost_chart(evaluation_read(result=h200_evaluation))
    result = h200_evaluation["costs"]["aws-p5e-48xlarge"]
    own, on_demand, reserved = figure["data"]
    assert own["y"][0] == pytest.approx(result["on_prem"]["capex_usd"])  # capex paid at year 0
    assert own["y"][-1] == pytest.approx(result["on_prem"]["cash_total_usd"])  # $3,028,763 cash over 2 y
    assert own["x"][-1] == pytest.approx(2.0)
    assert on_demand["y"][-1] == pytest.approx(result["cloud"]["on_demand"]["total_usd"])
    assert reserved["y"][-1] == pytest.approx(result["cloud"]["reserved_1y"]["total_usd"])


def test_capex_opex_leaves_out_the_annualised_capital_charge(h200_evaluation: dict[str, Any]) -> None:
    figure = charts.capex_opex_chart(evaluation_read(result=h200_evaluation))
    own = h200_evaluation["costs"]["aws-p5e-48xlarge"]["on_prem"]
    assert "Opex: capital" not in _names(figure)
    capex = sum(t["y"][0] for t in figure["data"] if t["x"] == ["Capex (once)"])
    assert capex == pytest.approx(own["capex_usd"])  # $2,057,310
    opex = sum(t["y"][0] for t in figure["data"] if t["x"] == ["Opex (per year)"])
    assert opex == pytest.approx(own["years"][1]["opex_usd"])  # $485,727 per year


def test_tornado_orders_by_swing_and_drops_inputs_that_do_not_move(h200_evaluation: dict[str, Any]) -> None:
    figure = charts.sensitivity_chart(evaluation_read(result=h200_evaluation))
    assert _names(figure) == ["Input −25%", "Input +25%"]
    rows = h200_evaluation["costs"]["aws-p5e-48xlarge"]["sensitivity"]["rows"]
    moving = [r for r in rows if r["swing_usd"]]
    assert len(figure["data"][0]["y"]) == len(moving) < len(rows)
    # Plotly draws the first category at the bottom: the largest swing (on-demand price) ends up on top.
    assert figure["data"][0]["y"][-1] == "Cloud price, on-demand (USD/node-h)"
    base = h200_evaluation["costs"]["aws-p5e-48xlarge"]["sensitivity"]["base_own_minus_rent_usd"]
    assert base < 0  # renting costs more: own − rent shown with the sign before the currency
    assert f"-${abs(base):,.0f}" in figure["layout"]["title"]["text"]


def test_every_design_chart_has_a_title_axis_titles_and_hover(h200_evaluation: dict[str, Any]) -> None:
    built = charts.design_charts(evaluation_read(result=h200_evaluation))
    assert [c["id"] for c in built] == [
        "memory",
        "step-time",
        "cost-utilization",
        "cumulative-cost",
        "cash-flow",
        "capex-opex",
        "sensitivity",
        "network",
    ]
    for chart in built:
        layout = chart["figure"]["layout"]
        assert layout["title"]["text"], chart["id"]
        assert layout["yaxis"]["title"]["text"], chart["id"]
        if chart["id"] not in ("memory", "capex-opex"):  # one-column bars: the column label says it
            assert layout["xaxis"]["title"]["text"], chart["id"]
        for trace in chart["figure"]["data"]:
            assert trace.get("hovertemplate"), (chart["id"], trace["name"])


def test_network_chart_counts_the_single_switch_of_64_endpoints(h200_evaluation: dict[str, Any]) -> None:
    figure = charts.network_chart(evaluation_read(result=h200_evaluation))
    bars = dict(zip(figure["data"][0]["x"], figure["data"][0]["y"], strict=True))
    # 64 H200 GPUs × 1 NIC on one 64-port NDR switch: 1 leaf, 64 cables; transceivers: 32 twin-port cages on
    # the switch + 8 DGX H200 × 4 twin-port OSFP cages (two NICs each) = 64 (one per NIC before: 96).
    # Capex $30,000 + 64 × $150 + 64 × $1,200 = $116,400 (was $154,800 with 96 transceivers).
    assert bars == {"Leaf switches": 1, "Cables": 64, "Transceivers": 64}
    assert "$116,400" in figure["layout"]["title"]["text"]


def test_sweep_heatmap_shows_the_cheapest_pricing_per_cell() -> None:
    rows = [
        {
            "accelerator": "h100-sxm",
            "nodes": 16,
            "pricing_model": "on_demand",
            "fits": True,
            "days": 10,
            "cost_usd": 900,
        },
        {
            "accelerator": "h100-sxm",
            "nodes": 16,
            "pricing_model": "own",
            "fits": True,
            "days": 10,
            "cost_usd": 700,
        },
        {
            "accelerator": "b200",
            "nodes": 16,
            "pricing_model": "own",
            "fits": False,
            "days": None,
            "cost_usd": None,
        },
        {
            "accelerator": "b200",
            "nodes": 32,
            "pricing_model": "spot",
            "fits": True,
            "days": 3,
            "cost_usd": 500,
        },
    ]
    figure = charts.sweep_heatmap([SweepRow.from_json(r) for r in rows], value="cost_usd")
    heat = figure["data"][0]
    assert heat["y"] == ["b200", "h100-sxm"] and heat["x"] == ["16", "32"]
    assert heat["z"] == [[None, 500], [700, None]]
    assert heat["text"][1][0] == "own (on-prem)" and heat["text"][0][0] == "does not fit"
    assert figure["layout"]["xaxis"]["title"]["text"] == "Nodes (count)"


def test_cash_flow_chart_accumulates_the_engines_monthly_flows_and_marks_payback(
    h200_evaluation: dict[str, Any],
) -> None:
    figure = charts.cash_flow_chart(evaluation_read(result=h200_evaluation))
    cash = h200_evaluation["costs"]["aws-p5e-48xlarge"]["cashflow"]
    own = next(t for t in figure["data"] if t["name"] == "Own (on-prem)")
    # Month 0 is capex at delivery; each later point adds that month's flow (the last one nets the resale).
    assert own["x"][0] == 0 and own["y"][0] == cash["own"]["monthly_usd"][0]
    assert own["y"][-1] == pytest.approx(cash["own"]["total_usd"], rel=1e-12)
    assert own["y"][5] == pytest.approx(sum(cash["own"]["monthly_usd"][:6]), rel=1e-12)
    rent = {r["name"]: r for r in cash["rent"]}
    for trace in figure["data"][1:]:
        model = next(m for m in rent if trace["name"] == f"Cloud {PRICING_LABELS[m]}")
        assert trace["y"][-1] == pytest.approx(rent[model]["total_usd"], rel=1e-12)
    assert [s["x0"] for s in figure["layout"]["shapes"]] == [cash["payback_month"]]
    assert f"payback, month {cash['payback_month']}" in figure["layout"]["annotations"][0]["text"]
