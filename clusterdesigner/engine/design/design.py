"""A design's answer, composed: the training estimate, one cost result per cloud offering, the options
table and its rankings, the assumptions and findings, the rent-or-own verdict, the goals (with what it takes
to meet a missed deadline), the serving and RL estimates and a mixed fleet's cost, from one parsed spec.

Public functions:
- :func:`evaluate_design`: the whole evaluation of a parsed spec (engine.design.spec.DesignSpec) against the
  catalog (its engine specs and its plain records: the resale series and the accelerator's figures for the
  assumptions), the price book's resolved rows, the price freshness and the owner's calibration, as the
  typed :class:`~clusterdesigner.engine.design.evaluation.DesignEvaluation` whose ``to_json()`` the design
  service stores; :func:`evaluate_design_json`: that JSON. The design service, the analyses (sweeps'
  evaluate items, comparisons), version diffs and everything that evaluates a design call them.
- :func:`by_severity`: the piece the design service's validation shares with it (and
  design_spec.check_usable, which the spec's parser runs given the catalog).

Pure: no Django, no I/O; the same inputs always give the same answer. Prices enter through the spec: the
caller resolves the owner's price book into it (apps.designs.pricing) before calling.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.offerings import PROVIDER_LABELS, Freshness
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.cost.cost_inputs import CostInputs
from clusterdesigner.engine.cost.cost_result import CloudOption, CostResult, DesignOption, PerRun
from clusterdesigner.engine.cost.design_verdict import BASIS, DesignVerdict, design_verdict
from clusterdesigner.engine.cost.resale import ResaleCurve, curves_from_records
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design.evaluation import (
    DesignEvaluation,
    DesignRanking,
    EvaluationAssumption,
    EvaluationFinding,
    RankedKey,
)
from clusterdesigner.engine.design.goals import goals_verdict
from clusterdesigner.engine.design.spec import DesignSpec, check_usable
from clusterdesigner.engine.rl import rl, rl_fleet
from clusterdesigner.engine.rl.rl import RLResult
from clusterdesigner.engine.rl.rl_fleet import FleetCost
from clusterdesigner.engine.serving.serving import ServingResult
from clusterdesigner.engine.serving_cost import serving_cost
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.training_result import TrainingEstimate
from clusterdesigner.engine.training.user_calibration import CalibrationState, CalibrationStatement, calibrate

cost_requests = design_spec.cost_requests
serving_request = design_spec.serving_request
training_request = design_spec.training_request

OPTION_LABELS = {
    "on_demand": "on-demand",
    "reserved_1y": "reserved 1 year",
    "reserved_3y": "reserved 3 years",
    "savings_1y": "savings plan 1 year",
    "savings_3y": "savings plan 3 years",
    "spot": "spot",
}


def evaluate_design(
    *,
    spec: DesignSpec,
    catalog: CatalogSpecs,
    records: Mapping[str, Any],
    price_rows: Sequence[Mapping[str, Any]] = (),
    price_findings: Sequence[Mapping[str, Any]] = (),
    freshness: Freshness | None = None,
    calibration: CalibrationState | None = None,
) -> DesignEvaluation:
    """A design's whole evaluation (the training engine, the cost engine per cloud offering, the RL, serving
    and mixed-fleet estimates the spec asks for, composed into the options table, rankings, assumptions,
    findings and verdicts) as the typed DesignEvaluation whose ``to_json()`` the design service stores.

    ``catalog``: the catalog as engine specs; ``records``: as plain records (the resale series, the
    accelerator's figures among the assumptions). ``freshness`` (today, PRICE_STALE_AFTER_DAYS) adds a
    ``stale_price`` finding per stale catalog price used. ``price_rows``, ``price_findings``: what resolving
    the owner's price book into ``spec`` set (apps.designs.pricing), first among the assumptions (a catalog
    figure's value and source read from the cost engine's answer) and with the findings. ``calibration``
    (issue 40): the training estimate calibrated before it is costed, and stated under ``calibration``.
    EngineError naming the spec's field when the design does not evaluate. The training and cost engines
    answer in JSON, read typed here; their typed classes model every key they write, so nothing is lost
    (tests/designs/test_evaluation_round_trip.py)."""
    plain = dict(spec.json)
    answers = _engine_answers(
        spec=plain,
        catalog=catalog,
        records=records,
        freshness=freshness,
        calibration=calibration,
        problem=spec.training_problem,
        inputs=spec.cost_inputs,
    )
    train, costs, typed = answers.train, answers.costs, answers.typed
    chosen, options, verdict = _options_and_verdict(plain, answers, catalog)
    assumptions = price_assumptions(price_rows, costs) + _assumptions(plain, train, costs, records)
    findings = [*map(dict, price_findings), *_unpriced_findings(costs, chosen, catalog), *_findings(costs)]
    return DesignEvaluation(
        spec=plain,
        training=TrainingEstimate.from_json(train),
        costs=typed,
        options=_with_npv_break_even(options, verdict),
        ranking=_npv_ranking(verdict, options) if verdict else _horizon_ranking(typed, options),
        assumptions=tuple(map(EvaluationAssumption.from_json, assumptions)),
        findings=tuple(map(EvaluationFinding.from_json, by_severity(findings))),
        verdict=goals_verdict(
            spec=plain,
            train=train,
            options=[o.to_json() for o in options],
            catalog=catalog,
            resale=answers.resale,
            costs=costs,
            design_verdict=verdict,
            calibration=calibration,
            problem=answers.problem,
            inputs=spec.cost_inputs,
        ),
        design_verdict=verdict,
        price_freshness=freshness,
        serving=serving_estimate(plain, catalog),
        rl=answers.rl,
        rl_fleet=_rl_fleet(
            spec=plain,
            pool_inputs=spec.rollout_cost_inputs,
            records=records,
            catalog=catalog,
            run=answers.rl,
            trainers=typed,
            freshness=freshness,
        ),
        calibration=answers.calibration,
    )


def evaluate_design_json(
    *,
    spec: DesignSpec,
    catalog: CatalogSpecs,
    records: Mapping[str, Any],
    price_rows: Sequence[Mapping[str, Any]] = (),
    price_findings: Sequence[Mapping[str, Any]] = (),
    freshness: Freshness | None = None,
    calibration: CalibrationState | None = None,
) -> dict[str, Any]:
    """:func:`evaluate_design` as JSON (its ``to_json()``): what the analyses (sweeps' evaluate items,
    comparisons) keep."""
    return evaluate_design(
        spec=spec,
        catalog=catalog,
        records=records,
        price_rows=price_rows,
        price_findings=price_findings,
        freshness=freshness,
        calibration=calibration,
    ).to_json()


@dataclass(frozen=True)
class _Answers:
    """The engines' answers a design's evaluation is composed from: the (calibrated) training estimate and
    the cost engine's answer per offering as they answered (JSON) and read typed, the resale series, the RL
    estimate, the calibration statement and the training request estimated (as parsed)."""

    train: dict[str, Any]
    costs: dict[str, dict[str, Any]]
    typed: dict[str, CostResult]
    resale: tuple[ResaleCurve, ...]
    rl: RLResult | None
    calibration: CalibrationStatement | None
    problem: training.TrainingRequest


def _options_and_verdict(
    spec: Mapping[str, Any], answers: _Answers, catalog: CatalogSpecs
) -> tuple[dict[str, Any], tuple[DesignOption, ...], DesignVerdict | None]:
    """The pricing models the spec chose by offering, the options table (owning and each chosen model,
    cheapest run first; a result with an infinite figure refused) and the rent-or-own verdict over it."""
    typed = answers.typed
    chosen = {c["offering"]: c.get("pricing_models") for c in (spec.get("costs") or {}).get("cloud") or []}
    options = _options(typed, chosen, catalog)
    _check_finite(
        {"training": answers.train, "costs": answers.costs, "options": [o.to_json() for o in options]}
    )
    verdict = design_verdict(
        costs=typed, chosen=chosen, names=_offering_names(typed, catalog), model_labels=cost.MODEL_LABELS
    )
    return chosen, options, verdict


def _engine_answers(
    *,
    spec: dict[str, Any],
    catalog: CatalogSpecs,
    records: Mapping[str, Any],
    freshness: Freshness | None,
    calibration: CalibrationState | None,
    problem: training.TrainingRequest | None = None,
    inputs: Sequence[CostInputs] = (),
) -> _Answers:
    """The training engine (calibrated), the RL engine, and the cost engine once per cloud offering;
    ``problem``, the training request the spec's parser parsed (design_spec.parse_design_spec given the
    catalog), is estimated as it is, and so are ``inputs``, the cost inputs it read (DesignSpec.cost_inputs;
    the spec's own when not given)."""
    if problem is None:  # the spec was parsed without the catalog
        check_usable(spec, catalog)
        problem = training.parse_request(
            training_request(spec), where=design_spec.training_sections(), **catalog.training_kwargs()
        )
    train = training.estimate_problem(problem).to_json()
    statement = None
    if calibration is not None:
        calibrated, statement = calibrate(train, calibration)
        train = dict(calibrated)
    costs: dict[str, dict[str, Any]] = {}
    resale = _resale_curves(spec, records)
    post_training = rl_estimate(spec, catalog)
    for read in inputs or design_spec.cost_inputs(spec):
        if post_training is not None:
            # An RL run lasts the chosen placement's days, not the pre-training estimate's.
            read = read.with_section("run", {"days": post_training.chosen.days}, at="spec.run")
        costs[read.key] = cost.tco(
            read, training=train, freshness=freshness, resale=resale, **catalog.cost_kwargs()
        )
    typed = {key: CostResult.from_json(result) for key, result in costs.items()}
    return _Answers(
        train=train,
        costs=costs,
        typed=typed,
        resale=resale,
        rl=post_training,
        calibration=statement,
        problem=problem,
    )


def price_assumptions(rows: Sequence[Mapping[str, Any]], costs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The resolved prices' assumption rows with the catalog's figures filled in from the cost engine's answer
    (its value and source): a figure the catalog lacks is the engine's default, said as such."""
    used: dict[str, dict[str, Any]] = {}
    for slug, result in costs.items():
        for item in result.get("assumptions") or []:
            used.setdefault(item["name"], item)
            if item["name"].startswith("cloud.usd_per_node_hour."):
                used[f"cloud.{slug}.{item['name'].rsplit('.', 1)[1]}"] = item
    out = []
    for row in rows:
        item = used.get(row["name"].removeprefix("prices."))
        if row["origin"] == "catalog" and item is not None:
            source = str(item.get("source") or "")
            origin = "catalog" if "catalog" in source or item.get("as_of") else "default"
            row = {**row, "value": item["value"], "origin": origin, "source": source}
            row["as_of"] = item.get("as_of") or ""
        out.append(dict(row))
    return out


def _rl_fleet(
    *,
    spec: dict[str, Any],
    pool_inputs: Sequence[CostInputs],
    records: Mapping[str, Any],
    catalog: CatalogSpecs,
    run: RLResult | None,
    trainers: Mapping[str, CostResult],
    freshness: Freshness | None,
) -> FleetCost | None:
    """A mixed fleet's run priced pool by pool (engine/rl/rl_fleet.py): the trainer pool is the design's
    cluster (its cost results, ``trainers``); the rollout pool is costed by the cost engine on its own part,
    server and offerings (``pool_inputs``: DesignSpec.rollout_cost_inputs, read from
    design_spec.rollout_pool_spec) for the RL estimate's days. None without an RL run or a rollout pool."""
    pool_spec = None if run is None else design_spec.rollout_pool_spec(spec)
    if run is None or pool_spec is None:
        return None
    chosen = run.chosen
    part = str(pool_spec["cluster"]["accelerator"])
    resale = curves_from_records(records, accelerator=part)
    rollouts: dict[str, CostResult] = {}
    for read in pool_inputs:
        priced = cost.tco(
            read.with_section("run", {"days": chosen.days}, at="spec.run"),
            freshness=freshness,
            resale=resale,
            **catalog.cost_kwargs(),
        )
        rollouts[read.key] = CostResult.from_json(priced)
    cluster = spec["cluster"]
    trainer = rl_fleet.pool_cost(
        pool="trainer",
        accelerator=str(cluster["accelerator"]),
        nodes=int(cluster["nodes"]),
        gpus_per_node=int(cluster["gpus_per_node"]),
        costs=trainers,
    )
    rollout = rl_fleet.pool_cost(
        pool="rollout",
        accelerator=part,
        nodes=int(pool_spec["cluster"]["nodes"]),
        gpus_per_node=int(pool_spec["cluster"]["gpus_per_node"]),
        costs=rollouts,
    )
    return rl_fleet.fleet_cost(trainer=trainer, rollout=rollout)


def _resale_curves(spec: Mapping[str, Any], records: Mapping[str, Any]) -> tuple[ResaleCurve, ...]:
    """The catalog's residual-value series of the design's accelerator (the cost engine reads the one that
    covers the depreciation life, else keeps the given or default residual value)."""
    return curves_from_records(records, accelerator=str(spec["cluster"]["accelerator"]))


def serving_estimate(spec: dict[str, Any], catalog: CatalogSpecs) -> ServingResult | None:
    """The serving estimate of a spec with a ``serving`` section (None without one); its errors name
    ``spec.serving.<field>``."""
    request = serving_request(spec)
    if request is None:
        return None
    at = design_spec.SERVING_AT
    return serving_cost.estimate(request, catalog=catalog, at=at, given_at=at)


def rl_estimate(spec: dict[str, Any], catalog: CatalogSpecs) -> RLResult | None:
    """The RL post-training estimate of a spec with an ``rl`` section (None without one): the placement and
    split the search chose, its step by part, days and GPU-hours; errors name ``spec.rl.<field>``,
    ``spec.workload.*`` or ``spec.cluster.*``."""
    request = design_spec.rl_request(spec)
    if request is None:
        return None
    where = design_spec.training_sections()
    return rl.estimate(request, where=where, rl_at="spec.rl", **catalog.training_kwargs())


def _check_finite(value: Any, path: str = "") -> None:
    """Refuse a result holding an infinite or NaN figure: stored, it would read as null and break every page
    that draws it. The engines bound their inputs so this should not happen; if it does, the design says why
    on its page instead of saving a result no page can show."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(
            f"the evaluation overflowed: {path} is {value}; an input is too large to compute with "
            "(check the costs and the cluster size)",
            field="",
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_finite(item, f"{path}.{index}")


def _band(per_run: PerRun, option: str, days_key: str) -> dict[str, Any]:
    """An option's run cost and expected days at the ends of the training estimate's error band, when the
    cost result carries them (cost._per_run_band)."""
    run = (per_run.usd or {}).get(option)
    pairs = {
        "run_cost_usd_low": None if run is None else run.usd_low,
        "run_cost_usd_high": None if run is None else run.usd_high,
        "days_low": getattr(per_run, f"{days_key}_low"),
        "days_high": getattr(per_run, f"{days_key}_high"),
    }
    return {k: float(v) for k, v in pairs.items() if v is not None}


def _run_cost(per_run: PerRun, option: str) -> float | None:
    """What one run costs on ``option`` (``on_prem`` or a pricing model); None when it has no price."""
    run = (per_run.usd or {}).get(option)
    return None if run is None else run.usd


def _own_option(result: CostResult, days: float | None) -> DesignOption:
    """The owning row of the options table, from the first offering's cost result (owning is the same in
    each)."""
    run = result.per_run
    return DesignOption(
        key="own",
        label="Own (on-prem)",
        kind="own",
        offering=None,
        pricing_model=None,
        total_usd=result.on_prem.total_usd,
        usd_per_gpu_hour=result.on_prem.usd_per_gpu_hour,
        run_cost_usd=_run_cost(run, "on_prem"),
        days=days,
        break_even_utilization=None,
        **_band(run, "on_prem", "effective_days"),
    )


def _cloud_option(
    slug: str, offering: Any, model: str, row: CloudOption, result: CostResult, days: float | None
) -> DesignOption:
    """One offering's pricing model as a row of the options table."""
    run = result.per_run
    be = result.break_even_utilization.get(model)
    days_key = "spot_effective_days" if model == "spot" else "effective_days"
    name = f"{_provider_label(offering.provider)} {offering.instance_type}" if offering else slug
    return DesignOption(
        key=f"{slug}:{model}",
        label=f"{name} {OPTION_LABELS.get(model, model)}",
        kind="cloud",
        offering=slug,
        pricing_model=model,
        total_usd=row.total_usd,
        usd_per_gpu_hour=row.usd_per_gpu_hour,
        run_cost_usd=_run_cost(run, model),
        days=run.spot_effective_days if model == "spot" else days,
        break_even_utilization=None if be is None else _break_even(be.utilization),
        break_even_meaning="" if be is None else be.meaning,
        **_band(run, model, days_key),
    )


def _options(
    costs: Mapping[str, CostResult], chosen: dict[str, Any], catalog: Any
) -> tuple[DesignOption, ...]:
    """Owning and every chosen cloud pricing model of each offering, cheapest run first."""
    options: list[DesignOption] = []
    for index, (slug, result) in enumerate(costs.items()):
        days = result.per_run.effective_days or result.per_run.days
        if index == 0:
            options.append(_own_option(result, days))
        offering = catalog.offerings.get(slug)
        for model, row in result.cloud.items():
            if chosen.get(slug) and model not in chosen[slug]:
                continue
            options.append(_cloud_option(slug, offering, model, row, result, days))
    options.sort(key=lambda o: (o.run_cost_usd is None, o.run_cost_usd or o.total_usd))
    return tuple(options)


def _horizon_ranking(costs: Mapping[str, CostResult], options: Sequence[DesignOption]) -> DesignRanking:
    """The options cheapest first over the whole horizon, read from the cost engine's ``ranking`` of each
    offering (owning's total over the horizon, each rent option's bill over it) and merged into the design's
    option keys: one frame, so a per-run figure never ranks against a horizon one. Options the spec did not
    ask for are left out, as ``options`` leaves them out."""
    shown = {o.key for o in options}
    totals: dict[str, float] = {}
    for slug, result in costs.items():
        for row in result.ranking.options if result.ranking else ():
            key = "own" if row.option == "on_prem" else f"{slug}:{row.option}"
            if key in shown:
                totals[key] = float(row.total_usd)
    return _ranking("whole horizon", totals)


def _offering_names(costs: Mapping[str, CostResult], catalog: Any) -> dict[str, str]:
    """Each offering's display name, as the options table writes it ("AWS p5.48xlarge")."""
    out = {}
    for slug in costs:
        offering = catalog.offerings.get(slug)
        out[slug] = f"{_provider_label(offering.provider)} {offering.instance_type}" if offering else slug
    return out


def _with_npv_break_even(
    options: tuple[DesignOption, ...], verdict: DesignVerdict | None
) -> tuple[DesignOption, ...]:
    """Each rent option's break-even utilization with owning on the verdict's basis (where the NPVs of the
    monthly cash flows cross), in place of the annualised closed form (and its meaning)."""
    if verdict is None:
        return options
    by_key = {o.key: o.break_even_utilization for o in verdict.options}
    return tuple(
        replace(o, break_even_utilization=by_key[o.key], break_even_meaning=None) if o.key in by_key else o
        for o in options
    )


def _npv_ranking(verdict: DesignVerdict, options: Sequence[DesignOption]) -> DesignRanking:
    """The options cheapest first by the NPV of their monthly cash flows (the verdict's basis): owning and
    each chosen rent option of every offering, ties by key, so the offerings' order changes nothing."""
    shown = {o.key for o in options}
    rows = [verdict.own, *verdict.options]
    return _ranking(BASIS, {r.key: r.npv_usd for r in rows if r.key in shown})


def _ranking(frame: str, totals: Mapping[str, float]) -> DesignRanking:
    """The options' keys cheapest first in ``frame``, ties by key (so the offerings' order changes
    nothing)."""
    order = sorted(totals, key=lambda k: (totals[k], k))
    return DesignRanking(frame=frame, options=tuple(RankedKey(key=k, total_usd=totals[k]) for k in order))


def _provider_label(provider: str) -> str:
    return PROVIDER_LABELS.get(provider, provider)


def _break_even(u: float | None) -> float | None:
    """The break-even utilization when it lies in (0, 1]; outside it one option wins everywhere (see
    meaning)."""
    return u if u is not None and 0 < u <= 1 else None


def _assumptions(
    spec: dict[str, Any], train: dict[str, Any], costs: dict[str, Any], records: Mapping[str, Any]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for result in costs.values():
        for item in result.get("assumptions") or []:
            if item["name"] not in seen:
                seen.add(item["name"])
                rows.append({"as_of": "", **item})
    for item in train.get("assumptions") or []:
        name = f"training.{item['name']}"
        if name not in seen:
            seen.add(name)
            rows.append({"as_of": "", **item, "name": name})
    accelerator = next(
        (a for a in records.get("accelerators", []) if a["slug"] == spec["cluster"]["accelerator"]), None
    )
    if accelerator:
        for key, unit in (
            ("bf16_dense_tflops", "TFLOP/s"),
            ("fp8_dense_tflops", "TFLOP/s"),
            ("fp4_dense_tflops", "TFLOP/s"),
            ("memory_gib", "GiB"),
            ("hbm_bandwidth_tbps", "TB/s"),
            ("scaleup_bandwidth_gbps", "GB/s"),
        ):
            if accelerator.get(key) is not None:
                rows.append(
                    {
                        "name": f"catalog.{accelerator['slug']}.{key}",
                        "value": accelerator[key],
                        "unit": unit,
                        "source": accelerator.get("source", "catalog"),
                        "as_of": accelerator.get("as_of") or "",
                    }
                )
    return rows


def _unpriced_findings(
    costs: dict[str, dict[str, Any]], chosen: dict[str, Any], catalog: Any
) -> list[dict[str, Any]]:
    """A pricing model the design asks for that has no price now (the catalog row went since it was saved)
    is said, not dropped from the options in silence."""
    out = []
    for slug, models in chosen.items():
        result = costs.get(slug) or {}
        # An option that cannot finish the run is priced; the engine's option_cannot_finish finding says why.
        priced = {**(result.get("cloud") or {}), **(result.get("cloud_unavailable") or {})}
        offering = catalog.offerings.get(slug)
        name = offering.instance_type if offering else slug
        for model in models or []:
            if model not in priced:
                why = catalog.why_unusable("cloud_offerings", slug, model)
                reason = (
                    f"the catalog's price cannot be used ({why}) and none was negotiated"
                    if why
                    else "none in the catalog, none negotiated"
                )
                label = f"{name} {OPTION_LABELS.get(model, model)}"
                message = f"{label}: asked for but has no price ({reason}), so it is not compared."
                out.append({"severity": "warning", "code": "pricing_model_unpriced", "message": message})
    return out


def _findings(costs: dict[str, Any]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for result in costs.values():
        for finding in result.get("findings") or []:
            key = finding.get("code", "") + finding.get("message", "")
            if key not in seen:
                seen.add(key)
                out.append(finding)
    return by_severity(out)


def by_severity(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = {"critical": 0, "error": 0, "warning": 1, "info": 2}
    return sorted(findings, key=lambda f: order.get(f.get("severity", "info"), 3))
