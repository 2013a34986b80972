"""What changed between two designs (or two versions of one) and why the answer moved (issue #36).

Three parts, from two design specs and an ``evaluate`` function (spec → :class:`DesignEvaluation`, raising
:class:`EngineError` for a spec that cannot be evaluated), so that this module stays pure:

- **Inputs that differ**, field by field: the specs are walked together and each leaf that differs is one
  input, named by its flattened path (``workload.training.tokens``, ``costs.on_prem.server_usd``) with its
  unit where the defaults tables know it (engine/cost/defaults.py). A value that is not an object on both
  sides (a list such as ``costs.cloud``, ``parallelism`` moving between ``"search"`` and a layout, a section
  only one side has) is **one inseparable input**: it is replaced whole.
- **Outputs that moved**: days (expected and failure-free), GPUs, the layout, each option's NPV, the
  verdict (winner and sentence), its NPV difference, the break-even utilization, the payback month and each
  flip threshold, each with old, new and delta (None where a side lacks the figure or it is not a number).
- **Attribution** of the change in the verdict's NPV difference, ``saving_usd`` = NPV(rival rent option) −
  NPV(own) of engine/cost/design_verdict.py, to the inputs:

  *One at a time*, in a stated order (the given one, else the inputs' order in the spec): step k evaluates
  the old spec with the first k inputs set to their new values; its delta is the change from the last
  evaluated step. The steps are real evaluations, so they telescope: their sum is f(new) − f(old), asserted
  to 1e-6 USD. **Rule for a step that cannot be evaluated** (the intermediate spec is invalid, e.g. a layout
  that does not divide the new node count): the step is reported with ``evaluated`` false and the engine's
  reason, and its input is grouped with the next input; the group's step carries the delta of both. The
  last step is the new spec itself, which evaluates, so every input is attributed.

  *Shapley* (order-independent; at most :data:`SHAPLEY_MAX_INPUTS` inputs): the average over all orders
  of each input's one-at-a-time delta, computed from the 2^n subset evaluations (memoised, shared with the
  one-at-a-time pass): φ_i = Σ_{S ⊆ N∖{i}} |S|! (n − |S| − 1)! / n! · (v(S ∪ {i}) − v(S)) (Shapley 1953,
  "A value for n-person games"; efficiency: Σ φ_i = v(N) − v(∅)). The players are the units the
  one-at-a-time pass attributed: each input, or the group a step that could not be evaluated formed with
  the next input (so, there, the grouping follows the stated order). When some subset's spec still cannot
  be evaluated the Shapley values are not given, and ``shapley_note`` says which subset and why.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.errors import EngineError, InputError
from clusterdesigner.engine.core.json_object import JsonObject, omit
from clusterdesigner.engine.cost.defaults import COST_DEFAULTS, DESIGN_DEFAULTS
from clusterdesigner.engine.design.evaluation import DesignEvaluation

Evaluate = Callable[[Mapping[str, Any]], DesignEvaluation]
SHAPLEY_MAX_INPUTS = 8
SUM_TOLERANCE_USD = 1e-6
QUANTITY = "saving_usd"
QUANTITY_LABEL = "NPV difference: NPV(cheapest chosen rent option) − NPV(own); > 0 when owning costs less"
_ABSENT = object()  # a key one spec has and the other lacks
# Units by name ending, for spec fields the defaults tables do not list (the project puts units in names).
_SUFFIX_UNITS = (
    ("_usd_per_gpu", "USD/GPU"),
    ("_usd", "USD"),
    ("_kw", "kW"),
    ("_kwh", "kWh"),
    ("_years", "years"),
    ("_months", "months"),
    ("_gib", "GiB"),
    ("_gbps", "Gbit/s"),
    ("_per_year", "per year"),
    ("_days", "days"),
)


@dataclass(frozen=True, kw_only=True)
class InputChange(JsonObject):
    """One input that differs: its flattened spec path, unit ("" where unknown) and both values (None where
    the spec lacks the key). ``whole`` is true for a value replaced whole (a list, or a section)."""

    path: str
    unit: str
    old: Any
    new: Any
    whole: bool


@dataclass(frozen=True, kw_only=True)
class OutputChange(JsonObject):
    """One output of the evaluation on both sides; ``delta`` = new − old for numbers both sides have."""

    name: str
    label: str
    unit: str
    old: Any
    new: Any
    delta: float | None
    moved: bool


@dataclass(frozen=True, kw_only=True)
class AttributionStep(JsonObject):
    """One step of the one-at-a-time attribution: the inputs set to their new values at this step (more
    than one when an earlier step could not be evaluated), the quantity after it and its change from the
    last evaluated step; ``evaluated`` false with ``reason`` for a spec that could not be evaluated."""

    inputs: tuple[str, ...]
    evaluated: bool
    value_usd: float | None
    delta_usd: float | None
    cumulative_usd: float | None
    reason: str | None = omit()


@dataclass(frozen=True, kw_only=True)
class ShapleyValue(JsonObject):
    """One input's Shapley value: its one-at-a-time delta averaged over every order of the inputs. Where a
    step could not be evaluated its inputs are one player (``inputs``; ``input`` joins them with " + ")."""

    input: str
    inputs: tuple[str, ...]
    value_usd: float


@dataclass(frozen=True, kw_only=True)
class Attribution(JsonObject):
    """The change in the verdict's NPV difference, split over the inputs (module docstring)."""

    quantity: str
    label: str
    old_usd: float
    new_usd: float
    total_usd: float
    order: tuple[str, ...]
    steps: tuple[AttributionStep, ...]
    shapley: tuple[ShapleyValue, ...] | None
    shapley_note: str | None = omit()
    evaluations: int


@dataclass(frozen=True, kw_only=True)
class DesignDiff(JsonObject):
    """Two design specs compared: inputs, outputs and the attribution (None, with ``attribution_note``,
    when a side has no rent-or-own verdict or no input differs)."""

    inputs: tuple[InputChange, ...]
    outputs: tuple[OutputChange, ...]
    attribution: Attribution | None
    attribution_note: str | None = omit()


def design_diff(
    *,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    evaluate: Evaluate,
    order: Sequence[str] | None = None,
    old_result: DesignEvaluation | None = None,
    new_result: DesignEvaluation | None = None,
) -> DesignDiff:
    """The diff of specs ``old`` → ``new`` (module docstring). ``order`` lists every changed input's path
    once (None: the spec's order); another list is an :class:`InputError` on field ``order``. Both specs
    must evaluate (their evaluations may be given as ``old_result``/``new_result``). The inputs are listed
    in the stated order too."""
    found = {c.path: c for c in input_changes(old, new)}
    paths = _ordered(list(found), order)
    changes = tuple(found[p] for p in paths)
    before = old_result or evaluate(old)
    after = new_result or evaluate(new)
    outputs = output_changes(before, after)
    if not changes:
        return DesignDiff(inputs=(), outputs=outputs, attribution=None, attribution_note="no input differs")
    if before.design_verdict is None or after.design_verdict is None:
        note = "no rent-or-own verdict on both sides (a design without a cloud option): nothing to attribute"
        return DesignDiff(inputs=changes, outputs=outputs, attribution=None, attribution_note=note)
    ladder = _Ladder(old=old, new=new, evaluate=evaluate)
    # Every input set to its new value is the new spec itself, so the last step is the new evaluation.
    assert ladder.spec(frozenset(paths)) == new
    ladder.seed(frozenset(), before)
    ladder.seed(frozenset(paths), after)
    return DesignDiff(inputs=changes, outputs=outputs, attribution=attribute(ladder=ladder, order=paths))


def input_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> tuple[InputChange, ...]:
    """Every leaf that differs between the two specs, in the spec's order (old's keys, then new's)."""
    out: list[InputChange] = []
    _walk(old, new, (), out)
    return tuple(out)


def _walk(old: Any, new: Any, at: tuple[str, ...], out: list[InputChange]) -> None:
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        keys = [*old, *(k for k in new if k not in old)]
        for key in keys:
            _walk(old.get(key, _ABSENT), new.get(key, _ABSENT), (*at, str(key)), out)
        return
    if old == new and type(old) is type(new):
        return
    path = ".".join(at)
    out.append(
        InputChange(
            path=path,
            unit=unit_of(path),
            old=None if old is _ABSENT else copy.deepcopy(old),
            new=None if new is _ABSENT else copy.deepcopy(new),
            whole=not (_scalar(old) and _scalar(new)),
        )
    )


def _scalar(value: Any) -> bool:
    return value is _ABSENT or value is None or isinstance(value, (str, int, float, bool))


def unit_of(path: str) -> str:
    """A spec field's unit: the design defaults' (``cluster.nodes``: nodes), the cost engine's for a
    ``costs.*`` field (``costs.on_prem.pue``: ratio), else by the name's ending (``_usd``: USD)."""
    if path in DESIGN_DEFAULTS:
        return DESIGN_DEFAULTS[path].unit
    known = COST_DEFAULTS.get(path.removeprefix("costs."))
    if path.startswith("costs.") and known is not None:
        return known.unit
    name = path.rsplit(".", 1)[-1]
    return next((unit for suffix, unit in _SUFFIX_UNITS if name.endswith(suffix)), "")


def _ordered(paths: list[str], order: Sequence[str] | None) -> tuple[str, ...]:
    if order is None:
        return tuple(paths)
    if sorted(order) != sorted(paths):
        raise InputError(
            "order must list every changed input once: " + ", ".join(paths) or "(none changed)", field="order"
        )
    return tuple(order)


class _Ladder:
    """Evaluations of the old spec with a subset of the changed inputs set to their new values, memoised by
    the subset; a subset whose spec cannot be evaluated keeps the engine's reason."""

    def __init__(self, *, old: Mapping[str, Any], new: Mapping[str, Any], evaluate: Evaluate) -> None:
        self.old, self.new, self.evaluate = old, new, evaluate
        self.memo: dict[frozenset[str], float | str] = {}
        self.calls = 0

    def seed(self, subset: frozenset[str], result: DesignEvaluation) -> None:
        self.memo[subset] = _quantity(result)

    def value(self, subset: frozenset[str]) -> float | str:
        """The quantity at ``subset`` (a float), or why its spec could not be evaluated (a str)."""
        if subset not in self.memo:
            self.calls += 1
            try:
                self.memo[subset] = _quantity(self.evaluate(self.spec(subset)))
            except EngineError as error:
                self.memo[subset] = f"{error.field}: {error.message}" if error.field else error.message
        return self.memo[subset]

    def spec(self, subset: frozenset[str]) -> dict[str, Any]:
        """The old spec with the inputs of ``subset`` set to the new spec's values (or removed where the new
        spec lacks them)."""
        spec = copy.deepcopy(dict(self.old))
        for path in subset:
            keys = path.split(".")
            value: Any = self.new
            for key in keys:
                value = value.get(key, _ABSENT) if isinstance(value, Mapping) else _ABSENT
            node = spec
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            if value is _ABSENT:
                node.pop(keys[-1], None)
            else:
                node[keys[-1]] = copy.deepcopy(value)
        return spec


def _quantity(result: DesignEvaluation) -> float | str:
    verdict = result.design_verdict
    if verdict is None:
        return "no rent-or-own verdict (no chosen rent option was priced)"
    return float(verdict.saving_usd)


def attribute(*, ladder: _Ladder, order: tuple[str, ...]) -> Attribution:
    """The one-at-a-time steps in ``order`` and, for at most SHAPLEY_MAX_INPUTS inputs, the Shapley values."""
    start, end = ladder.value(frozenset()), ladder.value(frozenset(order))
    assert isinstance(start, float) and isinstance(end, float)
    steps = _steps(ladder, order, start)
    total = end - start
    summed = math.fsum(s.delta_usd for s in steps if s.delta_usd is not None)
    # Each step's delta is a difference of two evaluations, rounded once: within 1e-6 USD, or, for figures
    # so large that a double cannot hold a millionth of a dollar, within those roundings.
    values = [abs(s.value_usd) for s in steps if s.value_usd is not None] + [abs(start)]
    tolerance = max(SUM_TOLERANCE_USD, 2 * len(steps) * math.ulp(max(values)))
    assert abs(summed - total) <= tolerance, (summed, total)
    # The players: each input, or the group a step that could not be evaluated formed with the next input.
    units = tuple(s.inputs for s in steps if s.evaluated)
    shapley, note = _shapley(ladder, units) if len(units) <= SHAPLEY_MAX_INPUTS else (None, None)
    if len(units) > SHAPLEY_MAX_INPUTS:
        note = f"{len(units)} inputs changed: Shapley values are computed for at most {SHAPLEY_MAX_INPUTS}"
    return Attribution(
        quantity=QUANTITY,
        label=QUANTITY_LABEL,
        old_usd=start,
        new_usd=end,
        total_usd=total,
        order=order,
        steps=steps,
        shapley=shapley,
        shapley_note=note,
        evaluations=ladder.calls,
    )


def _steps(ladder: _Ladder, order: tuple[str, ...], start: float) -> tuple[AttributionStep, ...]:
    steps: list[AttributionStep] = []
    last, pending = start, []
    for k, path in enumerate(order):
        pending.append(path)
        value = ladder.value(frozenset(order[: k + 1]))
        failed = isinstance(value, str)
        number = None if isinstance(value, str) else value
        steps.append(
            AttributionStep(
                inputs=tuple(pending),
                evaluated=not failed,
                value_usd=number,
                delta_usd=None if number is None else number - last,
                cumulative_usd=None if number is None else number - start,
                reason=value if isinstance(value, str) else None,
            )
        )
        if number is not None:
            last, pending = number, []
    return tuple(steps)


def _shapley(
    ladder: _Ladder, units: tuple[tuple[str, ...], ...]
) -> tuple[tuple[ShapleyValue, ...] | None, str | None]:
    """Each unit's Shapley value over the subsets of ``units`` (a unit's inputs are set together)."""
    n = len(units)
    weights = [math.factorial(s) * math.factorial(n - s - 1) / math.factorial(n) for s in range(n)]
    values: list[ShapleyValue] = []
    for i, unit in enumerate(units):
        others = units[:i] + units[i + 1 :]
        terms: list[float] = []
        for mask in range(1 << (n - 1)):
            subset = frozenset(p for j, other in enumerate(others) if mask >> j & 1 for p in other)
            without, with_ = ladder.value(subset), ladder.value(subset | set(unit))
            if isinstance(without, str) or isinstance(with_, str):
                bad = subset if isinstance(without, str) else subset | set(unit)
                why = without if isinstance(without, str) else with_
                return None, f"the spec with only {_names(bad)} changed could not be evaluated ({why})"
            terms.append(weights[mask.bit_count()] * (with_ - without))
        values.append(ShapleyValue(input=" + ".join(unit), inputs=unit, value_usd=math.fsum(terms)))
    return tuple(values), None


def _names(subset: frozenset[str]) -> str:
    return ", ".join(sorted(subset)) or "nothing"


def output_changes(old: DesignEvaluation, new: DesignEvaluation) -> tuple[OutputChange, ...]:
    """The outputs both evaluations state (either may lack one), old then new, in a fixed order."""
    a, b = _outputs(old), _outputs(new)
    names = [*a, *(k for k in b if k not in a)]
    out = []
    for name in names:
        label, unit, before = a.get(name, (b[name][0], b[name][1], None))
        after = b[name][2] if name in b else None
        delta = after - before if _number(before) and _number(after) else None
        out.append(
            OutputChange(
                name=name, label=label, unit=unit, old=before, new=after, delta=delta, moved=before != after
            )
        )
    return tuple(out)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


Outputs = dict[str, tuple[str, str, Any]]


def _outputs(result: DesignEvaluation) -> Outputs:
    out: Outputs = {}
    train = result.training
    if train is not None:
        chosen, lay = train.chosen, train.chosen.parallelism
        out["gpus"] = ("GPUs", "GPUs", train.summary.cluster.gpus)
        out["layout"] = (
            "Layout",
            "",
            f"TP {lay.tp} PP {lay.pp} DP {lay.dp} CP {lay.cp} EP {lay.ep} VPP {lay.vpp},"
            f" micro-batch {lay.micro_batch}, {lay.recompute} recompute, {lay.sharding}",
        )
        out["days_failure_free"] = ("Days to train, failure-free", "days", chosen.time_to_train_days)
    out["days_expected"] = ("Days to train, with failures and restarts", "days", result.expected_days)
    verdict = result.design_verdict
    if verdict is not None:
        out.update(_verdict_outputs(result))
    return out


def _verdict_outputs(result: DesignEvaluation) -> Outputs:
    verdict = result.design_verdict
    assert verdict is not None
    out: Outputs = {
        "verdict.winner": ("Verdict: cheaper", "", verdict.winner),
        "verdict.choice": ("Verdict: option chosen", "", verdict.choice_key),
        "verdict.sentence": ("Verdict", "", verdict.sentence),
        QUANTITY: ("NPV difference: rival rent − own", "USD", verdict.saving_usd),
        "npv.own": (f"NPV: {verdict.own.label}", "USD", verdict.own.npv_usd),
    }
    for option in verdict.options:
        out[f"npv.{option.key}"] = (f"NPV: {option.label}", "USD", option.npv_usd)
    out["break_even_utilization"] = ("Break-even utilization", "fraction", verdict.break_even_utilization)
    out["payback_month"] = ("Payback (month of the horizon)", "", verdict.payback_month)
    for flip in verdict.flips:
        out[f"flip.{flip.name}"] = (f"Verdict flips at: {flip.label}", flip.unit, flip.threshold)
    return out
