"""Serving engine: golden numbers by hand calculation (written beside each test) and behaviour."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import InfeasibleError, InputError
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.serving import serving
from clusterdesigner.engine.serving_cost import serving_cost

SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"
CATALOG = specs_from_records(json.loads(SEED.read_text()))
REQUEST = dict(serving.EXAMPLE_REQUEST)


def _input(**overrides: object) -> serving.ServingInput:
    inp, _ = serving.parse_request({**REQUEST, **overrides}, accelerators=CATALOG.accelerators)
    return inp


def test_kv_cache_per_token_of_llama2_70b_is_320_kib_in_bf16() -> None:
    # 80 layers × 8 KV heads × 128 head dim × 2 (K, V) × 2 bytes = 327,680 B = 320 KiB.
    kv = serving.kv_bytes_per_token(model=PRESETS["llama2-70b"], precision="bf16")
    assert kv == 327_680


def test_kv_heads_are_replicated_when_tp_exceeds_them() -> None:
    # 8 KV heads on tp 16: one head per GPU (ceil(8/16) = 1), so the same bytes per GPU as tp 8.
    m = PRESETS["llama2-70b"]
    at8 = serving.kv_bytes_per_token_per_gpu(model=m, precision="fp8", tp=8, pp=1)
    at16 = serving.kv_bytes_per_token_per_gpu(model=m, precision="fp8", tp=16, pp=1)
    assert at8 == at16 == 80 * 1 * 128 * 2 * 1


def test_weights_per_gpu_shrink_as_tensor_parallelism_grows() -> None:
    m = PRESETS["llama3-70b"]
    sizes = [float(serving.weight_bytes_per_gpu(model=m, precision="fp8", tp=t, pp=1)) for t in (1, 2, 4, 8)]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[2] == pytest.approx(m.total_params / 4)  # fp8: one byte per weight, a quarter each


def test_decode_of_one_sequence_is_the_weight_read_at_hbm_bandwidth() -> None:
    # Llama 3 70B fp8 on one H200 (4.8 TB/s at 0.9, the tensorrt-llm stack's fitted fraction):
    # matmuls: 70.55e9 B / 4.32e12 B/s = 16.3 ms (compute 2 × 69.5e9 FLOPs at 0.65 × 1,979 TFLOP/s = 0.11 ms,
    # so memory binds); attention: the KV of one 1,152-token context (1,152 × 160 KiB = 0.19 GB: 0.044 ms;
    # its 3.0 GFLOPs take 0.002 ms); plus the stack's 25 µs for one sequence.
    inp = _input(accelerator="h200")
    m = PRESETS["llama3-70b"]
    ctx = 1024 + 256 / 2
    expect = m.total_params / (4.8e12 * 0.9) + ctx * 80 * 8 * 128 * 2 / (4.8e12 * 0.9) + 25e-6
    assert float(serving.decode_step_s(inp, batch=1, tp=1, pp=1)) == pytest.approx(expect, rel=1e-9)


def test_attention_reads_are_not_hidden_under_compute_bound_matmuls() -> None:
    # Llama 3 70B fp8 on one H200 at batch 512, 1,152-token contexts, tensorrt-llm (0.9 of 4.8 TB/s, 0.65 of
    # 1,979 TFLOP/s, 25 µs a sequence):
    # matmuls: compute 512 × 2 × 69.5e9 / 1.286e15 = 55.3 ms > weights 16.3 ms;
    # attention: KV 512 × 1,152 × 163,840 B / 4.32e12 = 22.4 ms > its 512 × 3.02e9 / 1.286e15 = 1.2 ms;
    # overhead 512 × 25 µs = 12.8 ms. Step = 55.3 + 22.4 + 12.8 = 90.5 ms (a single roofline over both
    # kernels would give max(16.3 + 22.4, 55.3 + 1.2) = 56.5 ms: the KV reads hidden under the matmuls).
    inp = _input(accelerator="h200")
    m = PRESETS["llama3-70b"]
    peak, hbm = 1978.9e12 * 0.65, 4.8e12 * 0.9
    ctx = 1024 + 256 / 2
    assert inp.accelerator.peak_tflops("fp8") == 1978.9  # the catalog's dense FP8 peak
    matmul = 512 * 2 * m.active_matmul_params / peak
    attention = 512 * ctx * 80 * 8 * 128 * 2 / hbm
    step = float(serving.decode_step_s(inp, batch=512, tp=1, pp=1))
    assert step == pytest.approx(matmul + attention + 512 * 25e-6, rel=1e-9)
    assert step == pytest.approx(0.0905, abs=0.0005)


def test_decode_step_grows_with_batch_and_tokens_per_gpu_too() -> None:
    inp = _input()
    steps = serving.decode_step_s(inp, batch=[1, 16, 256], tp=8, pp=1)
    assert list(steps) == sorted(steps)
    rates = serving.replica_rate(inp, batch=[1, 16, 256], tp=8, pp=1)["requests_per_s"]
    assert list(rates) == sorted(rates)


def test_estimate_picks_the_fewest_gpus_meeting_both_targets() -> None:
    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    best = result.best
    assert best.meets_targets and best.tpot_s <= 0.05 and best.ttft_s <= 2.0
    assert all(best.gpus <= r.gpus for r in result.layouts if r.meets_targets)
    # the peak is 2 × 20 = 40 requests/s; the replicas serve it
    assert best.replicas * best.requests_per_s_per_replica >= 40
    assert 0 < result.utilization <= 1
    assert result.curve and result.curve[0].batch == 1


def test_owning_and_every_cloud_offering_of_the_accelerator_are_priced() -> None:
    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    offerings = {c.offering for c in result.costs if c.offering}
    expected = {s for s, o in CATALOG.offerings.items() if o.accelerator == "h100-sxm" and o.usd_per_hour}
    assert offerings == expected
    own = result.costs[0]
    assert own.option == "own" and own.usd_per_m_output_tokens > own.usd_per_m_input_tokens > 0


def test_sizing_without_an_owning_price_gives_the_same_layout_and_no_owning_option() -> None:
    """price_owning=False (the capacity plan's sizing) on B300, which has no owning price (data README):
    with a price the estimate picks a layout; without one it picks the same, since no cost enters sizing."""
    request = {**REQUEST, "accelerator": "b300"}
    with pytest.raises(InputError) as refused:
        serving_cost.estimate(request, catalog=CATALOG)
    assert refused.value.field == "cost.on_prem.server_usd"
    priced = serving_cost.estimate({**request, "cost": {"on_prem": {"server_usd": 400_000}}}, catalog=CATALOG)
    sized = serving_cost.estimate(request, catalog=CATALOG, price_owning=False)
    assert (sized.best.tp, sized.best.pp, sized.best.batch, sized.best.replicas, sized.best.gpus) == (
        priced.best.tp,
        priced.best.pp,
        priced.best.batch,
        priced.best.replicas,
        priced.best.gpus,
    )
    assert priced.costs[0].option == "own" and all(c.option != "own" for c in sized.costs)
    assert "owning not priced" in sized.cost_note


def test_the_serving_engine_answers_the_physics_and_serving_cost_adds_only_the_costs() -> None:
    """Issue 34: ``serving.sizing`` prices nothing (no cost rows, a blank note: serving never imports cost)
    and ``serving_cost.estimate`` is that answer with the cost rows and note filled, every other field equal.
    The cost section is checked by the sizing all the same (its defaults: 3 years, no overhead, cloud on)."""
    sized = serving.sizing(REQUEST, accelerators=CATALOG.accelerators)
    priced = serving_cost.estimate(REQUEST, catalog=CATALOG)
    assert (sized.result.costs, sized.result.cost_note) == ((), "")
    assert priced.costs[0].option == "own" and len(priced.costs) > 1 and priced.cost_note == ""
    assert replace(priced, costs=(), cost_note="") == sized.result
    assert (sized.cost.horizon_years, sized.cost.managed_overhead_fraction, sized.cost.include_cloud) == (
        3.0,
        0.0,
        True,
    )
    with pytest.raises(InputError) as refused:
        serving.sizing({**REQUEST, "cost": {"horizon_years": 0}}, accelerators=CATALOG.accelerators)
    assert refused.value.field == "cost.horizon_years"


def test_cost_per_million_tokens_is_the_billed_total_over_the_tokens_served() -> None:
    # All tokens: the option's total over the horizon ÷ (R_mean × (n_in + n_out) × 3 × 8,760 × 3,600) × 1e6;
    # the total is the cost engine's $/GPU-hour used × the whole nodes' GPUs × 26,280 h × utilization.
    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    own, best = result.costs[0], result.best
    nodes = -(-best.gpus // 8)
    total = own.usd_per_gpu_hour * nodes * 8 * 3 * 8760 * result.utilization
    tokens = 20 * (1024 + 256) * 3 * 8760 * 3600
    assert own.billed_gpus == nodes * 8 and own.total_usd == pytest.approx(total)
    assert own.usd_per_m_tokens == pytest.approx(total / tokens * 1e6)
    # The busy-GPU figure (a busy GPU-hour's price over a busy replica's tokens, what was printed before) is
    # the billed one × busy GPU-hours ÷ GPU-hours used: it is lower whenever a billed GPU sits outside a
    # replica or a replica idles below the peak.
    per_request_s = 1 / best.requests_per_s_per_replica
    busy_figure = own.usd_per_gpu_hour * best.gpus_per_replica * per_request_s / 3600 / (1024 + 256) * 1e6
    used = nodes * 8 * 3 * 8760 * result.utilization
    assert busy_figure == pytest.approx(own.usd_per_m_tokens * own.busy_gpu_hours / used)
    assert busy_figure < own.usd_per_m_tokens


def test_the_owning_option_is_the_full_cost_results_on_prem() -> None:
    """owning_cost asks the cost engine for no Monte Carlo and no what-ifs (a tenth of the time): its
    figures are the full result's own, to the last bit, for the example's whole nodes, utilization and
    3-year horizon."""
    from clusterdesigner.engine.cost.cost import tco

    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    nodes = -(-result.best.gpus // 8)
    cluster = {"accelerator": "h100-sxm", "nodes": nodes, "gpus_per_node": 8}
    full = tco(
        {"cluster": cluster, "utilization": result.utilization, "horizon_years": 3.0, "on_prem": {}},
        **CATALOG.cost_kwargs(),
    )
    assert full["sensitivity"]["rows"] and "uncertainty" in full["cashflow"]  # both ran in the full one
    own = result.costs[0]
    assert own.option == "own"
    assert own.usd_per_gpu_hour == float(full["on_prem"]["usd_per_gpu_hour"])
    assert own.total_usd == float(full["on_prem"]["total_usd"])


def test_result_round_trips_through_json() -> None:
    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    again = serving.ServingResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again == result


def test_rejects_fp4_weights_on_an_accelerator_without_fp4() -> None:
    with pytest.raises(InputError) as err:
        serving_cost.estimate({**REQUEST, "weight_precision": "fp4"}, catalog=CATALOG)
    assert err.value.field == "weight_precision"


def test_rejects_a_model_that_fits_nowhere() -> None:
    with pytest.raises(InfeasibleError) as err:
        serving_cost.estimate(
            {**REQUEST, "model": {"preset": "llama3-405b"}, "accelerator": "rtx-4090"}, catalog=CATALOG
        )
    assert err.value.field == "accelerator"


def test_an_unreachable_tpot_target_names_the_target() -> None:
    with pytest.raises(InfeasibleError) as err:
        serving_cost.estimate({**REQUEST, "targets": {"tpot_s": 0.0001}}, catalog=CATALOG)
    assert err.value.field == "targets.tpot_s"


def test_demand_in_tokens_per_day_is_requests_per_second() -> None:
    # 20 req/s × 256 output tokens × 86,400 s = 442,368,000 output tokens per day.
    inp = _input(demand={"output_tokens_per_day": 442_368_000})
    assert inp.requests_per_s == pytest.approx(20.0)


def test_rejects_unknown_fields_by_name() -> None:
    with pytest.raises(InputError) as err:
        serving_cost.estimate({**REQUEST, "targets": {"ttft": 1}}, catalog=CATALOG)
    assert err.value.field == "targets.ttft"


def test_disaggregated_pools_meet_the_targets_when_offered() -> None:
    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    d = result.disaggregated
    assert d is not None and d.ttft_s <= 2.0 and d.tpot_s <= 0.05
    assert d.gpus == d.prefill_gpus + d.decode_gpus


@settings(max_examples=60, deadline=None)
@given(
    preset=st.sampled_from(["llama3-8b", "llama3-70b", "mixtral-8x7b", "llama2-70b"]),
    accelerator=st.sampled_from(["h100-sxm", "h200", "mi300x", "b200"]),
    pp=st.sampled_from([1, 2, 4]),
    batch=st.integers(min_value=1, max_value=2048),
)
def test_more_batch_never_lowers_throughput_and_more_tp_never_adds_memory(
    preset: str, accelerator: str, pp: int, batch: int
) -> None:
    inp = _input(model={"preset": preset}, accelerator=accelerator)
    m = PRESETS[preset]
    rates = serving.replica_rate(inp, batch=[batch, batch + 1, 2 * batch], tp=2, pp=pp)["requests_per_s"]
    assert rates[0] <= rates[2] * (1 + 1e-12) and rates[1] <= rates[2] * (1 + 1e-12)
    # One more sequence lowers the rate only where its token takes the routed experts' grouped GEMMs over a
    # 128-row tile (serving.routed_expert_rows: each touched expert's rows padded to whole tiles), which adds
    # a whole tile's rows to the step; a dense model's step has no such edge.
    rows = [serving.routed_expert_rows(m, tokens=n, ep=1, padded=True) for n in (batch, batch + 1)]
    assert rates[0] <= rates[1] * (1 + 1e-12) or (m.is_moe and rows[1] - rows[0] >= serving.MOE_TILE_ROWS)
    steps = serving.decode_step_s(inp, batch=[batch, 2 * batch], tp=2, pp=pp)
    assert steps[0] <= steps[1]
    tps = [t for t in (1, 2, 4, 8) if m.heads % t == 0]
    kv = [float(serving.kv_bytes_per_token_per_gpu(model=m, precision="fp8", tp=t, pp=pp)) for t in tps]
    weights = [float(serving.weight_bytes_per_gpu(model=m, precision="fp8", tp=t, pp=pp)) for t in tps]
    assert kv == sorted(kv, reverse=True) and weights == sorted(weights, reverse=True)


def test_one_more_sequence_across_a_tile_edge_costs_a_tile_per_expert() -> None:
    # Mixtral 8x7B (8 experts, top 2) decoding 512 sequences: 512 × 2 / 8 = 128 tokens an expert, one
    # 128-row tile each, 8 × 128 = 1,024 rows; at 513 each expert's mean 128.25 rounds up to two tiles,
    # 2,048 rows, so the step computes twice the routed rows and the replica's rate falls (tp 2, H100) until
    # the batch fills the second tiles: at 1,024 (256 an expert, exactly two tiles) it is above both. The
    # engine pads each expert's mean load (not the spread of loads across experts), so the edge is sharp.
    inp = _input(model={"preset": "mixtral-8x7b"}, accelerator="h100-sxm")
    m = PRESETS["mixtral-8x7b"]
    rows = [float(serving.routed_expert_rows(m, tokens=n, ep=1, padded=True)) for n in (511, 512, 513, 1024)]
    assert rows == [1024.0, 1024.0, 2048.0, 2048.0]
    rates = serving.replica_rate(inp, batch=[512, 513, 1024], tp=2, pp=1)["requests_per_s"]
    assert rates[1] < rates[0] < rates[2]


def test_poisson_arrivals_keep_headroom_for_the_percentile() -> None:
    # b + z·√b = slots with z = Φ⁻¹(0.99) = 2.3263: 1,000 slots → √b = (−2.3263 + √(5.4119 + 4,000)) / 2
    # = (63.2883 − 2.3263) / 2 = 30.481, b = 929.1; 100 slots → √b = (−2.3263 + 20.1348) / 2 = 8.904,
    # b = 79.3; at p50 (z = 0) b = slots.
    means = serving.poisson_mean_batch(slots=[1000, 100], percentile=99.0)
    assert list(means) == pytest.approx([929.1, 79.3], abs=0.05)
    assert float(serving.poisson_mean_batch(slots=64, percentile=50.0)) == pytest.approx(64.0)


def test_a_backlog_runs_every_slot_and_poisson_arrivals_need_more_replicas() -> None:
    # Same layout and busiest batch; the Poisson replica serves b/B of the backlog's rate, so no fewer GPUs.
    poisson = serving_cost.estimate({**REQUEST, "disaggregated": False}, catalog=CATALOG).best
    backlog = serving_cost.estimate(
        {**REQUEST, "disaggregated": False, "arrivals": "backlog"}, catalog=CATALOG
    )
    same = next(
        r for r in backlog.layouts if (r.tp, r.pp, r.batch) == (poisson.tp, poisson.pp, poisson.batch)
    )
    mean = float(serving.poisson_mean_batch(slots=poisson.batch, percentile=99.0))
    assert poisson.requests_per_s_per_replica == pytest.approx(
        same.requests_per_s_per_replica * mean / poisson.batch
    )
    assert backlog.best.gpus <= poisson.gpus


# ---- request lengths as a distribution -------------------------------------------------------------------
MIX = [{"input": 100, "output": 900, "share": 0.5}, {"input": 1900, "output": 100, "share": 0.5}]


def _mix_request(**overrides: object) -> dict[str, object]:
    base = {k: v for k, v in REQUEST.items() if k not in ("input_tokens", "output_tokens")}
    return {**base, "lengths": MIX, **overrides}


def test_one_length_class_is_the_fixed_length_request() -> None:
    fixed = serving_cost.estimate(REQUEST, catalog=CATALOG)
    one = serving_cost.estimate(
        _mix_request(lengths=[{"input": 1024, "output": 256, "share": 1}]), catalog=CATALOG
    )
    assert one.best == fixed.best and one.costs == fixed.costs


def test_the_running_batch_weights_each_length_class_by_its_answer_length() -> None:
    # A class holds a slot for n_out steps, so the batch at any instant is weighted by share × n_out:
    # (0.5·900·(100 + 450) + 0.5·100·(1900 + 50)) / (0.5·900 + 0.5·100) = (247,500 + 97,500) / 500 = 690
    # tokens of context, not the 1,000 + 500/2 = 1,250 of the mean lengths.
    inp, _ = serving.parse_request(_mix_request(), accelerators=CATALOG.accelerators)
    assert inp.context_tokens == pytest.approx(690.0)
    assert (inp.mean_input_tokens, inp.mean_output_tokens) == (1000.0, 500.0)
    assert (inp.input_tokens, inp.output_tokens) == (1000, 500)


def test_mean_prefill_is_the_share_weighted_time_of_each_class() -> None:
    # n² attention: the mean of the two classes' prefill times, not the prefill of the mean prompt.
    inp, _ = serving.parse_request(_mix_request(), accelerators=CATALOG.accelerators)
    short = float(serving.prefill_s(inp, tp=8, pp=1, input_tokens=100))
    long = float(serving.prefill_s(inp, tp=8, pp=1, input_tokens=1900))
    assert float(serving.prefill_s(inp, tp=8, pp=1)) == pytest.approx(0.5 * short + 0.5 * long, rel=1e-12)


def test_ttft_is_judged_on_the_prompt_at_the_target_percentile() -> None:
    # 95 % of prompts have 512 tokens, 5 % have 16,384: at p99 the TTFT target is the long prompt's; at p90
    # the short one's. A TTFT target between the two prefills is met at p90 and refused at p99.
    lengths = [{"input": 512, "output": 256, "share": 0.95}, {"input": 16384, "output": 256, "share": 0.05}]
    p99, _ = serving.parse_request(_mix_request(lengths=lengths), accelerators=CATALOG.accelerators)
    assert p99.percentile_input_tokens == 16384
    long = float(serving.prefill_s(p99, tp=8, pp=1, input_tokens=16384))
    short = float(serving.prefill_s(p99, tp=8, pp=1, input_tokens=512))
    target = (long + short) / 2
    ok = serving_cost.estimate(
        _mix_request(lengths=lengths, targets={"ttft_s": target, "tpot_s": 0.05, "percentile": 90}),
        catalog=CATALOG,
    )
    assert ok.best.meets_targets
    with pytest.raises(InfeasibleError) as err:
        serving_cost.estimate(
            _mix_request(lengths=lengths, targets={"ttft_s": target / 8, "tpot_s": 0.05, "percentile": 99}),
            catalog=CATALOG,
        )
    assert err.value.field == "targets.ttft_s"


def test_sizing_reads_the_distribution_not_only_its_mean() -> None:
    # Same mean lengths (1,000 in, 500 out) as one class or as the 50/50 mix: the mix holds 690 tokens of
    # context a sequence instead of 1,250, so more sequences fit and the per-GPU rate differs.
    mixed = serving_cost.estimate(_mix_request(), catalog=CATALOG)
    flat = serving_cost.estimate({**REQUEST, "input_tokens": 1000, "output_tokens": 500}, catalog=CATALOG)
    assert mixed.best.batch_fits > flat.best.batch_fits
    assert mixed.best.output_tokens_per_s_per_gpu != pytest.approx(flat.best.output_tokens_per_s_per_gpu)


@pytest.mark.parametrize(
    ("lengths", "field"),
    [
        ([{"input": 100, "output": 10, "share": 0.5}], "lengths"),
        ([{"input": 0, "output": 10, "share": 1}], "lengths.0.input"),
        ([{"input": 10, "output": 10, "share": 1, "x": 1}], "lengths.0.x"),
        ([{"input": 10, "output": 10, "share": -1}], "lengths.0.share"),
        ("long", "lengths"),
        ([], "lengths"),
    ],
)
def test_a_bad_length_distribution_names_the_field(lengths: object, field: str) -> None:
    with pytest.raises(InputError) as err:
        serving.parse_request(_mix_request(lengths=lengths), accelerators=CATALOG.accelerators)
    assert err.value.field == field


def test_lengths_and_fixed_lengths_together_are_refused() -> None:
    with pytest.raises(InputError) as err:
        serving.parse_request({**REQUEST, "lengths": MIX}, accelerators=CATALOG.accelerators)
    assert err.value.field == "lengths"


# ---- demand with a daily shape -----------------------------------------------------------------------------
# A business-hours service: 8 hours at 3 units, 16 hours at 0.5: mean (24 + 8) / 24 = 4/3, peak 3,
# so peak ÷ mean = 3 / (4/3) = 2.25.
OFFICE = [0.5] * 8 + [3.0] * 8 + [0.5] * 8


def test_an_hourly_profile_sets_the_peak_the_sizing_serves() -> None:
    shaped = serving_cost.estimate(
        {**REQUEST, "demand": {"requests_per_s": 20, "hourly_profile": OFFICE}}, catalog=CATALOG
    )
    assert shaped.peak_to_mean == pytest.approx(2.25)
    assert shaped.peak_requests_per_s == pytest.approx(45.0)
    same = serving_cost.estimate(
        {**REQUEST, "demand": {"requests_per_s": 20, "peak_to_mean": 2.25}}, catalog=CATALOG
    )
    assert shaped.best == same.best
    flat = serving_cost.estimate(
        {**REQUEST, "demand": {"requests_per_s": 20, "hourly_profile": [1] * 24}}, catalog=CATALOG
    )
    assert flat.peak_to_mean == 1.0 and flat.best.gpus < shaped.best.gpus


def test_tokens_per_day_in_and_out() -> None:
    # 20 requests/s × 86,400 s = 1,728,000 requests a day × 1,024 in / 256 out tokens.
    result = serving_cost.estimate(REQUEST, catalog=CATALOG)
    assert result.input_tokens_per_day == pytest.approx(1_728_000 * 1024)
    assert result.output_tokens_per_day == pytest.approx(1_728_000 * 256)
    again = serving_cost.estimate(
        {**REQUEST, "demand": {"output_tokens_per_day": 1_728_000 * 256, "peak_to_mean": 2}}, catalog=CATALOG
    )
    assert again.mean_requests_per_s == pytest.approx(20.0) and again.best == result.best


@pytest.mark.parametrize(
    ("demand", "field"),
    [
        ({"requests_per_s": 1, "hourly_profile": [1] * 23}, "demand.hourly_profile"),
        ({"requests_per_s": 1, "hourly_profile": [0] * 24}, "demand.hourly_profile"),
        ({"requests_per_s": 1, "hourly_profile": [1] * 23 + [-1]}, "demand.hourly_profile.23"),
        ({"requests_per_s": 1, "hourly_profile": [1] * 24, "peak_to_mean": 2}, "demand.hourly_profile"),
    ],
)
def test_a_bad_hourly_profile_names_the_field(demand: object, field: str) -> None:
    with pytest.raises(InputError) as err:
        serving.parse_request({**REQUEST, "demand": demand}, accelerators=CATALOG.accelerators)
    assert err.value.field == field


def test_a_profile_of_huge_hours_keeps_its_shape() -> None:
    # 24 × 1e308 overflows a plain sum; scaled by the peak first, peak ÷ mean is 24 / 24 = 1.
    inp, _ = serving.parse_request(
        {**REQUEST, "demand": {"requests_per_s": 1, "hourly_profile": [1e308] * 24}},
        accelerators=CATALOG.accelerators,
    )
    assert inp.peak_to_mean == 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 100_000), st.integers(1, 10_000), st.integers(1, 100)),
        min_size=1,
        max_size=8,
    ),
    st.floats(1, 99.9),
)
def test_a_length_mix_stays_within_its_classes(
    classes: list[tuple[int, int, int]], percentile: float
) -> None:
    total = sum(w for *_, w in classes)
    lengths = [{"input": i, "output": o, "share": w / total} for i, o, w in classes]
    inp, _ = serving.parse_request(
        _mix_request(lengths=lengths, targets={"percentile": percentile}), accelerators=CATALOG.accelerators
    )
    contexts = [i + o / 2 for i, o, _ in classes]
    assert min(contexts) * (1 - 1e-9) <= inp.context_tokens <= max(contexts) * (1 + 1e-9)
    assert min(i for i, *_ in classes) <= inp.mean_input_tokens * (1 + 1e-9)
    assert inp.mean_input_tokens <= max(i for i, *_ in classes) * (1 + 1e-9)
    assert inp.percentile_input_tokens in {i for i, *_ in classes}
