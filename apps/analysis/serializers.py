from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from apps.analysis import selectors
from apps.analysis.models import Analysis
from apps.teams.params import team_field
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.training.precision import PRECISIONS
from clusterdesigner.ids import MAX_ID

# What services.analysis_create checks each kind's params with (the service names their errors "params.*").
ParamsSerializer = serializers.Serializer[Any]

# Database ids are 64-bit; version numbers 32-bit. A bigger number is a 400, not a driver overflow.
MAX_VERSION = 2**31 - 1


class EvaluateParamsSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    design = serializers.IntegerField(min_value=1, max_value=MAX_ID)
    version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION, required=False, allow_null=True)


class CompareParamsSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    designs = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID), min_length=2, max_length=6
    )


SITE_HELP = (
    "A saved site (its id) you, or the team given, can read: owning is priced at its power price, PUE and "
    "colocation, as a design placed there is (400 naming params.site otherwise)."
)


class SweepParamsSerializer(KnownKeysOnly, serializers.Serializer[Any]):
    model = serializers.DictField(required=False, default=defaults.model)
    models = serializers.ListField(child=serializers.DictField(), required=False, max_length=8)
    training = serializers.DictField(default=defaults.training)
    accelerators = serializers.ListField(child=serializers.SlugField(), min_length=1, max_length=20)
    nodes = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=100_000), min_length=1, max_length=30
    )
    pricing_models = serializers.ListField(
        child=serializers.ChoiceField(choices=defaults.SWEEP_PRICING_OPTIONS),
        min_length=1,
        default=lambda: list(defaults.SWEEP_PRICING),
    )
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=72, default=defaults.GPUS_PER_NODE.value)
    fabric = serializers.SlugField(default=defaults.FABRIC.value)
    storage = serializers.SlugField(default=defaults.STORAGE.value)
    horizon_years = serializers.FloatField(min_value=0.1, max_value=20, default=defaults.HORIZON_YEARS.value)
    utilization = serializers.FloatField(min_value=0.01, max_value=1, default=defaults.UTILIZATION.value)
    on_prem = serializers.DictField(required=False, default=dict)
    offerings = serializers.DictField(
        child=serializers.SlugField(),
        required=False,
        default=dict,
        help_text="Cloud offering to price each accelerator with (default: cheapest).",
    )
    site = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID, help_text=SITE_HELP)


class RecommendParamsSerializer(KnownKeysOnly, serializers.Serializer[Any]):
    """A recommendation runs a sweep: its accelerators and node counts take the sweep's limits."""

    model = serializers.DictField(default=defaults.model)
    tokens = serializers.FloatField(min_value=1e6, max_value=1e16)
    global_batch_tokens = serializers.IntegerField(min_value=1, default=defaults.GLOBAL_BATCH_TOKENS.value)
    precision = serializers.ChoiceField(choices=PRECISIONS, default=defaults.PRECISION.value)
    deadline_days = serializers.FloatField(min_value=0.01, required=False)
    budget_usd = serializers.FloatField(min_value=0, required=False)
    interruption_tolerance = serializers.ChoiceField(choices=["none", "some"], default="some")
    accelerators = serializers.ListField(child=serializers.SlugField(), required=False, max_length=20)
    nodes = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=100_000), required=False, max_length=30
    )
    # As the sweep's: a part with no catalog owning price for its node (B300, MI350X; GB300's 72-GPU rack)
    # is recommended on the user's server quote rather than refused.
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=72, default=defaults.GPUS_PER_NODE.value)
    on_prem = serializers.DictField(required=False, default=dict)
    site = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID, help_text=SITE_HELP)


TEAM_HELP = (
    "A team you are a member of: a sweep or recommendation is priced through its price book (else your own), "
    "and the analysis is the team's (its members see it). Evaluations and comparisons price each design "
    "through its owner's book."
)


class AnalysisInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    kind = serializers.ChoiceField(choices=Analysis.Kind.choices)
    team = team_field(TEAM_HELP)
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
    fields = {
        "kind": serializers.ChoiceField(choices=[kind]),
        "team": team_field(TEAM_HELP),
        "params": params(),
        "__doc__": doc,
    }
    name = f"{kind.title()}AnalysisInputSerializer"
    # KnownKeysOnly, as AnalysisInputSerializer: the schema then says additionalProperties: false.
    bases = (KnownKeysOnly, serializers.Serializer)
    kind_serializer: serializers.Serializer[Any] = type(name, bases, fields)()
    return kind_serializer


# What analysis_create checks for each kind, as the schema states it (a oneOf on ``kind``); a params key a
# kind does not define is a 400 naming it.
ANALYSIS_INPUT_SCHEMA = PolymorphicProxySerializer(
    component_name="AnalysisInput",
    resource_type_field_name="kind",
    serializers={
        "evaluate": _kind_input(
            "evaluate", EvaluateParamsSerializer, "Evaluate a design (searched layouts too)."
        ),
        "compare": _kind_input("compare", CompareParamsSerializer, "Compare 2 to 6 designs."),
        "sweep": _kind_input(
            "sweep", SweepParamsSerializer, "Sweep accelerators × node counts × pricing models."
        ),
        "recommend": _kind_input(
            "recommend", RecommendParamsSerializer, "Recommend clusters for a deadline or budget."
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
        done, total = selectors.analysis_progress(analysis=obj)
        return {"done": done, "total": total, "fraction": round(done / total, 4) if total else 1.0}


class AnalysisListSerializer(AnalysisSerializer):
    class Meta(AnalysisSerializer.Meta):
        fields = [f for f in AnalysisSerializer.Meta.fields if f != "result"]
