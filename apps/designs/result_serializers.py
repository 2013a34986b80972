"""Output serializers for the training and cost engines' results (engine.training.training_result,
engine.cost.cost_result), field by field, so that the OpenAPI schema says what an evaluation's ``training``
and ``costs`` hold. They are built from the dataclasses'
fields and types, so the schema follows the result when a field is added; they describe, they never parse.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

from rest_framework import serializers

from clusterdesigner.engine.core.json_object import optional
from clusterdesigner.engine.cost import cost_result as cr
from clusterdesigner.engine.cost.design_verdict import DesignVerdict
from clusterdesigner.engine.cost.verdict import RentOrOwn
from clusterdesigner.engine.design import attribution as at
from clusterdesigner.engine.design import evaluation as ev
from clusterdesigner.engine.training import training_result as tr
from clusterdesigner.engine.training.user_calibration import CalibrationStatement

_SCALARS: dict[type, type[serializers.Field[Any, Any, Any, Any]]] = {
    int: serializers.IntegerField,
    float: serializers.FloatField,
    bool: serializers.BooleanField,
    str: serializers.CharField,
}

# What a figure means, where its name alone does not say.
HELP = {
    "mode": '"evaluate" (the spec gave the layout) or "search" (the best layout found).',
    "fits": "Whether the layout's memory per GPU is within the accelerator's capacity.",
    "memory_capacity_gib": "The accelerator's memory, GiB.",
    "headroom_gib": "Capacity minus memory per GPU, GiB (negative when it does not fit).",
    "model_tflops_per_gpu": "Model FLOPs per token × tokens/s per GPU (no recompute), TFLOP/s.",
    "hardware_tflops_per_gpu": "As model_tflops_per_gpu, counting recomputed FLOPs.",
    "mfu": "Model FLOPs utilisation: model_tflops_per_gpu / peak_tflops.",
    "hfu": "Hardware FLOPs utilisation: hardware_tflops_per_gpu / peak_tflops.",
    "time_to_train_days": "Failure-free days: tokens / tokens_per_second / 86,400.",
    "warnings": "Sentences about the layout (an uneven pipeline split, memory over capacity).",
}


# The cost result's figures, where the name alone does not say (engine.cost.cost_result has the rest).
COST_HELP = {
    "on_prem": "Owning over the horizon: capex, a year's costs by part, annualised total, NPV, $/GPU-hour "
    "used.",
    "cloud": "Each priced pricing model's bill over the horizon, by pricing model.",
    "cloud_unavailable": "Pricing models left out because they cannot finish the run, with why.",
    "break_even_utilization": "By pricing model: the utilization in (0, 1] at which owning and renting cost "
    "the same NPV of their monthly cash flows (the verdict's basis, the one solver); null when one side is "
    "cheaper at every utilization, as meaning says. A result stored before basis was written holds the "
    "annualised closed form u* = (A − C)/(c − B).",
    "break_even_vs_on_demand_utilization": "A reservation: the utilization above which it costs less than "
    "on-demand (billed term years ÷ horizon × reserved ÷ on-demand price).",
    "curves": "Cost at 20 utilizations (utilization, on_prem_usd and <pricing model>_usd) on basis: the NPV "
    "of the monthly cash flows when a rent option is priced, else the cost over the horizon.",
    "per_run": "Days of one run with failures and restarts, and its cost with each option in its frame.",
    "cannot_finish": "Why no option can finish the run (goodput 0).",
    "ranking": "Owning and each priced model, cheapest first in one frame: the NPV of the monthly cash flows "
    "(total_usd holds it; the verdict's basis), or with no rent option priced owning's total over the whole "
    "horizon; frame says which.",
    "cashflow": "Monthly cash flows of owning and each rent option, NPV, payback and IRR; only a note when "
    "no rent option is priced.",
    "npv_difference_usd": "NPV of the cheapest rent option − NPV of owning: > 0 when owning costs less.",
    "payback_month": "The month owning's cumulative cash falls below renting's; null if it never does.",
    "irr_per_year": "The yearly rate at which owning instead of renting breaks even; null when none exists.",
    "reference": "The rent option (pricing model) with the lowest NPV, the one owning is compared with.",
    "verdict": "The rent-or-own answer: NPVs, saving, payback, break-even, the assumptions that move it "
    "most, and the sentence composed from them. Null when no rent option is priced.",
    "sentence": "The answer in words, composed from the numbers.",
    "saving_usd": "Cheapest rent option's NPV − owning's NPV: > 0 when owning costs less.",
    "sensitivity": "The tornado against the cheapest pricing model: each input at ± fraction.",
    "goodput": "Fraction of time making progress: 1 − δ/τ − (τ/2 + restart)/MTBI (Young 1974).",
    "total_usd": "Cost over the whole horizon (owning: annualised; renting: the bill).",
    "usd_per_gpu_hour": "Cost over the horizon ÷ GPU-hours used.",
    "findings": "Sentences about the design (critical first), each with its source.",
    "assumptions": "Every input the result used, with unit and source; a catalog price adds its date.",
}


# The options table's figures.
OPTION_HELP = {
    "key": '"own" or "<offering slug>:<pricing model>".',
    "kind": "own | cloud",
    "total_usd": COST_HELP["total_usd"],
    "usd_per_gpu_hour": COST_HELP["usd_per_gpu_hour"],
    "run_cost_usd": "The cost of one run with this option; null without run days.",
    "days": "Expected days to train with failures and restarts (spot: with its interruptions).",
    "break_even_utilization": "The utilization at which owning and this option cost the same NPV of their "
    "monthly cash flows (the design verdict's basis; a result stored before engine 12: the annualised closed "
    "form), when it lies in (0, 1]; null otherwise (one of them is cheaper at every utilization).",
}


# The evaluation's own parts (engine.design.evaluation): assumptions, findings, which design, price freshness.
EVALUATION_HELP = {
    "name": "The input's path: a cost-engine input (on_prem.pue), training.<name> for the training engine's, "
    "catalog.<accelerator>.<figure> for the accelerator's catalog figures; a finding's or design's name.",
    "value": "The value used (a number, text or flag), in unit.",
    "unit": "Its unit; empty for a count or a name.",
    "source": "Where the value comes from (a paper, a vendor page, the catalog, a default); a finding's "
    "source, when it names one.",
    "as_of": "The date of a catalog figure or price (ISO date); empty when undated.",
    "origin": "Where a resolved price (prices.<figure>) came from, in the order it is looked for: design "
    "(the design's own value or its site's), price_book (the owner's or team's newest unexpired entry), "
    "catalog, or default (the engine's, when the catalog has none).",
    "entry_id": "The price book entry a prices.<figure> came from (origin price_book).",
    "code": "A stable identifier of the finding (e.g. spot_long_run, pricing_model_unpriced).",
    "severity": "critical | error | warning | info",
    "message": "The finding in words, composed from the evaluation's numbers.",
    "id": "The design's id.",
    "version": "The design version evaluated.",
}


# A design diff's figures (engine.design.attribution).
DIFF_HELP = {
    "path": "The input's flattened spec path, e.g. costs.on_prem.server_usd.",
    "unit": "Its unit where the defaults tables or the name say it; empty otherwise.",
    "old": "The value in the old version (null where absent).",
    "new": "The value in the new version (null where absent).",
    "whole": "True for a value replaced whole (a list, a section): one inseparable input.",
    "delta": "new − old, for numbers both sides state; null otherwise.",
    "moved": "Whether old and new differ.",
    "quantity": "The figure attributed: saving_usd of the design verdict.",
    "total_usd": "new_usd − old_usd: the change attributed.",
    "order": "The order in which the inputs were set to their new values, one at a time.",
    "steps": "One step per input in order; the deltas of the evaluated steps sum to total_usd.",
    "inputs": "The inputs set to their new values at this step (several when an earlier step could not be "
    "evaluated); on a diff, every input that differs.",
    "evaluated": "False when the spec of this step could not be evaluated (reason says why); its input is "
    "then grouped with the next.",
    "delta_usd": "The change from the last evaluated step.",
    "cumulative_usd": "The change from the old version's figure so far.",
    "shapley": "Each input's delta averaged over every order (at most 8 inputs); null with shapley_note "
    "otherwise.",
    "evaluations": "Evaluations of intermediate specs this attribution ran (the two versions' excluded).",
    "attribution": "The change in the verdict's NPV difference split over the inputs; null with "
    "attribution_note when there is no verdict on both sides or no input differs.",
}


def _field(hint: Any, name: str, prefix: str, **kwargs: Any) -> serializers.Field[Any, Any, Any, Any]:
    """The field for a dataclass field of type ``hint``; ``kwargs`` (help_text, required, allow_null) go to
    its constructor, as DRF copies a declared field by re-running it."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return _field(inner, name, prefix, **kwargs, allow_null=True)
    if origin is tuple:
        return serializers.ListField(child=_field(get_args(hint)[0], name, prefix), **kwargs)
    if origin is Mapping:
        return serializers.DictField(child=_field(get_args(hint)[1], name, prefix), **kwargs)
    if hint is cr.Curves:
        return CostCurvesSerializer(**kwargs)
    if isinstance(hint, type) and is_dataclass(hint):
        return serializer_for(hint, prefix)(**kwargs)
    if hint is Any:
        return serializers.JSONField(**kwargs)
    return _SCALARS[hint](**kwargs)


_BUILT: dict[tuple[type, str], type[serializers.Serializer[Any]]] = {}

# Schema names kept from before a class was renamed or folded into another.
SCHEMA_NAMES: dict[type, str] = {
    RentOrOwn: "CostVerdict",
    ev.DesignRef: "EvaluationDesign",
    at.DesignDiff: "DesignDiffResult",
}


def serializer_for(cls: type, prefix: str = "Training") -> type[serializers.Serializer[Any]]:
    """A read-only serializer with one field per dataclass field, named <prefix><Class> in the schema; a key
    the engine writes only in some results is not required."""
    if (cls, prefix) not in _BUILT:
        hints = get_type_hints(cls)
        attrs = {}
        helps = {
            "Training": HELP,
            "Design": OPTION_HELP,
            "Evaluation": EVALUATION_HELP,
            "Diff": DIFF_HELP,
        }.get(prefix, COST_HELP)
        for f in fields(cls):
            kwargs: dict[str, Any] = {"help_text": helps.get(f.name, "")}
            hint = hints[f.name]
            if optional(f):
                kwargs["required"] = False
            if f.metadata.get("omit"):  # absent, never null
                (hint,) = [a for a in get_args(hint) if a is not type(None)]
            attrs[f.name] = _field(hint, f.name, prefix, **kwargs)
        # CostResult, not CostCostResult (the training result's TrainingSummary is its Summary's).
        name = SCHEMA_NAMES.get(cls) or (
            cls.__name__
            if prefix != "Training" and cls.__name__.startswith(prefix)
            else prefix + cls.__name__
        )
        _BUILT[cls, prefix] = type(f"{name}Serializer", (serializers.Serializer,), attrs)
    return _BUILT[cls, prefix]


class CostCurvesSerializer(serializers.Serializer[Any]):
    """Cost at 20 utilizations; one <pricing model>_usd series per priced model, on ``basis``."""

    utilization = serializers.ListField(child=serializers.FloatField())
    on_prem_usd = serializers.ListField(child=serializers.FloatField())
    on_demand_usd = serializers.ListField(child=serializers.FloatField(), required=False)
    reserved_1y_usd = serializers.ListField(child=serializers.FloatField(), required=False)
    reserved_3y_usd = serializers.ListField(child=serializers.FloatField(), required=False)
    spot_usd = serializers.ListField(child=serializers.FloatField(), required=False)
    savings_1y_usd = serializers.ListField(child=serializers.FloatField(), required=False)
    savings_3y_usd = serializers.ListField(child=serializers.FloatField(), required=False)
    basis = serializers.CharField(
        required=False,
        help_text="What the series are: 'NPV of the monthly cash flows' (the verdict's basis); absent in a "
        "result stored before it or without a rent option: the cost over the horizon, owning's annualised.",
    )


CostResultSerializer = serializer_for(cr.CostResult, "Cost")
DesignOptionSerializer = serializer_for(cr.DesignOption, "Design")


class TrainingEstimateSerializer(serializer_for(tr.LayoutEstimate)):  # type: ignore[misc]
    """The training result: the chosen layout's figures at the top level; a search adds its candidates
    and counts."""

    mode = serializers.CharField(help_text=HELP["mode"])
    warnings = serializers.ListField(child=serializers.CharField(), help_text=HELP["warnings"])
    summary = serializer_for(tr.Summary)()
    assumptions = serializers.ListField(child=serializer_for(tr.AssumptionUsed)())
    candidates = serializers.ListField(
        child=serializer_for(tr.LayoutEstimate)(), required=False, help_text="Search only: best first."
    )
    layouts_evaluated = serializers.IntegerField(required=False, help_text="Search only.")
    layouts_valid = serializers.IntegerField(
        required=False, help_text="Search only: layouts passing the structural checks."
    )
    layouts_feasible = serializers.IntegerField(required=False, help_text="Search only: layouts that fit.")
    rejected = serializers.DictField(
        child=serializers.IntegerField(),
        required=False,
        help_text="Search only: layouts rejected, by reason.",
    )


EvaluationAssumptionSerializer = serializer_for(ev.EvaluationAssumption, "Evaluation")
EvaluationFindingSerializer = serializer_for(ev.EvaluationFinding, "Evaluation")
EvaluationDesignSerializer = serializer_for(ev.DesignRef, "Evaluation")
DesignVerdictSerializer = serializer_for(DesignVerdict, "Evaluation")
CalibrationStatementSerializer = serializer_for(CalibrationStatement, "Evaluation")


class PriceFreshnessSerializer(serializers.Serializer[Any]):
    """When a catalog price counted as stale for this evaluation (engine.core.offerings.Freshness)."""

    today = serializers.DateField(help_text="The date the evaluation was computed on.")
    stale_after_days = serializers.IntegerField(help_text="PRICE_STALE_AFTER_DAYS: a price older is stale.")
    stale_before = serializers.DateField(help_text="today − stale_after_days: a price dated before is stale.")


DesignDiffResultSerializer = serializer_for(at.DesignDiff, "Diff")


class DiffVersionSerializer(serializers.Serializer[Any]):
    """One side of a diff: the design version compared."""

    design = serializers.IntegerField(help_text="The design's id.")
    name = serializers.CharField()
    version = serializers.IntegerField(help_text="The version number.")
    message = serializers.CharField(allow_blank=True, help_text="Why it was saved (blank if not said).")
    created_at = serializers.DateTimeField(help_text="When the version was saved.")


class DesignDiffSerializer(DesignDiffResultSerializer):  # type: ignore[misc,valid-type]
    """Two design versions compared: the inputs that differ, the outputs that moved and the attribution."""

    old = DiffVersionSerializer()
    new = DiffVersionSerializer()
