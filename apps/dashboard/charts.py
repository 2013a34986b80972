"""Chart builders: pure functions from engine results (the typed design evaluation, a sweep or compare result)
to Plotly figure dicts (``json.loads(fig.to_json())``). Views pass them to templates with ``json_script`` and
static/js/charts.js draws them. Every chart has a title, axis titles with units and hover text with exact
values.

Plotly reads a subset of HTML in every text it draws (titles, axis ticks, legends, hover labels): ``<a href>``
becomes a live link, ``<b>``/``<br>`` format. Any text that comes from a user or the catalog (design
names, offering names, slugs) goes through ``plain()`` first, so it is drawn as the characters it holds; the
builders' own templates keep their ``<br>`` and ``<extra>``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import plotly.graph_objects as go

from clusterdesigner.charts import LAYOUT, OWN_COLOR, PALETTE, heading, plain, pricing_label, wrapped
from clusterdesigner.engine.cost.cost_result import CostResult
from clusterdesigner.engine.design.analysis_result import SweepRow
from clusterdesigner.engine.design.attribution import Attribution
from clusterdesigner.engine.design.evaluation import DesignEvaluation
from clusterdesigner.engine.design.tradeoffs import pareto_indices
from clusterdesigner.engine.rl.rl import RLPlacement
from clusterdesigner.engine.training.training_result import LayoutEstimate

if TYPE_CHECKING:  # the compare page's rows (apps.dashboard.compare imports no chart)
    from apps.dashboard.compare import ComparePageRow

MEMORY_PARTS = [
    "weights",
    "gradients",
    "optimizer",
    "activations",
    "logits",
    "fsdp_buffers",
    "framework_reserve",
]


def money(value: float | None) -> str:
    """USD with thousands separators and the sign before the currency: -$1,234."""
    if value is None:
        return "–"
    return f"-${abs(value):,.0f}" if value < 0 else f"${value:,.0f}"


def _label(name: str) -> str:
    return name.replace("_", " ")


ASSUMPTION_LABELS = {
    "utilization": "Utilization",
    "horizon_years": "Horizon (years)",
    "on_prem.server_usd": "Server price (USD)",
    "on_prem.node_power_kw": "Node power (kW)",
    "on_prem.depreciation_years": "Depreciation (years)",
    "on_prem.discount_rate": "Discount rate",
    "on_prem.residual_fraction": "Residual value (fraction)",
    "on_prem.pue": "PUE",
    "on_prem.usd_per_kwh": "Energy (USD/kWh)",
    "on_prem.colo_usd_per_kw_month": "Colocation (USD/kW-month)",
    "on_prem.maintenance_fraction_per_year": "Maintenance (fraction of capex/yr)",
    "on_prem.staff_fte": "Staff (FTE)",
    "on_prem.staff_usd_per_fte_year": "Staff cost (USD/FTE-year)",
    "network.switch_usd": "Switch price (USD)",
}


def _assumption_label(name: str) -> str:
    """A cost-engine assumption path as a reader would name it ('cloud.usd_per_node_hour.spot' → 'Cloud price,
    spot (USD/node-h)'); unknown paths fall back to their last part in words."""
    if name in ASSUMPTION_LABELS:
        return ASSUMPTION_LABELS[name]
    if name.startswith("cloud.usd_per_node_hour."):
        model = name.rsplit(".", 1)[1]
        return f"Cloud price, {pricing_label(model)} (USD/node-h)"
    words = name.rsplit(".", 1)[-1].replace("_", " ").replace("usd", "USD")
    return words[:1].upper() + words[1:]


def _fig(
    fig: go.Figure, *, title: str, x_title: str, y_title: str, subtitle: str = "", **layout: Any
) -> dict[str, Any]:
    """The dashboard charts' common layout; a ``subtitle`` (the figure's basis, what a click does) is the
    title's second line (charts.heading)."""
    fig.update_layout(**{**LAYOUT, **heading(title, subtitle, x=0.01), **layout})
    fig.update_xaxes(title_text=x_title, automargin=True)
    fig.update_yaxes(automargin=True)
    fig.update_layout(yaxis_title_text=y_title)  # the first axis only: a second axis keeps its own title
    figure: dict[str, Any] = json.loads(fig.to_json())
    return figure


def _cost_results(evaluation: DesignEvaluation) -> list[tuple[str, CostResult]]:
    """The cost results by offering, the one holding the design verdict's rival first: its payback, tornado
    and owning figures are the verdict's (the offerings' order in the spec changes nothing)."""
    rival = evaluation.design_verdict.rival.offering if evaluation.design_verdict else None
    items = list(evaluation.costs.items())
    return sorted(items, key=lambda item: item[0] != rival) if rival else items


def _pricing_label(slug: str, model: str, many: bool, evaluation: DesignEvaluation) -> str:
    """ "Cloud on-demand" with one offering; with several, the option's own name ("AWS p5en.48xlarge
    on-demand"), so the legend tells the offerings apart."""
    label = pricing_label(model, _label(model))
    if not many:
        return f"Cloud {plain(label)}"
    for option in evaluation.options:
        if option.key == f"{slug}:{model}" and option.label:
            return plain(option.label)
    return f"{plain(slug)} {plain(label)}"


# --- Design page


def _chosen_layout(evaluation: DesignEvaluation) -> LayoutEstimate:
    """The evaluated layout's figures; the charts are drawn only for an evaluation that has one."""
    if evaluation.training is None:
        raise ValueError("the evaluation holds no layout to draw")
    return evaluation.training.chosen


def memory_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Memory per GPU: one stacked bar of the parts against the accelerator's capacity."""
    chosen = _chosen_layout(evaluation)
    memory = chosen.memory_per_gpu_gib.to_json()
    capacity = chosen.memory_capacity_gib
    fig = go.Figure()
    for index, part in enumerate(p for p in MEMORY_PARTS if memory[p]):
        fig.add_trace(
            go.Bar(
                name=_label(part).capitalize(),
                x=["Per GPU"],
                y=[memory[part]],
                marker_color=PALETTE[index % 8],
                hovertemplate=f"{_label(part)}: %{{y:,.2f}} GiB<extra></extra>",
            )
        )
    if capacity:
        fig.add_trace(
            go.Scatter(
                name=f"Capacity {capacity:,.0f} GiB",
                x=["Per GPU"],
                y=[capacity],
                mode="markers",
                marker={"symbol": "line-ew-open", "size": 80, "line": {"width": 3, "color": "#b3261e"}},
                hovertemplate="capacity: %{y:,.1f} GiB<extra></extra>",
            )
        )
    fits = "fits" if chosen.fits else "does NOT fit"
    return _fig(
        fig,
        title=f"Memory per GPU: {memory['total']:,.1f} of {capacity or 0:,.0f} GiB ({fits})",
        x_title="",
        y_title="Memory per GPU (GiB)",
        barmode="stack",
    )


def step_time_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Step-time breakdown: the non-zero parts of one optimizer step, in seconds."""
    step = _chosen_layout(evaluation).step_time_s
    # Largest first (then by name), as on the first view and every later one.
    parts = sorted(((k, v) for k, v in step.parts().items() if v), key=lambda kv: (-kv[1], kv[0]))
    fig = go.Figure(
        go.Bar(
            name="Step time",
            x=[v for _, v in parts],
            y=[plain(_label(k)) for k, _ in parts],
            orientation="h",
            marker_color=PALETTE[0],
            hovertemplate="%{y}: %{x:,.4f} s<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return _fig(
        fig,
        title=f"Step time breakdown: {step.total:,.3f} s per step",
        x_title="Time per step (s)",
        y_title="Part",
        showlegend=False,
    )


def cost_utilization_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Cost against utilization, owning and each chosen cloud pricing model, on the curves' basis (the NPV of
    the monthly cash flows, the verdict's; an older result: the total over the horizon), with each stated
    break-even marked where owning's line and that option's cross."""
    results = _cost_results(evaluation)
    many = len(results) > 1
    fig = go.Figure()
    marks: list[tuple[float, float, str]] = []
    for index, (slug, result) in enumerate(results):
        curves = result.curves
        util = [u * 100 for u in curves.utilization]
        if index == 0 and curves.on_prem_usd:
            fig.add_trace(_line_trace("Own (on-prem)", util, curves.on_prem_usd, OWN_COLOR, width=3))
        drawn = [m for m in curves.rent_usd if evaluation.chosen(slug, m)]
        for j, model in enumerate(drawn):
            name = _pricing_label(slug, model, many, evaluation)
            fig.add_trace(_line_trace(name, util, curves.rent_usd[model], PALETTE[(index * 4 + j) % 8]))
        marks += _break_even_marks(evaluation, slug, result, many)
    if marks:
        fig.add_trace(_break_even_trace(marks))
    horizon = evaluation.spec_costs.get("horizon_years")
    span = f" over {horizon:g} year{'' if horizon == 1 else 's'}" if horizon else ""
    npv = bool(results) and results[0][1].curves.basis is not None
    return _fig(
        fig,
        title=f"{'NPV of the monthly cash flows' if npv else 'Total cost'}{span} against utilization",
        x_title="Utilization (%)",
        y_title="NPV of cash out (USD)" if npv else "Total cost (USD)",
        yaxis={"tickprefix": "$", "separatethousands": True},
    )


def _line_trace(
    name: str, util: list[float], usd: Iterable[float], color: str, width: int | None = None
) -> go.Scatter:
    """One cost curve against utilization (%)."""
    line: dict[str, Any] = {"color": color} if width is None else {"color": color, "width": width}
    who = "own" if name == "Own (on-prem)" else name
    return go.Scatter(
        name=name,
        x=util,
        y=list(usd),
        mode="lines",
        line=line,
        hovertemplate=f"{who} at %{{x:.0f}} %: $%{{y:,.0f}}<extra></extra>",
    )


def _break_even_marks(
    evaluation: DesignEvaluation, slug: str, result: CostResult, many: bool
) -> list[tuple[float, float, str]]:
    """(utilization %, owning's cost there, label) for each drawn pricing model's break-even in (0, 1]: on
    owning's NPV curve when the curves are NPVs (affine in u, so read off the curve's two ends exactly), else
    on its annualised cost line (a result stored before)."""
    line = result.on_prem.cost_vs_utilization
    curves = result.curves
    marks = []
    for model, be in result.break_even_utilization.items():
        value = be.utilization
        if value is None or not 0 < value <= 1 or not evaluation.chosen(slug, model):
            continue
        label = f"break-even vs {_pricing_label(slug, model, many, evaluation)}: {value * 100:.1f} %"
        if curves.basis is not None and len(curves.utilization) > 1:
            (u0, *_, u1), (y0, *_, y1) = curves.utilization, curves.on_prem_usd
            y = y0 + (y1 - y0) * (value - u0) / (u1 - u0)
        else:
            y = line.fixed_usd + line.per_utilization_usd * value
        marks.append((value * 100, y, label))
    return marks


def _break_even_trace(marks: list[tuple[float, float, str]]) -> go.Scatter:
    return go.Scatter(
        name="Break-even",
        x=[x for x, _, _ in marks],
        y=[y for _, y, _ in marks],
        mode="markers",
        text=[text for _, _, text in marks],
        marker={
            "symbol": "diamond",
            "size": 13,
            "color": "#b3261e",
            "line": {"width": 1, "color": "#fff"},
        },
        hovertemplate="%{text}<br>total $%{y:,.0f}<extra></extra>",
    )


def cumulative_cost_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Cumulative cash over the horizon: owning pays capex up front, then opex; renting pays as it goes."""
    results = _cost_results(evaluation)
    many = len(results) > 1
    fig = go.Figure()
    horizon = 0.0
    for index, (slug, result) in enumerate(results):
        own = result.on_prem
        years = own.years
        horizon = sum(y.fraction for y in years) or horizon
        if index == 0 and years:
            xs, ys, total = [0.0], [own.capex_usd], own.capex_usd
            t = 0.0
            for year in years:
                t += year.fraction
                total += year.opex_usd
                xs.append(t)
                ys.append(total)
            fig.add_trace(
                go.Scatter(
                    name="Own (on-prem)",
                    x=xs,
                    y=ys,
                    mode="lines+markers",
                    line={"color": OWN_COLOR, "width": 3},
                    hovertemplate="own after %{x:.2f} years: $%{y:,.0f}<extra></extra>",
                )
            )
        cloud = [(m, row) for m, row in result.cloud.items() if evaluation.chosen(slug, m)]
        for j, (model, row) in enumerate(cloud):
            span = horizon or 1.0
            xs = [span * k / 12 for k in range(13)]
            ys = [row.total_usd * k / 12 for k in range(13)]
            name = _pricing_label(slug, model, many, evaluation)
            fig.add_trace(
                go.Scatter(
                    name=name,
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={"color": PALETTE[(index * 4 + j) % 8]},
                    hovertemplate=f"{name} after %{{x:.2f}} years: $%{{y:,.0f}}<extra></extra>",
                )
            )
    return _fig(
        fig,
        title="Cumulative cash cost over the horizon",
        x_title="Time (years)",
        y_title="Cumulative cost (USD)",
        yaxis={"tickprefix": "$", "separatethousands": True},
    )


def _cumulative(monthly: Iterable[float]) -> list[float]:
    total, out = 0.0, []
    for value in monthly:
        total += float(value)
        out.append(total)
    return out


def cash_flow_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Cumulative cash by month over the horizon, from the cost engine's monthly cash flows (cashflow.py;
    month 0 is the start, each bill paid at its month's end): owning (capex at delivery, opex monthly, resale
    at the end) against each rent option the design compares, with owning's payback month against the rent
    option of lowest NPV marked. Undiscounted, as the payback month is."""
    fig = go.Figure()
    results = [(slug, r) for slug, r in _cost_results(evaluation) if r.cashflow and r.cashflow.own]
    many = len(results) > 1
    payback: tuple[int, str] | None = None
    for index, (slug, result) in enumerate(results):
        cash = result.cashflow
        assert cash is not None and cash.own is not None and cash.reference is not None
        if index == 0:
            own = _cumulative(cash.own.monthly_usd)
            fig.add_trace(
                go.Scatter(
                    name="Own (on-prem)",
                    x=list(range(len(own))),
                    y=own,
                    mode="lines",
                    line={"color": OWN_COLOR, "width": 3},
                    hovertemplate="Own (on-prem), month %{x}: $%{y:,.2f} paid so far<extra></extra>",
                )
            )
            if cash.payback_month is not None:
                payback = (cash.payback_month, _pricing_label(slug, cash.reference, many, evaluation))
        for j, row in enumerate(cash.rent or ()):
            if not evaluation.chosen(slug, row.name):
                continue
            ys = _cumulative(row.monthly_usd)
            name = _pricing_label(slug, row.name, many, evaluation)
            fig.add_trace(
                go.Scatter(
                    name=name,
                    x=list(range(len(ys))),
                    y=ys,
                    mode="lines",
                    line={"color": PALETTE[(index * 4 + j) % 8]},
                    hovertemplate=f"{name}, month %{{x}}: $%{{y:,.2f}} paid so far<extra></extra>",
                )
            )
    if payback is not None:
        month, against = payback
        fig.add_vline(x=month, line={"dash": "dot", "color": "#555"})
        fig.add_annotation(
            x=month,
            y=1,
            yref="paper",
            text=f"payback, month {month} vs {against}",
            showarrow=False,
            yanchor="bottom",
        )
    return _fig(
        fig,
        title="Cumulative cash by month (undiscounted)" + ("" if payback else ": owning does not pay back"),
        x_title="Month of the horizon",
        y_title="Cumulative cash out (USD)",
        yaxis={"tickprefix": "$", "separatethousands": True},
    )


def capex_opex_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Owning: capex parts (paid once) and opex parts (per year), stacked."""
    results = _cost_results(evaluation)
    own = results[0][1].on_prem if results else None
    # The annualised capital charge is the capex again, spread over the years: not cash opex, so left out.
    groups = [
        ("Capex", "Capex (once)", "", own.capex_parts if own else {}),
        (
            "Opex",
            "Opex (per year)",
            " per year",
            {k: v for k, v in own.annual.items() if k != "capital"} if own else {},
        ),
    ]
    fig = go.Figure()
    index = 0
    for kind, column, suffix, parts in groups:
        for part, item in parts.items():
            part_name = plain(_label(part))
            fig.add_trace(
                go.Bar(
                    name=f"{kind}: {part_name}",
                    x=[column],
                    y=[item.usd],
                    marker_color=PALETTE[index % 8],
                    customdata=[plain(item.formula)],
                    hovertemplate=f"{part_name}: $%{{y:,.0f}}{suffix}<br>%{{customdata}}<extra></extra>",
                )
            )
            index += 1
    return _fig(
        fig,
        title=f"Owning: capex {money(own.capex_usd if own else 0)} and yearly opex",
        x_title="",
        y_title="Cost (USD)",
        barmode="stack",
        yaxis={"tickprefix": "$", "separatethousands": True},
        legend={"orientation": "v", "x": 1.02, "y": 1},
    )


def sensitivity_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Tornado: how far each input moved by ±fraction shifts (own − rent) away from its base value."""
    results = _cost_results(evaluation)
    sens = results[0][1].sensitivity if results else None
    base = (sens.base_own_minus_rent_usd if sens else None) or 0.0
    rows = sorted((r for r in sens.rows if r.swing_usd) if sens else (), key=lambda r: r.swing_usd)
    fraction = sens.fraction if sens else 0.25
    names = [plain(_assumption_label(r.name)) for r in rows]
    fig = go.Figure()
    for key, value_key, label, color in (
        ("own_minus_rent_low_usd", "low", f"Input −{fraction:.0%}", PALETTE[0]),
        ("own_minus_rent_high_usd", "high", f"Input +{fraction:.0%}", PALETTE[1]),
    ):
        fig.add_trace(
            go.Bar(
                name=label,
                y=names,
                x=[getattr(r, key) - base for r in rows],
                orientation="h",
                marker_color=color,
                customdata=[[getattr(r, value_key), getattr(r, key)] for r in rows],
                hovertemplate="%{y} = %{customdata[0]:,.4g}<br>own − rent: $%{customdata[1]:,.0f}"
                "<br>change: $%{x:,.0f}"
                "<extra></extra>",
            )
        )
    compared = (sens.pricing_model if sens else None) or ""
    model = plain(pricing_label(compared))
    return _fig(
        fig,
        title=f"Sensitivity: own − rent ({model}), NPV, vs base {money(base)}",
        x_title="Change in own − rent, NPV of the monthly cash flows (USD)",
        y_title="Input",
        barmode="overlay",
        height=max(380, 90 + 26 * len(rows)),
        xaxis={"tickprefix": "$", "separatethousands": True},
    )


def network_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Network sizing for the chosen topology: switch, cable and transceiver counts with their cost."""
    results = _cost_results(evaluation)
    if not results:
        return _fig(go.Figure(), title="Network", x_title="Component", y_title="Count", showlegend=False)
    network = results[0][1].network
    chosen = network.chosen
    items = [
        (label, getattr(chosen, name) if chosen else None)
        for label, name in (
            ("Leaf switches", "leaf_switches"),
            ("Spine switches", "spine_switches"),
            ("Core switches", "core_switches"),
            ("Cables", "cables"),
            ("Transceivers", "transceivers"),
        )
    ]
    items = [(k, v) for k, v in items if v]
    usd = {name: line.usd for name, line in (network.capex_parts or {}).items()}
    fig = go.Figure(
        go.Bar(
            name="Count",
            x=[k for k, _ in items],
            y=[v for _, v in items],
            marker_color=PALETTE[5],
            # Each bar's part of the capex: the cables', the transceivers', or all switches' together.
            customdata=[usd.get("switches" if "switch" in k else k.lower()) or 0 for k, _ in items],
            hovertemplate="%{x}: %{y:,}<br>cost (all switches together): $%{customdata:,.0f}<extra></extra>",
        )
    )
    title = (
        f"Network: {plain(network.topology)}, {network.endpoints or 0:,} endpoints × "
        f"{network.nic_gbps or 0:,.0f} Gb/s, {money(network.capex_usd)}"
    )
    return _fig(fig, title=title, x_title="Component", y_title="Count", showlegend=False)


# The RL step's phases, in the order a step runs them, with their colours (idle grey).
RL_PHASES = (
    ("rollout_s", "Rollout"),
    ("offload_s", "Offload and reload"),
    ("weight_sync_s", "Weight sync"),
    ("train_s", "Training"),
)
IDLE_COLOR = "#c8c8c8"


def _rl_segments(chosen: RLPlacement) -> list[tuple[str, str, float, float]]:
    """(pool, phase, start s, seconds) of one step. Colocated: one pool runs rollout, offload, sync and
    training in turn. Disaggregated, synchronous: the rollout pool generates, both sync, the trainer
    trains, each idle while the other works; asynchronous: both work at once, the faster idles, then sync."""
    step = chosen.step
    if chosen.placement == "colocated":
        pool, start, out = f"All {chosen.rollout_gpus} GPUs", 0.0, []
        for key, label in RL_PHASES:
            seconds = float(getattr(step, key))
            if seconds:
                out.append((pool, label, start, seconds))
                start += seconds
        return out
    rollout, trainer = (
        f"Rollout pool ({chosen.rollout_gpus} GPUs)",
        f"Trainer pool ({chosen.trainer_gpus} GPUs)",
    )
    r, s, t = step.rollout_s, step.weight_sync_s, step.train_s
    if chosen.mode == "async":
        busy = max(r, t)
        return [
            (rollout, "Rollout", 0.0, r),
            (rollout, "Idle", r, busy - r),
            (trainer, "Training", 0.0, t),
            (trainer, "Idle", t, busy - t),
            (rollout, "Weight sync", busy, s),
            (trainer, "Weight sync", busy, s),
        ]
    return [
        (rollout, "Rollout", 0.0, r),
        (trainer, "Idle", 0.0, r),
        (rollout, "Weight sync", r, s),
        (trainer, "Weight sync", r, s),
        (rollout, "Idle", r + s, t),
        (trainer, "Training", r + s, t),
    ]


def rl_timeline_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """One RL step as a timeline: each pool's phases (rollout, offload, weight sync, training, idle) from
    the step's start, in seconds; one trace per phase, so the legend names them."""
    assert evaluation.rl is not None  # drawn only for a design with an rl section
    chosen = evaluation.rl.chosen
    colours = {label: PALETTE[i % len(PALETTE)] for i, (_, label) in enumerate(RL_PHASES)} | {
        "Idle": IDLE_COLOR
    }
    segments = [seg for seg in _rl_segments(chosen) if seg[3] > 0]
    fig = go.Figure()
    for label in [*(label for _, label in RL_PHASES), "Idle"]:
        mine = [seg for seg in segments if seg[1] == label]
        if mine:
            fig.add_trace(
                go.Bar(
                    name=label,
                    y=[pool for pool, *_ in mine],
                    x=[seconds for *_, seconds in mine],
                    base=[start for _, _, start, _ in mine],
                    customdata=[start for _, _, start, _ in mine],
                    orientation="h",
                    marker_color=colours[label],
                    hovertemplate=f"{label}: %{{x:,.2f}} s from %{{customdata:,.2f}} s<extra>%{{y}}</extra>",
                )
            )
    fig.update_yaxes(autorange="reversed")
    mode = "" if chosen.placement == "colocated" else f", {chosen.mode}"
    return _fig(
        fig,
        title=f"RL step timeline: {chosen.step.seconds:,.1f} s per step ({chosen.placement}{mode})",
        x_title="Time from the step's start (s)",
        y_title="Pool",
        barmode="overlay",
    )


def rl_split_chart(evaluation: DesignEvaluation) -> dict[str, Any]:
    """Days of the RL run at each split the search tried (rollout nodes; 0 is colocated), with what one run
    costs at each on the cheapest option (the same nodes are billed whatever the split, so the cost scales
    with the days)."""
    assert evaluation.rl is not None
    run = evaluation.rl
    points = [p for p in run.splits if p.days is not None]
    priced = [o for o in evaluation.options if o.run_cost_usd is not None and o.days]
    cheapest = min(priced, key=lambda o: o.run_cost_usd or 0.0) if priced else None
    usd_per_day = None if cheapest is None else (cheapest.run_cost_usd or 0.0) / run.chosen.days
    costs = [None if usd_per_day is None else usd_per_day * (p.days or 0.0) for p in points]
    label = "" if cheapest is None else f"≈ %{{customdata:$,.0f}} a run ({plain(cheapest.label)})"
    fig = go.Figure(
        go.Scatter(
            name="Days",
            x=[p.rollout_nodes for p in points],
            y=[p.days for p in points],
            customdata=costs,
            mode="lines+markers",
            marker_color=PALETTE[0],
            hovertemplate=f"%{{x}} rollout nodes: %{{y:,.2f}} days {label}<extra></extra>",
        )
    )
    fig.update_xaxes(tickformat=",d", rangemode="tozero")
    return _fig(
        fig,
        title=f"RL split: days by rollout pool size (chosen: {run.chosen.rollout_gpus} rollout GPUs, "
        f"{run.chosen.placement})",
        x_title="Rollout pool (nodes; 0 = colocated, every GPU both)",
        y_title="Days for the run",
        showlegend=False,
    )


def design_charts(evaluation: DesignEvaluation) -> list[dict[str, Any]]:
    """All design-page charts, in page order, each as {"id", "figure"}."""
    builders = [
        ("memory", memory_chart),
        ("step-time", step_time_chart),
        ("cost-utilization", cost_utilization_chart),
        ("cumulative-cost", cumulative_cost_chart),
        ("cash-flow", cash_flow_chart),
        ("capex-opex", capex_opex_chart),
        ("sensitivity", sensitivity_chart),
        ("network", network_chart),
    ]
    if evaluation.rl is not None:
        builders[2:2] = [("rl-timeline", rl_timeline_chart), ("rl-split", rl_split_chart)]
    has_costs = bool(evaluation.costs)
    return [
        {"id": name, "figure": build(evaluation)}
        for name, build in builders
        if has_costs or name in ("memory", "step-time", "rl-timeline", "rl-split")
    ]


# --- Compare


def compare_bars_chart(rows: Iterable[ComparePageRow]) -> dict[str, Any]:
    """Grouped bars per design, for the option the reviewer chose in each column: its run cost (left axis) and
    its expected days to train, with failures and restarts (right axis)."""
    rows = list(rows)
    names = [wrapped(r.name) for r in rows]
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            name="Run cost (USD)",
            x=names,
            y=[r.run_cost_usd for r in rows],
            offsetgroup="cost",
            yaxis="y",
            marker_color=PALETTE[0],
            customdata=[plain(r.option or "") for r in rows],
            hovertemplate="%{x}<br>%{customdata}<br>run cost $%{y:,.0f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Bar(
            name="Days to train, expected (with failures and restarts)",
            x=names,
            y=[r.days for r in rows],
            offsetgroup="days",
            yaxis="y2",
            marker_color=PALETTE[1],
            customdata=[plain(r.option or "") for r in rows],
            hovertemplate="%{x}<br>%{customdata}<br>%{y:,.1f} days expected<extra></extra>",
        )
    )
    return _fig(
        fig,
        title="Run cost and expected days, per design",
        x_title="Design",
        y_title="Run cost (USD)",
        barmode="group",
        yaxis={"tickprefix": "$", "separatethousands": True, "rangemode": "tozero"},
        yaxis2={
            "title": {"text": "Expected days to train"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "automargin": True,
        },
    )


def pareto_chart(
    points: Iterable[Mapping[str, Any]],
    *,
    title: str,
    subtitle: str = "",
    value: str = "cost_usd",
    y_title: str = "Run cost (USD)",
    x: str = "days",
    x_title: str = "Days to train, expected (with failures and restarts)",
) -> dict[str, Any]:
    """Cost against days for every point (``x``: days or days until done; ``value``: ``cost_usd`` one
    run's cost or ``npv_usd`` the NPV over the horizon; label and the url it opens), the Pareto front drawn
    as a line; a point without days or that figure is left out. ``y_title`` names the figure and its basis."""
    points = [p for p in points if p.get(x) is not None and p.get(value) is not None]
    xy = [(p[x], p[value]) for p in points]
    front = pareto_indices(xy)  # in order of days
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            name="Designs",
            x=[x for x, _ in xy],
            y=[y for _, y in xy],
            mode="markers",
            marker={"size": 10, "color": PALETTE[0], "opacity": 0.75},
            text=[plain(p["label"]) for p in points],
            customdata=[p["url"] for p in points],
            hovertemplate="%{text}<br>%{x:,.1f} days, $%{y:,.0f}<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            name="Pareto front",
            x=[xy[i][0] for i in front],
            y=[xy[i][1] for i in front],
            mode="lines+markers",
            line={"color": "#b3261e", "width": 2},
            marker={"size": 12, "symbol": "star", "color": "#b3261e"},
            text=[plain(points[i]["label"]) for i in front],
            customdata=[points[i]["url"] for i in front],
            hovertemplate="%{text}<br>%{x:,.1f} days, $%{y:,.0f}<extra>Pareto</extra>",
        )
    )
    return _fig(
        fig,
        title=plain(title),
        subtitle=plain(subtitle),
        x_title=x_title,
        y_title=y_title,
        yaxis={"tickprefix": "$", "separatethousands": True},
    )


# --- Sweep

SweepFigure = Literal["days", "cost_usd", "npv_usd"]  # the figures a sweep heatmap shows


def _sweep_grid(
    rows: list[SweepRow], value: SweepFigure
) -> tuple[list[str], list[int], list[list[Any]], list[list[str]]]:
    accelerators = sorted({r.accelerator for r in rows})
    nodes = sorted({int(r.nodes) for r in rows})
    best: dict[tuple[str, int], tuple[float, SweepRow]] = {}
    for r in rows:
        figure = getattr(r, value)
        if not r.fits or figure is None:
            continue
        key = (r.accelerator, int(r.nodes))
        if key not in best or figure < best[key][0]:
            best[key] = (figure, r)
    z = [[best[(a, n)][0] if (a, n) in best else None for n in nodes] for a in accelerators]
    text = [
        [
            pricing_label(best[(a, n)][1].pricing_model, "") if (a, n) in best else "does not fit"
            for n in nodes
        ]
        for a in accelerators
    ]
    return accelerators, nodes, z, text


def sweep_heatmap(rows: Iterable[SweepRow], *, value: SweepFigure) -> dict[str, Any]:
    """Accelerator × node count → days (value="days"), → cost per run (value="cost_usd") or → NPV over the
    horizon (value="npv_usd"), best pricing per cell on that figure."""
    accelerators, nodes, z, text = _sweep_grid(list(rows), value)
    is_cost = value != "days"
    unit = "$%{z:,.0f}" if is_cost else "%{z:,.1f} days"
    fig = go.Figure(
        go.Heatmap(
            name="Cost" if is_cost else "Days",
            x=[str(n) for n in nodes],
            y=[plain(a) for a in accelerators],
            z=z,
            text=text,
            colorscale="Blues" if is_cost else "Oranges",
            reversescale=False,
            hoverongaps=False,
            colorbar={"title": {"text": "USD" if is_cost else "days"}},
            texttemplate="$%{z:,.3s}" if is_cost else "%{z:.1f}",
            hovertemplate="%{y} × %{x} nodes<br>" + unit + " (%{text})<extra></extra>",
        )
    )
    title, basis = {
        "cost_usd": ("Cheapest run cost", "USD, one run, undiscounted"),
        "npv_usd": ("Cheapest NPV over the horizon", "USD, monthly cash flows, discounted"),
    }.get(value, ("Days to train, expected", "with failures and restarts"))
    return _fig(
        fig,
        title=f"{title}: accelerator × node count",
        subtitle=basis,
        x_title="Nodes (count)",
        y_title="Accelerator",
        xaxis={"type": "category"},
    )


# --- Version diff


def attribution_waterfall(attribution: Attribution) -> dict[str, Any]:
    """Waterfall of the verdict's NPV difference from the old version to the new: the old figure, one bar per
    evaluated one-at-a-time step (its inputs, in the stated order), and the new figure as the total."""
    steps = [s for s in attribution.steps if s.evaluated and s.delta_usd is not None]
    names = ["Old version"] + [plain(" + ".join(s.inputs)) for s in steps] + ["New version"]
    deltas = [attribution.old_usd] + [float(s.delta_usd or 0.0) for s in steps] + [attribution.new_usd]
    fig = go.Figure(
        go.Waterfall(
            x=names,
            y=deltas,
            measure=["absolute"] + ["relative"] * len(steps) + ["total"],
            increasing={"marker": {"color": PALETTE[2]}},
            decreasing={"marker": {"color": PALETTE[3]}},
            totals={"marker": {"color": PALETTE[0]}},
            connector={"line": {"color": "#888"}},
            customdata=[f"NPV difference {money(attribution.old_usd)}"]
            + [f"change {money(s.delta_usd)}, so far {money(s.cumulative_usd)}" for s in steps]
            + [f"NPV difference {money(attribution.new_usd)}"],
            hovertemplate="%{x}<br>%{customdata}<extra></extra>",
            name="NPV difference",
        )
    )
    return _fig(
        fig,
        title=f"What moved the NPV difference: {money(attribution.old_usd)} → {money(attribution.new_usd)}",
        x_title="Input set to its new value, in the stated order",
        y_title="NPV(rival rent) − NPV(own) (USD)",
        showlegend=False,
        yaxis={"tickprefix": "$", "separatethousands": True},
    )
