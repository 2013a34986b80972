from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
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


class ProgressSerializer(serializers.Serializer[Any]):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    fraction = serializers.FloatField()


class AnalysisSerializer(serializers.ModelSerializer[Any]):
    url = serializers.HyperlinkedIdentityField(view_name="analysis-detail")
    progress = serializers.SerializerMethodField()
    design_version = serializers.IntegerField(source="design_version.number", default=None, read_only=True)

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
