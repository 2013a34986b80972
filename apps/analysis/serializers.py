from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from apps.analysis import services
from apps.analysis.models import Analysis
from clusterdesigner.api import StrictJSONTypes


class AnalysisInputSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=Analysis.Kind.choices)
    params = serializers.DictField(
        help_text=(
            "evaluate: {design, version?}; compare: {designs: [2-6 ids]}; "
            "sweep: {model|models, training, accelerators, nodes, pricing_models, ...}; "
            "recommend: {model, tokens, deadline_days, budget_usd, interruption_tolerance}."
        )
    )


def _kind_input(
    kind: str, params: type[serializers.Serializer[Any]], doc: str
) -> serializers.Serializer[Any]:
    """The request body for one kind, for the schema: ``kind`` and the params that kind checks."""
    fields = {"kind": serializers.ChoiceField(choices=[kind]), "params": params(), "__doc__": doc}
    name = f"{kind.title()}AnalysisInputSerializer"
    kind_serializer: serializers.Serializer[Any] = type(name, (serializers.Serializer,), fields)()
    return kind_serializer


# What analysis_create checks for each kind, as the schema states it (a oneOf on ``kind``); a params key a
# kind does not define is a 400 naming it.
ANALYSIS_INPUT_SCHEMA = PolymorphicProxySerializer(
    component_name="AnalysisInput",
    resource_type_field_name="kind",
    serializers={
        "evaluate": _kind_input(
            "evaluate", services.EvaluateParamsSerializer, "Evaluate a design (searched layouts too)."
        ),
        "compare": _kind_input("compare", services.CompareParamsSerializer, "Compare 2 to 6 designs."),
        "sweep": _kind_input(
            "sweep", services.SweepParamsSerializer, "Sweep accelerators × node counts × pricing models."
        ),
        "recommend": _kind_input(
            "recommend", services.RecommendParamsSerializer, "Recommend clusters for a deadline or budget."
        ),
    },
)


class ProgressSerializer(serializers.Serializer[Any]):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    fraction = serializers.FloatField()


class AnalysisSerializer(serializers.ModelSerializer[Any]):
    url = serializers.HyperlinkedIdentityField(view_name="analysis-detail")
    progress = serializers.SerializerMethodField()
    design_version = serializers.IntegerField(
        source="design_version.number",
        default=None,
        read_only=True,
        allow_null=True,
        help_text="The design version an evaluate analysis ran on; null for the other kinds.",
    )

    class Meta:
        model = Analysis
        fields = [
            "id",
            "url",
            "kind",
            "status",
            "progress",
            "params",
            "design_version",
            "result",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "deadline_at",
        ]

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, obj: Analysis) -> dict[str, Any]:
        done, total = services.analysis_progress(analysis=obj)
        return {"done": done, "total": total, "fraction": round(done / total, 4) if total else 1.0}


class AnalysisListSerializer(AnalysisSerializer):
    class Meta(AnalysisSerializer.Meta):
        fields = [f for f in AnalysisSerializer.Meta.fields if f != "result"]
