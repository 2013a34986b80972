"""The design spec: what a saved design holds, how it is validated, and how it becomes engine requests.

A spec is a JSON object (README, "Interfaces", Designs; the serializers below are its definition):
    workload:    {model: {preset} | shape,
                  training: {tokens, global_batch_tokens | global_batch_seqs, precision}}
    cluster:     {accelerator, gpus_per_node, nodes, fabric, oversubscription, storage}
    parallelism: a layout dict, or "search"
    costs:       {horizon_years, utilization, on_prem: {...},
                  cloud: [{offering, pricing_models, usd_per_node_hour?}],
                  cashflow?, uncertainty?, colocation?, storage?: cost-engine inputs by their engine names}
    goals:       {deadline_days?, budget_usd?}, optional: a deadline for the training run in days and
                 a budget in USD per run; the evaluation's ``verdict`` says whether the design meets
                 them (clusterdesigner/engine/verdict.py). Any other goal is refused, naming it.
    serving:     optional: a serving request (docs/serving-engine.md) without model, accelerator and
                 gpus_per_node, which are the design's; the evaluation's ``serving`` is its estimate.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes
from clusterdesigner.engine import cost, defaults, offerings
from clusterdesigner.engine.errors import EngineError

PRICING_MODELS = list(offerings.PRICING_MODELS)


class ModelSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    preset = serializers.CharField(required=False, max_length=60)
    layers = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    hidden = serializers.IntegerField(required=False, min_value=1, max_value=10_000_000)
    ffn_hidden = serializers.IntegerField(required=False, min_value=1, max_value=100_000_000)
    heads = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    kv_heads = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    vocab = serializers.IntegerField(required=False, min_value=1, max_value=100_000_000)
    seq_len = serializers.IntegerField(required=False, min_value=1, max_value=100_000_000)
    gated_mlp = serializers.BooleanField(required=False)
    dropout = serializers.BooleanField(required=False)
    experts = serializers.IntegerField(required=False, min_value=1, max_value=100_000)
    top_k = serializers.IntegerField(required=False, min_value=1, max_value=1_000)
    expert_ffn_hidden = serializers.IntegerField(required=False, min_value=1, max_value=100_000_000)
    shared_experts = serializers.IntegerField(required=False, min_value=0, max_value=1_000)
    moe_layers = serializers.IntegerField(required=False, min_value=0, max_value=100_000)
    tied_embeddings = serializers.BooleanField(required=False)
    name = serializers.CharField(required=False, max_length=200)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "preset" not in attrs:
            missing = [f for f in ("layers", "hidden", "heads", "vocab", "seq_len") if f not in attrs]
            if missing:
                raise serializers.ValidationError({f: "required when no preset is given" for f in missing})
        return attrs


class TrainingSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    tokens = serializers.FloatField(min_value=1e3, max_value=1e16)
    global_batch_tokens = serializers.IntegerField(required=False, min_value=1, max_value=10**10)
    global_batch_seqs = serializers.IntegerField(required=False, min_value=1, max_value=10**8)
    precision = serializers.ChoiceField(choices=["bf16", "fp8"], default=defaults.PRECISION.value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "global_batch_tokens" not in attrs and "global_batch_seqs" not in attrs:
            raise serializers.ValidationError(
                {"global_batch_tokens": "give global_batch_tokens or global_batch_seqs"}
            )
        return attrs


class WorkloadSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    model = ModelSpecSerializer()
    training = TrainingSpecSerializer()


class ClusterSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    accelerator = serializers.SlugField()
    gpus_per_node = serializers.IntegerField(min_value=1, max_value=72, default=defaults.GPUS_PER_NODE.value)
    nodes = serializers.IntegerField(min_value=1, max_value=100_000)
    fabric = serializers.SlugField()
    oversubscription = serializers.FloatField(
        min_value=1.0, max_value=64.0, default=defaults.OVERSUBSCRIPTION.value
    )
    storage = serializers.SlugField(required=False)


class LayoutSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    tp = serializers.IntegerField(required=False, min_value=1, max_value=1024)
    pp = serializers.IntegerField(required=False, min_value=1, max_value=1024)
    dp = serializers.IntegerField(required=False, min_value=1, max_value=1_000_000)
    cp = serializers.IntegerField(required=False, min_value=1, max_value=1024)
    ep = serializers.IntegerField(required=False, min_value=1, max_value=1024)
    vpp = serializers.IntegerField(required=False, min_value=1, max_value=128)
    micro_batch = serializers.IntegerField(required=False, min_value=1, max_value=4096)
    recompute = serializers.ChoiceField(required=False, choices=["none", "selective", "full"])
    sharding = serializers.ChoiceField(required=False, choices=["none", "zero1", "zero2", "zero3", "hsdp"])
    sequence_parallel = serializers.BooleanField(required=False)


class NegotiatedPricesSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    """Negotiated USD per node-hour, by pricing model: only the models the cost engine prices."""

    on_demand = serializers.FloatField(required=False, min_value=0, max_value=1e6)
    reserved_1y = serializers.FloatField(required=False, min_value=0, max_value=1e6)
    reserved_3y = serializers.FloatField(required=False, min_value=0, max_value=1e6)
    spot = serializers.FloatField(required=False, min_value=0, max_value=1e6)


assert list(NegotiatedPricesSerializer().fields) == PRICING_MODELS  # one list of models, kept in step


class CloudChoiceSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    offering = serializers.SlugField()
    pricing_models = serializers.ListField(
        child=serializers.ChoiceField(choices=PRICING_MODELS),
        min_length=1,
        max_length=4,
        required=False,
        help_text=(
            "Pricing models to compare; omitted: every model the offering has a price for (the catalog's "
            "or a negotiated one). A model ticked without a price is refused."
        ),
    )
    usd_per_node_hour = NegotiatedPricesSerializer(
        required=False,
        help_text="Negotiated prices per pricing model in USD per node-hour, overriding the catalog's.",
    )


class EngineSectionField(serializers.DictField):
    """A section of cost-engine inputs passed through as the engine reads them (``cashflow``, ``uncertainty``,
    ``colocation``, ``storage``): only the engine's own input names (cost.input_names; each default with its
    source in cost.DEFAULTS) are accepted, a misspelt one refused naming it; each number is range-checked
    here (cost.check_input) and the whole request by cost.check_request when the design is saved."""

    def __init__(self, section: str, **kwargs: Any) -> None:
        self.section = section
        self.known = list(cost.input_names(section))
        kwargs.setdefault("help_text", f"Cost-engine inputs: {', '.join(self.known)} (docs/cost-engine.md).")
        super().__init__(required=False, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        value = super().to_internal_value(data)
        unknown = sorted(set(value) - set(self.known))
        if unknown:
            raise serializers.ValidationError(
                {key: [f"unknown field; known: {', '.join(self.known)}"] for key in unknown}
            )
        # Every number given is range-checked, also one this design does not read (a loan rate with cash).
        for key, item in value.items():
            try:
                cost.check_input(f"{self.section}.{key}", item)
            except EngineError as exc:
                raise serializers.ValidationError({key: [exc.message]}) from exc
        return value


# The spec's sections of cost-engine inputs beyond owning's (on_prem) and the cloud choices.
ENGINE_SECTIONS = ("cashflow", "uncertainty", "colocation", "storage")


class CostSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    horizon_years = serializers.FloatField(min_value=0.1, max_value=20, default=defaults.HORIZON_YEARS.value)
    utilization = serializers.FloatField(min_value=0.01, max_value=1.0, default=defaults.UTILIZATION.value)
    on_prem = serializers.DictField(required=False, default=dict)
    cloud = CloudChoiceSerializer(many=True, required=False, default=list)
    egress_tb = serializers.FloatField(required=False, min_value=0, max_value=1e7)
    managed_overhead_fraction = serializers.FloatField(required=False, min_value=0, max_value=5)
    cashflow = EngineSectionField(
        "cashflow",
        help_text="Money over time: financing (cash|loan|lease), loan_rate, loan_months, lease_usd_per_month,"
        " tax_rate (MACRS 5-year shield; 0 = off), cloud_price_change_per_year, power_escalation_per_year, "
        "lead_time_months, reserved_payment (no_upfront|partial_upfront|all_upfront).",
    )
    uncertainty = EngineSectionField(
        "uncertainty", help_text="Monte Carlo: spread (±fraction), samples, seed"
    )
    colocation = EngineSectionField("colocation", help_text="pricing: space_only (default) or all_in.")
    storage = EngineSectionField(
        "storage", help_text="Training storage: mb_s_per_tib (throughput per provisioned TiB) and the rest."
    )

    def validate_cloud(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(value) > 6:
            raise serializers.ValidationError("compare at most 6 cloud offerings")
        return value


class GoalsSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    deadline_days = serializers.FloatField(
        required=False,
        min_value=0.001,
        max_value=1e5,
        help_text="The run must finish within this many days (expected, failures and restarts included).",
    )
    budget_usd = serializers.FloatField(
        required=False,
        min_value=0.01,
        max_value=1e13,
        help_text="The most one training run may cost, in USD (against the cheapest option's cost per run).",
    )


class DesignSpecSerializer(KnownKeysOnly, StrictJSONTypes, serializers.Serializer[Any]):
    workload = WorkloadSpecSerializer()
    cluster = ClusterSpecSerializer()
    parallelism = serializers.JSONField(default=defaults.PARALLELISM.value)
    costs = CostSpecSerializer(required=False)
    goals = GoalsSpecSerializer(required=False)
    serving = serializers.DictField(
        required=False,
        help_text="A serving request (docs/serving-engine.md: demand, targets, lengths, precisions) for the "
        "design's model on its accelerator; model, accelerator and gpus_per_node come from the design.",
    )

    def validate_serving(self, value: dict[str, Any]) -> dict[str, Any]:
        taken = sorted(set(value) & {"model", "accelerator", "gpus_per_node"})
        if taken:
            raise serializers.ValidationError(f"{', '.join(taken)} come from the design; leave them out")
        return value

    def validate_parallelism(self, value: Any) -> Any:
        if value in ("search", None):
            return "search"
        layout = LayoutSpecSerializer(data=value)
        if not isinstance(value, dict) or not layout.is_valid():
            raise serializers.ValidationError(
                layout.errors if isinstance(value, dict) else 'a layout object or "search"'
            )
        return dict(layout.validated_data)


def spec_with_defaults(spec: dict[str, Any] | None) -> dict[str, Any]:
    """Fill the parts a user left out from the design defaults (top-level sections only; fields inside are
    the user's)."""
    merged = defaults.design_spec()
    for key, value in (spec or {}).items():
        merged[key] = value
    return merged


def training_request(spec: dict[str, Any]) -> dict[str, Any]:
    cluster = spec["cluster"]
    request: dict[str, Any] = {
        "model": spec["workload"]["model"],
        "training": spec["workload"]["training"],
        "cluster": {
            k: cluster[k]
            for k in ("accelerator", "gpus_per_node", "nodes", "fabric", "oversubscription")
            if k in cluster
        },
    }
    if isinstance(spec.get("parallelism"), dict):
        request["parallelism"] = spec["parallelism"]
    return request


def serving_request(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The serving request of a spec with a ``serving`` section: its fields with the design's model,
    accelerator, node size and owning inputs (unless the section gives its own ``cost``); None without one."""
    if "serving" not in spec:
        return None
    costs = spec.get("costs") or {}
    request: dict[str, Any] = {
        **spec["serving"],
        "model": spec["workload"]["model"],
        "accelerator": spec["cluster"]["accelerator"],
        "gpus_per_node": spec["cluster"].get("gpus_per_node", defaults.GPUS_PER_NODE.value),
    }
    if "cost" not in request:
        request["cost"] = {k: costs[k] for k in ("on_prem", "horizon_years") if k in costs}
    return request


def cost_requests(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One cost-engine request per cloud offering compared (one with no cloud part when none is chosen)."""
    costs = spec.get("costs") or {}
    base: dict[str, Any] = {"cluster": dict(spec["cluster"])}
    for key in ("horizon_years", "utilization", "on_prem", *ENGINE_SECTIONS):
        if key in costs:
            base[key] = costs[key]
    choices = costs.get("cloud") or []
    if not choices:
        return [base]
    requests = []
    for choice in choices:
        # The cost engine prices every model the offering has; the design's choice filters the options shown.
        cloud: dict[str, Any] = {"offering": choice["offering"]}
        for key in ("egress_tb", "managed_overhead_fraction"):
            if key in costs:
                cloud[key] = costs[key]
        if choice.get("usd_per_node_hour"):
            cloud["usd_per_node_hour"] = choice["usd_per_node_hour"]
        requests.append({**base, "cloud": {k: v for k, v in cloud.items() if v is not None}})
    return requests
