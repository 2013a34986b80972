"""What changed between two design versions (of one design or of two) and why the answer moved (issue #36):
the service that evaluates specs for clusterdesigner.engine.design.attribution, and the XLSX of a diff."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from openpyxl import Workbook
from openpyxl.styles import Font

from apps.catalog.selectors import engine_catalog_snapshot, price_freshness
from apps.designs import pricing, services
from apps.designs.models import DesignVersion
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design.attribution import DesignDiff, Evaluate, design_diff, input_changes
from clusterdesigner.engine.design.design import evaluate_design
from clusterdesigner.engine.design.evaluation import DesignEvaluation
from clusterdesigner.engine.training.user_calibration import CalibrationState
from clusterdesigner.spreadsheets import formula_safe

XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@dataclass(frozen=True)
class VersionDiff:
    """A diff between two stored versions: which they are, and what the engine found."""

    old: DesignVersion
    new: DesignVersion
    diff: DesignDiff

    def to_json(self) -> dict[str, Any]:
        return {"old": version_ref(self.old), "new": version_ref(self.new), **self.diff.to_json()}


def version_ref(version: DesignVersion) -> dict[str, Any]:
    return {
        "design": version.design_id,
        "name": version.name,
        "version": version.number,
        "message": version.message,
        "created_at": version.created_at.isoformat(),
    }


def spec_evaluator(calibration: CalibrationState | None = None) -> Evaluate:
    """Evaluate a spec as the evaluate API does (clusterdesigner.engine.design.design.evaluate_design),
    against one catalog snapshot and today's stale-price threshold for every call, so that all the diff's
    evaluations share one catalog, and with ``calibration`` (the design owner's, as the design's own
    evaluation takes it, issue 40). A spec that would not save (it does not parse, names a row the catalog
    lacks or an offering of another accelerator) raises EngineError with the reason, as the engines do for one
    that does not fit."""
    snapshot = engine_catalog_snapshot()
    freshness = price_freshness()

    def evaluate(spec: Mapping[str, Any]) -> DesignEvaluation:
        raw = copy.deepcopy(dict(spec))
        parsed = design_spec.parse_design_spec(raw)
        services.check_references(copy.deepcopy(raw), snapshot.specs)
        evaluation = evaluate_design(
            spec=parsed,
            catalog=snapshot.specs,
            records=snapshot.records,
            freshness=freshness,
            calibration=calibration,
        )
        return replace(evaluation, spec=raw)

    return evaluate


def version_diff(
    *, old: DesignVersion, new: DesignVersion, order: Sequence[str] | None = None
) -> VersionDiff:
    """The diff of version ``old`` → ``new``. Both evaluate (they were checked when saved); an EngineError
    from either (the catalog changed since) reaches the caller as the 400 it is, and so does an ``order``
    that does not list every changed input once. Without an ``order`` the inputs go in their paths' sorted
    order: a stored spec's key order is the database's (PostgreSQL's jsonb reorders keys), so the engine's
    default (the spec's order) would differ between databases."""
    evaluate = spec_evaluator(pricing.design_calibration(design=new.design))
    if order is None:
        order = sorted(c.path for c in input_changes(old.spec, new.spec))
    return VersionDiff(
        old=old, new=new, diff=design_diff(old=old.spec, new=new.spec, evaluate=evaluate, order=order)
    )


def parse_order(raw: str | None) -> list[str] | None:
    """``?order=a,b`` as a list of input paths (None when not given)."""
    if raw is None or not raw.strip():
        return None
    return [part.strip() for part in raw.split(",") if part.strip()]


# --- XLSX ---------------------------------------------------------------------------------------------------


def diff_xlsx(diff: VersionDiff) -> bytes:
    """The diff as a workbook: Inputs, Outputs and Attribution (the steps, then the Shapley values), and the
    two Versions with their messages; values as numbers where they are numbers, text cells formula-safe."""
    book = Workbook()
    inputs = book.active
    assert inputs is not None
    inputs.title = "Inputs"
    _sheet_rows(
        inputs,
        ["input", "unit", f"v{diff.old.number} ({diff.old.name})", f"v{diff.new.number} ({diff.new.name})"],
        [[c.path, c.unit, _cell(c.old), _cell(c.new)] for c in diff.diff.inputs],
    )
    outputs = book.create_sheet("Outputs")
    _sheet_rows(
        outputs,
        ["output", "unit", "old", "new", "delta"],
        [[o.label, o.unit, _cell(o.old), _cell(o.new), o.delta] for o in diff.diff.outputs],
    )
    _attribution_sheet(book.create_sheet("Attribution"), diff.diff)
    _sheet_rows(
        book.create_sheet("Versions"),
        ["version", "design", "name", "message", "saved at"],
        [
            [v.number, v.design_id, formula_safe(v.name), formula_safe(v.message), v.created_at.isoformat()]
            for v in (diff.old, diff.new)
        ],
    )
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def _attribution_sheet(sheet: Any, diff: DesignDiff) -> None:
    attribution = diff.attribution
    if attribution is None:
        sheet.append([formula_safe(diff.attribution_note or "")])
        return
    sheet.append([formula_safe(attribution.label)])
    sheet.append(["old (USD)", attribution.old_usd, "new (USD)", attribution.new_usd])
    sheet.append(["change (USD)", attribution.total_usd])
    sheet.append([])
    rows = [
        [
            "order " + str(k + 1),
            formula_safe(" + ".join(s.inputs)),
            s.delta_usd,
            s.cumulative_usd,
            formula_safe(s.reason or ""),
        ]
        for k, s in enumerate(attribution.steps)
    ]
    _sheet_rows(
        sheet, ["step", "inputs set to new", "delta (USD)", "cumulative (USD)", "not evaluated"], rows
    )
    sheet.append([])
    if attribution.shapley is None:
        sheet.append([formula_safe(attribution.shapley_note or "")])
        return
    sheet.append(["Shapley (average over all orders)"])
    for value in attribution.shapley:
        sheet.append([formula_safe(value.input), value.value_usd])


def _sheet_rows(sheet: Any, header: list[str], rows: list[list[Any]]) -> None:
    sheet.append([formula_safe(h) for h in header])
    for cell in sheet[sheet.max_row]:
        cell.font = Font(bold=True)
    for row in rows:
        sheet.append([formula_safe(v) if isinstance(v, str) else v for v in row])


def _cell(value: Any) -> Any:
    """A number or text as it is; a list or object as its JSON text; None as empty."""
    if value is None or isinstance(value, (int, float, str)):
        return value
    return json.dumps(value, sort_keys=True)
