"""Output serializers for the training engine's result (engine.training_result), field by field, so that
the OpenAPI schema says what an evaluation's ``training`` holds. They are built from the dataclasses'
fields and types, so the schema follows the result when a field is added; they describe, they never parse.
"""

from __future__ import annotations

import types
from dataclasses import fields
from typing import Any, Union, get_args, get_origin, get_type_hints

from rest_framework import serializers

from clusterdesigner.engine import training_result as tr

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


def _field(hint: Any, name: str) -> serializers.Field[Any, Any, Any, Any]:
    help_text = HELP.get(name, "")
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        nested = _field(inner, name)
        nested.allow_null = True
        return nested
    if origin is tuple:
        return serializers.ListField(child=_field(get_args(hint)[0], name), help_text=help_text)
    if isinstance(hint, type) and issubclass(hint, tr._JsonObject):
        return serializer_for(hint)(help_text=help_text)
    return _SCALARS[hint](help_text=help_text)


_BUILT: dict[type, type[serializers.Serializer[Any]]] = {}


def serializer_for(cls: type) -> type[serializers.Serializer[Any]]:
    """A read-only serializer with one field per dataclass field, named Training<Class> in the schema."""
    if cls not in _BUILT:
        hints = get_type_hints(cls)
        attrs = {f.name: _field(hints[f.name], f.name) for f in fields(cls)}
        _BUILT[cls] = type(f"Training{cls.__name__}Serializer", (serializers.Serializer,), attrs)
    return _BUILT[cls]


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
