"""Spreadsheet exports of a design's evaluation: CSV and XLSX with the same three parts.

* **Summary** — the design, cluster and workload, and the key training figures (fits, time to train, MFU,
  step time, throughput, memory, layout) and the cheapest option over the horizon and, apart, per run.
* **Options** — one row per way to get the compute: option, kind, offering, pricing model, total cost (USD),
  cost per GPU-hour (USD), cost of the run (USD), days, break-even utilization (a fraction).
* **Assumptions** — every input used: name, value, unit, source, as of.

XLSX (openpyxl): sheets "Summary" (the rent-or-own verdict, capex, cash, NPV, payback and IRR first),
"Options", "Assumptions", "Sensitivity" (the tornado), "Uncertainty" (the Monte Carlo), then "Inputs", "Cash
flows" (one row per month, live formulas over Inputs: changing a price cell recomputes the sheet) and "Cash
flows by year" (sums of the monthly rows), and with a design verdict that commits dollars "Commitments"
(owning's capex at delivery and each chosen reservation or savings plan's committed dollars by month and term
end, formulas over Inputs). Summary's rent-or-own and cheapest-option rows, every Options figure and the
utilization, power-price and rival's-rate flip thresholds are formulas too; the other flips, Sensitivity and
Uncertainty stay values at the API's inputs, and a red Summary row says which (docs/cost-engine.md lists
both); a bold, frozen header row on each table sheet; set column widths; numbers are stored as numbers with
currency (``"$"#,##0`` / ``"$"#,##0.00``), percent (``0.0%``) and day (``0.0``) formats (openpyxl writes
them with 16 significant digits, Excel shows 15); ISO ``as_of`` dates are stored as dates; text is always
stored as a text cell, so a value beginning with ``=`` is never a formula.

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
import dataclasses
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
from apps.designs.selectors import evaluation_read
from clusterdesigner.engine.cost.cashflow import (
    CashflowInputs,
    RentOption,
    bridge_option,
    depreciation_shares,
    irr_per_year,
    monthly_rate,
    pmt,
)
from clusterdesigner.engine.cost.rent_own import capital_recovery_factor
from clusterdesigner.engine.design.evaluation import DesignEvaluation, EvaluationAssumption, price_origin
from clusterdesigner.engine.serving.serving import ServingResult
from clusterdesigner.engine.training.training_result import LayoutEstimate
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


# ---- the three tables ------------------------------------------------------------------------------------
def _model_text(evaluation: DesignEvaluation) -> str:
    spec = evaluation.design_spec
    name = evaluation.training.summary.model.name if evaluation.training else None
    if spec is None:
        return str(name or "")
    model = spec.model
    if "preset" in model:
        return f"{model['preset']} ({name})" if name else str(model["preset"])
    keys = ("layers", "hidden", "heads", "kv_heads", "seq_len")
    return name or ", ".join(f"{k} {model[k]}" for k in keys if k in model)


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


Row = tuple[str, Any, str, str]  # field, value, unit, number format


def summary_table(evaluation: DesignEvaluation) -> Table:
    """Design, cluster, workload and the key training figures, one per row: field, value, unit."""
    chosen = evaluation.training.chosen if evaluation.training else None
    rows = [
        *_owning_rows(evaluation),
        *_design_rows(evaluation),
        *_layout_rows(chosen),
        *_figure_rows(evaluation, chosen),
        *_cheapest_rows(evaluation),
        *_serving_rows(evaluation.serving),
        *_rl_rows(evaluation),
        *_flip_rows(evaluation),
        *_calibration_rows(evaluation),
    ]
    return _field_table("Summary", rows, width=28)


def _calibration_rows(evaluation: DesignEvaluation) -> list[Row]:
    """Whose calibration the training estimate was made with (the design's team's, else its maker's, issue
    40), whether it applied and why, its factor and runs, and where the error band comes from. None for a
    result stored before the statement existed."""
    cal = evaluation.calibration
    if cal is None:
        return []
    scope = {"team": "team calibration", "personal": "personal calibration"}.get(cal.scope or "", "")
    return [
        ("Calibration", f"{scope}: {cal.holder}" if scope and cal.holder else scope or None, "", GENERAL),
        ("Calibration applied", cal.applied, "", GENERAL),
        ("Calibration note", cal.reason, "", GENERAL),
        ("Calibration factor (step time ×)", cal.factor, "ratio", "0.0000"),
        ("Calibration runs", cal.runs, "measured runs", INTEGER),
        ("Calibration regime key", cal.regime, "", GENERAL),
        ("Error band source", cal.band_source, "", GENERAL),
    ]


def _rl_rows(evaluation: DesignEvaluation) -> list[Row]:
    """An RL design's run (engine/rl/rl.py): the placement, each pool's part, GPUs and GPU-hours, the step by
    part and the days; with a mixed fleet (engine/rl/rl_fleet.py) each pool's run cost per option and the
    cheapest of each kind of supply."""
    run = evaluation.rl
    if run is None:
        return []
    c = run.chosen
    apart = c.placement == "disaggregated"
    rows: list[Row] = [
        ("RL: placement", f"{c.placement} ({c.mode})", "", GENERAL),
        ("RL: rollout pool", f"{c.rollout_gpus} × {c.rollout_accelerator or ''}".strip(), "GPUs", GENERAL),
        ("RL: trainer pool", f"{c.trainer_gpus} × {c.trainer_accelerator or ''}".strip(), "GPUs", GENERAL),
        ("RL: step time", c.step.seconds, "s", DECIMAL),
        ("RL: rollout per step", c.step.rollout_s, "s", DECIMAL),
        ("RL: weight sync per step", c.step.weight_sync_s, "s", DECIMAL),
        ("RL: training per step", c.step.train_s, "s", DECIMAL),
        ("RL: offload per step", c.step.offload_s, "s", DECIMAL),
        ("RL: weight-sync bytes", c.weight_sync_bytes, "bytes", INTEGER),
        ("RL: days (failure-free)", c.days, "days", DAYS),
        ("RL: GPU-hours", c.gpu_hours, "GPU-hours", INTEGER),
    ]
    if apart and c.rollout_gpu_hours is not None:
        rows += [
            ("RL: rollout pool GPU-hours", c.rollout_gpu_hours, "GPU-hours", INTEGER),
            ("RL: trainer pool GPU-hours", c.trainer_gpu_hours, "GPU-hours", INTEGER),
        ]
    fleet = evaluation.rl_fleet
    if fleet is not None:
        for pool in fleet.pools:
            rows.append(
                (
                    f"RL fleet: {pool.pool} pool GPU-hours ({pool.accelerator})",
                    pool.gpu_hours,
                    "GPU-hours",
                    INTEGER,
                )
            )
            rows += [
                (f"RL fleet: {pool.pool} pool, {o.key}", o.usd, "USD per run", USD) for o in pool.options
            ]
        rows += [
            (f"RL fleet: {k.kind} ({k.trainer} + {k.rollout})", k.usd, "USD per run", USD)
            for k in fleet.combinations
        ]
    return rows


FLIP_PREFIX = "Flip threshold at the API's inputs: "


def _flip_rows(evaluation: DesignEvaluation) -> list[Row]:
    """The price that flips it (issue #31): each top input's value at which owning and the verdict's rival
    cost the same NPV, everything else at the API's inputs, as the design verdict's ``flips`` state them
    (values, not formulas: changing Inputs does not re-solve them); "none in the range searched" when one
    side wins over the whole range. None without cash flows (no verdict)."""
    cost = evaluation.rival_cost
    if cost is None or cost.cashflow is None:
        return []
    verdict = evaluation.design_verdict or cost.verdict
    rows: list[Row] = []
    for flip in verdict.flips if verdict else ():
        field = f"{FLIP_PREFIX}{flip.label}"
        if flip.threshold is None:
            low, high = flip.searched
            rows.append(
                (field, f"none in the range searched ({low:,.6g} to {high:,.6g})", flip.unit, GENERAL)
            )
        else:
            rows.append((field, flip.threshold, flip.unit, _flip_format(flip.unit, flip.threshold)))
    return rows


def _flip_format(unit: str, value: float) -> str:
    """A flip threshold's number format: fractions as percent, dollars as dollars, else general."""
    if unit.startswith("fraction"):
        return PERCENT
    if unit.startswith("USD/kWh"):
        return '"$"#,##0.0000'
    return _unit_format(unit, value)


def _of(obj: Any, path: str) -> Any:
    """``obj.<path>`` (dotted), None when ``obj`` is None (a result without a layout or a design)."""
    for name in path.split("."):
        if obj is None:
            return None
        obj = getattr(obj, name)
    return obj


def _design_rows(evaluation: DesignEvaluation) -> list[Row]:
    """Which design and when; the model, the workload and the cluster as the spec gives them."""
    spec = evaluation.design_spec
    cluster, training = (spec.cluster, spec.training) if spec else (None, None)
    nodes, gpn = _number(_of(cluster, "nodes")), _number(_of(cluster, "gpus_per_node"))
    return [
        ("Design", _of(evaluation.design, "name"), "", GENERAL),
        ("Design id", _of(evaluation.design, "id"), "", GENERAL),
        ("Version", _of(evaluation.design, "version"), "", GENERAL),
        ("Computed at", evaluation.computed_at, "", GENERAL),
        ("Model", _model_text(evaluation), "", GENERAL),
        ("Parameters", _of(evaluation.training, "summary.model.params"), "parameters", INTEGER),
        ("Training tokens", _of(training, "tokens"), "tokens", INTEGER),
        ("Global batch", _of(training, "global_batch_tokens"), "tokens", INTEGER),
        ("Precision", _of(training, "precision"), "", GENERAL),
        ("Accelerator", _of(cluster, "accelerator"), "", GENERAL),
        ("GPUs per node", _of(cluster, "gpus_per_node"), "GPUs", INTEGER),
        ("Nodes", _of(cluster, "nodes"), "nodes", INTEGER),
        ("GPUs", nodes * gpn if nodes is not None and gpn is not None else None, "GPUs", INTEGER),
        ("Fabric", _of(cluster, "fabric"), "", GENERAL),
        ("Oversubscription", _of(cluster, "oversubscription"), "ratio", GENERAL),
    ]


def _layout_rows(chosen: LayoutEstimate | None) -> list[Row]:
    """Whether the chosen layout fits, its parallel dimensions, recompute and sharding; then its failure-free
    days. Without a layout: "none fits"."""
    if chosen is None:
        return [
            ("Fits in memory", False, "", GENERAL),
            ("Layout", "none fits", "", GENERAL),
            ("Days to train, failure-free", None, "days", DAYS),
        ]
    p = chosen.parallelism
    return [
        ("Fits in memory", chosen.fits, "", GENERAL),
        ("Layout", layout_summary(p), "", GENERAL),
        ("Tensor parallel", p.tp, "", GENERAL),
        ("Pipeline parallel", p.pp, "", GENERAL),
        ("Data parallel", p.dp, "", GENERAL),
        ("Context parallel", p.cp, "", GENERAL),
        ("Expert parallel", p.ep, "", GENERAL),
        ("Virtual pipeline stages", p.vpp, "", GENERAL),
        ("Micro-batch", p.micro_batch, "sequences", GENERAL),
        ("Recompute", p.recompute, "", GENERAL),
        ("Sharding", p.sharding, "", GENERAL),
        ("Sequence parallel", p.sequence_parallel, "", GENERAL),
        ("Days to train, failure-free", chosen.time_to_train_days, "days", DAYS),
    ]


def _figure_rows(evaluation: DesignEvaluation, chosen: LayoutEstimate | None) -> list[Row]:
    """Expected days, utilisation, throughput and memory of the chosen layout."""
    return [
        ("Days to train, expected (with failures and restarts)", evaluation.expected_days, "days", DAYS),
        ("MFU", _of(chosen, "mfu"), "fraction of peak", PERCENT),
        ("HFU", _of(chosen, "hfu"), "fraction of peak", PERCENT),
        ("Step time", _of(chosen, "step_time_s.total"), "s", DECIMAL),
        ("Tokens per second", _of(chosen, "tokens_per_second"), "tokens/s", INTEGER),
        ("Model TFLOP/s per GPU", _of(chosen, "model_tflops_per_gpu"), "TFLOP/s", "0.0"),
        ("Memory per GPU", _of(chosen, "memory_per_gpu_gib.total"), "GiB", "0.0"),
        ("GPU memory", _of(chosen, "memory_capacity_gib"), "GiB", "0.0"),
    ]


def _cheapest_rows(evaluation: DesignEvaluation) -> list[Row]:
    """The cheapest option in each frame, each ranked in its own frame: over the horizon by the cost engine's
    ranking, per run by the options' stored order (cheapest run first); never a per-run pick's horizon
    cost."""
    horizon = next(iter(evaluation.ranked_options("horizon")), (None, None))[0]
    per_run = next(iter(evaluation.options), None)
    return [
        ("Cheapest option over the horizon", _of(horizon, "label"), "", GENERAL),
        ("Its cost over the horizon", _of(horizon, "total_usd"), "USD", USD),
        ("Its cost per GPU-hour", _of(horizon, "usd_per_gpu_hour"), "USD/GPU-hour", USD_CENTS),
        ("Cheapest option per run", _of(per_run, "label"), "", GENERAL),
        ("Its cost per run", _of(per_run, "run_cost_usd"), "USD", USD),
    ]


def _field_table(title: str, rows: list[tuple[str, Any, str, str]], *, width: float) -> Table:
    """A table of (field, value, unit) rows, each value with its own number format."""
    return Table(
        title=title,
        columns=(Column("Field", width=width), Column("Value"), Column("Unit")),
        rows=tuple((field, _plain(value), unit) for field, value, unit, _ in rows),
        row_formats=tuple(fmt for *_, fmt in rows),
        value_column=1,
    )


def _serving_rows(estimate: ServingResult | None) -> list[tuple[str, Any, str, str]]:
    """The serving estimate's headline figures (a design with a ``serving`` section), one per row: GPUs,
    layout, latency, throughput, output tokens per day and $ per million output tokens owning, at the
    cheapest cloud option and at every cloud option (offering and pricing model)."""
    if estimate is None:
        return []
    best = estimate.best
    own = next((c for c in estimate.costs if c.option == "own"), None)
    clouds = [c for c in estimate.costs if c.option != "own"]
    cloud = min(clouds, key=lambda c: c.usd_per_m_tokens or 0, default=None)
    return [
        ("Serving: GPUs at the peak", best.gpus, "GPUs", INTEGER),
        ("Serving: layout", f"{best.replicas} × tp{best.tp} pp{best.pp}", "replicas × layout", GENERAL),
        ("Serving: batch per replica", best.batch, "sequences", INTEGER),
        ("Serving: time to first token", best.ttft_s, "s", DECIMAL),
        ("Serving: time per output token", best.tpot_s, "s", DECIMAL),
        ("Serving: output tokens per second per GPU", best.output_tokens_per_s_per_gpu, "tokens/s", INTEGER),
        ("Serving: utilization at the mean demand", estimate.utilization, "fraction", PERCENT),
        (
            "Serving: own, per million input tokens",
            own.usd_per_m_input_tokens if own else None,
            "USD",
            USD_CENTS,
        ),
        (
            "Serving: own, per million output tokens",
            own.usd_per_m_output_tokens if own else None,
            "USD",
            USD_CENTS,
        ),
        ("Serving: cheapest cloud option", cloud.option if cloud else None, "", GENERAL),
        (
            "Serving: cloud, per million output tokens",
            cloud.usd_per_m_output_tokens if cloud else None,
            "USD",
            USD_CENTS,
        ),
        ("Serving: output tokens per day", estimate.output_tokens_per_day, "tokens", INTEGER),
    ] + [
        (f"Serving: {c.option}, per million output tokens", c.usd_per_m_output_tokens, "USD", USD_CENTS)
        for c in clouds
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


def _owning_rows(evaluation: DesignEvaluation) -> list[tuple[str, Any, str, str]]:
    """The summary's rent-or-own rows: the design verdict (or why there is none), capex, cash, NPVs, payback,
    IRR, from the offering that holds the verdict's rival (its cheapest option is the design's rival, and
    owning there rents that offering during the lead time)."""
    cost = evaluation.rival_cost
    cash = None if cost is None else cost.cashflow
    own = None if cash is None else cash.own
    # A result stored without cash flows states no verdict: its rows would have no figures beside it.
    verdict = None if cash is None else evaluation.design_verdict or (cost.verdict if cost else None)
    reference = next((r for r in (cash.rent or ()) if r.name == cash.reference), None) if cash else None
    return [
        (
            "Verdict",
            (verdict.sentence if verdict else None) or (cash.note if cash else None) or "",
            "",
            GENERAL,
        ),
        ("Capex (owning)", cost.on_prem.capex_usd if cost else None, "USD", USD),
        ("Cash out over the horizon (owning)", own.total_usd if own else None, "USD", USD),
        ("NPV of owning", own.npv_usd if own else None, "USD", USD),
        (
            "Cheapest rent option (by NPV)",
            reference.label or reference.name if reference else None,
            "",
            GENERAL,
        ),
        ("NPV of the cheapest rent option", reference.npv_usd if reference else None, "USD", USD),
        ("NPV saving of owning (rent − own)", cash.npv_difference_usd if cash else None, "USD", USD),
        ("Payback month", cash.payback_month if cash else None, "month", INTEGER),
        ("IRR of owning against renting", cash.irr_per_year if cash else None, "per year", PERCENT),
    ]


OPTION_KEYS = (
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


def options_table(evaluation: DesignEvaluation) -> Table:
    """One row per option, in the evaluation's order (cheapest per run first)."""
    rows = tuple(tuple(_plain(getattr(o, k)) for k in OPTION_KEYS) for o in evaluation.options)
    return Table(title="Options", columns=OPTION_COLUMNS, rows=rows)


def _assumption_items(evaluation: DesignEvaluation) -> list[EvaluationAssumption]:
    if evaluation.assumptions:
        return list(evaluation.assumptions)
    # No combined list: gather the training engine's and each offering's cost assumptions.
    gathered = [
        EvaluationAssumption.from_json(a.to_json())
        for a in (evaluation.training.assumptions if evaluation.training else ())
    ]
    for cost in evaluation.costs.values():
        gathered += [EvaluationAssumption.from_json(a.to_json()) for a in cost.assumptions]
    seen: set[tuple[str, str]] = set()
    unique = []
    for a in gathered:
        if (key := (a.name, json.dumps(_plain(a.value)))) not in seen:
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


def assumptions_table(evaluation: DesignEvaluation) -> Table:
    """Every input used: name, value, unit, source, as of (a date where the catalog gives an ISO date)."""
    rows, formats = [], []
    for a in _assumption_items(evaluation):
        value = _plain(a.value)
        # A resolved price says where it came from (design, price book entry and its date, catalog).
        origin = price_origin(a.origin, a.entry_id, a.as_of)
        source = f"{origin}: {_plain(a.source)}" if origin else _plain(a.source)
        rows.append((_plain(a.name), value, a.unit, source, _as_of(a.as_of)))
        formats.append(_unit_format(a.unit, value))
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


def export_tables(evaluation: DesignEvaluation) -> tuple[Table, Table, Table]:
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


def design_export_csv(*, evaluation: DesignEvaluation | Mapping[str, Any]) -> str:
    """The evaluation as CSV text: Summary, Options and Assumptions blocks separated by a blank line, each
    with a title row and a header row (layout explained in the module docstring). Starts with a BOM."""
    evaluation = evaluation_read(result=evaluation)
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


def sensitivity_table(evaluation: DesignEvaluation) -> Table:
    """The tornado of the design verdict's rival offering (on NPV against the rival): each assumption at its
    low and high."""
    cost = evaluation.rival_cost
    sensitivity = None if cost is None else cost.sensitivity
    keys = ("name", "base", "low", "high", "own_minus_rent_low_usd", "own_minus_rent_high_usd", "swing_usd")
    rows = tuple(
        tuple(_plain(getattr(row, k)) for k in keys) for row in (sensitivity.rows if sensitivity else ())
    )
    return Table(
        title="Sensitivity",
        columns=(
            Column("Assumption", width=40),
            Column("Base"),
            Column("Low"),
            Column("High"),
            Column(
                f"Own − {(sensitivity.pricing_model if sensitivity else None) or 'rent'} at low (USD)", USD
            ),
            Column("… at high (USD)", USD),
            Column("Swing (USD)", USD),
        ),
        rows=rows,
    )


def uncertainty_table(evaluation: DesignEvaluation) -> Table:
    """The Monte Carlo of the NPV saving of owning against the design verdict's rival: percentiles, P(owning
    wins), draws, seed, spread."""
    cost = evaluation.rival_cost
    u = None if cost is None or cost.cashflow is None else cost.cashflow.uncertainty
    rows: list[tuple[str, Any, str, str]] = [
        (label, getattr(u, name, None), unit, fmt)  # None when the result has no Monte Carlo
        for label, name, unit, fmt in (
            ("P10 of the NPV saving of owning", "p10_usd", "USD", USD),
            ("P50 of the NPV saving of owning", "p50_usd", "USD", USD),
            ("P90 of the NPV saving of owning", "p90_usd", "USD", USD),
            ("Probability that owning costs less", "p_own_wins", "fraction", PERCENT),
            ("Draws", "samples", "", INTEGER),
            ("Seed", "seed", "", INTEGER),
            ("Spread (each input uniform within ±)", "spread", "fraction", PERCENT),
        )
    ]
    rows.append(("Inputs varied", ", ".join(u.varied if u else ()), "", GENERAL))
    return _field_table("Uncertainty", rows, width=40)


# ---- Cash flows as live formulas over the Inputs sheet ---------------------------------------------------
# Inputs!B<row> for each scalar the formulas read; rent options follow from OPTION_ROW, one row each, every
# offering of the design in turn: A pricing model, B $/node-hour, C term months (0: pay as you go), D hours
# factor, E months past the horizon billed, F the share of each term paid at its start (0 no upfront, 0.5
# partial, 1 all upfront), G the label the Summary names, H the managed-service overhead on compute, I cloud
# storage and egress a month (both the offering's), J the offering. Every case the engine models
# (engine/cost/cashflow.py) is a formula: lead time, loan (Excel PMT), lease, tax on both sides (deductible
# bills, depreciation, the tax on the sale) and upfront payments; only the financing kind picks which terms a
# cell's formula holds. Tax years that can start within a horizon (at most 20 years, bounds.py) get a row
# each of the schedule's share, the month its shield is booked and the share the horizon reaches.
TAX_YEARS = range(1, 21)
INPUT_ROWS = (
    ("months", "Months in the horizon", "months", INTEGER),
    ("discount_rate", "Discount rate (with a WACC below: its formula)", "per year", PERCENT),
    ("wacc_debt_share", "WACC: debt share D/V (blank: the discount rate is given)", "fraction", PERCENT),
    ("wacc_cost_of_debt", "WACC: cost of debt", "per year", PERCENT),
    ("wacc_cost_of_equity", "WACC: cost of equity", "per year", PERCENT),
    ("monthly_rate", "Monthly discount rate = (1 + r)^(1/12) − 1", "per month", "0.0000%"),
    ("nodes", "Nodes", "nodes", INTEGER),
    ("utilization", "Utilization", "fraction", PERCENT),
    ("capex_usd", "Capex, paid at delivery", "USD", USD),
    ("power_full_usd_per_month", "Energy bill a month at 100 % utilization", "USD/month", USD),
    ("idle_power_fraction", "Idle power", "fraction of full", PERCENT),
    ("other_opex_usd_per_month", "Colocation + maintenance + staff a month", "USD/month", USD),
    ("resale_fraction", "Resale at the horizon's end", "fraction of capex", PERCENT),
    ("power_escalation_per_year", "Power price change", "per year", PERCENT),
    ("cloud_price_change_per_year", "Cloud price change", "per year", PERCENT),
    ("hours_per_month", "Hours a month (8,760 / 12)", "h", INTEGER),
    ("lead_time_months", "Lead time (months rented before owned capacity is usable)", "months", INTEGER),
    ("financing", "Financing (cash, loan or lease; the formulas below follow it)", "", GENERAL),
    ("loan_rate", "Loan rate", "per year", PERCENT),
    ("loan_months", "Loan term", "months", INTEGER),
    ("loan_payment_usd", "Loan payment = PMT(rate / 12, term, −capex)", "USD/month", USD_CENTS),
    ("loan_balance_usd", "Loan balance repaid at the horizon's end", "USD", USD_CENTS),
    ("lease_usd_per_month", "Operating lease payment", "USD/month", USD),
    (
        "tax_rate",
        "Tax rate (0: pre-tax; rent, opex, lease and loan interest deductible)",
        "fraction",
        PERCENT,
    ),
    (
        "depreciation_schedule",
        "Depreciation schedule (macrs_5: IRS Pub. 946 Table A-1; straight_line)",
        "",
        GENERAL,
    ),
    *((f"dep_{y}", f"Depreciation share, tax year {y}", "of capex", PERCENT) for y in TAX_YEARS),
    *(
        (f"dep_month_{y}", f"Month tax year {y} is booked = MIN(L + 12y, N)", "month", INTEGER)
        for y in TAX_YEARS
    ),
    *(
        (f"dep_taken_{y}", f"Share of tax year {y} taken by the horizon", "of capex", PERCENT)
        for y in TAX_YEARS
    ),
    ("book_fraction", "Book value at the horizon = 1 − Σ shares taken", "of capex", PERCENT),
    # What the Options sheet's annualised, per-run and break-even formulas read beyond the cash flows (#31).
    ("horizon_years", "Horizon in years (the annualised figures on Options)", "years", "0.00"),
    ("gpus_per_node", "GPUs per node", "GPUs", INTEGER),
    ("depreciation_years", "Depreciation life (annualised capital recovery on Options)", "years", "0.0"),
    (
        "residual_fraction",
        "Residual value at the life's end (annualised capital recovery)",
        "of capex",
        PERCENT,
    ),
    (
        "it_load_kw",
        "IT kW at full load billed for energy (0: power in an all-in colocation)",
        "kW",
        "#,##0.0",
    ),
    ("pue", "PUE", "ratio", "0.00"),
    (
        "usd_per_kwh",
        "Power price per kWh (the energy bill above = kW × PUE × price × 730)",
        "USD/kWh",
        "0.0000",
    ),
    ("run_days", "Run: days to train, failure-free", "days", DAYS),
    (
        "run_goodput",
        "Run: goodput owned or rented on demand (expected days = days ÷ goodput)",
        "fraction",
        "0.0000",
    ),
)
ROW = {key: i + 2 for i, (key, *_) in enumerate(INPUT_ROWS)}
WACC_KEYS = ("wacc_debt_share", "wacc_cost_of_debt", "wacc_cost_of_equity")
OPTION_ROW = len(INPUT_ROWS) + 4
UPFRONT_SHARE = {"no_upfront": 0.0, "partial_upfront": 0.5, "all_upfront": 1.0}


def _ref(key: str) -> str:
    return f"Inputs!$B${ROW[key]}"


def _input_formulas(inputs: CashflowInputs) -> dict[str, tuple[str, float]]:
    """The Inputs cells that are formulas over other Inputs cells, each with its value at the inputs."""
    rate, term, lead, months = (
        _ref("loan_rate"),
        _ref("loan_months"),
        _ref("lead_time_months"),
        _ref("months"),
    )
    capex, payment = _ref("capex_usd"), _ref("loan_payment_usd")
    i, k = f"{rate}/12", f"({months}-{lead})"
    # The balance after the N − L payments made within the horizon, when the loan runs past it: Excel's
    # −FV(i, k, −payment, capex) = capex · (1 + i)^k − payment · ((1 + i)^k − 1) / i, k = N − L
    # (capex − payment · k at i = 0).
    balance = f"-FV({i},{k},-{payment},{capex})"
    i_v, n_v = inputs.loan_rate / 12.0, inputs.months - inputs.lead_time_months
    pay_v = pmt(rate=i_v, periods=max(inputs.loan_months, 1), present_value=inputs.capex_usd)
    growth = (1.0 + i_v) ** n_v
    balance_v = (
        inputs.capex_usd - pay_v * n_v
        if i_v == 0
        else inputs.capex_usd * growth - pay_v * (growth - 1.0) / i_v
    )
    runs_past = inputs.lead_time_months + inputs.loan_months > inputs.months
    tax_years: dict[str, tuple[str, float]] = {}
    taken_v = 0.0
    for y, share in zip(TAX_YEARS, _dep_shares(inputs), strict=True):
        start = f"({months}-{lead}-{12 * (y - 1)})"  # months of tax year y's start to the horizon
        start_v = n_v - 12 * (y - 1)
        part = share * (1.0 if start_v >= 12 else start_v / 12.0 if start_v > 0 else 0.0)
        taken_v += part
        tax_years[f"dep_month_{y}"] = (
            f"=IF({lead}+{12 * y}<{months},{lead}+{12 * y},{months})",
            min(inputs.lead_time_months + 12 * y, inputs.months),
        )
        tax_years[f"dep_taken_{y}"] = (
            f"={_ref(f'dep_{y}')}*IF({start}>=12,1,IF({start}>0,{start}/12,0))",
            part,
        )
    first, last = ROW[f"dep_taken_{TAX_YEARS[0]}"], ROW[f"dep_taken_{TAX_YEARS[-1]}"]
    return {
        **tax_years,
        "book_fraction": (f"=1-SUM(Inputs!$B${first}:$B${last})", 1.0 - taken_v),
        "monthly_rate": (f"=(1+{_ref('discount_rate')})^(1/12)-1", monthly_rate(inputs.discount_rate)),
        "loan_payment_usd": (f"=PMT({i},{term},-{capex})", pay_v),
        "loan_balance_usd": (f"=IF({lead}+{term}>{months},{balance},0)", balance_v if runs_past else 0.0),
    }


def _dep_shares(inputs: CashflowInputs) -> tuple[float, ...]:
    """The schedule's share of capex in each of the sheet's tax years (0 past the schedule's last); with a
    facility of its own life (engine/cost/cashflow.py), the servers' schedule on capex less the facility and
    the facility straight-line over its life, both as one share of the whole capex (the shields and the book
    value are linear in each part, so the sheet's formulas hold as they are)."""
    shares = depreciation_shares(schedule=inputs.depreciation_schedule, life_years=inputs.depreciation_years)
    servers = tuple(shares[y - 1] if y <= len(shares) else 0.0 for y in TAX_YEARS)
    life, capex = inputs.facility_life_years, inputs.capex_usd
    if life is None or inputs.facility_capex_usd <= 0 or capex <= 0:
        return servers
    own = depreciation_shares(schedule="straight_line", life_years=life)
    f = inputs.facility_capex_usd / capex
    return tuple(
        (1.0 - f) * s + f * (own[y - 1] if y <= len(own) else 0.0)
        for y, s in zip(TAX_YEARS, servers, strict=True)
    )


def _opex(m: str) -> str:
    """Owning's opex in month m: other opex + the energy bill at the utilization, escalated."""
    idle, u = _ref("idle_power_fraction"), _ref("utilization")
    return (
        f"{_ref('other_opex_usd_per_month')}+{_ref('power_full_usd_per_month')}*({idle}+(1-{idle})*{u})"
        f"*(1+{_ref('power_escalation_per_year')})^(({m}-1)/12)"
    )


def _own_formula(r: int, financing: str, lead_cell: str) -> str:
    """Owning in the month of row r: the lead-time rent (``lead_cell``, the pay-as-you-go option's cell of
    this row) in months 1..L, then the financing's payments, opex, and at the horizon's end the resale; the
    MACRS shield at the end of each of the six tax years after delivery."""
    m, lead, months, capex = f"$A{r}", _ref("lead_time_months"), _ref("months"), _ref("capex_usd")
    t, resale = _ref("tax_rate"), _ref("resale_fraction")
    after = f"IF({m}>{lead},{{}},0)"
    # The lead-time cell is a rent cell, already after tax; opex, a lease and loan interest are deductible.
    parts = [f"IF({m}>=1,IF({m}<={lead},{lead_cell},0),0)", after.format(f"({_opex(m)})*(1-{t})")]
    if financing == "cash":
        parts.append(f"IF({m}={lead},{capex},0)")
    elif financing == "loan":
        term, payment = _ref("loan_months"), _ref("loan_payment_usd")
        i = f"{_ref('loan_rate')}/12"
        # Interest of payment k = m − L: i × the balance after k − 1 payments, −FV(i, k − 1, −payment, capex).
        interest = f"{i}*(-FV({i},{m}-{lead}-1,-{payment},{capex}))"
        parts += [
            after.format(f"IF({m}<={lead}+{term},{payment}-{t}*{interest},0)"),
            f"IF({m}={months},{_ref('loan_balance_usd')},0)",
        ]
    else:
        parts.append(after.format(f"{_ref('lease_usd_per_month')}*(1-{t})"))
    if financing != "lease":
        shields = "+".join(f"IF({m}={_ref(f'dep_month_{y}')},{_ref(f'dep_taken_{y}')},0)" for y in TAX_YEARS)
        parts += [
            f"-IF({m}={months},{resale}*{capex},0)",
            f"-{t}*{capex}*({shields})",
            # The sale at the horizon, taxed on its gain over book value (a loss credited alike).
            f"IF({m}={months},{t}*({resale}-{_ref('book_fraction')})*{capex},0)",
        ]
    return "=" + "+".join(parts).replace("+-", "-")


def _rent_formula(r: int, option_row: int, term_months: int) -> str:
    """A rent option in the month of row r. Pay as you go: the hours used at the month's price. A term: each
    month of it billed at the price of the month it starts, (1 − F) of the bill monthly (the months past the
    horizon with the last), and F of the whole term at its start (the end of the month before)."""
    m, opt = f"$A{r}", f"Inputs!$B${option_row}"
    over = f"(1+Inputs!$H${option_row})"
    common = f"{_ref('nodes')}*{_ref('hours_per_month')}*{opt}"
    extra = f"IF({m}>=1,Inputs!$I${option_row},0)"
    growth = f"(1+{_ref('cloud_price_change_per_year')})"
    if term_months <= 0:
        hours = f"{common}*{_ref('utilization')}*Inputs!$D${option_row}"
        return f"=(IF({m}>=1,{hours}*{growth}^(({m}-1)/12)*{over},0)+{extra})*(1-{_ref('tax_rate')})"
    term, share, past = (f"Inputs!${c}${option_row}" for c in ("C", "F", "E"))
    monthly = (
        f"IF({m}>=1,{common}*{growth}^(({m}-MOD({m}-1,{term})-1)/12)*{over}*(1-{share})"
        f"*IF({m}={_ref('months')},1+{past},1),0)"
    )
    upfront = (
        f"IF(MOD({m},{term})=0,IF({m}<{_ref('months')},{share}*{term}*{common}*{growth}^({m}/12)*{over},0),0)"
    )
    return f"=({monthly}+{upfront}+{extra})*(1-{_ref('tax_rate')})"  # a deductible bill


@dataclass(frozen=True)
class _Rent:
    """One rent option of one offering, as the Inputs and Cash flows sheets hold it: ``key`` names its Cash
    flows column (the pricing model; ``offering:model`` when the design has several offerings)."""

    key: str
    offering: str | None
    option: RentOption
    label: str
    overhead: float
    extra_usd_per_month: float
    monthly_usd: tuple[float, ...]
    npv_usd: float
    lead: int  # index in the rent list of the option its offering rents during the lead time
    own_usd: tuple[float, ...]  # owning's monthly flows with that lead-time rent (its offering's result)
    goodput: float | None = None  # a run's goodput on it (spot: with preemptions); None without run days


def _rents(evaluation: DesignEvaluation) -> list[_Rent]:
    """Every offering's rent options, offerings by slug (so that the order the design lists them in changes
    nothing, and MATCH's first-of-equals is the design verdict's tie-break), each priced by its own cost
    result; an offering whose owning inputs differ from the first's (they are the design's, so they do not)
    or that has no cash flows is left out, since the sheet's one owning column would not be its."""
    first = evaluation.first_cost
    assert first is not None and first.cashflow is not None and first.cashflow.inputs is not None
    base = first.cashflow.inputs
    own_side = {k: v for k, v in base.to_json().items() if k not in _RENT_SIDE}
    costs = [(slug, c.cashflow) for slug, c in sorted(evaluation.costs.items()) if c.cashflow is not None]
    several = len(costs) > 1
    out: list[_Rent] = []
    for slug, cash in costs:
        inputs = cash.inputs
        if (
            inputs is None
            or not cash.rent
            or cash.own is None
            or {k: v for k, v in inputs.to_json().items() if k not in _RENT_SIDE} != own_side
        ):
            continue
        flows = {r.name: r for r in cash.rent}
        offering = evaluation.costs[slug].offering
        run = evaluation.costs[slug].per_run
        lead = len(out) + _lead_option(inputs.rent)
        for option in inputs.rent:
            label = flows[option.model].label or option.model
            out.append(
                _Rent(
                    key=f"{slug}:{option.model}" if several else option.model,
                    offering=offering.slug if offering else None,
                    option=option,
                    label=f"{offering.instance_type} {label}" if several and offering else label,
                    overhead=inputs.managed_overhead_fraction,
                    extra_usd_per_month=inputs.rent_extra_usd_per_month,
                    monthly_usd=flows[option.model].monthly_usd,
                    npv_usd=flows[option.model].npv_usd,
                    lead=lead,
                    own_usd=cash.own.monthly_usd,
                    goodput=_goodput(run, option.model),
                )
            )
    return out


def _goodput(run: Any, model: str) -> float | None:
    """A run's goodput on a pricing model as the options table's days have it: failure-free days ÷ expected
    days (spot's with preemptions); None without run days or when spot cannot finish."""
    days = _number(run.days)
    expected = _number(run.spot_effective_days if model == "spot" else run.effective_days or run.days)
    return days / expected if days is not None and expected else None


# The cash-flow inputs that belong to a rent option's offering rather than to owning.
_RENT_SIDE = ("rent", "managed_overhead_fraction", "rent_extra_usd_per_month")


def _sheet_extras(evaluation: DesignEvaluation, inputs: CashflowInputs) -> dict[str, float | None]:
    """The Inputs rows the Options formulas read beyond the cash flows, from the first offering's resolved
    assumptions and its run (owning is the same in every offering); None where the result does not carry
    one (the formulas that need it are then not written). The IT kW billed for energy is the energy bill at
    full load ÷ (PUE × $/kWh × 730 h), so that kW × PUE × $/kWh × 730 is the engine's bill."""
    cost = evaluation.first_cost
    given = {a.name: _number(a.value) for a in cost.assumptions} if cost else {}
    spec = evaluation.design_spec
    gpn = _number(given.get("gpus_per_node")) or _number(_of(spec.cluster if spec else None, "gpus_per_node"))
    pue, price = given.get("on_prem.pue"), given.get("on_prem.usd_per_kwh")
    kw = None
    if pue is not None and price is not None:
        kw = inputs.power_full_usd_per_month / (pue * price * 730) if pue * price > 0 else 0.0
    run = cost.per_run if cost else None
    days = None if run is None else _number(run.days)
    effective = None if run is None else _number(run.effective_days or run.days)
    return {
        "horizon_years": given.get("horizon_years"),
        "gpus_per_node": gpn,
        "depreciation_years": inputs.depreciation_years,
        "residual_fraction": given.get("on_prem.residual_fraction"),
        "it_load_kw": kw,
        "pue": pue,
        "usd_per_kwh": price,
        "run_days": days,
        "run_goodput": days / effective if days is not None and effective else None,
    }


def _write_inputs(
    ws: Any,
    inputs: CashflowInputs,
    rents: list[_Rent],
    cached: _Cached,
    wacc: Mapping[str, float],
    extras: Mapping[str, float | None],
) -> None:
    """The scalar inputs (a WACC's parts, when the design gave one, with the discount rate their formula
    (1 − D/V) · r_e + D/V · r_d · (1 − t), engine/cost/cashflow.py ``wacc``; the energy bill at full load as
    kW × PUE × $/kWh × 730 where the result carries the PUE and the power price), then the rent options."""
    from openpyxl.styles import Font

    bold = Font(bold=True)
    for col, header in enumerate(("Input", "Value", "Unit"), start=1):
        ws.cell(row=1, column=col, value=header).font = bold
    values = {
        **inputs.to_json(),
        "hours_per_month": 730,
        **{f"dep_{y}": share for y, share in zip(TAX_YEARS, _dep_shares(inputs), strict=True)},
        **{key: wacc.get(key) for key in WACC_KEYS},
        **extras,
    }
    formulas = _input_formulas(inputs)
    if all(key in wacc for key in WACC_KEYS):
        d, rd, re_ = (_ref(key) for key in WACC_KEYS)
        formula = f"=(1-{d})*{re_}+{d}*{rd}*(1-{_ref('tax_rate')})"
        formulas["discount_rate"] = (formula, inputs.discount_rate)
    kw, pue, price = (extras.get(key) for key in ("it_load_kw", "pue", "usd_per_kwh"))
    if kw is not None and pue is not None and price is not None:
        formula = f"={_ref('it_load_kw')}*{_ref('pue')}*{_ref('usd_per_kwh')}*{_ref('hours_per_month')}"
        formulas["power_full_usd_per_month"] = (formula, kw * pue * price * 730)
    for key, label, unit, fmt in INPUT_ROWS:
        row = ROW[key]
        ws.cell(row=row, column=1, value=label)
        if key in formulas:
            cached.put(ws, row, 2, *formulas[key], fmt)
        else:
            ws.cell(row=row, column=2, value=values[key]).number_format = fmt
        ws.cell(row=row, column=3, value=unit)
    headers = (
        "Rent option",
        "USD per node-hour",
        "Term (months)",
        "Hours factor",
        "Months past the horizon",
        "Share of the term paid upfront",
        "Label",
        "Managed-service overhead on compute",
        "Cloud storage and egress a month (USD)",
        "Offering",
        "Lead-time rent (position of its offering's option)",
        "Goodput of a run on it (expected days = days ÷ goodput)",
    )
    for col, header in enumerate(headers, start=1):
        ws.cell(row=OPTION_ROW - 1, column=col, value=header).font = bold
    for k, rent in enumerate(rents):
        row, option = OPTION_ROW + k, rent.option
        term = option.term_months or 0
        ws.cell(row=row, column=1, value=option.model)
        ws.cell(row=row, column=2, value=option.usd_per_node_hour).number_format = USD_CENTS
        ws.cell(row=row, column=3, value=term)
        ws.cell(row=row, column=4, value=option.hours_factor or 1.0)
        past = math.ceil(inputs.months / term) * term - inputs.months if term else 0
        formula = f"=IF(C{row}=0,0,CEILING({_ref('months')}/C{row},1)*C{row}-{_ref('months')})"
        cached.put(ws, row, 5, formula, past)
        ws.cell(row=row, column=6, value=UPFRONT_SHARE[option.upfront or "no_upfront"])
        ws.cell(row=row, column=7, value=rent.label).data_type = "s"
        ws.cell(row=row, column=8, value=rent.overhead).number_format = PERCENT
        ws.cell(row=row, column=9, value=rent.extra_usd_per_month).number_format = USD
        ws.cell(row=row, column=10, value=rent.offering)
        ws.cell(row=row, column=11, value=rent.lead + 1)
        ws.cell(row=row, column=12, value=rent.goodput)
    ws.column_dimensions["A"].width = 44
    ws.column_dimensions["B"].width = 18


def _lead_option(options: tuple[RentOption, ...]) -> int:
    """The position of the rent option rented during the lead time, as the engine picks it
    (``cashflow.bridge_option``: the cheapest on-demand, else spot, else the cheapest reservation). The engine
    bills a bridging reservation monthly; the sheet's column bills it as chosen, so the two differ only for a
    design that ticks neither on-demand nor spot and pays its reservation upfront."""
    bridge = bridge_option(options)
    return next(k for k, o in enumerate(options) if o.model == bridge.model)


def _write_months(
    ws: Any,
    inputs: CashflowInputs,
    rents: list[_Rent],
    k_df: int,
    monthly: list[Any],
    cached: _Cached,
    lead_cell: str,
) -> None:
    """One row per month 0..N: owning and each rent option as formulas (cached: the engine's monthly flows),
    the discount factor, their PVs. Owning's lead-time rent is the option of the cheapest rent option's
    offering that the engine rents then (``lead_cell`` holds its position among the rent columns), as the
    design verdict takes owning from the rival's offering (engine/cost/design_verdict.py)."""
    from openpyxl.utils import get_column_letter

    financing = inputs.financing or "cash"
    span = f"$C{{r}}:${get_column_letter(len(rents) + 2)}{{r}}"
    options = [rent.option for rent in rents]
    names = 1 + len(options)
    i = monthly_rate(inputs.discount_rate)
    for m in range(inputs.months + 1):
        r = m + 2
        ws.cell(row=r, column=1, value=m)
        formulas = [_own_formula(r, financing, f"INDEX({span.format(r=r)},{lead_cell})")]
        formulas += [_rent_formula(r, OPTION_ROW + k, o.term_months or 0) for k, o in enumerate(options)]
        df = 1.0 / (1.0 + i) ** m
        for k, formula in enumerate(formulas):
            cached.put(ws, r, k + 2, formula, monthly[k][m], USD)
        cached.put(ws, r, k_df, f"=1/(1+{_ref('monthly_rate')})^$A{r}", df, "0.0000")
        for k in range(names):
            flow, df_col = get_column_letter(k + 2), get_column_letter(k_df)
            cached.put(ws, r, k_df + 1 + k, f"={flow}{r}*{df_col}{r}", monthly[k][m] * df, USD)


def _write_years(wb: Any, headers: list[str], months: int, monthly: list[Any], cached: _Cached) -> None:
    """Year y sums the monthly rows of months 12(y − 1) + 1 .. 12y; year 1 also holds month 0."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    years = wb.create_sheet("Cash flows by year")
    for col, header in enumerate(["Year", *headers], start=1):
        years.cell(row=1, column=col, value=header).font = Font(bold=True)
    last = months + 2
    for y in range(1, math.ceil(months / 12) + 1):
        start, end = (2 if y == 1 else 12 * (y - 1) + 3), min(12 * y + 2, last)
        years.cell(row=y + 1, column=1, value=y)
        for k in range(len(headers)):
            col = get_column_letter(k + 2)
            value = sum(monthly[k][start - 2 : end - 1])
            cached.put(years, y + 1, k + 2, f"=SUM('Cash flows'!{col}{start}:{col}{end})", value, USD)


class _Cached:
    """The value of every formula cell the export writes, by sheet and coordinate, computed in Python from the
    engine's result as the formula would compute it, and stored as the cell's cached ``<v>`` (openpyxl writes
    formulas with an empty one, so previewers and pandas would show blanks)."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, Any]] = {}

    def put(self, ws: Any, row: int, col: int, formula: str, value: Any, fmt: str | None = None) -> Any:
        cell = ws.cell(row=row, column=col, value=formula)
        if fmt:
            cell.number_format = fmt
        self.values.setdefault(ws.title, {})[cell.coordinate] = value
        return cell


_FORMULA_CELL = re.compile(r'<c r="([A-Z]+\d+)"([^>]*)><f>(.*?)</f><v\s*/></c>', re.S)


def _with_cached_values(data: bytes, titles: list[str], cached: _Cached) -> bytes:
    """The saved workbook with each formula cell's ``<v>`` filled in (``t="str"`` for text results), so that
    a reader that does not calculate (pandas, previewers, openpyxl's ``data_only``) sees the numbers. Sheets
    are ``xl/worksheets/sheet<n>.xml`` in workbook order, as openpyxl writes them."""
    import zipfile
    from xml.sax.saxutils import escape

    sheet_of = {f"xl/worksheets/sheet{n}.xml": title for n, title in enumerate(titles, start=1)}
    src, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            body = src.read(item.filename)
            values = cached.values.get(sheet_of.get(item.filename, ""), {})
            if values:

                def fill(match: re.Match[str], values: Mapping[str, Any] = values) -> str:
                    ref, attrs, formula = match.groups()
                    value = values.get(ref)
                    if value is None or (isinstance(value, float) and not math.isfinite(value)):
                        return match.group(0)  # no cached value: a reader that calculates still can
                    if isinstance(value, str):
                        return f'<c r="{ref}"{attrs} t="str"><f>{formula}</f><v>{escape(value)}</v></c>'
                    return f'<c r="{ref}"{attrs}><f>{formula}</f><v>{float(value)!r}</v></c>'

                body = _FORMULA_CELL.sub(fill, body.decode("utf-8")).encode("utf-8")
            dst.writestr(item, body)
    return out.getvalue()


def _usd_text(value: float) -> str:
    """Python's reading of Excel's TEXT(value, "$#,##0")."""
    return f"{'-' if value < 0 else ''}${abs(value):,.0f}"


@dataclass(frozen=True)
class _Flows:
    """Where the Cash flows sheet keeps what Options and Summary read: the NPV and Total rows, each option's
    column, the rent columns' span, and the cell holding the cheapest rent option's position among them."""

    npv_row: int
    total_row: int
    column: Mapping[str, str]  # "own" or a rent option's model -> its column letter
    rent_span: tuple[str, str]
    position_cell: str
    lead_cell: str  # the position among the rent columns of owning's lead-time rent (the rival's offering)
    saving_column: str
    payback_column: str
    last_row: int
    slope: Mapping[str, str] = dataclasses.field(default_factory=dict)  # name -> its PV per unit of u
    # rent option -> the cells of owning's NPV and slope with its offering's lead-time rent
    own_for: Mapping[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    energy_pv: str = ""  # the PV of owning's energy bills after tax (the power-price flip's slope)


def _write_cash_flows(wb: Any, evaluation: DesignEvaluation, cached: _Cached) -> _Flows | None:
    """Inputs, Cash flows (monthly, live formulas, with Total and NPV rows; owning, then every offering's
    rent options) and Cash flows by year; none for a result without cash-flow inputs (no rent option priced,
    or stored before cash flows)."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    cost = evaluation.first_cost
    cash = None if cost is None else cost.cashflow
    if cash is None or cash.inputs is None or cash.own is None or not cash.rent:
        return None
    inputs = cash.inputs
    rents = _rents(evaluation)
    given = {a.name.removeprefix("cashflow."): a.value for a in cost.assumptions} if cost else {}
    wacc = {key: float(given[key]) for key in WACC_KEYS if _number(given.get(key)) is not None}
    _write_inputs(wb.create_sheet("Inputs"), inputs, rents, cached, wacc, _sheet_extras(evaluation, inputs))
    ws = wb.create_sheet("Cash flows")
    bold = Font(bold=True)
    names = ["own"] + [rent.key for rent in rents]
    flows = ["Own (USD)"] + [f"{n} (USD)" for n in names[1:]]
    k_df = len(names) + 2
    k_saving = k_df + len(names) + 1
    headers = [
        "Month",
        *flows,
        "Discount factor",
        *(f"PV {n} (USD)" for n in names),
        "Saving against the cheapest rent option (USD)",
        "Cumulative saving (USD)",
        "Cumulative saving has been below 0",
        "Payback month (1E+9: not this month)",
    ]
    for col, header in enumerate(headers, start=1):
        ws.cell(row=1, column=col, value=header).font = bold
    months = inputs.months
    npvs = [rent.npv_usd for rent in rents]
    rival = rents[npvs.index(min(npvs))]  # the first of equals, as MATCH
    monthly = [rival.own_usd] + [rent.monthly_usd for rent in rents]
    last = months + 2
    letters = [get_column_letter(k + 2) for k in range(len(names))]
    layout = _Flows(
        npv_row=last + 3,
        total_row=last + 2,
        column=dict(zip(names, letters, strict=True)),
        rent_span=(letters[1], letters[-1]),
        position_cell=f"$B${last + 4}",
        lead_cell=f"$B${last + 5}",
        saving_column=get_column_letter(k_saving),
        payback_column=get_column_letter(k_saving + 3),
        last_row=last,
    )
    _write_months(ws, inputs, rents, k_df, monthly, cached, layout.lead_cell)
    for label, offset in (("Total", 2), ("NPV", 3)):
        r = last + offset
        ws.cell(row=r, column=1, value=label).font = bold
        for k in range(len(names)):
            source = get_column_letter(k + 2 if label == "Total" else k_df + 1 + k)
            value = sum(cached.values[ws.title][f"{source}{m + 2}"] for m in range(months + 1))
            cached.put(ws, r, k + 2, f"=SUM({source}2:{source}{last})", value, USD)
    _write_payback(ws, layout, monthly, cached)
    slopes = _write_slopes(ws, inputs, rents, layout, k_saving + 4, cached)
    layout = dataclasses.replace(layout, slope=slopes)
    owning = _write_own_by_offering(ws, inputs, rents, layout, k_df, k_saving + 5 + len(rents), cached)
    energy = _write_energy(ws, inputs, layout, cached)
    ws.freeze_panes = "B2"
    _write_years(wb, flows, months, monthly, cached)
    return dataclasses.replace(layout, own_for=owning, energy_pv=energy)


def _write_energy(ws: Any, inputs: CashflowInputs, flows: _Flows, cached: _Cached) -> str:
    """Owning's energy bill after tax by month (after the lead time: energy at full load × (idle + (1 − idle)
    · u) × (1 + e)^((m − 1)/12) × (1 − t)) and its PV on the NPV row; returns that cell. Owning's NPV is
    linear in the power price through this bill alone, so the price at which owning and the rival cost the
    same NPV is p · (1 + (NPV rival − NPV own) ÷ PV energy) (the Summary's power-price flip)."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    k = ws.max_column + 1
    column = get_column_letter(k)
    df_column = get_column_letter(ws[f"{flows.saving_column}1"].column - len(flows.column) - 1)
    ws.cell(row=1, column=k, value="Own: energy bill after tax (USD)").font = Font(bold=True)
    a, lead = "$A{r}", _ref("lead_time_months")
    idle, u, t = _ref("idle_power_fraction"), _ref("utilization"), _ref("tax_rate")
    i = inputs
    draw = i.idle_power_fraction + (1 - i.idle_power_fraction) * i.utilization
    pv = 0.0
    for m in range(i.months + 1):
        r = m + 2
        month = a.format(r=r)
        formula = (
            f"=IF({month}>{lead},{_ref('power_full_usd_per_month')}*({idle}+(1-{idle})*{u})"
            f"*(1+{_ref('power_escalation_per_year')})^(({month}-1)/12)*(1-{t}),0)"
        )
        value = (
            i.power_full_usd_per_month
            * draw
            * (1 + i.power_escalation_per_year) ** ((m - 1) / 12)
            * (1 - i.tax_rate)
            if m > i.lead_time_months
            else 0.0
        )
        pv += value * cached.values[ws.title][f"{df_column}{r}"]
        cached.put(ws, r, k, formula, value, USD)
    last = flows.last_row
    formula = f"=SUMPRODUCT({column}2:{column}{last},{df_column}2:{df_column}{last})"
    cached.put(ws, flows.npv_row, k, formula, pv, USD)
    return f"'Cash flows'!${column}${flows.npv_row}"


def _write_own_by_offering(
    ws: Any,
    inputs: CashflowInputs,
    rents: list[_Rent],
    flows: _Flows,
    k_df: int,
    k_mask: int,
    cached: _Cached,
) -> dict[str, tuple[str, str]]:
    """Owning's NPV and its PV per unit of utilization as each option's own offering's result has them
    (the engine's break-even of an option is against owning with its offering's lead-time rent, which may
    not be the rival's): own_X = own + LPV(X's lead option) − LPV(the rival's), S_X alike, where LPV is the
    PV of a rent column over the lead-time months 1..L (a 0/1 mask column) and LS the same of its slope.
    Returns, by rent option, the Cash flows cells of (own_X NPV, own_X slope)."""
    from openpyxl.utils import get_column_letter

    values, title = cached.values, ws.title
    last, npv, L = flows.last_row, flows.npv_row, inputs.lead_time_months
    mask_col, df_col = get_column_letter(k_mask), get_column_letter(k_df)
    ws.cell(row=1, column=k_mask, value="Lead-time month (1: months 1..L)")
    for m in range(inputs.months + 1):
        lead = _ref("lead_time_months")
        cached.put(
            ws, m + 2, k_mask, f"=IF(AND($A{m + 2}>=1,$A{m + 2}<={lead}),1,0)", 1 if 1 <= m <= L else 0
        )
    mask = f"${mask_col}$2:${mask_col}${last}"
    rows = {"lpv": npv + 5, "ls": npv + 6, "own": npv + 3, "slope": npv + 4}
    for label, row in (
        ("Owning's NPV with this option's offering's lead-time rent", rows["own"]),
        ("Owning's PV per unit of utilization, the same", rows["slope"]),
        ("PV of the lead-time months (LPV)", rows["lpv"]),
        ("PV per unit of utilization of the lead-time months (LS)", rows["ls"]),
    ):
        ws.cell(row=row, column=1, value=label)
    slope_first = ws[f"{flows.slope['own']}"].column + 1  # the rent options' slope columns follow owning's
    lpv, ls = [], []
    for j, rent in enumerate(rents):
        col = flows.column[rent.key]
        pv_col, slope_col = get_column_letter(k_df + 2 + j), get_column_letter(slope_first + j)
        dfs = [values[title][f"{df_col}{m + 2}"] for m in range(inputs.months + 1)]
        lpv.append(sum(rent.monthly_usd[m] * dfs[m] for m in range(1, L + 1)))
        ls.append(sum((values[title].get(f"{slope_col}{m + 2}") or 0.0) * dfs[m] for m in range(1, L + 1)))
        cached.put(
            ws, rows["lpv"], ws[f"{col}1"].column, f"=SUMPRODUCT({pv_col}2:{pv_col}{last},{mask})", lpv[-1]
        )
        formula = f"=SUMPRODUCT({slope_col}2:{slope_col}{last},{df_col}2:{df_col}{last},{mask})"
        cached.put(ws, rows["ls"], ws[f"{col}1"].column, formula, ls[-1])
    first, end = flows.column[rents[0].key], flows.column[rents[-1].key]
    rival = int(values[title][flows.lead_cell.replace("$", "")]) - 1
    own_npv, own_slope = values[title][f"B{npv}"], values[title][flows.slope["own"]]
    out = {}
    for rent in rents:
        col, lead_col = flows.column[rent.key], flows.column[rents[rent.lead].key]
        for key, base, base_value, series in (
            ("own", f"$B${npv}", own_npv, lpv),
            ("slope", flows.slope["own"], own_slope, ls),
        ):
            r = rows["lpv" if key == "own" else "ls"]
            formula = f"={base}+{lead_col}{r}-INDEX(${first}${r}:${end}${r},{flows.lead_cell})"
            cached.put(
                ws, rows[key], ws[f"{col}1"].column, formula, base_value + series[rent.lead] - series[rival]
            )
        out[rent.key] = (f"{col}{rows['own']}", f"{col}{rows['slope']}")
    return out


def _write_slopes(
    ws: Any, inputs: CashflowInputs, rents: list[_Rent], flows: _Flows, k: int, cached: _Cached
) -> dict[str, str]:
    """Per month, how much owning's and each pay-as-you-go option's cash flow grows per unit of utilization
    (both are linear in u: engine/cost/cashflow.py), and on the NPV row the PV of each: S = Σ_m slope_m ·
    df_m. Returns the NPV-row cell of each slope, by Cash flows name. Rent: nodes × 730 × price × hours factor
    × (1 + g)^((m − 1)/12) × (1 + overhead) × (1 − t) from month 1. Owning: the lead-time option's slope in
    months 1..L, then the energy bill's full × (1 − idle) × (1 + e)^((m − 1)/12) × (1 − t) (both deductible
    at the tax rate t)."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    # A column for every rent option (a reservation's is 0: it bills every hour), so that owning's lead-time
    # slope is an INDEX over them at the rival offering's lead-time option (``flows.lead_cell``).
    paygo = [(i, rent) for i, rent in enumerate(rents) if not rent.option.term_months]
    columns = {rent.key: get_column_letter(k + 1 + j) for j, rent in enumerate(rents)}
    columns = {"own": get_column_letter(k), **columns}
    for name, column in columns.items():
        ws[f"{column}1"] = f"{'Own' if name == 'own' else name}: USD per unit of utilization"
        ws[f"{column}1"].font = Font(bold=True)
    span = f"{columns[rents[0].key]}{{r}}:{columns[rents[-1].key]}{{r}}"
    position = int(cached.values[ws.title][flows.lead_cell.replace("$", "")])
    lead_key = rents[position - 1].key
    df_column = get_column_letter(ws[f"{flows.saving_column}1"].column - len(flows.column) - 1)
    i_m = monthly_rate(inputs.discount_rate)
    g, e, L = inputs.cloud_price_change_per_year, inputs.power_escalation_per_year, inputs.lead_time_months
    idle, full = _ref("idle_power_fraction"), _ref("power_full_usd_per_month")
    slopes: dict[str, list[float]] = {name: [0.0] * (inputs.months + 1) for name in columns}
    for m in range(inputs.months + 1):
        r, a = m + 2, f"$A{m + 2}"
        for rent in rents:
            if rent.option.term_months:
                ws[f"{columns[rent.key]}{r}"] = 0
        for idx, rent in paygo:
            row, o = OPTION_ROW + idx, rent.option
            growth = f"(1+{_ref('cloud_price_change_per_year')})^(({a}-1)/12)"
            formula = (
                f"=IF({a}>=1,{_ref('nodes')}*{_ref('hours_per_month')}*Inputs!$B${row}*Inputs!$D${row}"
                f"*{growth}*(1+Inputs!$H${row})*(1-{_ref('tax_rate')}),0)"
            )
            value = (
                inputs.nodes
                * 730
                * o.usd_per_node_hour
                * (o.hours_factor or 1.0)
                * (1 + g) ** ((m - 1) / 12)
                * (1 + rent.overhead)
                * (1 - inputs.tax_rate)
                if m >= 1
                else 0.0
            )
            slopes[rent.key][m] = value
            cached.put(ws, r, ws[f"{columns[rent.key]}1"].column, formula, value, USD)
        lead_range = span.format(r=r)
        in_lead = f"IF(AND({a}>=1,{a}<={_ref('lead_time_months')}),INDEX({lead_range},{flows.lead_cell}),0)"
        escalation = f"(1+{_ref('power_escalation_per_year')})^(({a}-1)/12)"
        energy = f"IF({a}>{_ref('lead_time_months')},{full}*(1-{idle})*{escalation}*(1-{_ref('tax_rate')}),0)"
        value = (slopes[lead_key][m] if 1 <= m <= L else 0.0) + (
            inputs.power_full_usd_per_month
            * (1 - inputs.idle_power_fraction)
            * (1 + e) ** ((m - 1) / 12)
            * (1 - inputs.tax_rate)
            if m > L
            else 0.0
        )
        slopes["own"][m] = value
        cached.put(ws, r, ws[f"{columns['own']}1"].column, f"={in_lead}+{energy}", value, USD)
    last, npv = flows.last_row, flows.npv_row
    out = {}
    for name, column in columns.items():
        pv = sum(x / (1 + i_m) ** m for m, x in enumerate(slopes[name]))
        formula = f"=SUMPRODUCT({column}2:{column}{last},{df_column}2:{df_column}{last})"
        cached.put(ws, npv, ws[f"{column}1"].column, formula, pv, USD)
        if name == "own" or any(rent.key == name for _, rent in paygo):
            out[name] = f"{column}{npv}"  # the break-even is the pay-as-you-go options' (the engine's)
    return out


def _write_payback(ws: Any, flows: _Flows, monthly: list[Any], cached: _Cached) -> None:
    """The cheapest rent option's position (MATCH of the Summary's cheapest NPV among the rent NPVs), and per
    month the saving against it, its running sum, whether that sum has been below 0 and, where it is back at
    or above 0 after that, the month: the payback month is the least of that column (engine/cost/cashflow.py
    ``_payback``)."""
    first, last_col = flows.rent_span
    npv = flows.npv_row
    names = list(flows.column)
    npvs = [cached.values[ws.title][f"{flows.column[n]}{npv}"] for n in names[1:]]
    position = npvs.index(min(npvs)) + 1  # 1-based among the rent columns; the first of equals, as MATCH
    ws.cell(row=npv + 1, column=1, value="Cheapest rent option (position among the rent columns)")
    cached.put(
        ws,
        npv + 1,
        2,
        f"=MATCH(Summary!$B${SUMMARY_ROW['rent_npv']},${first}${npv}:${last_col}${npv},0)",
        position,
    )
    ws.cell(row=npv + 2, column=1, value="Owning's lead-time rent (position among the rent columns)")
    rows = f"Inputs!$K${OPTION_ROW}:$K${OPTION_ROW + len(names) - 2}"
    lead = ws.parent["Inputs"].cell(row=OPTION_ROW + position - 1, column=11).value
    cached.put(ws, npv + 2, 2, f"=INDEX({rows},{flows.position_cell})", lead)
    k = ws[f"{flows.saving_column}1"].column
    total, negative = 0.0, False
    for m in range(len(monthly[0])):
        r = m + 2
        choose = ",".join(f"{flows.column[n]}{r}" for n in names[1:])
        saving = monthly[position][m] - monthly[0][m]
        total += saving
        negative = negative or total < 0
        s, c, n = (ws.cell(row=r, column=k + j).coordinate for j in range(3))
        cached.put(ws, r, k, f"=CHOOSE({flows.position_cell},{choose})-B{r}", saving, USD)
        cached.put(ws, r, k + 1, f"={s}" if m == 0 else f"={c.replace(str(r), str(r - 1))}+{s}", total, USD)
        below = f"{c}<0" if m == 0 else f"OR({n.replace(str(r), str(r - 1))}=1,{c}<0)"
        cached.put(ws, r, k + 2, f"=IF({below},1,0)", 1 if negative else 0)
        cached.put(ws, r, k + 3, f"=IF(AND({n}=1,{c}>=0),$A{r},1E+9)", m if negative and total >= 0 else 1e9)


def _write_option_npvs(
    ws: Any, evaluation: DesignEvaluation, flows: _Flows, cached: _Cached
) -> dict[str, int]:
    """Options gains two formula columns, the NPV of each option's cash flows and its cash out over the
    horizon, read from the Cash flows sheet; owning or a rent option the cash flows compare that is not among
    the options gets a row of its own, so that every NPV the verdict compares is an Options cell. Returns the
    row of owning and of each rent option (the Summary's cheapest rent NPV is the MIN over the rent rows)."""
    from openpyxl.styles import Font

    rents = _rents(evaluation)
    keys: dict[tuple[str | None, str | None], str] = {(r.offering, r.option.model): r.key for r in rents}
    k = len(OPTION_COLUMNS) + 1
    headers = (
        "NPV of cash flows (USD)",
        "Cash out over the horizon (USD)",
        "Break-even utilization against owning (NPV)",
    )
    for j, header in enumerate(headers):
        ws.cell(row=1, column=k + j, value=header).font = Font(bold=True)
        ws.column_dimensions[ws.cell(row=1, column=k + j).column_letter].width = 20
    rows: dict[str, int] = {}
    for r, option in enumerate(evaluation.options, start=2):
        if option.kind == "own":
            rows.setdefault("own", r)
        elif (option.offering, option.pricing_model) in keys:
            rows.setdefault(keys[(option.offering, option.pricing_model)], r)
    r = ws.max_row + 1
    missing = [("own", ("Own (on-prem)", "own"))] + [
        (rent.key, (rent.label, "cloud", rent.offering, rent.option.model)) for rent in rents
    ]
    for name, texts in missing:
        if name not in rows:
            for col, value in enumerate(texts, start=1):
                ws.cell(row=r, column=col, value=value).data_type = "s"
            rows[name], r = r, r + 1
    values = cached.values["Cash flows"]
    for name, row in rows.items():
        column = flows.column[name]
        for j, source in enumerate((flows.npv_row, flows.total_row)):
            value = values[f"{column}{source}"]
            cached.put(ws, row, k + j, f"='Cash flows'!${column}${source}", value, USD)
    for name, row in rows.items():
        if name != "own" and name in flows.slope:
            _write_break_even(ws, row, k + 2, name, flows, cached)
    return rows


# What a break-even cell says when the NPVs do not cross at any utilization a cluster can run at.
NONE_IN_RANGE = "none in (0, 1]"


def _write_break_even(ws: Any, row: int, col: int, name: str, flows: _Flows, cached: _Cached) -> None:
    """The utilization u* at which this pay-as-you-go option's NPV equals owning's: both are linear in u, so
    u* = u − (NPV rent − NPV own) / (S rent − S own), S the PV per unit of u (``_write_slopes``); the same
    u* whatever the utilization cell holds (engine/cost/cashflow.py ``break_even_utilization``). NONE_IN_RANGE
    when the slopes are equal or u* lies outside (0, 1], as the API says null there."""
    values = cached.values["Cash flows"]
    rent = f"{flows.column[name]}{flows.npv_row}"
    own, s_own = flows.own_for[name]  # owning as this option's offering's result has it (its lead-time rent)
    s_rent = flows.slope[name]
    u = float(ws.parent["Inputs"][_ref("utilization").split("!")[1].replace("$", "")].value)
    slope = values[s_rent] - values[s_own]
    value: Any = NONE_IN_RANGE if slope == 0 else u - (values[rent] - values[own]) / slope
    if not isinstance(value, str) and not 0 < value <= 1:
        value = NONE_IN_RANGE
    cf = "'Cash flows'!"
    u_star = f"({_ref('utilization')}-({cf}{rent}-{cf}{own})/({cf}{s_rent}-{cf}{s_own}))"
    formula = (
        f'=IF({cf}{s_rent}-{cf}{s_own}=0,"{NONE_IN_RANGE}",'
        f'IF(OR({u_star}<=0,{u_star}>1),"{NONE_IN_RANGE}",{u_star}))'
    )
    cached.put(ws, row, col, formula, value, PERCENT)


def _close(a: Any, b: Any) -> bool:
    """Whether a formula's value at the exported inputs is the engine's figure (to 1e-9 relative)."""
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return bool(a == b)
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-6)


def _inputs_value(wb: Any, key: str, cached: _Cached) -> Any:
    """An Inputs cell's value at the exported inputs (a formula cell: its cached value)."""
    cell = wb["Inputs"].cell(row=ROW[key], column=2)
    return cached.values.get("Inputs", {}).get(cell.coordinate, cell.value)


OPTION_FORMULA_HEADERS = (
    "Commitment implied (USD; owning: capex at delivery; a term: one term, every hour)",
    "Commitment term (months)",
    "Break-even utilization, annualised closed form (engine/cost/rent_own.py)",
)
STALE = "value at the API's inputs; not recalculated"


def _npv_break_even_cell(
    cf: Any, flows: _Flows, index: int, rent: _Rent, cached: _Cached, option: Any
) -> tuple[int, str, Any, Any, str]:
    """Options' "Break-even utilization" of a rent option, the API's: where its NPV and owning's (with its
    offering's lead-time rent) cross, u* = u − (NPV rent − NPV own) ÷ (S rent − S own), shown in [1e-9, 1]
    (npv_basis.break_even_utilization); as ``_write_break_even`` but for reservations too (slope 0)."""
    from openpyxl.utils import get_column_letter

    values = cached.values["Cash flows"]
    slope = f"{get_column_letter(cf[flows.slope['own']].column + 1 + index)}{flows.npv_row}"
    rent_npv = f"{flows.column[rent.key]}{flows.npv_row}"
    own, s_own = flows.own_for[rent.key]
    c = "'Cash flows'!"
    den, den_v = f"({c}{slope}-{c}{s_own})", values[slope] - values[s_own]
    u = _ref("utilization")
    x = f"({u}-({c}{rent_npv}-{c}{own})/{den})"
    u_v = _number(_inputs_value(cf.parent, "utilization", cached)) or 0.0
    x_v = None if den_v == 0 else u_v - (values[rent_npv] - values[own]) / den_v
    shown: Any = x_v if x_v is not None and 1e-9 <= x_v <= 1 else NONE_IN_RANGE
    formula = f'=IF({den}=0,"{NONE_IN_RANGE}",IF(AND({x}>=1E-9,{x}<=1),{x},"{NONE_IN_RANGE}"))'
    engine = option.break_even_utilization
    return (9, formula, shown, NONE_IN_RANGE if engine is None else engine, PERCENT)


PARALLEL = "none: parallel cost lines"


def _write_option_formulas(ws: Any, evaluation: DesignEvaluation, flows: _Flows, cached: _Cached) -> None:
    """Options' total over the horizon (annualised), cost per GPU-hour, run cost, days and closed-form
    break-even, and the commitment each option implies, as formulas over Inputs (issue #31), cached with
    their value at the exported inputs. Each is written only where that value is the engine's figure (to
    1e-9): where it is not (colocation billed on drawn kW, whose share of the other opex moves with u; a
    result without run days), the engine's value stays and the header says which cells are values. The
    formulas follow engine/cost/rent_own.py: owning = H · (capex · CRF(r, life) − residual · capex · SFF + 12
    · (other opex + energy at full load · (idle + (1 − idle) · u))), SFF = CRF − r; renting = nodes · 730 · 12
    · H · u · hours factor · price · (1 + overhead) (a term: every hour of whole terms) + storage and egress;
    per GPU-hour = total ÷ (GPUs · 8,760 · H · u); a run = expected days · 24 · (owning: GPUs · its
    $/GPU-hour; renting: nodes · price · (1 + overhead)); expected days = failure-free days ÷ goodput;
    break-even u* = (own fixed − rent fixed) ÷ (rent slope − own slope), shown in (0, 1]."""
    from openpyxl.comments import Comment
    from openpyxl.styles import Font

    wb = ws.parent
    get = {key: _number(_inputs_value(wb, key, cached)) for key in ROW}
    financing = _inputs_value(wb, "financing", cached)
    needed = ("horizon_years", "gpus_per_node", "depreciation_years", "residual_fraction")
    cost = evaluation.first_cost
    given = {a.name: a.value for a in cost.assumptions} if cost else {}
    if any(get[k] is None for k in needed):
        return
    k0 = len(OPTION_COLUMNS) + 4
    for j, header in enumerate(OPTION_FORMULA_HEADERS):
        ws.cell(row=1, column=k0 + j, value=header).font = Font(bold=True)
        ws.column_dimensions[ws.cell(row=1, column=k0 + j).column_letter].width = 20
    f = {key: _ref(key) for key in ROW}
    v: dict[str, float] = {k: float(x) for k, x in get.items() if x is not None}
    r_, life = f["discount_rate"], f["depreciation_years"]
    crf = f"IF({r_}=0,1/{life},{r_}*(1+{r_})^{life}/((1+{r_})^{life}-1))"
    crf_v = capital_recovery_factor(rate=v["discount_rate"], years=v["depreciation_years"])
    own_fixed = (
        f"{f['horizon_years']}*({f['capex_usd']}*{crf}-{f['residual_fraction']}*{f['capex_usd']}*({crf}-{r_})"
        f"+12*({f['other_opex_usd_per_month']}+{f['power_full_usd_per_month']}*{f['idle_power_fraction']}))"
    )
    own_fixed_v = v["horizon_years"] * (
        v["capex_usd"] * crf_v
        - v["residual_fraction"] * v["capex_usd"] * (crf_v - v["discount_rate"])
        + 12 * (v["other_opex_usd_per_month"] + v["power_full_usd_per_month"] * v["idle_power_fraction"])
    )
    own_slope = f"{f['horizon_years']}*12*{f['power_full_usd_per_month']}*(1-{f['idle_power_fraction']})"
    own_slope_v = v["horizon_years"] * 12 * v["power_full_usd_per_month"] * (1 - v["idle_power_fraction"])
    u, hpm, nodes = f["utilization"], f["hours_per_month"], f["nodes"]
    gpu_hours = f"{nodes}*{f['gpus_per_node']}*12*{hpm}*{f['horizon_years']}*{u}"
    gpu_hours_v = v["nodes"] * v["gpus_per_node"] * 12 * 730 * v["horizon_years"] * v["utilization"]
    days_of = f"{f['run_days']}/{{gp}}"
    drawn = given.get("colocation.basis") == "drawn_kw"  # other opex moves with u: no owning formulas
    rents: dict[tuple[str | None, str | None], tuple[int, _Rent]] = {
        (r.offering, r.option.model): (i, r) for i, r in enumerate(_rents(evaluation))
    }
    for row, option in enumerate(evaluation.options, start=2):
        cells: list[tuple[int, str, Any, Any, str]] = []  # column, formula, value, the engine's, format
        run_days = get["run_days"]
        if option.kind == "own":
            if drawn:
                continue
            total = f"{own_fixed}+{own_slope}*{u}"
            total_v = own_fixed_v + own_slope_v * v["utilization"]
            goodput, goodput_v = f["run_goodput"], get["run_goodput"]
            per_run = f"*24*{nodes}*{f['gpus_per_node']}*({total})/({gpu_hours})"
            per_run_v = 24 * v["nodes"] * v["gpus_per_node"] * total_v / gpu_hours_v
            if financing != "lease":  # a lease commits no capex
                cells.append((k0, f"={f['capex_usd']}", v["capex_usd"], None, USD))
        elif (option.offering, option.pricing_model) in rents:
            i, rent = rents[(option.offering, option.pricing_model)]
            o = OPTION_ROW + i
            price, term, factor, over = (f"Inputs!${c}${o}" for c in ("B", "C", "D", "H"))
            extra = f"Inputs!$I${o}*{f['months']}"
            extra_v = rent.extra_usd_per_month * v["months"]
            p_v, over_v, term_v = rent.option.usd_per_node_hour, rent.overhead, rent.option.term_months or 0
            if term_v:
                billed_months = f"CEILING({f['horizon_years']}*12/{term},1)*{term}"
                fixed = f"{nodes}*{hpm}*{billed_months}*{price}*(1+{over})+{extra}"
                billed = math.ceil(v["horizon_years"] * 12 / term_v) * term_v
                fixed_v, slope, slope_v = v["nodes"] * 730 * billed * p_v * (1 + over_v) + extra_v, "0", 0.0
                commit = f"={nodes}*{hpm}*{term}*{price}*(1+{over})"
                cells.append((k0, commit, v["nodes"] * 730 * term_v * p_v * (1 + over_v), None, USD))
                cells.append((k0 + 1, f"={term}", term_v, None, INTEGER))
            else:
                fixed, fixed_v = extra, extra_v
                slope = f"{nodes}*12*{hpm}*{f['horizon_years']}*{factor}*{price}*(1+{over})"
                slope_v = (
                    v["nodes"]
                    * 8760
                    * v["horizon_years"]
                    * (rent.option.hours_factor or 1.0)
                    * p_v
                    * (1 + over_v)
                )
            total = f"{fixed}+{slope}*{u}"
            total_v = fixed_v + slope_v * v["utilization"]
            goodput, goodput_v = f"Inputs!$L${o}", rent.goodput
            per_run = f"*24*{nodes}*{price}*(1+{over})"
            per_run_v = 24 * v["nodes"] * p_v * (1 + over_v)
            gap, gap_v = f"(({own_fixed})-({fixed}))", own_fixed_v - fixed_v
            den, den_v = f"(({slope})-({own_slope}))", slope_v - own_slope_v
            be = f"{gap}/{den}"
            be_v: Any = gap_v / den_v if den_v else PARALLEL
            formula = f'=IF({den}=0,"{PARALLEL}",{be})'
            closed = evaluation.costs[str(option.offering)].break_even_utilization.get(
                str(option.pricing_model)
            )
            engine = (
                None if closed is None else PARALLEL if closed.utilization is None else closed.utilization
            )
            cells.append((k0 + 2, formula, be_v, engine, PERCENT))
            cells.append(_npv_break_even_cell(ws.parent["Cash flows"], flows, i, rent, cached, option))
        else:
            continue
        cells.append((5, f"={total}", total_v, option.total_usd, USD))
        cells.append(
            (6, f"=({total})/({gpu_hours})", total_v / gpu_hours_v, option.usd_per_gpu_hour, USD_CENTS)
        )
        if run_days is not None and goodput_v:
            days = days_of.format(gp=goodput)
            days_v = run_days / goodput_v
            cells.append((8, f"={days}", days_v, option.days, DAYS))
            if option.run_cost_usd is not None:
                cells.append((7, f"=({days}){per_run}", days_v * per_run_v, option.run_cost_usd, USD))
        for col, formula, value, engine, fmt in cells:
            if col < k0 and (engine is None or not _close(value, engine)):
                # The formula would not give the engine's figure: the value stays, and says so.
                if ws.cell(row=row, column=col).value is not None:
                    ws.cell(row=row, column=col).comment = Comment(STALE, "ClusterDesigner")
                continue
            cached.put(ws, row, col, formula, value, fmt)


# The Summary's rent-or-own rows (``_owning_rows``), by row: in the XLSX each is a formula over Options,
# Inputs and Cash flows.
SUMMARY_ROW = {
    key: i + 2
    for i, key in enumerate(
        ("verdict", "capex", "cash_out", "own_npv", "rent_name", "rent_npv", "saving", "payback", "irr")
    )
}


def _verdict_text(
    *, months: int, u: float, rate: float, tax: float, own: float, name: str, rent: float, payback: Any
) -> str:
    """Python's reading of the Summary's verdict formula (``_write_summary_formulas``)."""
    saving = rent - own
    after_tax = f", after a {tax:.1%} tax on both sides" if tax > 0 else ""
    head = (
        f"Over {months} months at {u:.0%} utilization, owning costs {_usd_text(own)} and renting {name}"
        f" {_usd_text(rent)} (NPV at {rate:.1%}{after_tax}): "
    )
    if saving >= 0:
        tail = f"owning saves {_usd_text(saving)} against {name}" + (
            f"; it pays back in month {payback:.0f}"
            if isinstance(payback, (int, float))
            else "; it does not pay back within the horizon"
        )
    else:
        tail = f"renting {name} saves {_usd_text(-saving)}"
    return head + tail + "."


def _write_summary_formulas(
    ws: Any, evaluation: DesignEvaluation, flows: _Flows, rows: Mapping[str, int], cached: _Cached
) -> None:
    """The Summary's verdict, capex, cash out, NPVs, payback and IRR as formulas: NPVs read from Options, the
    cheapest rent option the MIN over the Options NPV cells of the rent options (the verdict over every
    option compared is that MIN), the verdict text an IF over the NPVs. Cached values are computed here."""
    cost = evaluation.first_cost
    assert cost is not None and cost.cashflow is not None and cost.cashflow.inputs is not None
    inputs = cost.cashflow.inputs
    row = SUMMARY_ROW
    options = cached.values["Options"]
    own_cell = f"Options!$J${rows['own']}"
    own = options[f"J{rows['own']}"]
    rent_rows = [r for name, r in rows.items() if name != "own"]
    rent_cells = [f"Options!$J${r}" for r in rent_rows]
    rent = min(options[f"J{r}"] for r in rent_rows)
    position = cached.values["Cash flows"][flows.position_cell.replace("$", "")]
    name = str(ws.parent["Inputs"].cell(row=OPTION_ROW + position - 1, column=7).value)
    last, sheet = flows.last_row, "'Cash flows'!"
    pay = f"{sheet}${flows.payback_column}$2:${flows.payback_column}${last}"
    paybacks = [cached.values["Cash flows"][f"{flows.payback_column}{m}"] for m in range(2, last + 1)]
    payback: Any = min(paybacks) if min(paybacks) < 1e9 else "none"
    savings = f"{sheet}${flows.saving_column}$2:${flows.saving_column}${last}"
    saving_flows = [cached.values["Cash flows"][f"{flows.saving_column}{m}"] for m in range(2, last + 1)]
    irr = irr_per_year(saving_flows)
    options_end = OPTION_ROW + len(flows.column) - 2
    b = {key: f"B{r}" for key, r in row.items()}
    verdict = (
        f'="Over "&{_ref("months")}&" months at "&TEXT({_ref("utilization")},"0%")&" utilization, '
        f'owning costs "&TEXT({b["own_npv"]},"$#,##0")&" and renting "&{b["rent_name"]}&" "'
        f'&TEXT({b["rent_npv"]},"$#,##0")'
        f'&" (NPV at "&TEXT({_ref("discount_rate")},"0.0%")'
        f'&IF({_ref("tax_rate")}>0,", after a "&TEXT({_ref("tax_rate")},"0.0%")&" tax on both sides","")'
        f'&"): "&IF({b["saving"]}>=0,"owning saves "'
        f'&TEXT({b["saving"]},"$#,##0")&" against "&{b["rent_name"]}&IF(ISNUMBER({b["payback"]}),'
        f'"; it pays back in month "&TEXT({b["payback"]},"0"),"; it does not pay back within the horizon"),'
        f'"renting "&{b["rent_name"]}&" saves "&TEXT(-{b["saving"]},"$#,##0"))&"."'
    )
    text = _verdict_text(
        months=inputs.months,
        u=inputs.utilization,
        rate=inputs.discount_rate,
        tax=inputs.tax_rate,
        own=own,
        name=name,
        rent=rent,
        payback=payback,
    )
    cells = {
        "verdict": (verdict, text, GENERAL),
        "capex": (f"={_ref('capex_usd')}", inputs.capex_usd, USD),
        "cash_out": (
            f"={sheet}$B${flows.total_row}",
            cached.values["Cash flows"][f"B{flows.total_row}"],
            USD,
        ),
        "own_npv": (f"={own_cell}", own, USD),
        "rent_name": (
            f"=INDEX(Inputs!$G${OPTION_ROW}:$G${options_end},{sheet}{flows.position_cell})",
            name,
            None,
        ),
        "rent_npv": (f"=MIN({','.join(rent_cells)})", rent, USD),
        "saving": (f"={b['rent_npv']}-{b['own_npv']}", rent - own, USD),
        "payback": (f'=IF(MIN({pay})>=1E+9,"none",MIN({pay}))', payback, INTEGER),
        "irr": (f'=IFERROR((1+IRR({savings}))^12-1,"none")', "none" if irr is None else irr, PERCENT),
    }
    for key, (formula, value, fmt) in cells.items():
        cached.put(ws, row[key], 2, formula, value, fmt)


NONE_SEARCHED = "none in the range searched"
RECALCULATED_FLIP = "Flip threshold (recalculated): "
STALE_NOTE = (
    "Values at the API's inputs, stale once an Inputs cell changes (not recalculated): the design, layout and"
    ' training rows above (days, MFU, memory), the flip thresholds labelled "at the API\'s inputs"'
    " (root-solved on the whole evaluation: {flips}), the Sensitivity sheet (tornado), the Uncertainty sheet"
    " (Monte Carlo percentiles), Assumptions, the tax years' depreciation shares on Inputs, and any cell with"
    " a note saying so. Every other figure on Summary, Options, Inputs, Cash flows, Cash flows by year and"
    " Commitments is a formula."
)


def _summary_row(ws: Any, label: str) -> int | None:
    return next((c.row for c in ws["A"] if str(c.value or "") == label), None)


def _write_summary_extras(ws: Any, evaluation: DesignEvaluation, flows: _Flows, cached: _Cached) -> None:
    """The Summary's cheapest-option rows as formulas over Options (MIN of the horizon totals, of the run
    costs, INDEX/MATCH for the name), the flip thresholds that are closed forms as formulas (utilization:
    both NPVs are linear in u, u* = u − (NPV rival − NPV own) ÷ (S rival − S own), S the PV per unit of u;
    the power price: owning's NPV is linear in it through the energy bill alone, p* = p · (1 + (NPV rival −
    NPV own) ÷ PV energy)), each written where it gives the API's figure (to 1e-6: the API's are Brent roots),
    and a visible note naming what stays a value."""
    from openpyxl.styles import Alignment, Font

    options, values = ws.parent["Options"], cached.values
    last = len(evaluation.options) + 1

    def at(col: str, r: int) -> Any:
        return values.get("Options", {}).get(f"{col}{r}", options[f"{col}{r}"].value)

    def cheapest(col: str) -> tuple[int, float] | None:
        found = [(at(col, r), r) for r in range(2, last + 1) if isinstance(at(col, r), (int, float))]
        return None if not found else min(found, key=lambda x: x[0])[::-1]

    span = {c: f"Options!${c}$2:${c}${last}" for c in "AEFGJ"}
    for col, rows in (  # over the horizon: the ranking's basis, the NPV of the cash flows (column J)
        ("J", ("Cheapest option over the horizon", "Its cost over the horizon", "Its cost per GPU-hour")),
        ("G", ("Cheapest option per run", "Its cost per run", None)),
    ):
        best = cheapest(col)
        where = [_summary_row(ws, label) if label else None for label in rows]
        if best is None or None in where[:2]:
            continue
        r, value = best
        match = f"MATCH(MIN({span[col]}),{span[col]},0)"
        # Over the horizon: ranked by NPV, its cost the option's total over the horizon (column E).
        cost = (f"=INDEX({span['E']},{match})", at("E", r)) if col == "J" else (f"=MIN({span[col]})", value)
        cells = [(where[0], f"=INDEX({span['A']},{match})", at("A", r)), (where[1], *cost)]
        if where[2] is not None:
            cells.append((where[2], f"=INDEX({span['F']},{match})", at("F", r)))
        for row, formula, value in cells:
            if _close(value, ws.cell(row=row, column=2).value):
                cached.put(ws, row, 2, formula, value)
    _write_flip_formulas(ws, evaluation, flows, cached)
    verdict = evaluation.design_verdict or (evaluation.rival_cost.verdict if evaluation.rival_cost else None)
    stale = [f.label for f in (verdict.flips if verdict else ()) if _summary_row(ws, FLIP_PREFIX + f.label)]
    row = ws.max_row + 1
    ws.cell(row=row, column=1, value="Not recalculated when Inputs change").font = Font(
        bold=True, color="C00000"
    )
    note = ws.cell(row=row, column=2, value=STALE_NOTE.format(flips=", ".join(stale) or "none"))
    note.data_type, note.font = "s", Font(color="C00000")
    note.alignment = Alignment(wrap_text=True, vertical="top")


def _write_flip_formulas(ws: Any, evaluation: DesignEvaluation, flows: _Flows, cached: _Cached) -> None:
    """The utilization, power-price and rival's-rate flip thresholds as formulas (``_write_summary_extras``,
    ``_rival_rate_flip``)."""
    from openpyxl.utils import get_column_letter

    verdict = evaluation.design_verdict or (evaluation.rival_cost.verdict if evaluation.rival_cost else None)
    cash, summary = cached.values["Cash flows"], cached.values["Summary"]
    b = {key: f"$B${r}" for key, r in SUMMARY_ROW.items()}
    gap_v = summary[f"B{SUMMARY_ROW['saving']}"]
    own_slope = flows.slope.get("own")
    for flip in verdict.flips if verdict else ():
        row = _summary_row(ws, FLIP_PREFIX + flip.label)
        if row is None:
            continue
        if flip.name == "utilization" and own_slope:
            first = ws.parent["Cash flows"][own_slope].column + 1
            letters = [get_column_letter(first + j) for j in range(len(flows.column) - 1)]
            npv = flows.npv_row
            position = int(cash[flows.position_cell.replace("$", "")])
            slopes = f"'Cash flows'!${letters[0]}${npv}:${letters[-1]}${npv}"
            s_rent = f"INDEX({slopes},'Cash flows'!{flows.position_cell})"
            s_rent_v = cash[f"{letters[position - 1]}{npv}"]
            den, den_v = f"({s_rent}-'Cash flows'!{own_slope})", s_rent_v - cash[own_slope]
            u, u_v = _ref("utilization"), _number(_inputs_value(ws.parent, "utilization", cached)) or 0.0
            x, x_v = f"({u}-{b['saving']}/{den})", (u_v - gap_v / den_v) if den_v else None
            low, high, low_v, high_v = "1E-9", "1", 1e-9, 1.0
        elif flip.name == "on_prem.usd_per_kwh" and flows.energy_pv:
            price_v = _number(_inputs_value(ws.parent, "usd_per_kwh", cached))
            if price_v is None:
                continue
            p, e = _ref("usd_per_kwh"), flows.energy_pv
            e_v = cash[e.split("!")[1].replace("$", "")]
            den, den_v = e, e_v
            x, x_v = f"({p}*(1+{b['saving']}/{e}))", price_v * (1 + gap_v / e_v) if e_v else None
            low, high, low_v, high_v = f"1E-6*{p}", f"50*{p}", 1e-6 * price_v, 50 * price_v
        elif flip.name.startswith("cloud.usd_per_node_hour.") and (
            found := _rival_rate_flip(ws.parent, flows, cached, b["saving"], gap_v)
        ):
            den, den_v, x, x_v, low, high, low_v, high_v = found
        else:
            continue
        value: Any = x_v if x_v is not None and low_v <= x_v <= high_v else NONE_SEARCHED
        formula = f'=IF({den}=0,"{NONE_SEARCHED}",IF(AND({x}>={low},{x}<={high}),{x},"{NONE_SEARCHED}"))'
        engine = NONE_SEARCHED if flip.threshold is None else flip.threshold
        same = (
            value == engine
            if isinstance(value, str) or isinstance(engine, str)
            else math.isclose(value, engine, rel_tol=1e-6, abs_tol=1e-9)
        )
        if same:
            ws.cell(row=row, column=1, value=RECALCULATED_FLIP + flip.label)
            cached.put(ws, row, 2, formula, value, _flip_format(flip.unit, flip.threshold or 0.0))


def _rival_rate_flip(
    wb: Any, flows: _Flows, cached: _Cached, saving: str, gap_v: float
) -> tuple[Any, ...] | None:
    """The rival's rate at which owning and the rival cost the same NPV: every bill of a rent option but its
    storage and egress is proportional to its rate, and owning's lead-time rent is the rival's own column
    when the rival is the option rented during the lead time, so the gap is linear in the rate p:
    p* = p · (1 − (NPV rival − NPV own) ÷ K), K = (NPV rival − PV extra) − δ · (LPV rival − PV extra over
    months 1..L), extra = storage and egress a month × (1 − t), δ = 1 when the lead-time option is the rival;
    range [10⁻⁶ p, 20 p]. Returns (denominator, its value, p*, its value, low, high, their values)."""
    from openpyxl.utils import get_column_letter

    ws, cash = wb["Cash flows"], cached.values["Cash flows"]
    header = [c.value for c in ws[1]]
    if "Lead-time month (1: months 1..L)" not in header:
        return None
    mask = get_column_letter(header.index("Lead-time month (1: months 1..L)") + 1)
    df = get_column_letter(ws[f"{flows.saving_column}1"].column - len(flows.column) - 1)
    last, npv = flows.last_row, flows.npv_row
    names = list(flows.column)[1:]
    first, end = flows.column[names[0]], flows.column[names[-1]]
    position, lead = (int(cash[c.replace("$", "")]) for c in (flows.position_cell, flows.lead_cell))
    rival = flows.column[names[position - 1]]
    c, at = "'Cash flows'!", f"'Cash flows'!{flows.position_cell}"
    end_row = OPTION_ROW + len(names) - 1
    price = f"INDEX(Inputs!$B${OPTION_ROW}:$B${end_row},{at})"
    extra = f"INDEX(Inputs!$I${OPTION_ROW}:$I${end_row},{at})*(1-{_ref('tax_rate')})"
    lpv = f"INDEX({c}${first}${npv + 5}:${end}${npv + 5},{at})"
    delta = f"IF({c}{flows.lead_cell}={at},1,0)"
    all_df = f"SUM({c}${df}$3:${df}${last})"
    lead_df = f"SUMPRODUCT({c}${df}$2:${df}${last},{c}${mask}$2:${mask}${last})"
    k = f"(({c}${rival}${npv}-{extra}*{all_df})-{delta}*({lpv}-{extra}*{lead_df}))"
    inputs = wb["Inputs"]
    price_v = float(inputs[f"B{OPTION_ROW + position - 1}"].value)
    extra_v = float(inputs[f"I{OPTION_ROW + position - 1}"].value) * (
        1 - float(_number(_inputs_value(wb, "tax_rate", cached)) or 0.0)
    )
    dfs = [cash[f"{df}{r}"] for r in range(2, last + 1)]
    masks = [cash[f"{mask}{r}"] for r in range(2, last + 1)]
    k_v = (cash[f"{rival}{npv}"] - extra_v * sum(dfs[1:])) - (1 if lead == position else 0) * (
        cash[f"{rival}{npv + 5}"] - extra_v * sum(d * m for d, m in zip(dfs, masks, strict=True))
    )
    x, x_v = f"({price}*(1-{saving}/{k}))", price_v * (1 - gap_v / k_v) if k_v else None
    return k, k_v, x, x_v, f"1E-6*{price}", f"20*{price}", 1e-6 * price_v, 20 * price_v


COMMITMENT_COLUMNS = (
    Column("Option", width=36),
    Column("Kind"),
    Column("Committed (USD)", USD),
    Column("Term (months)", INTEGER),
    Column("Terms", INTEGER),
    Column("Term end / delivery (month)", INTEGER),
    Column("Due after the horizon (USD)", USD),
)


def commitments_table(evaluation: DesignEvaluation) -> Table | None:
    """What each chosen option commits before it is used, at the API's inputs (values, not formulas): one
    row per ``design_verdict.commitments`` entry (owning's capex at delivery, month L of the lead time; each
    chosen reservation or savings plan over all its terms), then its committed dollars due by month (month 0
    the start; a reservation's from its offering's ``cashflow.commitments[].monthly_usd``, through the end
    of its last term, which may pass the horizon; owning's capex in its delivery month). None without a
    design verdict or without commitments."""
    verdict = evaluation.design_verdict
    if verdict is None or not verdict.commitments:
        return None
    where = {o.key: (o.offering, o.pricing_model) for o in verdict.options}
    schedules: list[tuple[float, ...]] = []
    for c in verdict.commitments:
        if c.kind == "capex":
            schedules.append(tuple([0.0] * c.end_month + [c.usd]))
            continue
        offering, model = where.get(c.key, (None, None))
        cost = evaluation.costs.get(str(offering)) if offering else None
        held = (cost.cashflow.commitments or ()) if cost and cost.cashflow else ()
        found = next((h for h in held if h.model == model), None)
        schedules.append(found.monthly_usd if found else ())
    months = max(len(s) for s in schedules)
    columns = (*COMMITMENT_COLUMNS, *(Column(f"Month {m} (USD)", USD) for m in range(months)))
    rows = tuple(
        (
            c.label,
            c.kind,
            _number(c.usd),
            c.term_months or None,
            c.terms or None,
            c.end_month,
            _number(c.beyond_horizon_usd),
            *(_number(x) for x in schedule),
            *([0.0] * (months - len(schedule))),
        )
        for c, schedule in zip(verdict.commitments, schedules, strict=True)
    )
    return Table(title="Commitments", columns=columns, rows=rows)


def _write_commitment_formulas(ws: Any, evaluation: DesignEvaluation, cached: _Cached) -> None:
    """The Commitments sheet's dollars as formulas over Inputs (issue #31), each written where its value at
    the exported inputs is the API's (else the value stays, with a note). Owning: capex in the delivery month
    L. A term option (engine/cost/cashflow.py ``commitment_schedule``): month m ≥ 1 lies in the term starting
    s = m − MOD(m − 1, T), billed (1 − F) · nodes · 730 · p · (1 + g)^((s − 1)/12) · (1 + overhead) while
    s ≤ N; F of the next term's T months falls due at the end of month m when MOD(m, T) = 0 and m + 1 ≤ N;
    committed = the row's sum; terms = CEILING(N / T); the last ends at CEILING(N / T) · T; due after the
    horizon = the months past N (Inputs column E) × (1 − F) × the last term's monthly bill. The months shown
    are the API's: a longer horizon on Inputs needs a new export."""
    from openpyxl.comments import Comment
    from openpyxl.utils import get_column_letter

    verdict = evaluation.design_verdict
    if verdict is None:
        return
    where = {o.key: (o.offering, o.pricing_model) for o in verdict.options}
    rents: dict[tuple[str | None, str | None], tuple[int, _Rent]] = {
        (r.offering, r.option.model): (i, r) for i, r in enumerate(_rents(evaluation))
    }
    header = [c.value for c in ws[1]]
    first = len(COMMITMENT_COLUMNS) + 1
    months = len(header) - len(COMMITMENT_COLUMNS)
    n_v, nodes, hpm, n = (
        _inputs_value(ws.parent, "months", cached),
        _ref("nodes"),
        _ref("hours_per_month"),
        _ref("months"),
    )
    lead, capex = _ref("lead_time_months"), _ref("capex_usd")
    g = _ref("cloud_price_change_per_year")
    inputs = (
        evaluation.first_cost.cashflow.inputs
        if evaluation.first_cost and evaluation.first_cost.cashflow
        else None
    )
    if inputs is None:
        return
    for row, c in enumerate(verdict.commitments, start=2):
        cells: list[tuple[int, str, Any, str]] = []
        if c.kind == "capex":
            L = inputs.lead_time_months
            cells.append((3, f"={capex}", inputs.capex_usd, USD))
            cells.append((6, f"={lead}", L, INTEGER))
            for m in range(months):
                cells.append(
                    (first + m, f"=IF({m}={lead},{capex},0)", inputs.capex_usd if m == L else 0.0, USD)
                )
        elif where.get(c.key) in rents:
            i, rent = rents[where[c.key]]
            o = OPTION_ROW + i
            p, term, share, past, over = (f"Inputs!${x}${o}" for x in ("B", "C", "F", "E", "H"))
            t_v, f_v = rent.option.term_months or 0, UPFRONT_SHARE[rent.option.upfront or "no_upfront"]
            if not t_v:
                continue

            def bill(
                start: str, start_v: int, p: str = p, over: str = over, rent: _Rent = rent
            ) -> tuple[str, float]:
                value = (
                    inputs.nodes
                    * 730
                    * rent.option.usd_per_node_hour
                    * (1 + inputs.cloud_price_change_per_year) ** ((start_v - 1) / 12)
                    * (1 + rent.overhead)
                )
                return f"{nodes}*{hpm}*{p}*(1+{g})^((({start})-1)/12)*(1+{over})", value

            values = []
            for m in range(months):
                s_v = m - (m - 1) % t_v if m >= 1 else 0
                start = f"({m}-MOD({m}-1,{term}))"
                monthly, monthly_v = bill(start, s_v)
                upfront, upfront_v = bill(f"({m}+1)", m + 1)
                value = ((1 - f_v) * monthly_v if m >= 1 and s_v <= n_v else 0.0) + (
                    f_v * t_v * upfront_v if m % t_v == 0 and m + 1 <= n_v else 0.0
                )
                formula = (
                    f"=IF(AND({m}>=1,{start}<={n}),(1-{share})*{monthly},0)"
                    f"+IF(AND(MOD({m},{term})=0,{m}+1<={n}),{share}*{term}*{upfront},0)"
                )
                values.append(value)
                cells.append((first + m, formula, value, USD))
            terms_v = math.ceil(n_v / t_v)
            last_start = (terms_v - 1) * t_v + 1
            last_bill, last_bill_v = bill(f"(CEILING({n}/{term},1)-1)*{term}+1", last_start)
            row_range = f"{get_column_letter(first)}{row}:{get_column_letter(first + months - 1)}{row}"
            cells += [
                (3, f"=SUM({row_range})", sum(values), USD),
                (4, f"={term}", t_v, INTEGER),
                (5, f"=CEILING({n}/{term},1)", terms_v, INTEGER),
                (6, f"=CEILING({n}/{term},1)*{term}", terms_v * t_v, INTEGER),
                (7, f"={past}*(1-{share})*{last_bill}", (terms_v * t_v - n_v) * (1 - f_v) * last_bill_v, USD),
            ]
        for col, formula, value, fmt in cells:
            cell = ws.cell(row=row, column=col)
            if not _close(value, _number(cell.value) if cell.value is not None else 0.0):
                cell.comment = Comment(STALE, "ClusterDesigner")
                continue
            cached.put(ws, row, col, formula, value, fmt)


def design_export_xlsx(*, evaluation: DesignEvaluation | Mapping[str, Any]) -> bytes:
    """The evaluation as an XLSX workbook, as bytes: Summary (the verdict first), Options, Assumptions,
    Sensitivity, Uncertainty, then Inputs, Cash flows (monthly, live formulas over Inputs) and Cash flows by
    year (sums of the monthly rows). With cash flows, the Summary's rent-or-own rows and the Options' NPV and
    cash-out columns are formulas over Options, Inputs and Cash flows, so that changing an input (the
    utilization, a price) recomputes the verdict; every formula cell carries its cached value."""
    evaluation = evaluation_read(result=evaluation)
    from openpyxl import Workbook

    wb = Workbook()
    first = True
    for table in (*export_tables(evaluation), sensitivity_table(evaluation), uncertainty_table(evaluation)):
        ws = wb.active if first else wb.create_sheet()
        ws.title = table.title
        first = False
        _write_sheet(ws, table)
    cached = _Cached()
    flows = _write_cash_flows(wb, evaluation, cached)
    if flows is not None:
        rows = _write_option_npvs(wb["Options"], evaluation, flows, cached)
        _write_option_formulas(wb["Options"], evaluation, flows, cached)
        _write_summary_formulas(wb["Summary"], evaluation, flows, rows, cached)
        _write_summary_extras(wb["Summary"], evaluation, flows, cached)
        commitments = commitments_table(evaluation)
        if commitments is not None:
            _write_sheet(wb.create_sheet("Commitments"), commitments)
            _write_commitment_formulas(wb["Commitments"], evaluation, cached)
    for title in ("Sensitivity", "Uncertainty"):
        ws = wb[title]
        ws.cell(row=ws.max_row + 1, column=1, value=f"Note: {STALE} when Inputs change").data_type = "s"
    design = evaluation.design
    wb.properties.title = design.name if design and design.name else "ClusterDesigner design"
    wb.properties.creator = "ClusterDesigner"
    out = io.BytesIO()
    wb.save(out)
    return _with_cached_values(out.getvalue(), wb.sheetnames, cached)


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
