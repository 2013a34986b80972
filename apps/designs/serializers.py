from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.designs.models import Design, DesignDraft, DesignVersion, ShareLink
from apps.designs.result_serializers import (
    CalibrationStatementSerializer,
    CostResultSerializer,
    DesignOptionSerializer,
    DesignVerdictSerializer,
    EvaluationAssumptionSerializer,
    EvaluationDesignSerializer,
    EvaluationFindingSerializer,
    PriceFreshnessSerializer,
    TrainingEstimateSerializer,
)
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes


class DesignInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    visibility = serializers.ChoiceField(choices=Design.Visibility.choices, default=Design.Visibility.PRIVATE)
    spec = serializers.DictField(
        required=False,
        help_text=(
            'workload, cluster, parallelism (a layout or "search") and costs; omitted sections take defaults.'
        ),
    )
    message = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="Why version 1 was saved."
    )


class DesignUpdateSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    version = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text=(
            'The version this edit is based on (or send If-Match: "<version>"). One of the two is required: '
            "without either the answer is 428; a stale one gives 409."
        ),
    )
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    visibility = serializers.ChoiceField(choices=Design.Visibility.choices, required=False)
    spec = serializers.DictField(required=False)
    message = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="Why this version is saved (shown in the version history, the diff and the review page).",
    )


class DraftInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    version = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="The version the draft is based on (default: the draft's; for a new one, the current).",
    )
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    visibility = serializers.ChoiceField(choices=Design.Visibility.choices, required=False)
    spec = serializers.DictField(required=False, help_text="The whole spec, checked as a saved one is.")


class DraftSaveSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    message = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default="", help_text="Why this version is saved."
    )


class DraftSerializer(serializers.ModelSerializer[Any]):
    base_version = serializers.IntegerField(source="base_number", read_only=True)
    current_version = serializers.IntegerField(
        source="design.version",
        read_only=True,
        help_text="The design's current version: saving a draft based on an older one answers 409.",
    )

    class Meta:
        model = DesignDraft
        fields = [
            "base_version",
            "current_version",
            "name",
            "description",
            "visibility",
            "spec",
            "created_at",
            "updated_at",
        ]


class DesignSerializer(serializers.ModelSerializer[Any]):
    owner = serializers.CharField(source="owner.get_username", read_only=True)
    team = serializers.IntegerField(
        source="team_id", read_only=True, allow_null=True, help_text="The team it belongs to, or null."
    )
    spec = serializers.SerializerMethodField()
    url = serializers.HyperlinkedIdentityField(view_name="design-detail")

    class Meta:
        model = Design
        fields = [
            "id",
            "url",
            "name",
            "description",
            "owner",
            "team",
            "visibility",
            "version",
            "is_demo",
            "created_at",
            "updated_at",
            "spec",
        ]

    def get_spec(self, obj: Design) -> dict[str, Any]:
        spec: dict[str, Any] = obj.current.spec
        return spec


class DesignVersionSerializer(serializers.ModelSerializer[Any]):
    created_by = serializers.CharField(source="created_by.get_username", read_only=True, default=None)

    class Meta:
        model = DesignVersion
        fields = ["number", "name", "description", "message", "spec", "created_by", "created_at"]


class CloneSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200, required=False)


class RunEstimateSerializer(serializers.Serializer[Any]):
    nodes = serializers.IntegerField()
    days = serializers.FloatField(
        allow_null=True, help_text="None when it could not be estimated (see error)."
    )
    run_cost_usd = serializers.FloatField(allow_null=True, help_text="The chosen option's cost per run.")
    error = serializers.CharField(allow_blank=True)


class DeadlineCheckSerializer(serializers.Serializer[Any]):
    deadline_days = serializers.FloatField()
    status = serializers.CharField(help_text="meets | misses")
    nodes = serializers.IntegerField()
    days = serializers.FloatField(allow_null=True)
    slack_days = serializers.FloatField(allow_null=True, help_text="deadline − days; negative when missed.")
    larger = RunEstimateSerializer(many=True, help_text="The run re-estimated on 2×, 4×, 8× the nodes.")
    meeting_nodes = serializers.IntegerField(allow_null=True, help_text="The fewest of those that meet it.")
    message = serializers.CharField()


class BudgetCheckSerializer(serializers.Serializer[Any]):
    budget_usd = serializers.FloatField()
    status = serializers.CharField(help_text="meets | misses | unknown")
    run_cost_usd = serializers.FloatField(allow_null=True)
    margin_usd = serializers.FloatField(allow_null=True, help_text="budget − cost; negative when over.")
    option = serializers.CharField(allow_blank=True)
    message = serializers.CharField()
    basis = serializers.CharField(
        required=False, help_text="What the per-run figure is (verdict.BUDGET_BASIS)."
    )
    commitment_usd = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="What choosing the option commits: capex or a term's dollars.",
    )
    commitment = serializers.CharField(required=False, allow_blank=True)


class HorizonBudgetCheckSerializer(serializers.Serializer[Any]):
    budget_npv_usd = serializers.FloatField(help_text="goals.budget_npv_usd: the most the horizon may cost.")
    status = serializers.CharField(help_text="meets | misses | unknown (no cash flows compared)")
    npv_usd = serializers.FloatField(
        allow_null=True, help_text="The NPV of the option's monthly cash out over the horizon."
    )
    margin_usd = serializers.FloatField(allow_null=True, help_text="budget − NPV; negative when over.")
    option = serializers.CharField(allow_blank=True)
    horizon_years = serializers.FloatField(allow_null=True)
    message = serializers.CharField()
    basis = serializers.CharField(help_text="What the figure is (verdict.BUDGET_NPV_BASIS).")


class VerdictSerializer(serializers.Serializer[Any]):
    status = serializers.CharField(help_text="meets | misses | none (the design has no goals)")
    messages = serializers.ListField(child=serializers.CharField())
    days_basis = serializers.CharField(
        help_text="expected (the option's days with failures and restarts) | failure_free"
    )
    option = serializers.CharField(
        allow_blank=True,
        help_text="The label of the option the goals are checked for: the one the rent-or-own verdict picks "
        "by NPV (owning, or the cheapest chosen rent option).",
    )
    deadline = DeadlineCheckSerializer(allow_null=True)
    budget = BudgetCheckSerializer(allow_null=True, help_text="goals.budget_usd, per run.")
    budget_npv = HorizonBudgetCheckSerializer(
        required=False, help_text="goals.budget_npv_usd, over the horizon on NPV (only when given)."
    )


class RankedOptionSerializer(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="An option's key, as in options (own, <offering>:<pricing model>).")
    total_usd = serializers.FloatField(
        help_text="Its figure in the ranking's frame: the NPV of its monthly cash flows (frame 'NPV of the "
        "monthly cash flows'), or its cost over the whole horizon (frame 'whole horizon', a design without "
        "a cloud option or a result stored before engine 12)."
    )


class RankingSerializer(serializers.Serializer[Any]):
    frame = serializers.CharField(help_text="NPV of the monthly cash flows, or whole horizon")
    options = RankedOptionSerializer(many=True, help_text="Cheapest first, from the cost engine's ranking.")


class EvaluationSerializer(serializers.Serializer[Any]):
    design = EvaluationDesignSerializer(help_text="The design and version this result was stored for.")
    spec = serializers.DictField()
    training = TrainingEstimateSerializer()
    costs = serializers.DictField(
        child=CostResultSerializer(),
        help_text="The cost engine's result by cloud offering slug (on_prem_only without one).",
    )
    options = serializers.ListField(
        child=DesignOptionSerializer(),
        help_text="Owning and each compared pricing model, cheapest run first.",
    )
    ranking = RankingSerializer(help_text="The options cheapest first in one frame, the verdict's basis.")
    design_verdict = DesignVerdictSerializer(
        required=False,
        help_text="The rent-or-own answer for the whole design: over every cloud offering and only the "
        "pricing models chosen for each, on the NPV of the monthly cash flows, with the rival named, the "
        "break-even utilization, the thresholds that flip it, the top movers and owning's three "
        "figures reconciled. "
        "Absent without a cloud option.",
    )
    assumptions = serializers.ListField(
        child=EvaluationAssumptionSerializer(),
        help_text="Every input the result used, each once: the cost engines', the training engine's and the "
        "accelerator's catalog figures, with unit, source and date.",
    )
    findings = serializers.ListField(
        child=EvaluationFindingSerializer(), help_text="Sentences about the design, critical first."
    )
    verdict = VerdictSerializer(required=False, help_text="spec.goals against this result.")
    price_freshness = PriceFreshnessSerializer(
        required=False, help_text="When a catalog price the result uses counted as stale."
    )
    calibration = CalibrationStatementSerializer(
        required=False,
        help_text="Whose calibration the estimate was made with (the design's owner: its team for a team's "
        "design, its maker for a personal one; scope and holder), whether it (factors fitted on the holder's "
        "measured runs) applied to the training estimate, and so to the days and costs: the factor, the "
        "regime key it was fitted for, the runs behind it and the band's source. Absent in a result stored "
        "before it.",
    )
    rl = serializers.DictField(
        required=False,
        help_text="A design with an rl section: the RL run's estimate (engine/rl/rl.py): the placement and "
        "split chosen, its step by part (rollout, weight sync, training, offload, each pool's idle "
        "share), each pool's part and GPUs, days and GPU-hours; the options and splits searched.",
    )
    rl_fleet = serializers.DictField(
        required=False,
        help_text="A mixed RL fleet (rl.rollout): each pool (trainer, rollout) with its part, GPUs, "
        "GPU-hours and per-run options priced on its own part and offerings, and the cheapest "
        "combination of each kind (own both, rent both, own one and rent the other), engine/rl/rl_fleet.py.",
    )
    computed_at = serializers.DateTimeField(help_text="When the result was computed (ISO 8601, UTC).")


class AnalysisStartedSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    url = serializers.CharField()
    status = serializers.CharField()


class ShareLinkInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    # the stubs read this as Field.label, but the metaclass pops declared fields off the class
    label = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")  # type: ignore[assignment]
    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When the link stops working; must be in the future (a past time is a 400). Null: never.",
    )
    follow_approved = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Show the design's approved version (the latest one approved) rather than the current one.",
    )

    def validate_expires_at(self, value: Any) -> Any:
        from django.utils import timezone

        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("must be in the future")
        return value


class ShareLinkSerializer(serializers.ModelSerializer[Any]):
    version = serializers.IntegerField(source="evaluation.version.number", read_only=True)
    active = serializers.BooleanField(source="is_active", read_only=True)
    # Counted and still in the open log (ShareLink.opens, apps.designs.selectors.share_link_list).
    open_count = serializers.IntegerField(source="opens", read_only=True)
    last_opened_at = serializers.DateTimeField(source="last_opened", read_only=True, allow_null=True)

    class Meta:
        model = ShareLink
        fields = [
            "id",
            "label",
            "token_hint",
            "version",
            "created_at",
            "expires_at",
            "revoked_at",
            "last_opened_at",
            "open_count",
            "active",
            "follow_approved",
        ]


class ShareLinkCreatedSerializer(ShareLinkSerializer):
    url = serializers.CharField(
        read_only=True, help_text="The link to send. Shown once: only a hash is stored."
    )
    token = serializers.CharField(read_only=True)

    class Meta(ShareLinkSerializer.Meta):
        fields = [*ShareLinkSerializer.Meta.fields, "url", "token"]


class SharedDesignSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    description = serializers.CharField()
    version = serializers.IntegerField()
    approved = serializers.BooleanField(
        help_text="The link follows the approved version and this is it (false for a frozen link)."
    )
    evaluation = EvaluationSerializer()


class VersionQuerySerializer(serializers.Serializer[Any]):
    """The ``?version=`` query parameter as the schema states it: 0 or a fraction is a 400 on version."""

    version = serializers.IntegerField(
        min_value=1, required=False, help_text="Version number, from 1 (default: the current version)."
    )


class ResolvedPriceSerializer(serializers.Serializer[Any]):
    """One figure as an evaluation resolved it (its prices.* assumption)."""

    value = serializers.JSONField(allow_null=True)
    unit = serializers.CharField()
    origin = serializers.CharField(help_text="design, price_book, catalog or default")
    entry_id = serializers.IntegerField(
        allow_null=True, help_text="The price book entry, when from the book."
    )
    as_of = serializers.CharField(allow_null=True)
    # A field named "source" reads to the stubs as Field.source (the attribute path): a stub limit.
    source = serializers.CharField(allow_null=True)  # type: ignore[assignment]


class PriceChangeSerializer(serializers.Serializer[Any]):
    figure = serializers.CharField(help_text="The figure, as in the prices.* assumptions without the prefix.")
    before = ResolvedPriceSerializer(
        allow_null=True, help_text="As last seen or accepted (null: not priced)."
    )
    after = ResolvedPriceSerializer(allow_null=True, help_text="As resolved now (null: no longer priced).")


class PriceStatusSerializer(serializers.Serializer[Any]):
    """Whether the design's current version resolves other prices now than when they were last seen or
    accepted (a price book entry changed, expired or was added; a catalog price moved)."""

    stale = serializers.BooleanField()
    accepted_evaluation = serializers.IntegerField(help_text="The evaluation whose prices were accepted.")
    accepted_at = serializers.DateTimeField()
    evaluation = serializers.IntegerField(help_text="The evaluation now.")
    changes = PriceChangeSerializer(many=True)
    verdict_before = serializers.CharField(help_text="The verdict's option with the accepted prices.")
    verdict_after = serializers.CharField(help_text="The verdict's option now.")
