"""A solved capacity plan as an XLSX workbook for finance: summary, months, purchases, reservations, runs
and, when inference was given in tokens per day, its serving sizing; a plan of several node types adds each
type's totals and months.
Text cells go through clusterdesigner.spreadsheets.formula_safe so no name runs as a formula."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

from openpyxl import Workbook

from clusterdesigner.engine.capacity.capacity import LAYERS, PlanResult
from clusterdesigner.spreadsheets import formula_safe

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def _sheet(book: Workbook, title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    sheet = book.create_sheet(title)
    sheet.append(list(header))
    for row in rows:
        sheet.append([formula_safe(v) if isinstance(v, str) else v for v in row])


def plan_xlsx(*, name: str, version: int, result: PlanResult) -> bytes:
    """The workbook: a sheet per part of the plan; cash flows and inference sizing when the plan has them."""
    book = Workbook()
    book.remove(book.active)
    _summary_sheet(book, name=name, version=version, result=result)
    _months_sheet(book, result)
    if result.node_types:
        _node_types_sheets(book, result)
    # In a plan of several node types each purchase and reservation is of one type: its first column.
    typed = [(t.accelerator, t.result) for t in result.node_types] or [("", result)]
    kind = ["node type"] if result.node_types else []
    _sheet(
        book,
        "Purchases",
        [*kind, "order month", "arrival month", "nodes", "capex (USD)"],
        (
            (*([a] if kind else []), p.order_month, p.arrival_month, p.nodes, p.capex_usd)
            for a, part in typed
            for p in part.owned_purchases
        ),
    )
    _sheet(
        book,
        "Reservations",
        [*kind, "term (months)", "start month", "nodes", "committed (USD)"],
        (
            (*([a] if kind else []), r.term_months, r.start_month, r.nodes, r.committed_usd)
            for a, part in typed
            for r in part.reservations
        ),
    )
    if result.cash_flows_usd is not None:
        _sheet(book, "Cash flows", ["end of month", "cash out (USD)"], enumerate(result.cash_flows_usd))
    _sheet(
        book,
        "Runs",
        ["run", "layers", "finish month", "deadline month", "slack (months)"],
        (
            (r.name, ", ".join(r.node_hours_by_layer), r.finish_month, r.deadline_month, r.slack_months)
            for r in result.runs
        ),
    )
    if result.inference_sizing:
        _inference_sheet(book, result)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


# How owning enters the plan's NPV: as cash when its capital share is known, else annualised as given.
OWNING_BASIS = {
    True: "cash: capex at delivery, opex monthly, resale at market value (book value where no series)",
    False: "annualised: the fixed cost per node-month as given (no capital share, so no capex or resale)",
}


def _summary_sheet(book: Workbook, *, name: str, version: int, result: PlanResult) -> None:
    alternatives = [
        (f"{a.name}: NPV, the objective's basis (USD)", a.npv_usd if a.npv_usd is not None else a.reason)
        for a in result.alternatives
    ]
    _sheet(
        book,
        "Summary",
        ["item", "value"],
        [
            ("plan", name),
            ("version", version),
            ("cheapest mix: NPV of its monthly cash flows, the objective (USD)", result.npv_usd),
            ("objective's owning basis", OWNING_BASIS[result.cash_npv_usd is not None]),
            ("cash out, undiscounted (USD)", result.total_usd),
            ("capex of the nodes bought (USD)", result.capex_usd),
            *((f"cost: {layer} (USD)", usd) for layer, usd in result.cost_by_layer_usd.items()),
            ("on-demand node-hours", result.on_demand_node_hours),
            ("spot node-hours", result.spot_node_hours),
            ("owned fleet utilization", result.owned_utilization),
            *alternatives,
            *(("note", note) for note in result.notes),
        ],
    )


def _node_types_sheets(book: Workbook, result: PlanResult) -> None:
    """A plan of several node types: each type's totals on one sheet, and its months on a sheet of its own
    (the Months sheet sums the types)."""
    _sheet(
        book,
        "Node types",
        [
            "accelerator",
            "GPUs a node",
            "NPV (USD)",
            "cash out, undiscounted (USD)",
            "capex (USD)",
            *(f"cost: {layer} (USD)" for layer in result.cost_by_layer_usd),
            "owned nodes bought",
            "on-demand node-hours",
            "spot node-hours",
            "owned fleet utilization",
        ],
        (
            (
                t.accelerator,
                t.gpus_per_node,
                t.result.npv_usd,
                t.result.total_usd,
                t.result.capex_usd,
                *(t.result.cost_by_layer_usd.get(layer, 0.0) for layer in result.cost_by_layer_usd),
                sum(p.nodes for p in t.result.owned_purchases),
                t.result.on_demand_node_hours,
                t.result.spot_node_hours,
                t.result.owned_utilization,
            )
            for t in result.node_types
        ),
    )
    for i, t in enumerate(result.node_types):
        # Sheet titles are at most 31 characters and unique: the index keeps two long slugs apart.
        _months_sheet(book, t.result, title=f"Months {i + 1} {t.accelerator}"[:31])


def _months_sheet(book: Workbook, result: PlanResult, *, title: str = "Months") -> None:
    _sheet(
        book,
        title,
        [
            "month",
            "demand mean GPUs",
            "demand peak GPUs",
            "training GPUs",
            "owned nodes",
            "reserved nodes",
            "on-demand node-h",
            "spot node-h",
            "owned utilization",
            *(f"cost {layer} (USD)" for layer in LAYERS),
        ],
        (
            (
                m.month,
                m.demand_mean_gpus,
                m.demand_peak_gpus,
                m.training_gpus,
                m.owned_nodes,
                m.reserved_nodes,
                m.on_demand_node_hours,
                m.spot_node_hours,
                m.owned_utilization,
                *(m.cost_usd[k] for k in LAYERS),
            )
            for m in result.months
        ),
    )


def _inference_sheet(book: Workbook, result: PlanResult) -> None:
    """Inference given in tokens per day: the serving engine's sizing of each workload."""
    _sheet(
        book,
        "Inference sizing",
        [
            "workload",
            "model",
            "accelerator",
            "output tokens/day",
            "peak/mean",
            "peak requests/s",
            "layout",
            "batch",
            "replicas",
            "GPUs at peak",
            "output tokens/s/GPU",
            "TTFT (s)",
            "TPOT (s)",
            "source",
        ],
        (
            (
                name,
                z.model,
                z.accelerator,
                z.output_tokens_per_day,
                z.peak_to_mean,
                z.peak_requests_per_s,
                z.layout,
                z.batch,
                z.replicas,
                z.gpus,
                z.output_tokens_per_s_per_gpu,
                z.ttft_s,
                z.tpot_s,
                z.source,
            )
            for name, z in sorted(result.inference_sizing.items())
        ),
    )
