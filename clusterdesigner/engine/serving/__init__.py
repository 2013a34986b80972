"""The serving planner: layouts, latency, throughput and GPUs for LLM inference, and the shape of its answer
($ per million tokens included). It never imports cost: serving_cost/ prices the answer, owning and renting,
through the cost engine (serving_cost.estimate, the entry point callers use).

May import: core.

Modules (what each owns, from its docstring; its public functions and classes):
    serving -- Serving planner: memory, latency, throughput and sizing for LLM inference (its $ per million
        tokens: engine.serving_cost).
        public: ServingEfficiency, ServingInput, routed_expert_params, weight_bytes_per_gpu,
            kv_bytes_per_token, kv_bytes_per_token_per_gpu, prefill_attention_flops,
            mla_decode_attention_flops_per_context_token, batch_that_fits, routed_expert_rows, matmul_flops,
            prefill_s, decode_step_s, replica_rate, gamma_percentile, queueing_latency, percentile_key,
            LatencyPercentiles, latency_at_load, layouts, layout_label, LayoutResult, ParetoPoint, CurvePoint,
            DisaggregatedResult, CostOption, ServingResult, poisson_mean_batch, attention_dp_variants,
            pareto_frontier, size_layouts, latency_curve, disaggregated, implied_utilization, parse_request,
            CostSettings, Sizing, sizing
"""
