"""POST /api/v1/serving/estimate/ and manage.py serve_estimate, through the URL and the command line."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from clusterdesigner.engine.serving import serving

URL = "/api/v1/serving/estimate/"
REQUEST = dict(serving.EXAMPLE_REQUEST)
REPOSITORY = "meta-llama/Meta-Llama-3-70B-Instruct"  # the example preset's weights (PRESET_WEIGHTS)
# The example with its lengths as a distribution: 80 % chat turns, 20 % long documents.
SPREAD = {
    **{k: v for k, v in REQUEST.items() if k not in ("input_tokens", "output_tokens")},
    "lengths": [{"input": 512, "output": 256, "share": 0.8}, {"input": 8192, "output": 512, "share": 0.2}],
}


def _post(client: Any, body: Any) -> Any:
    return client.post(URL, data=json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_estimate_answers_the_layout_latency_and_costs(api_client: Any, catalog: Any) -> None:
    response = _post(api_client, REQUEST)
    assert response.status_code == 200, response.content
    data = response.json()
    best = data["best"]
    assert best["meets_targets"] and best["tpot_s"] <= 0.05 and best["gpus"] >= best["gpus_per_replica"]
    assert data["curve"][0]["batch"] == 1
    assert data["costs"][0]["option"] == "own" and data["costs"][0]["usd_per_m_output_tokens"] > 0
    assert any(c["offering"] == "aws-p5-48xlarge" for c in data["costs"])
    # Llama 3 70B, fp8 KV: 80 layers × 8 KV heads × 128 head dim × 2 (K, V) × 1 byte = 163,840 bytes
    assert data["kv_bytes_per_token"] == 163_840


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**REQUEST, "demand": {"requests_per_s": -3}}, "demand.requests_per_s"),
        ({**REQUEST, "accelerator": "nope"}, "accelerator"),
        ({**REQUEST, "weight_precision": "fp4"}, "weight_precision"),
        ({**REQUEST, "targets": {"tpot_s": "fast"}}, "targets.tpot_s"),
        ({**REQUEST, "targets": {"tpot_s": 1e-6}}, "targets.tpot_s"),
        ({**REQUEST, "model": {"preset": "gpt-9"}}, "model.preset"),
        ({**REQUEST, "layout": {"tp": 3}}, "layout.tp"),
        ({**REQUEST, "bogus": 1}, "bogus"),
        ({**REQUEST, "arrivals": "bursty"}, "arrivals"),
        ({k: v for k, v in REQUEST.items() if k != "demand"}, "demand"),
        ({**REQUEST, "demand": {"requests_per_s": 1e300}}, "demand.requests_per_s"),
        ({**REQUEST, "demand": {"output_tokens_per_day": 1e300}}, "demand.output_tokens_per_day"),
        ({**REQUEST, "efficiency": {"memory_reserve_fraction": 1.5}}, "efficiency.memory_reserve_fraction"),
        ({**REQUEST, "cost": {"on_prem": {"pue": 0.5}}}, "cost.on_prem.pue"),
        ({**REQUEST, "stack": "tgi"}, "stack"),
        ({**REQUEST, "lengths": [{"input": 100, "output": 10, "share": 1}]}, "lengths"),
        ({**SPREAD, "lengths": [{"input": 100, "output": 10, "share": 0.4}]}, "lengths"),
        ({**SPREAD, "lengths": [{"input": 100, "output": "x", "share": 1}]}, "lengths.0.output"),
        ({**REQUEST, "targets": {"ttft_p90_s": -1}}, "targets.ttft_p90_s"),
        ({**REQUEST, "targets": {"ttft_p95_s": 1}}, "targets.ttft_p95_s"),
        ({**REQUEST, "targets": {"tpot_p50_s": 1e-6}}, "targets.tpot_p50_s"),
        ({**REQUEST, "targets": {"ttft_p90_s": 1e-4}}, "targets.ttft_p90_s"),
        ({**REQUEST, "demand": {"requests_per_s": 2, "arrival_cv": -1}}, "demand.arrival_cv"),
        ({**REQUEST, "speculative": {"draft_tokens": 2, "draft_cost": 0.1}}, "speculative.acceptance_rate"),
        ({**REQUEST, "speculative": {"draft_tokens": 2, "acceptance_rate": 0.6}}, "speculative.draft_cost"),
        ({**REQUEST, "prefix_cache_hit_rate": 1.5}, "prefix_cache_hit_rate"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api_client: Any, catalog: Any, body: Any, field: str) -> None:
    response = _post(api_client, body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert field in error["fields"], error
    assert error["code"] and error["message"]


@pytest.mark.django_db
def test_a_length_distribution_is_sized_through_the_api(api_client: Any, catalog: Any) -> None:
    # mean lengths: 0.8·512 + 0.2·8192 = 2,048 in, 0.8·256 + 0.2·512 = 307.2 out
    response = _post(api_client, SPREAD)
    assert response.status_code == 200, response.content
    spread = response.json()
    fixed = _post(api_client, {**REQUEST, "input_tokens": 2048, "output_tokens": 307}).json()
    assert spread["best"]["meets_targets"]
    assert spread["best"]["batch_fits"] != fixed["best"]["batch_fits"]


@pytest.mark.django_db
def test_an_hourly_profile_and_tokens_per_day_through_the_api(api_client: Any, catalog: Any) -> None:
    # 8 busy hours at 3, 16 quiet at 0.5: peak ÷ mean = 3 / (32/24) = 2.25; 20 req/s × 86,400 s × 256 out
    office = [0.5] * 8 + [3.0] * 8 + [0.5] * 8
    response = _post(api_client, {**REQUEST, "demand": {"requests_per_s": 20, "hourly_profile": office}})
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["peak_to_mean"] == pytest.approx(2.25) and data["peak_requests_per_s"] == pytest.approx(45)
    assert data["output_tokens_per_day"] == pytest.approx(20 * 86_400 * 256)
    assert data["input_tokens_per_day"] == pytest.approx(20 * 86_400 * 1024)
    bad = _post(api_client, {**REQUEST, "demand": {"requests_per_s": 20, "hourly_profile": [1] * 12}})
    assert bad.status_code == 400 and "demand.hourly_profile" in bad.json()["error"]["fields"]


@pytest.mark.django_db
def test_a_tiny_demand_still_needs_one_replica(api_client: Any, catalog: Any) -> None:
    response = _post(api_client, {**REQUEST, "demand": {"requests_per_s": 1e-9}})
    assert response.status_code == 200
    data = response.json()
    assert data["best"]["replicas"] == 1 and data["utilization"] == pytest.approx(1e-6)


@pytest.mark.django_db
def test_a_body_that_is_not_an_object_is_a_400(api_client: Any, catalog: Any) -> None:
    response = _post(api_client, [1, 2])
    assert response.status_code == 400
    assert "error" in response.json()


@pytest.mark.django_db
def test_get_is_refused_with_the_envelope(api_client: Any) -> None:
    response = api_client.get(URL)
    assert response.status_code == 405
    assert "error" in response.json()


@pytest.mark.django_db
def test_serve_estimate_command_reads_a_json_file(tmp_path: Path, catalog: Any) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST))
    out = StringIO()
    call_command("serve_estimate", str(path), "--compact", stdout=out, stderr=StringIO())
    data = json.loads(out.getvalue())
    assert data["best"]["meets_targets"] and data["accelerator"] == "h100-sxm"


@pytest.mark.django_db
def test_serve_estimate_command_names_the_bad_field(tmp_path: Path, catalog: Any) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps({**REQUEST, "output_tokens": 0}))
    with pytest.raises(CommandError, match="output_tokens"):
        call_command("serve_estimate", str(path), stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        # engine/core/bounds.py: the cost engine's 72 GPUs a node (a GB200 NVL72 rack); serving allowed 1,024
        # and then failed in the cost engine on a field named "accelerator".
        ({"gpus_per_node": 73}, "gpus_per_node", "must be a whole number from 1 to 72, got 73"),
        (
            {"cost": {"managed_overhead_fraction": 5.5}},
            "cost.managed_overhead_fraction",
            "must be a number from 0 to 5, got 5.5",
        ),
    ],
)
def test_a_serving_request_past_the_cost_engines_bounds_is_a_400_naming_its_field(
    api_client: Any, catalog: Any, change: dict[str, Any], field: str, message: str
) -> None:
    response = _post(api_client, {**REQUEST, **change})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["fields"] == {field: [message]}


# Llama 3 8B at 2 requests/s on H100 (issue #37, item 1): one tp1 replica of 1 GPU serves the peak (4 req/s),
# but an owner holds, and an 8-GPU cloud instance bills, the whole 8-GPU node.
EIGHT_B = {"model": {"preset": "llama3-8b"}, "accelerator": "h100-sxm", "demand": {"requests_per_s": 2}}


@pytest.mark.django_db
def test_dollars_per_million_tokens_are_the_billed_total_over_the_tokens_served(
    api_client: Any, catalog: Any
) -> None:
    from apps.catalog.selectors import engine_catalog
    from clusterdesigner.engine.cost.cost import tco

    response = _post(api_client, EIGHT_B)
    assert response.status_code == 200, response.content
    data = response.json()
    best, u = data["best"], data["utilization"]
    assert (best["gpus"], best["gpus_per_replica"], best["replicas"]) == (1, 1, 1)
    costs = {c["option"]: c for c in data["costs"]}
    # Hand calculation. Tokens served over the 3-year default horizon:
    #   2 req/s × (1,024 + 256) tokens × 3 × 8,760 h × 3,600 s = 242,196,480,000 tokens.
    tokens = 2 * (1024 + 256) * 3 * 8760 * 3600
    assert tokens == 242_196_480_000
    # On-demand AWS p5.48xlarge: $55.04 a node-hour, one 8-GPU node, billed for the hours used, 26,280 h × u
    # (u = mean demand ÷ capacity = 2 ÷ 33.11 = 0.0604): $87,361, so $87,361 / 242,196.48 M = $0.3607/M.
    on_demand = costs["aws-p5-48xlarge on_demand"]
    total = 55.04 * 3 * 8760 * u
    assert on_demand["total_usd"] == pytest.approx(total)
    assert on_demand["usd_per_m_tokens"] == pytest.approx(total / tokens * 1e6)
    assert on_demand["usd_per_m_tokens"] == pytest.approx(0.3607, abs=5e-4)  # was $0.045/M (1/8 of it)
    assert on_demand["billed_gpus"] == 8
    # busy GPU-hours = 2 × 94,608,000 s / 33.11 req/s / 3,600 = 1,587; billed 8 × 26,280 × u = 12,698:
    # 7/8 idle
    assert on_demand["idle_fraction"] == pytest.approx(7 / 8)
    # Owning: the cost engine's total for one 8-GPU H100 node over 3 years at that utilization, ÷ tokens:
    # $323,882 / 242,196.48 M = $1.337/M (was $0.449/M: the price of a busy GPU-hour over a busy GPU's tokens;
    # $869,902 and $3.59/M while a whole staff FTE, $180,000 a year, was charged to a single node: issue #31
    # scales staff with the fleet's MW, 0.0102 MW here).
    own_total = tco(
        {"cluster": {"accelerator": "h100-sxm", "nodes": 1, "gpus_per_node": 8}, "utilization": u},
        **engine_catalog().cost_kwargs(),
    )["on_prem"]["total_usd"]
    own = costs["own"]
    assert own["total_usd"] == pytest.approx(own_total)
    assert own["usd_per_m_tokens"] == pytest.approx(own_total / tokens * 1e6)
    assert own["usd_per_m_tokens"] == pytest.approx(1.337, abs=0.005)
    # an owner holds all 8 × 26,280 = 210,240 GPU-hours; 1,587 are busy: 99.2 % idle
    assert own["idle_fraction"] == pytest.approx(1 - own["busy_gpu_hours"] / 210_240)
    assert own["idle_fraction"] == pytest.approx(0.9925, abs=5e-4)
    # A 1-GPU instance (Lambda's gpu_1x_h100_sxm5, $3.78/h) bills the one GPU the replica uses: nothing idle.
    single = costs["lambda-gpu-1x-h100-sxm5 on_demand"]
    assert single["billed_gpus"] == 1 and single["idle_fraction"] == pytest.approx(0.0, abs=1e-9)
    assert single["usd_per_m_tokens"] == pytest.approx(3.78 * 3 * 8760 * u / tokens * 1e6)
    for c in data["costs"]:
        # input and output split the total by phase: 1,024 × input + 256 × output = 1,280 × all tokens
        split = 1024 * c["usd_per_m_input_tokens"] + 256 * c["usd_per_m_output_tokens"]
        assert split == pytest.approx(1280 * c["usd_per_m_tokens"]), c["option"]
        # all GPU time on output tokens: the total over the 256/1,280 of tokens that are output
        assert c["usd_per_m_output_tokens_all_gpu_time"] == pytest.approx(c["usd_per_m_tokens"] * 1280 / 256)


@pytest.mark.django_db
def test_percentile_targets_are_met_and_the_percentiles_reported(api_client: Any, catalog: Any) -> None:
    loose = _post(api_client, REQUEST).json()["best"]
    assert loose["ttft_p50_s"] < loose["ttft_p90_s"] < loose["ttft_p99_s"] == pytest.approx(loose["ttft_s"])
    assert loose["tpot_p50_s"] < loose["tpot_p90_s"] < loose["tpot_p99_s"]
    # a median TTFT target below what the loose sizing gives is met by the sizing
    target = round(loose["ttft_p50_s"] * 0.8, 3)
    body = {**REQUEST, "targets": {**REQUEST["targets"], "ttft_p50_s": target}}
    response = _post(api_client, body)
    assert response.status_code == 200, response.content
    tight = response.json()["best"]
    assert tight["ttft_p50_s"] <= target and tight["gpus"] >= loose["gpus"]
    # bursty arrivals (c_a = 3) lengthen the TTFT tail at the same targets
    bursty = _post(api_client, {**REQUEST, "demand": {**REQUEST["demand"], "arrival_cv": 3}}).json()["best"]
    assert bursty["ttft_p99_s"] > loose["ttft_p99_s"] or bursty["gpus"] > loose["gpus"]


@pytest.mark.django_db
def test_the_estimate_carries_the_pareto_frontier_and_the_deployable_configuration(
    api_client: Any, catalog: Any
) -> None:
    import yaml

    data = _post(api_client, REQUEST).json()
    best, front = data["best"], data["pareto"]
    assert len(front) >= 5
    pairs = [(p["output_tokens_per_s_per_user"], p["output_tokens_per_s_per_gpu"]) for p in front]
    # a frontier: faster per user means slower per GPU, and no point beats another on both
    assert [u for u, _ in pairs] == sorted(u for u, _ in pairs)
    assert [g for _, g in pairs] == sorted((g for _, g in pairs), reverse=True)
    # the chosen configuration is on or under the frontier
    chosen = (1 / best["tpot_p50_s"], best["output_tokens_per_s_per_gpu"])
    assert any(u >= chosen[0] * (1 - 1e-9) and g >= chosen[1] * (1 - 1e-9) for u, g in pairs)
    command = data["deploy"]["vllm_command"].split()
    assert command[:3] == ["vllm", "serve", "meta-llama/Meta-Llama-3-70B-Instruct"]
    flags = dict(zip(command[3::2], command[4::2], strict=False))
    assert flags["--tensor-parallel-size"] == str(best["tp"])
    assert flags["--max-num-seqs"] == str(best["batch"])
    assert flags["--max-model-len"] == str(1024 + 256)
    assert flags["--kv-cache-dtype"] == "fp8"  # the example's KV precision
    deployment, _ = yaml.safe_load_all(data["deploy"]["kubernetes_manifest"])
    assert deployment["spec"]["replicas"] == best["replicas"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == best["gpus_per_replica"]


@pytest.mark.django_db
def test_the_estimate_exports_sglang_and_tensorrt_llm_command_lines_for_the_chosen_point(
    api_client: Any, catalog: Any
) -> None:
    data = _post(api_client, REQUEST).json()
    best = data["best"]
    sglang = data["deploy"]["sglang_command"].split()
    assert sglang[:5] == ["python3", "-m", "sglang.launch_server", "--model-path", REPOSITORY]
    flags = dict(zip(sglang[5::2], sglang[6::2], strict=False))
    assert flags["--tp-size"] == str(best["tp"]) and flags["--pp-size"] == str(best["pp"])
    assert flags["--max-running-requests"] == str(best["batch"])
    assert flags["--context-length"] == str(1024 + 256)
    assert flags["--mem-fraction-static"] == "0.9"  # 1 − the default memory reserve (0.1)
    assert flags["--kv-cache-dtype"] == "fp8_e4m3" and flags["--quantization"] == "fp8"  # the example's
    trtllm = data["deploy"]["trtllm_command"].split()
    assert trtllm[:2] == ["trtllm-serve", REPOSITORY]
    flags = dict(zip(trtllm[2::2], trtllm[3::2], strict=True))
    assert flags["--backend"] == "pytorch"
    assert flags["--tp_size"] == str(best["tp"]) and flags["--pp_size"] == str(best["pp"])
    assert flags["--max_batch_size"] == str(best["batch"]) and flags["--max_seq_len"] == "1280"
    assert flags["--kv_cache_free_gpu_memory_fraction"] == "0.9"
    assert "--ep_size" not in flags  # a dense model


@pytest.mark.django_db
def test_an_moe_layout_exports_its_expert_parallel_degree_to_every_stack(
    api_client: Any, catalog: Any
) -> None:
    body = {**REQUEST, "model": {"preset": "mixtral-8x7b"}, "layout": {"tp": 8, "ep": 8}}
    response = _post(api_client, body)
    assert response.status_code == 200, response.content
    deploy = response.json()["deploy"]
    assert "--ep-size 8" in deploy["sglang_command"] and "--ep_size 8" in deploy["trtllm_command"]
    assert deploy["vllm_command"].endswith("--enable-expert-parallel")


@pytest.mark.django_db
def test_an_attention_dp_layout_exports_data_parallel_attention_and_wide_expert_parallelism(
    api_client: Any, catalog: Any
) -> None:
    # DeepSeek-V3 on H200 with attention data-parallel over 8 GPUs and the experts spread 8 ways: vLLM
    # --tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel; SGLang --tp-size 8
    # --dp-size 8 --enable-dp-attention --ep-size 8; trtllm-serve --tp_size 8 --ep_size 8 with
    # enable_attention_dp in its LLM API options file; the manifest's pod takes the replica's 8 GPUs
    import yaml

    body = {
        **REQUEST,
        "model": {"preset": "deepseek-v3"},
        "accelerator": "h200",
        "stack": "tensorrt-llm-2025",
        "targets": {"ttft_s": 2.0, "tpot_s": 0.1},
        "layout": {"tp": 8, "pp": 1, "attention_dp": True},
    }
    response = _post(api_client, body)
    assert response.status_code == 200, response.content
    data = response.json()
    best = data["best"]
    assert best["attention_dp"] is True and best["tp"] == best["ep"] == 8
    assert all(r["attention_dp"] for r in data["layouts"])
    deploy = data["deploy"]
    vllm = deploy["vllm_command"].split()
    flags = dict(zip(vllm[3::2], vllm[4::2], strict=False))
    assert flags["--tensor-parallel-size"] == "1" and flags["--data-parallel-size"] == "8"
    assert vllm[-1] == "--enable-expert-parallel"
    sglang = deploy["sglang_command"]
    assert (
        "--tp-size 8" in sglang and "--dp-size 8 --enable-dp-attention" in sglang and "--ep-size 8" in sglang
    )
    write, serve = deploy["trtllm_command"].split(" && ")
    assert write == "printf 'enable_attention_dp: true\\n' > extra-llm-api-config.yml"
    assert "--tp_size 8" in serve and "--ep_size 8" in serve
    assert serve.endswith("--extra_llm_api_options extra-llm-api-config.yml")
    deployment, _ = yaml.safe_load_all(deploy["kubernetes_manifest"])
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == 8
    assert "--data-parallel-size" in container["args"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("model", "layout", "field"),
    [
        ("llama3-70b", {"attention_dp": True}, "layout.attention_dp"),
        ("deepseek-v3", {"attention_dp": "yes"}, "layout.attention_dp"),
        ("deepseek-v3", {"attention_dp": True, "tp": 8, "ep": 4}, "layout.ep"),
    ],
)
def test_an_attention_dp_layout_that_cannot_be_is_a_400_naming_the_field(
    api_client: Any, catalog: Any, model: str, layout: dict[str, Any], field: str
) -> None:
    response = _post(
        api_client, {**REQUEST, "model": {"preset": model}, "accelerator": "h200", "layout": layout}
    )
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
