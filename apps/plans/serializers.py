"""Plan API serializers: input (what a client sends) and output (what a plan and its solution hold)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.designs.result_serializers import EvaluationAssumptionSerializer
from apps.plans.models import CapacityPlan, PlanVersion
from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes

SPEC_HELP = (
    "horizon_months, gpus_per_node, growth_pct_per_month, discount_rate; training (gpu_hours and gpus, or "
    "design_id), inference, baseline; supply (owned, reservations, on_demand, spot with their prices). "
    "Several node types: node_types, a list of {accelerator, gpus_per_node, supply} in place of "
    "gpus_per_node and supply, each workload naming its node_type (a mixed RL design: both its pools). "
    "See docs/capacity-plan.md."
)


class PlanInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    spec = serializers.DictField(help_text=SPEC_HELP)


class PlanUpdateSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    name = serializers.CharField(max_length=200, required=False)
    description = serializers.CharField(required=False, allow_blank=True)
    spec = serializers.DictField(required=False, help_text="A new spec makes a new version. " + SPEC_HELP)


class PlanSerializer(serializers.ModelSerializer[Any]):
    spec = serializers.SerializerMethodField()
    team = serializers.IntegerField(
        source="team_id", read_only=True, allow_null=True, help_text="The team it belongs to, or null."
    )

    class Meta:
        model = CapacityPlan
        fields = ["id", "name", "description", "team", "version", "spec", "created_at", "updated_at"]

    def get_spec(self, plan: CapacityPlan) -> dict[str, Any]:
        spec: dict[str, Any] = plan.versions.get(number=plan.version).spec
        return spec


class PlanVersionSerializer(serializers.ModelSerializer[Any]):
    class Meta:
        model = PlanVersion
        fields = ["number", "spec", "created_at"]


class OwnedPurchaseSerializer(serializers.Serializer[Any]):
    arrival_month = serializers.IntegerField()
    order_month = serializers.IntegerField(help_text="arrival month − lead time (may be before month 0)")
    nodes = serializers.IntegerField()
    capex_usd = serializers.FloatField()


class ReservationStartSerializer(serializers.Serializer[Any]):
    term_months = serializers.IntegerField()
    start_month = serializers.IntegerField()
    nodes = serializers.IntegerField()
    committed_usd = serializers.FloatField(help_text="the whole term, billed every hour")


class RunScheduleSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    node_hours_by_layer = serializers.DictField(child=serializers.FloatField())
    node_hours_by_month = serializers.ListField(child=serializers.FloatField())
    finish_month = serializers.IntegerField()
    deadline_month = serializers.IntegerField()
    slack_months = serializers.IntegerField()


class MonthRowSerializer(serializers.Serializer[Any]):
    month = serializers.IntegerField()
    demand_mean_gpus = serializers.FloatField()
    demand_peak_gpus = serializers.FloatField()
    training_gpus = serializers.FloatField()
    owned_nodes = serializers.IntegerField()
    reserved_nodes = serializers.IntegerField()
    on_demand_node_hours = serializers.FloatField()
    spot_node_hours = serializers.FloatField()
    owned_utilization = serializers.FloatField(allow_null=True)
    cost_usd = serializers.DictField(child=serializers.FloatField(), help_text="by layer")


class AlternativeSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    npv_usd = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="Its NPV, the objective it was chosen on (the plan's npv_usd basis); null when it cannot "
        "serve the plan, or in a solution stored before the NPV objective.",
    )
    total_usd = serializers.FloatField(allow_null=True, help_text="Its cash out, undiscounted.")
    reason = serializers.CharField(allow_blank=True)


class ProblemSizeSerializer(serializers.Serializer[Any]):
    variables = serializers.IntegerField()
    integer_variables = serializers.IntegerField()
    constraints = serializers.IntegerField()
    nonzeros = serializers.IntegerField()
    solve_seconds = serializers.FloatField()
    mip_gap = serializers.FloatField()
    nodes = serializers.IntegerField(required=False, help_text="Branch-and-bound nodes HiGHS explored.")


class InferenceSizingSerializer(serializers.Serializer[Any]):
    output_tokens_per_day = serializers.FloatField()
    model = serializers.CharField()
    accelerator = serializers.CharField()
    peak_to_mean = serializers.FloatField()
    peak_requests_per_s = serializers.FloatField()
    layout = serializers.CharField()
    batch = serializers.IntegerField()
    replicas = serializers.IntegerField()
    gpus = serializers.IntegerField()
    output_tokens_per_s_per_gpu = serializers.FloatField()
    ttft_s = serializers.FloatField()
    tpot_s = serializers.FloatField()
    # the stubs read this as Field.source, but the metaclass pops declared fields off the class
    source = serializers.CharField()  # type: ignore[assignment]


class PlanPartResultSerializer(serializers.Serializer[Any]):
    """A solved plan's figures: the whole plan's, or one node type's in a plan of several."""

    npv_usd = serializers.FloatField(
        help_text="The objective the mix is chosen on: the NPV of the plan's monthly cash flows at its "
        "discount_rate (engine/cost/cashflow.py's monthly discounting): capex at delivery, opex and bills at "
        "the end of each month, every month of a reservation's whole term, resale at market value (book "
        "value where no series) at the horizon. Owning costs given without their capital share are paid as "
        "their fixed cost per node-month instead (owning annualised)."
    )
    total_usd = serializers.FloatField(help_text="The same cash flows undiscounted: cash out, undiscounted.")
    capex_usd = serializers.FloatField(help_text="Capex of the nodes the plan buys.")
    cash_npv_usd = serializers.FloatField(
        allow_null=True,
        help_text="NPV of the cash (capex when delivered, opex monthly, market resale at the end): equal to "
        "npv_usd; null when the owning costs were given without their capital share.",
    )
    cash_flows_usd = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="Cash by month: index 0 the start, index m the end of month m (reservations to term end).",
    )
    cost_by_layer_usd = serializers.DictField(child=serializers.FloatField())
    owned_purchases = OwnedPurchaseSerializer(many=True)
    reservations = ReservationStartSerializer(many=True)
    on_demand_node_hours = serializers.FloatField()
    spot_node_hours = serializers.FloatField()
    owned_utilization = serializers.FloatField(allow_null=True)
    months = MonthRowSerializer(many=True)
    runs = RunScheduleSerializer(many=True)
    demand_mean_gpus_by_workload = serializers.DictField(
        child=serializers.ListField(child=serializers.FloatField())
    )
    alternatives = AlternativeSerializer(many=True)
    size = ProblemSizeSerializer()
    notes = serializers.ListField(child=serializers.CharField())
    inference_sizing = serializers.DictField(
        child=InferenceSizingSerializer(),
        required=False,
        help_text="Per inference workload given in tokens per day: how the serving engine sized it.",
    )
    solver_status = serializers.ChoiceField(
        choices=["optimal", "work_limit", "time_limit"],
        required=False,
        help_text="optimal: proven within the MIP gap; work_limit / time_limit: the solver stopped at its "
        "node limit (PLAN_SOLVE_NODE_LIMIT) or wall-clock backstop and this is the best plan it found.",
    )
    solver_message = serializers.CharField(
        allow_blank=True, required=False, help_text="Where a stopped solve stopped: nodes, NPV, gap."
    )


class NodeTypeResultSerializer(serializers.Serializer[Any]):
    accelerator = serializers.CharField(help_text="The node type's accelerator (a catalog slug).")
    gpus_per_node = serializers.IntegerField()
    result = PlanPartResultSerializer(
        help_text="This node type's own purchases, reservations, burst and months."
    )


class PlanResultSerializer(PlanPartResultSerializer):
    node_types = NodeTypeResultSerializer(
        many=True,
        required=False,
        help_text="A plan of several node types (spec.node_types): each type's own result, solved together "
        "in one MILP; the figures above are then the whole plan's (money summed over the types, node counts "
        "and node-hours summed too). Absent for a plan of one node type.",
    )


class PlanSolutionSerializer(serializers.Serializer[Any]):
    plan = serializers.IntegerField(source="version.plan_id")
    version = serializers.IntegerField(source="version.number")
    input_hash = serializers.CharField()
    result = PlanResultSerializer()
    prices = serializers.SerializerMethodField(
        help_text="Where each price of the supply came from (name supply.<option>): origin plan (stated on "
        "the plan), design (a saved design's evaluation; its source names the origin there), price_book "
        "(the plan's team's or owner's newest unexpired entry, entry_id and as_of its date) or catalog. "
        "Empty for a solution stored before the price book."
    )
    created_at = serializers.DateTimeField()

    @extend_schema_field(EvaluationAssumptionSerializer(many=True))
    def get_prices(self, solution: Any) -> list[dict[str, Any]]:
        return list((solution.snapshot or {}).get("prices") or [])


class PlanShareLinkInputSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    expires_in_days = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=3650,
        help_text="Omit for a link that never expires.",
    )


class PlanShareLinkSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    token_hint = serializers.CharField()
    version = serializers.IntegerField(source="solution.version.number")
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class PlanShareLinkCreatedSerializer(PlanShareLinkSerializer):
    token = serializers.CharField(help_text="Shown once; only its hash is stored.")
    url = serializers.CharField()


class PlanRunSerializer(serializers.Serializer[Any]):
    id = serializers.IntegerField()
    status = serializers.CharField()
    progress = serializers.SerializerMethodField()
    error = serializers.CharField(allow_blank=True)
    url = serializers.SerializerMethodField()
    solution = PlanSolutionSerializer(allow_null=True)

    def get_progress(self, run: Any) -> dict[str, int]:
        return {"done": 1 if run.status == "done" else 0, "total": 1}

    def get_url(self, run: Any) -> str:
        return reverse("capacity-plan-run", kwargs={"pk": run.version.plan_id, "run_id": run.pk})
