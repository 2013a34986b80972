"""What one analysis item computes, given only JSON (the snapshot): no database, so any worker can run it.

Items:
    evaluate:  {"spec": design spec}                              → the design evaluation (layout searched)
    compare:   {"design": id, "name", "version", "spec"}          → that design's evaluation summary
    sweep / recommend: {"accelerator", "nodes", "model", "pricing_models": [...]}  → one row per pricing model
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from apps.designs.services import evaluate_spec, expected_days
from clusterdesigner.engine import cost, training
from clusterdesigner.engine.catalog import CatalogSpecs, specs_from_records
from clusterdesigner.engine.errors import EngineError
from clusterdesigner.engine.offerings import Freshness


def compute_items(
    *, kind: str, items: list[dict[str, Any]], snapshot: Mapping[str, Any]
) -> list[dict[str, Any]]:
    catalog = specs_from_records(snapshot["catalog"])
    if kind == "evaluate":
        return [
            evaluate_spec(spec=item["spec"], records=snapshot["catalog"], freshness=_freshness(snapshot))
            for item in items
        ]
    if kind == "compare":
        return [_compare_row(item, snapshot) for item in items]
    rows: list[dict[str, Any]] = []
    for item in items:
        rows.extend(_sweep_rows(item, snapshot, catalog))
    return rows


def _freshness(snapshot: Mapping[str, Any]) -> Freshness | None:
    """The date and threshold the analysis was planned with (older snapshots have none: no stale findings)."""
    return Freshness.from_json(snapshot["freshness"]) if snapshot.get("freshness") else None


def _compare_row(item: Mapping[str, Any], snapshot: Mapping[str, Any]) -> dict[str, Any]:
    try:
        evaluation = evaluate_spec(
            spec=item["spec"], records=snapshot["catalog"], freshness=_freshness(snapshot)
        )
    except EngineError as exc:
        return {
            "design": item["design"],
            "name": item["name"],
            "version": item["version"],
            "error": exc.message,
        }
    train = evaluation["training"]
    best = evaluation["options"][0] if evaluation["options"] else {}
    return {
        "design": item["design"],
        "name": item["name"],
        "version": item["version"],
        "accelerator": item["spec"]["cluster"]["accelerator"],
        "nodes": item["spec"]["cluster"]["nodes"],
        "gpus": item["spec"]["cluster"]["nodes"] * item["spec"]["cluster"].get("gpus_per_node", 8),
        # One definition of days in every comparison: expected, with failures and restarts (the design page's
        # and the compare page's); the failure-free figure beside it, named so.
        "fits": train.get("fits"),
        "days": expected_days(evaluation),
        "days_failure_free": train.get("time_to_train_days"),
        "mfu": train.get("mfu"),
        "best_option": best.get("label"),
        "best_run_cost_usd": best.get("run_cost_usd"),
        "options": evaluation["options"],
    }


def _sweep_rows(
    item: Mapping[str, Any], snapshot: Mapping[str, Any], catalog: CatalogSpecs
) -> list[dict[str, Any]]:
    params = snapshot["params"]
    accelerator, nodes = item["accelerator"], int(item["nodes"])
    gpus_per_node = int(params.get("gpus_per_node", 8))
    base = {"accelerator": accelerator, "nodes": nodes, "gpus": nodes * gpus_per_node, "model": item["model"]}
    request = {
        "model": snapshot["models"][item["model"]],
        "training": params["training"],
        "cluster": {
            "accelerator": accelerator,
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "fabric": params.get("fabric", "ib-ndr400"),
            "oversubscription": params.get("oversubscription", 1.0),
        },
    }
    try:
        train = training.estimate(request, **catalog.training_kwargs())
    except EngineError as exc:
        return [
            {**base, "pricing_model": m, "fits": False, "error": exc.message} for m in item["pricing_models"]
        ]
    if not train.get("fits"):
        reason = next(iter(train.get("rejected") or {}), "fits at no layout")
        return [{**base, "pricing_model": m, "fits": False, "error": reason} for m in item["pricing_models"]]
    cost_request: dict[str, Any] = {
        "cluster": {**request["cluster"], "storage": params.get("storage", "lustre")},
        **{k: params[k] for k in ("horizon_years", "utilization", "on_prem") if k in params},
    }
    by_model = _row_offerings(snapshot, accelerator, item["pricing_models"])
    results: dict[str | None, dict[str, Any]] = {}
    for slug in dict.fromkeys(by_model.values()):  # one cost run per offering, in order; None: owning only
        try:
            results[slug] = cost.tco(
                {**cost_request, **({"cloud": {"offering": slug}} if slug else {})},
                training=train,
                **catalog.cost_kwargs(),
            )
        except EngineError as exc:
            return [
                {**base, "pricing_model": m, "fits": True, "error": exc.message}
                for m in item["pricing_models"]
            ]
    layout = train.get("parallelism") or {}
    params_b = ((train.get("summary") or {}).get("model") or {}).get("params", 0) / 1e9
    rows = []
    for model in item["pricing_models"]:
        offering = by_model[model]
        result = results[offering]
        per_run = result.get("per_run") or {}
        key = "on_prem" if model == "own" else model
        run = ((per_run.get("usd") or {}).get(key) or {}).get("usd")
        days = per_run.get("spot_effective_days") if model == "spot" else per_run.get("effective_days")
        gpu_hour = (
            result["on_prem"] if model == "own" else (result.get("cloud") or {}).get(model) or {}
        ).get("usd_per_gpu_hour")
        row = {
            **base,
            "pricing_model": model,
            "fits": True,
            "offering": None if model == "own" else offering,
            "days": days if days is not None else train.get("time_to_train_days"),
            "cost_usd": run,
            "usd_per_gpu_hour": gpu_hour,
            "mfu": train.get("mfu"),
            "layout": layout,
            "params_b": round(params_b, 3),
        }
        if run is None:
            label = model.replace("_", " ")
            row["error"] = (
                f"{offering} has no {label} price"
                if offering
                else f"no offering of {accelerator} has a {label} price in the catalog"
            )
        rows.append(row)
    return rows


def _row_offerings(snapshot: Mapping[str, Any], accelerator: str, models: list[str]) -> dict[str, str | None]:
    """The offering each pricing model of a sweep row is priced on (None for owning, or when none has that
    model's price). A snapshot from before per-model offerings names one offering per accelerator."""
    by_model = (snapshot.get("offerings_by_model") or {}).get(accelerator)
    if by_model is None:
        one = (snapshot.get("offerings") or {}).get(accelerator)
        by_model = {m: one for m in models if m != "own"}
    owning = next(iter(v for v in by_model.values() if v), None)  # owning rides on any offering's run
    return {m: owning if m == "own" else by_model.get(m) for m in models}


def pareto_front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows not dominated in (cost, days): no other row is at least as cheap and as fast, and better
    in one."""
    usable = [
        r
        for r in rows
        if r.get("cost_usd") is not None
        and r.get("days") is not None
        and math.isfinite(r["cost_usd"])
        and math.isfinite(r["days"])
    ]
    usable.sort(key=lambda r: (r["cost_usd"], r["days"]))
    front: list[dict[str, Any]] = []
    best_days = math.inf
    for row in usable:
        if row["days"] < best_days:
            front.append(row)
            best_days = row["days"]
    return front


def finalize(*, kind: str, rows: list[dict[str, Any]], snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """Combine the chunks' rows into the analysis result."""
    if kind == "evaluate":
        return rows[0]
    if kind == "compare":
        return {
            "designs": rows,
            "best": _best_per_row(rows),
            "pareto": [
                r["design"]
                for r in pareto_front([{**r, "cost_usd": r.get("best_run_cost_usd")} for r in rows])
            ],
        }
    front = pareto_front(rows)
    result: dict[str, Any] = {
        "rows": rows,
        "pareto": front,
        "count": len(rows),
        "feasible": sum(1 for r in rows if r.get("cost_usd") is not None),
    }
    if kind == "recommend":
        result.update(recommend(rows=rows, front=front, params=snapshot["params"]))
    return result


def _best_per_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]
    best: dict[str, Any] = {}
    for key, pick in (("days", min), ("best_run_cost_usd", min), ("mfu", max)):
        values = [r for r in ok if r.get(key) is not None]
        if values:
            best[key] = pick(values, key=lambda r: r[key])["design"]
    return best


def recommend(
    *, rows: list[dict[str, Any]], front: list[dict[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Pick the cheapest option on the Pareto front that meets the deadline and the budget; say why."""
    deadline = params.get("deadline_days")
    budget = params.get("budget_usd")
    meets = [
        r
        for r in front
        if (deadline is None or r["days"] <= deadline) and (budget is None or r["cost_usd"] <= budget)
    ]
    reasons: list[str] = []
    if meets:
        choice = min(meets, key=lambda r: r["cost_usd"])
        reasons.append(
            f"cheapest of {len(meets)} Pareto-optimal options that meet "
            + (f"the {deadline:g}-day deadline" if deadline else "no deadline")
            + (f" and the ${budget:,.0f} budget" if budget else "")
        )
        faster = [r for r in front if r["days"] < choice["days"]]
        if faster:
            quick = min(faster, key=lambda r: r["days"])
            reasons.append(
                f"finishing in {quick['days']:.1f} days instead of {choice['days']:.1f} would cost "
                f"${quick['cost_usd'] - choice['cost_usd']:,.0f} more "
                f"({quick['accelerator']} × {quick['gpus']} GPUs, "
                f"{quick['pricing_model']})"
            )
    else:
        choice = min(front, key=lambda r: r["days"]) if front else None
        reasons.append("no option meets both the deadline and the budget; shown: the fastest option")
    if choice:
        reasons.append(
            f"{choice['accelerator']} × {choice['gpus']} GPUs ({choice['nodes']} nodes), "
            f"{choice['pricing_model']}: {choice['days']:.1f} days, ${choice['cost_usd']:,.0f}, "
            f"MFU {100 * (choice.get('mfu') or 0):.0f} %"
        )
        if params.get("interruption_tolerance") == "none":
            reasons.append("spot excluded: no tolerance for interruptions")
    params_b = next((r["params_b"] for r in rows if r.get("params_b")), None)
    thumb = rule_of_thumb(params_b)
    if thumb and choice:
        reasons.append(
            f"rule of thumb for {params_b:.1f}B parameters: {thumb}; "
            f"the engines' choice: {choice['gpus']} GPUs"
        )
    return {"recommendation": choice, "reasons": reasons, "rule_of_thumb_gpus": thumb}


def rule_of_thumb(params_b: float | None) -> str | None:
    """The common starting point (under 7B: 4–8 GPUs, 7–30B: 16–64, 30–100B: 64–256, above: 256+)."""
    if params_b is None:
        return None
    for limit, text in ((7, "4–8 GPUs"), (30, "16–64 GPUs"), (100, "64–256 GPUs")):
        if params_b < limit:
            return text
    return "256+ GPUs"
