"""Spreadsheet exports of a design's evaluation: CSV and XLSX with the same three parts.

* **Summary** — the design, cluster and workload, and the key training figures (fits, time to train, MFU,
  step time, throughput, memory, layout) and the cheapest option.
* **Options** — one row per way to get the compute: option, kind, offering, pricing model, total cost (USD),
  cost per GPU-hour (USD), cost of the run (USD), days, break-even utilization (a fraction).
* **Assumptions** — every input used: name, value, unit, source, as of.

XLSX (openpyxl): sheets "Summary", "Options", "Assumptions"; a bold, frozen header row on each; set column
widths; numbers are stored as numbers with currency (``"$"#,##0`` / ``"$"#,##0.00``), percent (``0.0%``)
and day (``0.0``) formats (openpyxl writes them with 16 significant digits, Excel shows 15); ISO ``as_of``
dates are stored as dates; text is always stored as a text cell, so a value beginning with ``=`` is never
a formula.

CSV: **one file with the three parts as blocks, separated by a blank line**. Each block starts with a title
row (``Summary`` / ``Options`` / ``Assumptions``) and then its own header row. Blocks were chosen over one
table with a "section" column because the parts have different columns: their union would be a wide,
mostly empty sheet, while blocks open in Excel and LibreOffice as three readable tables on one sheet. The
text starts with a UTF-8 byte-order mark (so Excel detects UTF-8 rather than the ANSI code page) and uses
CRLF line ends. Numbers are written unquoted in full precision (Python's shortest round-trip repr),
fractions as fractions (0.41, not "41%"), so they open as numbers; empty means "not applicable". A text
cell beginning with ``=``, ``+``, ``-``, ``@``, tab or CR gets a leading apostrophe so a spreadsheet never
runs it as a formula (OWASP "CSV injection"; the rule is clusterdesigner.spreadsheets, shared with the price
export). Reading back:
``csv.reader(io.StringIO(text.removeprefix("\ufeff")))``, then split on empty rows. Comma-decimal locales
should open the XLSX, which carries no locale.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.designs.launch import layout_summary
from apps.designs.services import expected_days
from clusterdesigner.spreadsheets import formula_safe

BOM = "\ufeff"

USD = '"$"#,##0'
USD_CENTS = '"$"#,##0.00'
PERCENT = "0.0%"
DAYS = "0.0"
INTEGER = "#,##0"
DECIMAL = "0.000"
GENERAL = "General"
DATE = "yyyy-mm-dd"

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Column:
    header: str
    number_format: str = GENERAL
    width: float | None = None  # None: fit to content


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    # Per-row number formats for tables whose values differ in kind row by row (Summary, Assumptions):
    # the index of the value column and one format per row.
    row_formats: tuple[str, ...] = ()
    value_column: int = -1


# ---- cell values -----------------------------------------------------------------------------------------
def _number(value: Any) -> int | float | None:
    """A finite int/float, or None (NaN and ±inf have no spreadsheet number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        f = float(value)
        return f if math.isfinite(f) else None
    return None


def _plain(value: Any) -> Any:
    """The value as a spreadsheet cell: None, bool, int, float or str (mappings and lists as JSON)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Real):
        return _number(value)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def _get(mapping: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(mapping, Mapping):
            return None
        mapping = mapping.get(key)
    return mapping


# ---- the three tables ------------------------------------------------------------------------------------
def _model_text(evaluation: Mapping[str, Any]) -> str:
    model = _get(evaluation, "spec", "workload", "model")
    name = _get(evaluation, "training", "summary", "model", "name")
    if isinstance(model, Mapping) and model.get("preset"):
        return f"{model['preset']} ({name})" if name else str(model["preset"])
    if isinstance(model, Mapping):
        keys = ("layers", "hidden", "heads", "kv_heads", "seq_len")
        return name or ", ".join(f"{k} {model[k]}" for k in keys if k in model)
    return str(name or "")


def _unit_format(unit: str, value: Any) -> str:
    u = unit.strip().lower()
    if isinstance(value, dt.date):
        return DATE
    if _number(value) is None:
        return GENERAL
    if u in ("usd", "$", "us$") or u.startswith("usd/") or u.startswith("usd per"):
        return USD_CENTS if abs(float(value)) < 1000 else USD
    if u in ("fraction", "share", "probability"):
        return PERCENT
    return GENERAL


def summary_table(evaluation: Mapping[str, Any]) -> Table:
    """Design, cluster, workload and the key training figures, one per row: field, value, unit."""
    training = evaluation.get("training") or {}
    cluster = _get(evaluation, "spec", "cluster") or {}
    workload_training = _get(evaluation, "spec", "workload", "training") or {}
    design = evaluation.get("design") or {}
    parallelism = training.get("parallelism") if isinstance(training.get("parallelism"), Mapping) else None
    nodes, gpn = _number(cluster.get("nodes")), _number(cluster.get("gpus_per_node"))
    options = [o for o in evaluation.get("options") or [] if isinstance(o, Mapping)]
    best = options[0] if options else {}

    rows: list[tuple[str, Any, str, str]] = [  # field, value, unit, number format
        ("Design", design.get("name"), "", GENERAL),
        ("Design id", design.get("id"), "", GENERAL),
        ("Version", design.get("version"), "", GENERAL),
        ("Computed at", evaluation.get("computed_at"), "", GENERAL),
        ("Model", _model_text(evaluation), "", GENERAL),
        ("Parameters", _get(training, "summary", "model", "params"), "parameters", INTEGER),
        ("Training tokens", workload_training.get("tokens"), "tokens", INTEGER),
        ("Global batch", workload_training.get("global_batch_tokens"), "tokens", INTEGER),
        ("Precision", workload_training.get("precision"), "", GENERAL),
        ("Accelerator", cluster.get("accelerator"), "", GENERAL),
        ("GPUs per node", cluster.get("gpus_per_node"), "GPUs", INTEGER),
        ("Nodes", cluster.get("nodes"), "nodes", INTEGER),
        ("GPUs", nodes * gpn if nodes is not None and gpn is not None else None, "GPUs", INTEGER),
        ("Fabric", cluster.get("fabric"), "", GENERAL),
        ("Oversubscription", cluster.get("oversubscription"), "ratio", GENERAL),
        ("Fits in memory", training.get("fits"), "", GENERAL),
        ("Layout", layout_summary(parallelism) if parallelism else "none fits", "", GENERAL),
    ]
    if parallelism:
        for key, label in (
            ("tp", "Tensor parallel"),
            ("pp", "Pipeline parallel"),
            ("dp", "Data parallel"),
            ("cp", "Context parallel"),
            ("ep", "Expert parallel"),
            ("vpp", "Virtual pipeline stages"),
            ("micro_batch", "Micro-batch"),
        ):
            rows.append((label, parallelism.get(key), "sequences" if key == "micro_batch" else "", GENERAL))
        rows += [
            ("Recompute", parallelism.get("recompute"), "", GENERAL),
            ("Sharding", parallelism.get("sharding"), "", GENERAL),
            ("Sequence parallel", parallelism.get("sequence_parallel"), "", GENERAL),
        ]
    rows += [
        ("Days to train, failure-free", training.get("time_to_train_days"), "days", DAYS),
        ("Days to train, expected (with failures and restarts)", expected_days(evaluation), "days", DAYS),
        ("MFU", training.get("mfu"), "fraction of peak", PERCENT),
        ("HFU", training.get("hfu"), "fraction of peak", PERCENT),
        ("Step time", _get(training, "step_time_s", "total"), "s", DECIMAL),
        ("Tokens per second", training.get("tokens_per_second"), "tokens/s", INTEGER),
        ("Model TFLOP/s per GPU", training.get("model_tflops_per_gpu"), "TFLOP/s", "0.0"),
        ("Memory per GPU", _get(training, "memory_per_gpu_gib", "total"), "GiB", "0.0"),
        ("GPU memory", training.get("memory_capacity_gib"), "GiB", "0.0"),
        ("Cheapest option", best.get("label"), "", GENERAL),
        ("Cheapest total cost", best.get("total_usd"), "USD", USD),
        ("Cheapest cost per GPU-hour", best.get("usd_per_gpu_hour"), "USD/GPU-hour", USD_CENTS),
    ]
    rows += _serving_rows(evaluation.get("serving"))
    return Table(
        title="Summary",
        columns=(Column("Field", width=28), Column("Value"), Column("Unit")),
        rows=tuple((field, _plain(value), unit) for field, value, unit, _ in rows),
        row_formats=tuple(fmt for *_, fmt in rows),
        value_column=1,
    )


def _serving_rows(estimate: Any) -> list[tuple[str, Any, str, str]]:
    """The serving estimate's headline figures (a design with a ``serving`` section), one per row: GPUs,
    layout, latency, throughput and $ per million tokens owning and at the cheapest cloud option."""
    if not isinstance(estimate, Mapping):
        return []
    best = estimate.get("best") or {}
    costs = [c for c in estimate.get("costs") or [] if isinstance(c, Mapping)]
    own = next((c for c in costs if c.get("option") == "own"), {})
    cloud = min(
        (c for c in costs if c.get("option") != "own"),
        key=lambda c: c.get("usd_per_m_tokens") or 0,
        default={},
    )
    layout = f"{best.get('replicas')} × tp{best.get('tp')} pp{best.get('pp')}" if best else None
    return [
        ("Serving: GPUs at the peak", best.get("gpus"), "GPUs", INTEGER),
        ("Serving: layout", layout, "replicas × layout", GENERAL),
        ("Serving: batch per replica", best.get("batch"), "sequences", INTEGER),
        ("Serving: time to first token", best.get("ttft_s"), "s", DECIMAL),
        ("Serving: time per output token", best.get("tpot_s"), "s", DECIMAL),
        (
            "Serving: output tokens per second per GPU",
            best.get("output_tokens_per_s_per_gpu"),
            "tokens/s",
            INTEGER,
        ),
        ("Serving: utilization at the mean demand", estimate.get("utilization"), "fraction", PERCENT),
        ("Serving: own, per million input tokens", own.get("usd_per_m_input_tokens"), "USD", USD_CENTS),
        ("Serving: own, per million output tokens", own.get("usd_per_m_output_tokens"), "USD", USD_CENTS),
        ("Serving: cheapest cloud option", cloud.get("option"), "", GENERAL),
        ("Serving: cloud, per million output tokens", cloud.get("usd_per_m_output_tokens"), "USD", USD_CENTS),
    ]


OPTION_COLUMNS = (
    Column("Option"),
    Column("Kind"),
    Column("Offering"),
    Column("Pricing model"),
    Column("Total cost (USD)", USD),
    Column("Cost per GPU-hour (USD)", USD_CENTS),
    Column("Run cost (USD)", USD),
    Column("Days to train, expected (with failures and restarts)", DAYS),
    Column("Break-even utilization", PERCENT),
)


def options_table(evaluation: Mapping[str, Any]) -> Table:
    """One row per option, in the evaluation's order (cheapest per run first)."""
    rows = []
    for option in evaluation.get("options") or []:
        if not isinstance(option, Mapping):
            continue
        rows.append(
            tuple(
                _plain(option.get(k))
                for k in (
                    "label",
                    "kind",
                    "offering",
                    "pricing_model",
                    "total_usd",
                    "usd_per_gpu_hour",
                    "run_cost_usd",
                    "days",
                    "break_even_utilization",
                )
            )
        )
    return Table(title="Options", columns=OPTION_COLUMNS, rows=tuple(rows))


def _assumption_items(evaluation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = [a for a in evaluation.get("assumptions") or [] if isinstance(a, Mapping)]
    if items:
        return items
    # No combined list: gather the training engine's and each offering's cost assumptions.
    gathered: list[Mapping[str, Any]] = list(_get(evaluation, "training", "assumptions") or [])
    for cost in (evaluation.get("costs") or {}).values():
        gathered += list(_get(cost, "assumptions") or [])
    seen: set[tuple[str, str]] = set()
    unique = []
    for a in gathered:
        if (
            isinstance(a, Mapping)
            and (key := (str(a.get("name")), json.dumps(_plain(a.get("value"))))) not in seen
        ):
            seen.add(key)
            unique.append(a)
    return unique


def _as_of(value: Any) -> Any:
    if isinstance(value, str) and _ISO_DATE.match(value):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return value
    return _plain(value) or None


def assumptions_table(evaluation: Mapping[str, Any]) -> Table:
    """Every input used: name, value, unit, source, as of (a date where the catalog gives an ISO date)."""
    rows, formats = [], []
    for a in _assumption_items(evaluation):
        value = _plain(a.get("value"))
        unit = str(a.get("unit") or "")
        rows.append((_plain(a.get("name")), value, unit, _plain(a.get("source")), _as_of(a.get("as_of"))))
        formats.append(_unit_format(unit, value))
    return Table(
        title="Assumptions",
        columns=(
            Column("Name", width=34),
            Column("Value"),
            Column("Unit"),
            Column("Source", width=70),
            Column("As of", DATE, width=12),
        ),
        rows=tuple(rows),
        row_formats=tuple(formats),
        value_column=1,
    )


def export_tables(evaluation: Mapping[str, Any]) -> tuple[Table, Table, Table]:
    return summary_table(evaluation), options_table(evaluation), assumptions_table(evaluation)


# ---- CSV -------------------------------------------------------------------------------------------------
def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, (int, float)):
        return repr(value)
    return formula_safe(str(value))


def design_export_csv(*, evaluation: Mapping[str, Any]) -> str:
    """The evaluation as CSV text: Summary, Options and Assumptions blocks separated by a blank line, each
    with a title row and a header row (layout explained in the module docstring). Starts with a BOM."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    for i, table in enumerate(export_tables(evaluation)):
        if i:
            writer.writerow([])
        writer.writerow([table.title])
        writer.writerow([c.header for c in table.columns])
        for row in table.rows:
            writer.writerow([_csv_cell(v) for v in row])
    return BOM + out.getvalue()


# ---- XLSX ------------------------------------------------------------------------------------------------
def _display_width(value: Any, number_format: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        return 5
    if isinstance(value, dt.date):
        return 10
    if isinstance(value, (int, float)):
        if number_format in (USD, INTEGER):
            return len(f"{value:,.0f}") + 1
        if number_format == USD_CENTS:
            return len(f"{value:,.2f}") + 1
        if number_format == PERCENT:
            return len(f"{value * 100:.1f}") + 1
        return len(f"{value:.6g}")
    return max(len(line) for line in str(value).splitlines() or [""])


def _write_sheet(ws: Any, table: Table) -> None:
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
    from openpyxl.styles import Alignment, Font
    from openpyxl.utils import get_column_letter

    bold = Font(bold=True)
    for col, column in enumerate(table.columns, start=1):
        cell = ws.cell(row=1, column=col, value=column.header)
        cell.font = bold
    widths = [len(c.header) + 2 for c in table.columns]
    for r, row in enumerate(table.rows, start=2):
        for col, value in enumerate(row, start=1):
            column = table.columns[col - 1]
            fmt = column.number_format
            if table.row_formats and col - 1 == table.value_column:
                fmt = table.row_formats[r - 2]
            cell = ws.cell(row=r, column=col)
            if isinstance(value, str):
                cell.value = ILLEGAL_CHARACTERS_RE.sub("", value)
                # Text stays text: openpyxl would otherwise store "=..." as a formula.
                cell.data_type = "s"
                if column.width and len(value) > column.width:
                    cell.alignment = Alignment(wrap_text=True, vertical="top")
            else:
                cell.value = value
                if isinstance(value, dt.date):
                    cell.number_format = DATE
                elif isinstance(value, (int, float)) and not isinstance(value, bool) and fmt != GENERAL:
                    cell.number_format = fmt
            widths[col - 1] = max(widths[col - 1], _display_width(value, fmt) + 2)
    for col, column in enumerate(table.columns, start=1):
        ws.column_dimensions[get_column_letter(col)].width = column.width or min(max(widths[col - 1], 10), 60)
    ws.freeze_panes = "A2"
    if table.rows:
        ws.auto_filter.ref = f"A1:{get_column_letter(len(table.columns))}{len(table.rows) + 1}"


def design_export_xlsx(*, evaluation: Mapping[str, Any]) -> bytes:
    """The evaluation as an XLSX workbook (sheets Summary, Options, Assumptions), as bytes."""
    from openpyxl import Workbook

    wb = Workbook()
    first = True
    for table in export_tables(evaluation):
        ws = wb.active if first else wb.create_sheet()
        ws.title = table.title
        first = False
        _write_sheet(ws, table)
    design = evaluation.get("design") or {}
    wb.properties.title = str(design.get("name") or "ClusterDesigner design")
    wb.properties.creator = "ClusterDesigner"
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


__all__ = [
    "Column",
    "Table",
    "assumptions_table",
    "design_export_csv",
    "design_export_xlsx",
    "export_tables",
    "options_table",
    "summary_table",
]
