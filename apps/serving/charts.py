"""Serving chart builders: engine results → Plotly figure dicts (``json.loads(fig.to_json())``), drawn by
static/js/charts.js like the design charts (clusterdesigner/charts.py keeps the shared layout and palette)."""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

from clusterdesigner.charts import LAYOUT, OWN_COLOR, PALETTE, plain, pricing_label
from clusterdesigner.engine.serving.serving import ServingResult, layout_label


def _figure(traces: list[Any], **layout: Any) -> dict[str, Any]:
    """The figure of ``traces`` with the shared LAYOUT updated by ``layout``, as a dict. Traces and layout
    go to the Figure's constructor, which validates them once: half the time of add_trace and
    update_layout (a serving page draws four charts a request), the same figure."""
    fig = go.Figure(data=traces, layout={**LAYOUT, **layout})
    return dict(json.loads(fig.to_json()))


def latency_figure(result: ServingResult, *, ttft_s: float, tpot_s: float) -> dict[str, Any]:
    """TTFT and TPOT (ms, log scale) against batch for the chosen layout, with both targets drawn as dashed
    lines and the chosen batch marked."""
    batches = [p.batch for p in result.curve]
    rate = [p.output_tokens_per_s_per_gpu for p in result.curve]
    best = result.best
    traces: list[go.Scatter] = []
    hover = (
        "batch %{x}<br>%{y:.1f} ms<br>%{customdata:,.0f} output tok/s per GPU<extra>%{fullData.name}</extra>"
    )
    curves = (
        ([p.ttft_s * 1000 for p in result.curve], "TTFT", PALETTE[0]),
        ([p.tpot_s * 1000 for p in result.curve], "TPOT (seen by users)", PALETTE[1]),
    )
    for y, name, color in curves:
        traces.append(
            go.Scatter(
                x=batches,
                y=y,
                name=name,
                mode="lines",
                line={"color": color},
                customdata=rate,
                hovertemplate=hover,
            )
        )
    for value, name, color in ((ttft_s, "TTFT target", PALETTE[0]), (tpot_s, "TPOT target", PALETTE[1])):
        traces.append(
            go.Scatter(
                x=[batches[0], batches[-1]],
                y=[value * 1000] * 2,
                name=name,
                mode="lines",
                line={"color": color, "dash": "dash"},
                hovertemplate=f"{name}: {value * 1000:g} ms<extra></extra>",
            )
        )
    traces.append(
        go.Scatter(
            x=[best.batch],
            y=[best.tpot_s * 1000],
            name="chosen batch",
            mode="markers",
            marker={"color": OWN_COLOR, "size": 11, "symbol": "diamond"},
            hovertemplate=f"chosen batch {best.batch}<br>TPOT {best.tpot_s * 1000:.1f} ms"
            f"<br>TTFT {best.ttft_s * 1000:.0f} ms<extra></extra>",
        )
    )
    return _figure(
        traces,
        title={"text": f"Latency against batch: tp{best.tp} pp{best.pp} replica of {plain(result.model)}"},
        xaxis={"title": {"text": "Batch (concurrent sequences per replica)"}, "type": "log"},
        yaxis={"title": {"text": "Latency (ms)"}, "type": "log"},
    )


def cost_figure(result: ServingResult) -> dict[str, Any]:
    """$ per million input and output tokens on what each option bills (own, then each offering × pricing
    model), the total split by a request's prefill and decode GPU time."""
    options = sorted(result.costs, key=lambda c: c.usd_per_m_output_tokens)
    labels = [
        "own" if c.option == "own" else f"{plain(c.offering)} {pricing_label(c.pricing_model)}"
        for c in options
    ]
    traces = [
        go.Bar(
            x=[getattr(c, attr) for c in options],
            y=labels,
            orientation="h",
            name=name,
            marker={"color": color},
            customdata=[[c.usd_per_gpu_hour, c.idle_fraction * 100, c.billed_gpus] for c in options],
            hovertemplate="%{y}<br>$%{x:.3f} per million "
            + name
            + "<br>%{customdata[2]} GPUs billed, %{customdata[1]:.1f} % idle"
            + "<br>$%{customdata[0]:.2f} per GPU-hour used<extra></extra>",
        )
        for name, attr, color in (
            ("output tokens (decode time)", "usd_per_m_output_tokens", PALETTE[1]),
            ("input tokens (prefill time)", "usd_per_m_input_tokens", PALETTE[0]),
        )
    ]
    return _figure(
        traces,
        height=max(320, 28 * len(options) + 140),
        barmode="group",
        title={"text": f"$ per million tokens billed, by option ({result.utilization:.0%} utilization)"},
        xaxis={"title": {"text": "USD per million tokens"}},
        yaxis={"title": {"text": "Option"}, "automargin": True},
    )


def layouts_figure(result: ServingResult) -> dict[str, Any]:
    """GPUs needed at the peak for every layout that meets the targets, with output tokens/s per GPU."""
    rows = [r for r in result.layouts if r.meets_targets]
    labels = [layout_label(r.tp, r.pp, r.ep, r.attention_dp) for r in rows]
    bars = go.Bar(
        x=labels,
        y=[r.gpus for r in rows],
        marker={"color": PALETTE[2]},
        name="GPUs",
        customdata=[[r.replicas, r.batch, r.output_tokens_per_s_per_gpu] for r in rows],
        hovertemplate="%{x}: %{y} GPUs<br>%{customdata[0]} replicas at batch %{customdata[1]}"
        "<br>%{customdata[2]:,.0f} output tok/s per GPU<extra></extra>",
    )
    return _figure(
        [bars],
        title={"text": f"GPUs to serve {result.peak_requests_per_s:g} requests/s at the peak, by layout"},
        xaxis={"title": {"text": "Layout (per replica)"}},
        yaxis={"title": {"text": "GPUs"}},
    )


def pareto_figure(result: ServingResult) -> dict[str, Any]:
    """The frontier of output tokens/s per user (1 / median TPOT) against output tokens/s per GPU across
    layouts and batch caps, points meeting the targets apart from those that miss them, the chosen
    configuration marked."""
    traces: list[go.Scatter] = []
    for meets, name, color in (
        (True, "meets the targets", PALETTE[2]),
        (False, "misses a target", PALETTE[3]),
    ):
        points = [p for p in result.pareto if p.meets_targets is meets]
        traces.append(
            go.Scatter(
                x=[p.output_tokens_per_s_per_user for p in points],
                y=[p.output_tokens_per_s_per_gpu for p in points],
                name=name,
                mode="markers",
                marker={"color": color, "size": 7},
                customdata=[
                    [
                        layout_label(p.tp, p.pp, p.ep, p.attention_dp),
                        p.batch,
                        p.ttft_s,
                        p.tpot_s * 1000,
                    ]
                    for p in points
                ],
                hovertemplate="%{customdata[0]}, batch cap %{customdata[1]}"
                "<br>%{x:.1f} output tok/s per user<br>%{y:,.0f} output tok/s per GPU"
                "<br>TTFT %{customdata[2]:.3f} s, TPOT %{customdata[3]:.1f} ms"
                "<extra>%{fullData.name}</extra>",
            )
        )
    best = result.best
    if best.tpot_p50_s > 0:
        traces.append(
            go.Scatter(
                x=[1.0 / best.tpot_p50_s],
                y=[best.output_tokens_per_s_per_gpu],
                name="chosen",
                mode="markers",
                marker={"color": OWN_COLOR, "size": 13, "symbol": "diamond"},
                hovertemplate=f"chosen: tp{best.tp} pp{best.pp}, batch {best.batch}"
                "<br>%{x:.1f} tok/s per user<br>%{y:,.0f} tok/s per GPU<extra></extra>",
            )
        )
    return _figure(
        traces,
        title={
            "text": f"Tokens/s per user against per GPU: {plain(result.model)} on {plain(result.accelerator)}"
        },
        xaxis={"title": {"text": "Output tokens/s per user (1 / median TPOT)"}},
        yaxis={"title": {"text": "Output tokens/s per GPU"}},
    )
