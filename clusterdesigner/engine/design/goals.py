"""A design's goals (``spec.goals``: a deadline in days, a budget in USD per run, a budget in USD of NPV over
the horizon) against its evaluation, for the option the rent-or-own verdict picks.

The sentences and the arithmetic are verdict.py's; this module picks the numbers from an evaluation and,
for a missed deadline, explores larger clusters (verdict.explore) by re-estimating the run on more nodes
here in the engine: the training engine (the spec's fixed layout with dp scaled, or a search when the layout
is searched), then the cost engine for the cheapest option, so the days compared are the same kind
(expected, with failures and restarts) at every node count. Each node count is the design's parsed training
request and cost inputs with the node count replaced: nothing is parsed again. Public: :func:`goals_verdict`,
which design.evaluate_design calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.cost import cost, cost_request, verdict
from clusterdesigner.engine.cost.cost_inputs import CostInputs
from clusterdesigner.engine.cost.cost_result import CostResult
from clusterdesigner.engine.cost.defaults import DAYS_PER_MONTH
from clusterdesigner.engine.cost.design_verdict import DesignVerdict
from clusterdesigner.engine.cost.resale import ResaleCurve
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design.spec import cost_inputs, training_request
from clusterdesigner.engine.training import training
from clusterdesigner.engine.training.user_calibration import CalibrationState, calibrate

MAX_NODES = design_spec.MAX_NODES  # the spec's limit on cluster.nodes


def goals_verdict(
    *,
    spec: dict[str, Any],
    train: dict[str, Any],
    options: list[dict[str, Any]],
    catalog: CatalogSpecs,
    resale: Sequence[ResaleCurve] = (),
    costs: Mapping[str, Any] | None = None,
    design_verdict: DesignVerdict | None = None,
    calibration: CalibrationState | None = None,
    problem: training.TrainingRequest | None = None,
    inputs: Sequence[CostInputs] = (),
) -> verdict.Verdict:
    """The verdict (verdict.Verdict) on the spec's goals; status "none" without goals.

    The goals are checked for the option the rent-or-own verdict picks on the NPV of the monthly cash flows
    (``design_verdict``: owning when it wins, else its rival), so that the goals and the verdict name the same
    option (issue #31); without a design verdict (no rent option chosen) for ``options[0]``.
    The design's days are that option's expected days (failures and restarts included) when it has them,
    else the training estimate's failure-free ``time_to_train_days``. ``budget_usd`` is checked on the cost
    per run (verdict.BUDGET_BASIS, stated in the result), with what choosing the option commits beside it,
    read from ``costs`` (the cost results by offering); ``budget_npv_usd`` on the NPV of the option's cash out
    over the horizon (verdict.BUDGET_NPV_BASIS). ``calibration`` (the design owner's, issue 40) calibrates
    the estimate at every larger node count as the design's own is, so the exploration and the design's days
    are of one kind. ``problem`` and ``inputs``: the design's training request and cost inputs as its
    evaluation parsed them (the spec's own, parsed here, when not given); each larger node count is them with
    the node count replaced.
    """
    goals = spec.get("goals") or {}
    deadline, budget = goals.get("deadline_days"), goals.get("budget_usd")
    nodes = int(spec["cluster"]["nodes"])
    cheapest = _verdict_choice(options, design_verdict)
    if cheapest is not None and cheapest.get("days") is not None:
        basis, days = "expected", float(cheapest["days"])
    else:
        basis, days = "failure_free", float(train["time_to_train_days"])
    # Owned capacity runs only after its procurement lead time (the cost engine's cashflow.lead_time_months).
    inputs = tuple(inputs) or cost_inputs(spec)
    delay = (
        _lead_time_days(inputs, catalog) if cheapest is not None and cheapest.get("kind") == "own" else 0.0
    )
    design = verdict.RunEstimate(
        nodes, days, cheapest.get("run_cost_usd") if cheapest else None, start_delay_days=delay
    )
    larger: tuple[verdict.RunEstimate, ...] = ()
    if deadline is not None and days + delay > deadline:
        parsed = problem or training.parse_request(training_request(spec), **catalog.training_kwargs())
        chosen = _inputs_of(cheapest, inputs)
        larger = verdict.explore(
            nodes=nodes,
            deadline_days=deadline,
            estimate=lambda n: replace(
                _estimate_on(parsed, chosen, n, cheapest, catalog, resale, calibration),
                start_delay_days=delay,
            ),
            max_nodes=MAX_NODES,
        )
    result = verdict.compose(
        deadline_days=deadline,
        budget_usd=budget,
        design=design,
        larger=larger,
        option=cheapest["label"] if cheapest else "",
        days_basis=basis,
        **_commitment(cheapest, costs or {}),
        budget_npv_usd=goals.get("budget_npv_usd"),
        npv_usd=_npv_of(cheapest, design_verdict),
        horizon_years=None if design_verdict is None else design_verdict.horizon_years,
    )
    return result


def _verdict_choice(
    options: Sequence[dict[str, Any]], design_verdict: DesignVerdict | None
) -> dict[str, Any] | None:
    """The option the rent-or-own verdict picks by NPV (owning when it saves, else the rival), as its row of
    the options table; the first row when there is no verdict (owning alone)."""
    if design_verdict is not None:
        found = next((o for o in options if o.get("key") == design_verdict.choice_key), None)
        if found is not None:
            return found
    return options[0] if options else None


def _npv_of(option: Mapping[str, Any] | None, design_verdict: DesignVerdict | None) -> float | None:
    """The NPV of ``option``'s monthly cash flows in the design verdict (None without one)."""
    if option is None or design_verdict is None:
        return None
    rows = [design_verdict.own, *design_verdict.options]
    return next((r.npv_usd for r in rows if r.key == option.get("key")), None)


def _commitment(option: Mapping[str, Any] | None, costs: Mapping[str, Any]) -> dict[str, Any]:
    """What choosing ``option`` commits beyond one run: owning's capex at delivery (the cost result's
    ``on_prem.capex_usd``, the same in every offering), or a reservation's dollars for its whole term
    (``per_run.usd.<model>.commitment_per_term_usd``); nothing for a pay-as-you-go option."""
    if option is None or not costs:
        return {}
    if option.get("kind") == "own":
        capex = (next(iter(costs.values())).get("on_prem") or {}).get("capex_usd")
        return {} if capex is None else {"commitment_usd": float(capex), "commitment": "capex at delivery"}
    run = (((costs.get(option.get("offering") or "") or {}).get("per_run") or {}).get("usd") or {}).get(
        option.get("pricing_model") or ""
    ) or {}
    if run.get("commitment_per_term_usd") is None:
        return {}
    term = int(run["commitment_term_months"])
    return {"commitment_usd": float(run["commitment_per_term_usd"]), "commitment": f"a {term}-month term"}


def _lead_time_days(inputs: Sequence[CostInputs], catalog: CatalogSpecs) -> float:
    """The procurement lead time of owned capacity in days, as the cost engine resolves it for the design's
    first cost inputs (the request's, else the sourced default capped below the horizon) × 365/12."""
    values, _, _ = cost_request.resolve(inputs[0], catalog, None)
    return int(values["cashflow.lead_time_months"]) * DAYS_PER_MONTH


def _inputs_of(option: Mapping[str, Any] | None, inputs: Sequence[CostInputs]) -> CostInputs:
    """The cost inputs that price ``option``: those of its offering, else the first (owning is in all)."""
    offering = None if option is None else option.get("offering")
    return next((i for i in inputs if i.offering == offering), inputs[0])


def _scaled(request: training.TrainingRequest, nodes: int) -> training.TrainingRequest:
    """The parsed training request on ``nodes`` nodes; a fixed layout keeps tp, pp, cp and scales dp with the
    node count."""
    problem = request.problem
    fixed = dict(request.fixed)
    if fixed.get("dp"):
        fixed["dp"] = round(fixed["dp"] * nodes / problem.cluster.nodes)
    cluster = replace(problem.cluster, nodes=nodes)
    return replace(request, problem=replace(problem, cluster=cluster), fixed=fixed)


def _estimate_on(
    request: training.TrainingRequest,
    inputs: CostInputs,
    nodes: int,
    option: dict[str, Any] | None,
    catalog: CatalogSpecs,
    resale: Sequence[ResaleCurve] = (),
    calibration: CalibrationState | None = None,
) -> verdict.RunEstimate:
    """The run on ``nodes`` nodes: the cheapest option's expected days and cost per run at that size (the
    failure-free days when there is no option), or why it cannot be estimated. ``request`` and ``inputs``,
    the design's parsed training request and the option's cost inputs, are taken with the node count
    replaced."""
    try:
        train = training.estimate_problem(_scaled(request, nodes)).to_json()
        if calibration is not None:  # the factor of the regime at this size, as evaluate_design applies it
            train = dict(calibrate(train, calibration)[0])
        if option is None:
            return verdict.RunEstimate(nodes, float(train["time_to_train_days"]))
        # The same resale series as the design's own evaluation, so both price a node alike.
        result = CostResult.from_json(
            cost.tco(
                inputs.with_nodes(nodes),
                training=train,
                resale=resale,
                uncertainty=False,  # the days, the cost per run and the NPVs are all read here
                what_ifs=False,
                **catalog.cost_kwargs(),
            )
        )
    except EngineError as exc:
        return verdict.RunEstimate(nodes, None, error=exc.message)
    model = option.get("pricing_model") or "on_prem"
    per_run = result.per_run
    days = per_run.spot_effective_days if model == "spot" else per_run.effective_days
    run_cost = (per_run.usd or {}).get(model)
    return verdict.RunEstimate(
        nodes, days, None if run_cost is None else run_cost.usd, npv_usd=result.npv_of(model)
    )
