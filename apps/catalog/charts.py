"""Chart builders for the catalog's market series: residual value by age and the rental price of a GPU-hour
over time. Pure functions from point records (mappings with the API's field names) to Plotly figure dicts;
static/js/charts.js draws them. Catalog text goes through ``plain`` so Plotly draws it as characters
(clusterdesigner/charts.py says why)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from itertools import groupby
from typing import Any

import plotly.graph_objects as go

from clusterdesigner.charts import LAYOUT as SHARED_LAYOUT
from clusterdesigner.charts import plain

# The pages' shared layout, taller, with room for the longer legend of generations and series.
LAYOUT = {**SHARED_LAYOUT, "height": 420, "legend": {"orientation": "h", "y": -0.25}}
_text = plain


def _traces(points: Iterable[Mapping[str, Any]], key: str) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Points grouped into one trace per (generation, series), each ordered along ``key``."""
    rows = sorted(points, key=lambda p: (p["generation"], p["series"], p[key]))
    return [
        (f"{generation} · {series}", list(group))
        for (generation, series), group in groupby(rows, key=lambda p: (p["generation"], p["series"]))
    ]


def _figure(fig: go.Figure, *, title: str, x_title: str, y_title: str) -> dict[str, Any]:
    fig.update_layout(
        title={"text": title, "x": 0.01}, xaxis_title_text=x_title, yaxis_title_text=y_title, **LAYOUT
    )
    fig.update_xaxes(automargin=True)
    fig.update_yaxes(automargin=True, rangemode="tozero")
    figure: dict[str, Any] = json.loads(fig.to_json())
    return figure


def _scatter(
    points: Iterable[Mapping[str, Any]],
    *,
    x: str,
    y: Callable[[Mapping[str, Any]], float],
    extra: str,
    hover: str,
) -> go.Figure:
    """One dotted lines+markers trace per source and generation; ``hover`` is the part after the trace name,
    with %{customdata[0]} the ``extra`` field and %{customdata[1]} the point's standing."""
    fig = go.Figure()
    for name, rows in _traces(points, x):
        fig.add_trace(
            go.Scatter(
                x=[p[x] if isinstance(p[x], float | int) else str(p[x]) for p in rows],
                y=[y(p) for p in rows],
                mode="lines+markers",
                line={"dash": "dot", "width": 1},
                name=_text(name),
                customdata=[[_text(p[extra]), _text(p["verification"])] for p in rows],
                hovertemplate=f"{_text(name)}<br>{hover}<br>%{{customdata[1]}}<extra></extra>",
            )
        )
    return fig


def residual_value_chart(points: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Resale value in % of the price new against age in years: one trace per source and generation, so the
    spread between sources at one age (the scatter) is visible."""
    fig = _scatter(
        points,
        x="age_years",
        y=lambda p: round(p["fraction_of_new"] * 100, 2),
        extra="as_of",
        hover="age %{x} years: %{y:.1f} % of new, as of %{customdata[0]}",
    )
    return _figure(
        fig,
        title="Resale value by age (sourced points)",
        x_title="Age (years)",
        y_title="Resale value (% of new)",
    )


def rental_price_chart(points: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Price of one GPU-hour (USD) against the date observed: one trace per source and generation."""
    fig = _scatter(
        points,
        x="as_of",
        y=lambda p: p["usd_per_gpu_hour"],
        extra="basis",
        hover="%{x}: $%{y:.2f} per GPU-hour (%{customdata[0]})",
    )
    return _figure(
        fig,
        title="Rental price of one GPU-hour over time (sourced points)",
        x_title="Date observed",
        y_title="USD per GPU-hour",
    )
