"""What one analysis item computes, given only JSON (the snapshot): no database, so any worker can run it.

Items:
    evaluate:  {"spec": design spec, "calibration"}               → the design evaluation (layout searched)
    compare:   {"design": id, "name", "version", "spec", "calibration"} → that design's evaluation summary

``calibration`` is the design owner's (engine/training/user_calibration.CalibrationState JSON; absent in an
item stored before it: the published calibration); a sweep's points take the snapshot's, the requester's own.
    sweep / recommend: {"accelerator", "nodes", "model", "pricing_models": [...]}  → one row per pricing model
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from apps.designs.selectors import evaluation_read
from clusterdesigner.engine.core.catalog import CatalogSpecs, specs_from_records
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.offerings import Freshness
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.cost.cost_result import CostResult
from clusterdesigner.engine.cost.resale import ResaleCurve, curves_from_records
from clusterdesigner.engine.design import tradeoffs
from clusterdesigner.engine.design.analysis_result import AnalysisSnapshot, CompareRow, SweepParams, SweepRow
from clusterdesigner.engine.design.design import evaluate_design_json
from clusterdesigner.engine.design.spec import parse_design_spec
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.training_result import TrainingEstimate
from clusterdesigner.engine.training.user_calibration import CalibrationState, calibrate


def compute_items(
    *, kind: str, items: list[dict[str, Any]], snapshot: Mapping[str, Any]
) -> list[dict[str, Any]]:
    catalog = specs_from_records(snapshot["catalog"])
    if kind == "evaluate":
        return [_evaluated(item, snapshot) for item in items]
    if kind == "compare":
        return [_compare_row(item, snapshot) for item in items]
    # What every point of the chunk shares is read from the snapshot once, not once per point.
    context = _SweepContext(
        params=SweepParams.from_json(snapshot["params"]),
        snapshot=AnalysisSnapshot.from_json(snapshot),
        catalog=catalog,
    )
    rows: list[dict[str, Any]] = []
    for item in items:
        rows.extend(_sweep_rows(item, context))
    return rows


@dataclass
class _SweepContext:
    """A chunk's shared reading of its snapshot: the sweep's parameters, the typed snapshot, the catalog
    specs, and each accelerator's resale curves as they are first asked for."""

    params: SweepParams
    snapshot: AnalysisSnapshot
    catalog: CatalogSpecs
    resale: dict[str, tuple[ResaleCurve, ...]] = field(default_factory=dict)

    def resale_of(self, accelerator: str) -> tuple[ResaleCurve, ...]:
        if accelerator not in self.resale:
            self.resale[accelerator] = curves_from_records(self.snapshot.catalog, accelerator=accelerator)
        return self.resale[accelerator]


def _freshness(snapshot: Mapping[str, Any]) -> Freshness | None:
    """The date and threshold the analysis was planned with (older snapshots have none: no stale findings)."""
    return AnalysisSnapshot.from_json(snapshot).freshness


def _calibration(item: Mapping[str, Any]) -> CalibrationState | None:
    found = item.get("calibration")
    return None if found is None else CalibrationState.from_json(found)


def _evaluated(item: Mapping[str, Any], snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """A design's evaluation at the prices its owner's book resolved when the analysis was planned
    (``priced_spec`` and the ``prices`` rows, apps.designs.pricing; an item stored before them: the spec as
    it is), each figure's origin among the assumptions and the book's warnings among the findings."""
    priced = item.get("priced_spec") or item["spec"]
    prices = item.get("prices") or {}
    catalog = specs_from_records(snapshot["catalog"])
    result = evaluate_design_json(
        spec=parse_design_spec(priced, catalog=catalog),
        catalog=catalog,
        records=snapshot["catalog"],
        price_rows=prices.get("prices") or [],
        price_findings=prices.get("findings") or [],
        freshness=_freshness(snapshot),
        calibration=_calibration(item),
    )
    result["spec"] = item["spec"]
    return result


def _compare_row(item: Mapping[str, Any], snapshot: Mapping[str, Any]) -> dict[str, Any]:
    try:
        evaluation = _evaluated(item, snapshot)
    except EngineError as exc:
        return CompareRow(
            design=item["design"], name=item["name"], version=item["version"], error=exc.message
        ).to_json()
    typed = evaluation_read(result=evaluation)
    if typed.training is None:  # evaluate_design raises when no layout fits; a result always holds one
        raise ValueError(f"design {item['design']}'s evaluation holds no layout")
    column = tradeoffs.compare_column(
        training=typed.training,
        options=evaluation["options"],
        cloud_choices=typed.cloud_choices,
        # The best option is the one the rent-or-own verdict picks by NPV, as on the compare page.
        verdict=typed.design_verdict,
    )
    cluster = item["spec"]["cluster"]
    return CompareRow(
        design=item["design"],
        name=item["name"],
        version=item["version"],
        accelerator=cluster["accelerator"],
        nodes=cluster["nodes"],
        gpus=column.gpus,
        # One definition of days in every comparison: expected, with failures and restarts (the design page's
        # and the compare page's); the failure-free figure beside it, named so.
        fits=column.fits,
        days=column.expected_days,
        days_failure_free=column.days_failure_free,
        mfu=column.mfu,
        best_option=column.best_option,
        best_run_cost_usd=column.best_run_cost_usd,
        best_npv_usd=column.best_npv_usd,
        options=tuple(evaluation["options"]),
        calibration=typed.calibration,
    ).to_json() | {"prices": [a for a in evaluation["assumptions"] if a["name"].startswith("prices.")]}


def _sweep_request(item: Mapping[str, Any], params: SweepParams, models: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "model": models[item["model"]],
        "training": params.training,
        "cluster": params.cluster(item["accelerator"], item["nodes"]),
    }


def _failed(base: Mapping[str, Any], models: list[str], *, fits: bool, error: str) -> list[dict[str, Any]]:
    return [SweepRow(**base, pricing_model=m, fits=fits, error=error).to_json() for m in models]


def _priced_row(
    base: Mapping[str, Any],
    model: str,
    offering: str | None,
    result: CostResult,
    train: TrainingEstimate,
) -> dict[str, Any]:
    """One pricing model's row: its run cost, expected days (spot's own, with interruptions) and $/GPU-h."""
    per_run = result.per_run
    run_cost = (per_run.usd or {}).get("on_prem" if model == "own" else model)
    run = None if run_cost is None else run_cost.usd
    days = per_run.spot_effective_days if model == "spot" else per_run.effective_days
    priced = result.on_prem if model == "own" else result.cloud.get(model)
    gpu_hour = None if priced is None else priced.usd_per_gpu_hour
    error = None
    why = result.cloud_unavailable.get(model, "")
    if run is None and why.startswith(cost.OVER_QUOTA):
        error = why  # the owner's quota is below the row's nodes: not an option
    elif run is None:
        label = cost.MODEL_LABELS.get(model, model.replace("_", " "))
        article = "an" if label[:1] in "aeiou" else "a"  # "an on-demand price", "a spot price"
        error = (
            f"{offering} has no {label} price"
            if offering
            else f"no offering of {base['accelerator']} has {article} {label} price in the catalog"
        )
    return SweepRow(
        **base,
        pricing_model=model,
        fits=True,
        offering=None if model == "own" else offering,
        days=days if days is not None else train.chosen.time_to_train_days,
        cost_usd=run,
        usd_per_gpu_hour=gpu_hour,
        mfu=train.chosen.mfu,
        layout=train.chosen.parallelism.to_json(),
        params_b=round(train.summary.model.params / 1e9, 3),
        error=error,
        capex_usd=result.on_prem.capex_usd if model == "own" else None,
        commitment_usd=None if run_cost is None else run_cost.commitment_per_term_usd,
        commitment_term_months=None if run_cost is None else run_cost.commitment_term_months,
        start_delay_days=None if run_cost is None else run_cost.start_delay_days,
        npv_usd=result.npv_of(model) if run is not None else None,
    ).to_json()


def _sweep_rows(item: Mapping[str, Any], context: _SweepContext) -> list[dict[str, Any]]:
    """One row per pricing model of one (accelerator, nodes, model) point: one training estimate, one cost
    run per offering the models are priced on."""
    params, models, catalog = context.params, item["pricing_models"], context.catalog
    request = _sweep_request(item, params, context.snapshot.models or {})
    cluster = request["cluster"]
    base = {
        "accelerator": cluster["accelerator"],
        "nodes": cluster["nodes"],
        "gpus": cluster["nodes"] * cluster["gpus_per_node"],
        "model": item["model"],
    }
    try:
        train = _calibrated(training.estimate_result(request, **catalog.training_kwargs()), context)
    except EngineError as exc:
        return _failed(base, models, fits=False, error=exc.message)
    if not train.chosen.fits:
        reason = next(iter(train.search.rejected if train.search else {}), "fits at no layout")
        return _failed(base, models, fits=False, error=reason)
    cost_request: dict[str, Any] = {
        "cluster": {**cluster, "storage": params.storage_or_default},
        **params.cost_overrides(),
    }
    # The prices the owner's book set for this accelerator (apps.designs.pricing, resolved when planned).
    book = (context.snapshot.prices or {}).get(cluster["accelerator"]) or {}
    if book.get("on_prem"):
        cost_request["on_prem"] = book["on_prem"]
    cost_request.update(book.get("sections") or {})
    if context.snapshot.site:
        cost_request["site"] = context.snapshot.site  # priced as a design at that site is (engine.cost.site)
    by_model = _row_offerings(context.snapshot, cluster["accelerator"], models)
    # Resale as the design evaluation reads it: the accelerator's catalog series at the depreciation life.
    resale = context.resale_of(cluster["accelerator"])
    training_json = train.to_json()  # once for the point, not once per offering
    results: dict[str | None, CostResult] = {}
    for slug in dict.fromkeys(by_model.values()):  # one cost run per offering, in order; None: owning only
        try:
            results[slug] = CostResult.from_json(
                cost.tco(
                    {**cost_request, **({"cloud": _cloud(slug, book)} if slug else {})},
                    training=training_json,
                    resale=resale,
                    uncertainty=False,  # a sweep row reads no Monte Carlo figure
                    what_ifs=False,  # nor the tornado or the verdict's flips: ~70 % of a run's cost time
                    **catalog.cost_kwargs(),
                )
            )
        except EngineError as exc:
            return _failed(base, models, fits=True, error=exc.message)
    return [_priced_row(base, m, by_model[m], results[by_model[m]], train) for m in models]


def _calibrated(train: TrainingEstimate, context: _SweepContext) -> TrainingEstimate:
    """The point's estimate with the requester's factor for its regime applied (as a design's is), when
    their calibration is on and covers it; else the estimate as it is."""
    state = context.snapshot.calibration
    if state is None or not state.enabled:
        return train
    published = train.to_json()
    calibrated, _ = calibrate(published, state)
    return train if calibrated is published else TrainingEstimate.from_json(calibrated)


def _cloud(slug: str, book: Mapping[str, Any]) -> dict[str, Any]:
    """A sweep row's cloud request: the offering, at the book's USD per node-hour where it sets them, with
    the nodes obtainable (the book's quota: a model whose quota is below the row's nodes is not an option)."""
    usd = (book.get("cloud") or {}).get(slug)
    quota = (book.get("capacity_nodes") or {}).get(slug)
    return {
        "offering": slug,
        **({"usd_per_node_hour": usd} if usd else {}),
        **({"capacity_nodes": quota} if quota else {}),
    }


def _row_offerings(snapshot: AnalysisSnapshot, accelerator: str, models: list[str]) -> dict[str, str | None]:
    """The offering each pricing model of a sweep row is priced on (None for owning, or when none has that
    model's price). A snapshot from before per-model offerings names one offering per accelerator."""
    by_model = snapshot.priced_on(accelerator, models)
    owning = next(iter(v for v in by_model.values() if v), None)  # owning rides on any offering's run
    return {m: owning if m == "own" else by_model.get(m) for m in models}


def finalize(*, kind: str, rows: list[dict[str, Any]], snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """Combine the chunks' rows into the analysis result."""
    if kind == "evaluate":
        return rows[0]
    if kind == "compare":
        # The front on the verdict's basis (each design's best option's NPV over the horizon) when every
        # design that fits has one; else on one run's cost, and ``basis`` says which.
        columns = [CompareRow.from_json(r) for r in rows]
        fitting = [c for c in columns if c.fits]
        npv = bool(fitting) and all(c.best_npv_usd is not None for c in fitting)
        figure = [c.best_npv_usd if npv else c.best_run_cost_usd for c in columns]
        priced = [{**r, "cost_usd": usd} for r, usd in zip(rows, figure, strict=True)]
        return {
            "designs": rows,
            "best": tradeoffs.best_per_figure(rows),
            "basis": tradeoffs.NPV_BASIS if npv else tradeoffs.PER_RUN_BASIS,
            "pareto": [r["design"] for r in tradeoffs.pareto_front(priced)],
        }
    typed = [SweepRow.from_json(r) for r in rows]
    basis = tradeoffs.sweep_basis(typed)  # the NPV of the monthly cash flows, where the rows have them
    front = tradeoffs.sweep_front(typed, basis)
    result: dict[str, Any] = {
        "rows": rows,
        "pareto": [rows[i] for i in front],
        "basis": basis,
        "basis_label": tradeoffs.BASIS_LABELS[basis],
        "count": len(rows),
        "feasible": sum(1 for r in typed if r.cost_usd is not None),
        # Whose calibration the points were estimated with: switch, factors and their runs (issue 40).
        "calibration": snapshot.get("calibration"),
        # Where each price came from, per accelerator: the sweep's own figure, the owner's price book (the
        # entry and its date) or the public catalog (apps.designs.pricing).
        "prices": {
            accelerator: {"rows": book["rows"], "findings": book["findings"]}
            for accelerator, book in (snapshot.get("prices") or {}).items()
        },
    }
    if kind == "recommend":
        picked = tradeoffs.recommend(
            rows=typed, front=[typed[i] for i in front], params=snapshot["params"], basis=basis
        )
        choice = picked["recommendation"]
        result.update(picked, recommendation=None if choice is None else rows[typed.index(choice)])
    return result
