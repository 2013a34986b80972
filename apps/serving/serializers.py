"""Input and output of POST /api/v1/serving/estimate/: the request's shape (ranges are the engine's to check)
and the result field by field, so the OpenAPI schema says what an estimate holds."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from apps.designs.result_serializers import EvaluationAssumptionSerializer
from clusterdesigner.api import StrictJSONTypes
from clusterdesigner.engine.serving import serving


class TargetsSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    ttft_s = serializers.FloatField(required=False, help_text="time to first token target, seconds (2)")
    tpot_s = serializers.FloatField(required=False, help_text="time per output token target, seconds (0.2)")
    percentile = serializers.FloatField(required=False, help_text="percentile the targets are at (99)")
    ttft_p50_s = serializers.FloatField(required=False, help_text="also: median time to first token, s")
    ttft_p90_s = serializers.FloatField(required=False, help_text="also: p90 time to first token, s")
    ttft_p99_s = serializers.FloatField(required=False, help_text="also: p99 time to first token, s")
    tpot_p50_s = serializers.FloatField(required=False, help_text="also: median time per output token, s")
    tpot_p90_s = serializers.FloatField(required=False, help_text="also: p90 time per output token, s")
    tpot_p99_s = serializers.FloatField(required=False, help_text="also: p99 time per output token, s")


class DemandSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    requests_per_s = serializers.FloatField(required=False, help_text="mean requests per second")
    output_tokens_per_day = serializers.FloatField(required=False, help_text="or: output tokens per day")
    # The busiest hour of a day is at most 24 × the mean hour (all the day's demand in that hour).
    peak_to_mean = serializers.FloatField(
        required=False, min_value=1, max_value=24, help_text="busiest hour ÷ mean, 1 to 24 (2)"
    )
    arrival_cv = serializers.FloatField(
        required=False,
        help_text="coefficient of variation of the time between arrivals: 1 Poisson (default), >1 bursty",
    )
    hourly_profile = serializers.ListField(
        child=serializers.FloatField(),
        required=False,
        help_text="or: 24 relative demands, one an hour of the day; peak ÷ mean = busiest ÷ mean hour",
    )


class LengthClassSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    input = serializers.IntegerField(help_text="prompt tokens of this class")
    output = serializers.IntegerField(help_text="generated tokens of this class")
    share = serializers.FloatField(help_text="share of requests, (0, 1]; the shares add up to 1")


class LayoutSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    tp = serializers.IntegerField(required=False, help_text="tensor parallel degree (0 or absent: searched)")
    pp = serializers.IntegerField(required=False, help_text="pipeline stages (0 or absent: searched)")
    ep = serializers.IntegerField(required=False, help_text="expert parallel degree, MoE only")
    attention_dp = serializers.BooleanField(
        required=False,
        help_text="attention data-parallel over the tp GPUs with the experts spread ep = tp ways (MoE only);"
        " absent: both searched",
    )


class SpeculativeSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    draft_tokens = serializers.IntegerField(
        help_text="k: tokens the draft (MTP heads or a small model) proposes"
    )
    acceptance_rate = serializers.FloatField(
        required=False, help_text="α: probability each draft token is accepted, [0, 1) (required with k > 0)"
    )
    draft_cost = serializers.FloatField(
        required=False,
        help_text="one draft step as a share of the target's decode step (required with k > 0)",
    )


class ServingInputSerializer(StrictJSONTypes, serializers.Serializer[Any]):
    model = serializers.DictField(
        required=False, help_text='{"preset": slug, ...overrides} or a full shape, as in training'
    )
    accelerator = serializers.CharField(required=False, help_text="catalog accelerator slug (h100-sxm)")
    # Plain text, not two ChoiceFields: the schema would name one choice set twice. The engine checks the
    # value (and that the accelerator has a dense peak at the weight precision).
    weight_precision = serializers.CharField(
        required=False, help_text=f"one of {', '.join(serving.SERVING_PRECISIONS)} (fp8)"
    )
    kv_precision = serializers.CharField(
        required=False, help_text=f"KV cache: one of {', '.join(serving.SERVING_PRECISIONS)} (fp8)"
    )
    input_tokens = serializers.IntegerField(required=False, help_text="mean prompt tokens (1024)")
    output_tokens = serializers.IntegerField(required=False, help_text="mean generated tokens (256)")
    lengths = LengthClassSerializer(
        many=True,
        required=False,
        help_text="or: a distribution of request lengths, [{input, output, share}], instead of the two above",
    )
    targets = TargetsSerializer(required=False)
    demand = DemandSerializer()
    gpus_per_node = serializers.IntegerField(required=False)
    site = serializers.IntegerField(
        required=False,
        min_value=1,
        help_text="a saved site you can read: the owning option is priced at its power price, PUE and "
        "colocation, as a design placed there (400 naming site otherwise); or ?site= in the query",
    )
    layout = LayoutSerializer(required=False)
    max_batch = serializers.IntegerField(required=False, help_text="largest batch the stack schedules")
    disaggregated = serializers.BooleanField(required=False, help_text="also size prefill/decode pools")
    arrivals = serializers.ChoiceField(
        choices=serving.ARRIVALS,
        required=False,
        help_text="poisson (default: headroom for the target percentile) or backlog (every slot full)",
    )
    kv_transfer_gbps = serializers.FloatField(required=False, help_text="GB/s per GPU between pools (50)")
    prefix_cache_hit_rate = serializers.FloatField(
        required=False, help_text="share of prompt tokens served from the prefix cache, [0, 1) (0)"
    )
    speculative = SpeculativeSerializer(required=False, help_text="speculative decoding or MTP")
    stack = serializers.ChoiceField(choices=tuple(serving.STACKS), required=False)
    efficiency = serializers.DictField(child=serializers.FloatField(), required=False)
    cost = serializers.DictField(
        required=False,
        help_text=(
            "{on_prem: {...}, network: {...}, colocation: {...}, horizon_years, managed_overhead_fraction,"
            " include_cloud}"
        ),
    )


class LayoutResultSerializer(serializers.Serializer[Any]):
    tp = serializers.IntegerField()
    pp = serializers.IntegerField()
    ep = serializers.IntegerField()
    gpus_per_replica = serializers.IntegerField()
    weights_gib_per_gpu = serializers.FloatField()
    kv_gib_per_gpu = serializers.FloatField()
    batch_fits = serializers.IntegerField()
    batch = serializers.IntegerField()
    ttft_s = serializers.FloatField()
    tpot_s = serializers.FloatField()
    requests_per_s_per_replica = serializers.FloatField()
    output_tokens_per_s_per_gpu = serializers.FloatField()
    replicas = serializers.IntegerField()
    gpus = serializers.IntegerField()
    meets_targets = serializers.BooleanField()
    attention_dp = serializers.BooleanField(help_text="attention data-parallel with wide expert parallelism")
    why = serializers.CharField()
    ttft_p50_s = serializers.FloatField(help_text="queueing model: median time to first token, s")
    ttft_p90_s = serializers.FloatField(help_text="queueing model: p90 time to first token, s")
    ttft_p99_s = serializers.FloatField(help_text="queueing model: p99 time to first token, s")
    tpot_p50_s = serializers.FloatField(help_text="queueing model: median time per output token, s")
    tpot_p90_s = serializers.FloatField(help_text="queueing model: p90 time per output token, s")
    tpot_p99_s = serializers.FloatField(help_text="queueing model: p99 time per output token, s")


class ParetoPointSerializer(serializers.Serializer[Any]):
    tp = serializers.IntegerField()
    pp = serializers.IntegerField()
    ep = serializers.IntegerField()
    batch = serializers.IntegerField(help_text="batch cap (slots) of the replica")
    output_tokens_per_s_per_user = serializers.FloatField(help_text="1 / the median TPOT")
    output_tokens_per_s_per_gpu = serializers.FloatField()
    ttft_s = serializers.FloatField(help_text="at the target percentile, queueing included")
    tpot_s = serializers.FloatField(help_text="at the target percentile")
    meets_targets = serializers.BooleanField()
    attention_dp = serializers.BooleanField(help_text="attention data-parallel with wide expert parallelism")


class DeploySerializer(serializers.Serializer[Any]):
    vllm_command = serializers.CharField(help_text="vllm serve command line of one replica")
    sglang_command = serializers.CharField(help_text="sglang.launch_server command line of one replica")
    trtllm_command = serializers.CharField(help_text="trtllm-serve command line of one replica")
    kubernetes_manifest = serializers.CharField(help_text="Deployment of the replicas and a Service, YAML")


class CurvePointSerializer(serializers.Serializer[Any]):
    batch = serializers.IntegerField()
    ttft_s = serializers.FloatField()
    tpot_s = serializers.FloatField()
    output_tokens_per_s_per_gpu = serializers.FloatField()


class DisaggregatedSerializer(serializers.Serializer[Any]):
    prefill_layout = serializers.CharField()
    decode_layout = serializers.CharField()
    prefill_gpus = serializers.IntegerField()
    decode_gpus = serializers.IntegerField()
    gpus = serializers.IntegerField()
    decode_batch = serializers.IntegerField()
    ttft_s = serializers.FloatField()
    tpot_s = serializers.FloatField()
    kv_transfer_s = serializers.FloatField()
    output_tokens_per_s_per_gpu = serializers.FloatField()


class CostOptionSerializer(serializers.Serializer[Any]):
    option = serializers.CharField()
    pricing_model = serializers.CharField()
    offering = serializers.CharField()
    usd_per_gpu_hour = serializers.FloatField(help_text="the cost engine's $ per GPU-hour used")
    usd_per_m_input_tokens = serializers.FloatField(
        help_text="the option's total × the prefill share of a request's GPU time ÷ input tokens served × 1e6"
    )
    usd_per_m_output_tokens = serializers.FloatField(
        help_text="the option's total × the decode share of a request's GPU time ÷ output tokens served × 1e6"
    )
    usd_per_m_tokens = serializers.FloatField(
        help_text="the option's total over the horizon ÷ all tokens served (input + output) × 1e6"
    )
    usd_per_m_output_tokens_all_gpu_time = serializers.FloatField(
        help_text="the option's total ÷ output tokens served × 1e6: all GPU time charged to output tokens"
    )
    idle_fraction = serializers.FloatField(help_text="share of the billed GPU-hours no request occupies")
    billed_gpus = serializers.IntegerField(help_text="GPUs of the whole nodes or instances billed")
    billed_gpu_hours = serializers.FloatField(help_text="GPU-hours billed over the horizon")
    busy_gpu_hours = serializers.FloatField(
        help_text="GPU-hours the served requests occupy at the replica's planned throughput"
    )
    total_usd = serializers.FloatField(help_text="the option's total over the horizon (cost engine)")
    tokens_served = serializers.FloatField(help_text="mean requests/s × (n_in + n_out) × horizon seconds")
    formula = serializers.CharField()


class AssumptionSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    value = serializers.CharField()


class ServingResultSerializer(serializers.Serializer[Any]):
    model = serializers.CharField()
    accelerator = serializers.CharField()
    best = LayoutResultSerializer()
    layouts = LayoutResultSerializer(many=True)
    curve = CurvePointSerializer(many=True)
    disaggregated = DisaggregatedSerializer(allow_null=True)
    utilization = serializers.FloatField()
    peak_requests_per_s = serializers.FloatField()
    mean_requests_per_s = serializers.FloatField()
    costs = CostOptionSerializer(many=True)
    cost_note = serializers.CharField()
    assumptions = AssumptionSerializer(many=True)
    peak_to_mean = serializers.FloatField(help_text="busiest hour ÷ mean: sizing serves the peak")
    input_tokens_per_day = serializers.FloatField(help_text="mean demand × 86,400 s × mean input tokens")
    output_tokens_per_day = serializers.FloatField(help_text="mean demand × 86,400 s × mean output tokens")
    pareto = ParetoPointSerializer(
        many=True,
        help_text="frontier of output tokens/s per user against per GPU across layouts and batch caps",
    )
    deploy = DeploySerializer(help_text="the chosen configuration, ready to run")
    prices = EvaluationAssumptionSerializer(
        many=True,
        required=False,
        help_text="Where each price came from (prices.<figure>): origin catalog (the public catalog, or "
        "the cost engine's default for an owning figure), price_book (the team's or your own newest "
        "unexpired entry, with entry_id and its date in as_of), design (a value the request gives) or site "
        "(the request's site: its power price, PUE, colocation, source 'site <name> (saved site N)'); the "
        "request's team's book, else your own; the catalog's for an anonymous caller.",
    )
    price_findings = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="The price book's warnings (an expired entry newer than the figure used, named).",
    )
    kv_bytes_per_token = serializers.FloatField(
        help_text="KV cache per token of the whole model: layers × kv heads × head dim × 2 × bytes, or under "
        "multi-head latent attention layers × (kv_lora_rank + qk_rope_head_dim) × bytes; a sliding-window or "
        "chunked layer counts as min(window, mean context) / mean context of a layer"
    )
