"""Capacity plan charts: pure functions from the engine's PlanResult to Plotly figure dicts, drawn by
static/js/charts.js like the design charts (clusterdesigner/charts.py: the shared layout, palette and
escaping)."""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

from clusterdesigner.charts import LAYOUT, PALETTE, heading
from clusterdesigner.engine.capacity.capacity import HOURS_PER_MONTH, PlanResult

LAYER_LABELS = {"owned": "Owned", "reserved": "Reserved", "on_demand": "On-demand", "spot": "Spot"}


def _figure(fig: go.Figure, *, title: str, y_title: str, subtitle: str = "") -> dict[str, Any]:
    """The plan charts' common layout; a ``subtitle`` is the title's second line (charts.heading)."""
    fig.update_layout(
        **{**LAYOUT, **heading(title, subtitle)},
        xaxis={"title": {"text": "Month of the plan"}, "dtick": 1},
        yaxis={"title": {"text": y_title}},
    )
    return json.loads(fig.to_json())  # type: ignore[no-any-return]


def capacity_layers_chart(*, result: PlanResult, gpus_per_node: int, of: str = "") -> dict[str, Any]:
    """Stacked capacity by layer (GPUs; burst as the month's average) against mean and peak demand; ``of``
    names the node type in a plan of several (each type's chart is its own: its GPUs are not another's)."""
    months = [m.month for m in result.months]
    layers: dict[str, list[float]] = {
        "owned": [m.owned_nodes * gpus_per_node for m in result.months],
        "reserved": [m.reserved_nodes * gpus_per_node for m in result.months],
        "on_demand": [m.on_demand_node_hours / HOURS_PER_MONTH * gpus_per_node for m in result.months],
        "spot": [m.spot_node_hours / HOURS_PER_MONTH * gpus_per_node for m in result.months],
    }
    fig = go.Figure()
    for i, (name, values) in enumerate(layers.items()):
        if any(v > 0 for v in values):
            fig.add_bar(
                x=months,
                y=values,
                name=LAYER_LABELS[name],
                marker_color=PALETTE[i],
                hovertemplate=f"{LAYER_LABELS[name]}: %{{y:,.1f}} GPUs in month %{{x}}<extra></extra>",
            )
    for name, values, dash in (
        ("Demand, peak hour", [m.demand_peak_gpus for m in result.months], "dot"),
        ("Demand, mean", [m.demand_mean_gpus for m in result.months], "solid"),
    ):
        fig.add_scatter(
            x=months,
            y=values,
            name=name,
            mode="lines+markers",
            line={"color": "#1b1f24", "dash": dash},
            hovertemplate=f"{name}: %{{y:,.1f}} GPUs in month %{{x}}<extra></extra>",
        )
    fig.update_layout(barmode="stack")
    title = "Capacity by layer against demand (burst: the month's average)"
    if of:  # a title a chart of half the page's width holds whole
        title = f"{of} capacity by layer against demand (burst: month's average)"
    return _figure(fig, title=title, y_title=f"{of} GPUs" if of else "GPUs")


def cost_by_layer_chart(*, result: PlanResult) -> dict[str, Any]:
    months = [m.month for m in result.months]
    fig = go.Figure()
    for i, (name, label) in enumerate(LAYER_LABELS.items()):
        values = [m.cost_usd.get(name, 0.0) for m in result.months]
        if any(v != 0 for v in values):
            fig.add_bar(
                x=months,
                y=values,
                name=label,
                marker_color=PALETTE[i],
                hovertemplate=f"{label}: $%{{y:,.0f}} in month %{{x}}<extra></extra>",
            )
    # "relative" stacks a negative bar (owned nodes' resale credited in the last month) below zero.
    fig.update_layout(barmode="relative")
    return _figure(
        fig,
        title="Cash out by capacity layer and month, undiscounted",
        subtitle="owned: capex when it arrives, resale in the last month",
        y_title="USD per month",
    )


def owned_utilization_chart(*, result: PlanResult) -> dict[str, Any]:
    months = [m.month for m in result.months if m.owned_utilization is not None]
    values = [100 * m.owned_utilization for m in result.months if m.owned_utilization is not None]
    fig = go.Figure()
    fig.add_scatter(
        x=months,
        y=values,
        name="Owned fleet",
        mode="lines+markers",
        line={"color": PALETTE[0]},
        hovertemplate="Owned fleet busy %{y:.1f} % of month %{x}<extra></extra>",
    )
    fig.update_layout(yaxis_range=[0, 100], showlegend=False)
    return _figure(fig, title="Utilization the owned fleet sees", y_title="% of owned node-hours used")


def plan_charts(*, result: PlanResult, gpus_per_node: int) -> dict[str, dict[str, Any]]:
    """The plan's charts; a plan of several node types has a capacity chart per type (``capacity-<i>``) and
    its cost and utilization charts for the whole plan."""
    capacity = (
        {
            f"capacity-{i}": capacity_layers_chart(
                result=t.result, gpus_per_node=t.gpus_per_node, of=t.accelerator
            )
            for i, t in enumerate(result.node_types)
        }
        if result.node_types
        else {"capacity": capacity_layers_chart(result=result, gpus_per_node=gpus_per_node)}
    )
    return {
        **capacity,
        "cost": cost_by_layer_chart(result=result),
        "utilization": owned_utilization_chart(result=result),
    }
