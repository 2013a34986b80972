"""The Serving page through its URL: the form, the estimate, its charts, errors beside the field, the
design link."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from apps.designs.demo import DEMOS
from clusterdesigner.engine.serving import serving

# the page's defaults: the example request (Llama 3 70B on H100, 1,024/256 tokens, fp8, peak ÷ mean 2)
_EXAMPLE = {k: v for k, v in serving.EXAMPLE_REQUEST.items() if k != "targets"}


@pytest.mark.django_db
def test_the_page_estimates_the_default_and_embeds_four_charts(client: Any, catalog: Any) -> None:
    response = client.get("/serving/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="serving-gpus"' in html and 'id="serving-costs"' in html
    scripts = re.findall(
        r'<script id="chart-data-(serving-[a-z]+)" type="application/json">(.*?)</script>', html
    )
    assert {name for name, _ in scripts} == {
        "serving-latency",
        "serving-cost",
        "serving-layouts",
        "serving-pareto",
    }
    pareto = json.loads(dict(scripts)["serving-pareto"])
    assert {t["name"] for t in pareto["data"]} >= {"meets the targets", "chosen"}
    assert "per user" in pareto["layout"]["xaxis"]["title"]["text"]
    assert "per GPU" in pareto["layout"]["yaxis"]["title"]["text"]
    latency = json.loads(dict(scripts)["serving-latency"])
    names = [t["name"] for t in latency["data"]]
    assert "TTFT target" in names and "TPOT target" in names
    assert latency["layout"]["xaxis"]["title"]["text"] and latency["layout"]["yaxis"]["title"]["text"]


@pytest.mark.django_db
def test_a_query_string_is_its_own_estimate(client: Any, catalog: Any) -> None:
    a = client.get("/serving/?requests_per_s=5").content.decode()
    b = client.get("/serving/?requests_per_s=200").content.decode()
    gpus = [int(re.search(r'id="serving-gpus">(\d+)<', h).group(1)) for h in (a, b)]  # type: ignore[union-attr]
    assert gpus[0] < gpus[1]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("requests_per_s=abc", "requests_per_s"),
        ("requests_per_s=-2", "requests_per_s"),
        ("tpot_s=0.000001", "tpot_s"),
        ("ttft_s=fast", "ttft_s"),
        ("tpot_ms=0.001", "tpot_s"),  # a link from when the page took ms: converted, then judged
        ("tpot_ms=fast", "tpot_s"),
    ],
)
def test_bad_input_is_a_400_with_the_message_beside_the_field(
    client: Any, catalog: Any, query: str, field: str
) -> None:
    response = client.get(f"/serving/?{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="serving-result"' not in html
    label = {"requests_per_s": "f-rps", "tpot_s": "f-tpot", "ttft_s": "f-ttft"}[field]
    after = html.split(f'id="{label}"', 1)[1]
    assert re.search(r'<p class="field-error">[^<]+</p>', after.split("</div>", 1)[0])


@pytest.mark.django_db
def test_the_design_page_links_to_serving_on_its_accelerator(client: Any, catalog: Any, alice: Any) -> None:
    from apps.designs import services

    design = services.design_create(owner=alice, name="d", spec=DEMOS[0]["spec"])
    client.force_login(alice)
    page = client.get(f"/designs/{design.pk}/").content.decode()
    assert f"/serving/?design={design.pk}" in page
    serving = client.get(f"/serving/?design={design.pk}")
    assert serving.status_code == 200
    accelerator = DEMOS[0]["spec"]["cluster"]["accelerator"]
    assert f'<option value="{accelerator}" selected>' in serving.content.decode()


@pytest.mark.django_db
def test_another_users_design_is_not_found(client: Any, catalog: Any, alice: Any, bob: Any) -> None:
    from apps.designs import services

    design = services.design_create(owner=alice, name="d", spec=DEMOS[0]["spec"])
    client.force_login(bob)
    assert client.get(f"/serving/?design={design.pk}").status_code == 404


@pytest.mark.django_db
def test_percentile_and_tokens_per_day_are_inputs(client: Any, catalog: Any) -> None:
    # 442,368,000 output tokens a day ÷ 86,400 s ÷ 256 tokens = 20 requests/s: the default estimate again.
    by_rate = client.get("/serving/?requests_per_s=20").content.decode()
    by_tokens = client.get("/serving/?output_tokens_per_day=442368000").content.decode()
    gpus = [re.search(r'id="serving-gpus">(\d+)<', h).group(1) for h in (by_rate, by_tokens)]  # type: ignore[union-attr]
    assert gpus[0] == gpus[1]
    assert (
        'name="output_tokens_per_day"' in by_rate and 'id="serving-tokens-per-day">442,368,000<' in by_tokens
    )
    # p50 keeps less headroom than p99 (Poisson arrivals), so it never needs more GPUs
    p50 = client.get("/serving/?percentile=50&requests_per_s=200").content.decode()
    p99 = client.get("/serving/?percentile=99&requests_per_s=200").content.decode()
    n50, n99 = (int(re.search(r'id="serving-gpus">(\d+)<', h).group(1)) for h in (p50, p99))  # type: ignore[union-attr]
    assert 'id="f-pct"' in p50 and 'value="50"' in p50 and n50 <= n99
    both = client.get("/serving/?requests_per_s=5&output_tokens_per_day=1e9")
    assert both.status_code == 400
    assert re.search(r'id="f-tpd"[^>]*>\s*<p class="field-error">[^<]+</p>', both.content.decode())
    bad = client.get("/serving/?percentile=100")
    assert bad.status_code == 400
    assert re.search(r'id="f-pct"[^>]*>\s*<p class="field-error">[^<]+</p>', bad.content.decode())


@pytest.mark.django_db
def test_a_design_prefills_its_model_node_and_serving_section(client: Any, catalog: Any, alice: Any) -> None:
    import copy

    from apps.designs import services

    spec = copy.deepcopy(DEMOS[3]["spec"])  # Llama 3 8B on H200
    spec["serving"] = {
        "input_tokens": 2048,
        "output_tokens": 128,
        "targets": {"ttft_s": 1.5, "tpot_s": 0.04, "percentile": 95},
        "demand": {"output_tokens_per_day": 5e9, "peak_to_mean": 3},
    }
    design = services.design_create(owner=alice, name="d", spec=spec)
    client.force_login(alice)
    html = client.get(f"/serving/?design={design.pk}").content.decode()
    assert '<option value="llama3-8b" selected>' in html
    assert '<option value="h200" selected>' in html
    for field, value in (
        ("f-in", "2048"),
        ("f-out", "128"),
        ("f-ttft", "1.5"),
        ("f-tpot", "0.04"),
        ("f-pct", "95"),
        ("f-tpd", "5e+09"),
        ("f-peak", "3"),
        ("f-rps", ""),
        ("f-gpn", "8"),
    ):
        assert re.search(rf'id="{field}"[^>]* value="{re.escape(value)}"', html), field
    # the page's estimate is the design's own serving estimate
    stored = services.design_evaluate(version=design.current).result["serving"]
    assert f'id="serving-gpus">{stored["best"]["gpus"]}<' in html


@pytest.mark.django_db
def test_a_design_with_a_custom_model_shape_is_estimated_with_that_shape(
    client: Any, catalog: Any, alice: Any
) -> None:
    import copy

    from apps.designs import services

    spec = copy.deepcopy(DEMOS[3]["spec"])
    spec["workload"]["model"] = {"preset": "llama3-8b", "layers": 16}
    design = services.design_create(owner=alice, name="half", spec=spec)
    client.force_login(alice)
    html = client.get(f"/serving/?design={design.pk}").content.decode()
    assert '<option value="design" selected>half\'s model</option>' in html
    half = re.search(r'id="serving-kv">([\d.]+) KiB', html)
    # 16 layers × 8 KV heads × 128 × 2 × 1 byte (fp8) = 32,768 B = 32.0 KiB (the preset's 32 layers: 64.0)
    assert half is not None and half.group(1) == "32.0"


@pytest.mark.django_db
def test_a_design_length_mix_and_hourly_profile_reach_the_page_estimate(
    client: Any, catalog: Any, alice: Any
) -> None:
    import copy

    from apps.designs import services

    spec = copy.deepcopy(DEMOS[0]["spec"])
    spec["serving"] = {
        "lengths": [
            {"input": 512, "output": 256, "share": 0.8},
            {"input": 8192, "output": 512, "share": 0.2},
        ],
        "targets": {"tpot_s": 0.05},
        "demand": {"requests_per_s": 20, "hourly_profile": [0.5] * 8 + [3.0] * 8 + [0.5] * 8},
    }
    design = services.design_create(owner=alice, name="mix", spec=spec)
    client.force_login(alice)
    html = client.get(f"/serving/?design={design.pk}").content.decode()
    stored = services.design_evaluate(version=design.current).result["serving"]
    assert f'id="serving-gpus">{stored["best"]["gpus"]}<' in html
    assert 'id="serving-design-note"' in html and "peak ÷ mean 2.25" in html
    # a typed length replaces the mix: 20 req/s × 86,400 × 100 output tokens
    typed = client.get(f"/serving/?design={design.pk}&input_tokens=100&output_tokens=100").content.decode()
    assert 'id="serving-tokens-per-day">172,800,000<' in typed


@pytest.mark.django_db
def test_the_deepseek_v3_preset_is_served_with_its_latent_kv_cache(client: Any, catalog: Any) -> None:
    # Multi-head latent attention through the page: 61 layers × (512 + 64) × 1 B (FP8 KV) = 35,136 B
    # = 34.3 KiB a token, where K and V of 128 heads of 192 would be 2,928 KiB.
    response = client.get("/serving/?preset=deepseek-v3&accelerator=h200")
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'id="serving-kv">34\.3 KiB<', html)
    assert "576-element latent" in html  # the estimate's assumptions say what was assumed


def _latency_targets_ms(html: str) -> dict[str, float]:
    """The dashed target lines of the latency chart (ms) as the page embeds them."""
    raw = re.search(r'<script id="chart-data-serving-latency" type="application/json">(.*?)</script>', html)
    assert raw, "no latency chart"
    traces = json.loads(raw.group(1))["data"]
    return {t["name"]: t["y"][0] for t in traces if t["name"].endswith("target")}


@pytest.mark.django_db
def test_the_targets_are_seconds_on_the_page_as_in_the_api(
    client: Any, catalog: Any, api_client: Any
) -> None:
    # "2" in the TTFT field is 2 s (it was read as 2 ms and refused: no batch meets a 0.002 s TTFT).
    response = client.get("/serving/?ttft_s=2&tpot_s=0.05&requests_per_s=20")
    assert response.status_code == 200, response.content.decode()[:2000]
    html = response.content.decode()
    assert "Time to first token target (s)" in html and "target (ms)" not in html
    assert re.search(r'id="f-ttft"[^>]* value="2"', html)
    assert re.search(r'id="f-tpot"[^>]* value="0.05"', html)
    assert _latency_targets_ms(html) == {"TTFT target": 2000.0, "TPOT target": 50.0}
    # the page's estimate is the API's for the same request in seconds
    api = api_client.post(
        "/api/v1/serving/estimate/",
        data=json.dumps({**_EXAMPLE, "targets": {"ttft_s": 2, "tpot_s": 0.05}}),
        content_type="application/json",
    ).json()
    assert f'id="serving-gpus">{api["best"]["gpus"]}<' in html
    # a TTFT the model cannot meet in seconds is refused beside the field, in seconds
    tight = client.get("/serving/?ttft_s=0.002").content.decode()
    assert re.search(r'id="f-ttft"[^>]*>\s*<p class="field-error">[^<]*0.002 s[^<]*</p>', tight), tight[:3000]


@pytest.mark.django_db
def test_a_link_in_milliseconds_opens_converted_to_seconds(client: Any, catalog: Any) -> None:
    old = client.get("/serving/?ttft_ms=1500&tpot_ms=40").content.decode()
    new = client.get("/serving/?ttft_s=1.5&tpot_s=0.04").content.decode()
    assert re.search(r'id="f-ttft"[^>]* value="1.5"', old)
    assert re.search(r'id="f-tpot"[^>]* value="0.04"', old)
    targets = {"TTFT target": 1500.0, "TPOT target": 40.0}
    assert _latency_targets_ms(old) == _latency_targets_ms(new) == targets
    gpus = [re.search(r'id="serving-gpus">(\d+)<', h).group(1) for h in (old, new)]  # type: ignore[union-attr]
    assert gpus[0] == gpus[1]


@pytest.mark.django_db
def test_the_page_shows_the_queueing_percentiles(client: Any, catalog: Any) -> None:
    html = client.get("/serving/?requests_per_s=20").content.decode()
    card = html.split('id="serving-percentiles"', 1)[1].split("</div></div>", 1)[0]
    p50, p90, p99 = (float(x) for x in re.search(r"([\d.]+) / ([\d.]+) / ([\d.]+) s", card).groups())  # type: ignore[union-attr]
    assert 0 < p50 < p90 < p99


@pytest.mark.django_db
def test_the_page_exports_the_chosen_configuration_for_vllm_and_kubernetes(client: Any, catalog: Any) -> None:
    import html as html_lib

    import yaml

    page = client.get("/serving/?requests_per_s=20").content.decode()
    gpus = int(re.search(r'id="serving-gpus">(\d+)<', page).group(1))  # type: ignore[union-attr]
    command = html_lib.unescape(
        re.search(r'<pre class="deploy" id="serving-vllm">(.*?)</pre>', page, re.S).group(1)
    )  # type: ignore[union-attr]
    assert command.startswith("vllm serve meta-llama/Meta-Llama-3-70B-Instruct ")
    tp = int(re.search(r"--tensor-parallel-size (\d+)", command).group(1))  # type: ignore[union-attr]
    manifest = html_lib.unescape(
        re.search(r'<pre class="deploy" id="serving-k8s">(.*?)</pre>', page, re.S).group(1)
    )  # type: ignore[union-attr]
    deployment, service = yaml.safe_load_all(manifest)
    replicas = deployment["spec"]["replicas"]
    limit = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
    assert replicas * limit == gpus and limit == tp  # pp 1 here
    assert service["kind"] == "Service"
    assert "&id0" not in manifest  # no YAML anchors: every mapping written out


@pytest.mark.django_db
def test_prefix_caching_and_speculative_decoding_are_page_inputs(client: Any, catalog: Any) -> None:
    gpus = {}
    for name, query in (
        ("plain", "requests_per_s=20"),
        ("cached", "requests_per_s=20&prefix_cache_hit_rate=0.5"),
        ("drafted", "requests_per_s=20&draft_tokens=3&acceptance_rate=0.7&draft_cost=0.05"),
    ):
        response = client.get(f"/serving/?{query}")
        assert response.status_code == 200, name
        gpus[name] = int(re.search(r'id="serving-gpus">(\d+)<', response.content.decode()).group(1))  # type: ignore[union-attr]
    assert gpus["cached"] < gpus["plain"] and gpus["drafted"] < gpus["plain"]  # 8 and 10 of 12 (engine test)
    # a draft without its acceptance rate is refused beside that field
    missing = client.get("/serving/?draft_tokens=3&draft_cost=0.05")
    assert missing.status_code == 400
    assert re.search(r'id="f-accept"[^>]*>\s*<p class="field-error">[^<]+</p>', missing.content.decode())


@pytest.mark.django_db
def test_a_retired_accelerator_is_not_offered_unless_the_form_already_names_it(
    client: Any, catalog: Any
) -> None:
    from apps.catalog.models import Accelerator

    Accelerator.objects.filter(slug="a100-80gb").update(retired=True)
    options = re.findall(r'<option value="([^"]+)"', client.get("/serving/").content.decode())
    assert "a100-80gb" not in options and "h100-sxm" in options
    # A request (e.g. from a design on that part) that names it keeps it, selected.
    html = client.get("/serving/", {"accelerator": "a100-80gb"}).content.decode()
    assert '<option value="a100-80gb" selected>' in html


@pytest.mark.django_db
def test_the_page_exports_the_chosen_configuration_for_sglang_and_tensorrt_llm(
    client: Any, catalog: Any
) -> None:
    import html as html_lib

    page = client.get("/serving/?requests_per_s=20").content.decode()

    def block(name: str) -> str:
        found = re.search(rf'<pre class="deploy" id="serving-{name}">(.*?)</pre>', page, re.S)
        assert found, name
        return html_lib.unescape(found.group(1))

    tp = re.search(r"--tensor-parallel-size (\d+)", block("vllm")).group(1)  # type: ignore[union-attr]
    seqs = re.search(r"--max-num-seqs (\d+)", block("vllm")).group(1)  # type: ignore[union-attr]
    sglang, trtllm = block("sglang"), block("trtllm")
    # the same chosen point in each stack's own flags
    model = "meta-llama/Meta-Llama-3-70B-Instruct"
    assert sglang.startswith(f"python3 -m sglang.launch_server --model-path {model} ")
    assert f"--tp-size {tp} " in sglang and f"--max-running-requests {seqs} " in sglang
    assert trtllm.startswith(f"trtllm-serve {model} --backend pytorch ")
    assert f"--tp_size {tp} " in trtllm and f"--max_batch_size {seqs} " in trtllm


@pytest.mark.django_db
def test_an_moe_model_on_the_page_shows_and_exports_the_attention_dp_layout(
    client: Any, catalog: Any
) -> None:
    # DeepSeek-V3 on H200 (tensorrt-llm-2025, 10 req/s, TPOT ≤ 0.1 s): the searched best is tp8 with
    # attention data-parallel and ep8 (its latent not copied 8 times: 6,653 sequences fit where tp8's
    # tensor-parallel attention holds 1,164), so the layout card says so and the exports set it
    query = "preset=deepseek-v3&accelerator=h200&stack=tensorrt-llm-2025&tpot_s=0.1&requests_per_s=10"
    response = client.get(f"/serving/?{query}")
    assert response.status_code == 200
    html = response.content.decode()
    assert "tp8 pp1 ep8 attention-DP" in html
    assert "--data-parallel-size 8" in html and "--enable-dp-attention" in html
    assert "enable_attention_dp: true" in html


def _gpu_hour_usd(html: str, option: str) -> float:
    """The costs table's "$/GPU-hour used" of one option (its first cell, e.g. "<slug> on-demand")."""
    row = re.search(
        rf'<tr><td>{re.escape(option)}</td><td class="num">\d+</td><td class="num">[^<]*</td>'
        r'<td class="num">\$([\d,.]+)</td>',
        html,
    )
    assert row, option
    return float(row.group(1).replace(",", ""))


@pytest.mark.django_db
def test_a_saved_catalog_change_shows_on_the_next_page(client: Any, catalog: Any) -> None:
    # The picker and the prices come from the catalog snapshot a process keeps between requests, rebuilt when
    # the catalog's version changes: a part retired, a part renamed, a price moved show on the very next page.
    from apps.catalog.models import Accelerator, CloudPrice

    azure = "azure-standard-nd96isr-h100-v5 on-demand"
    before = client.get("/serving/").content.decode()
    assert '<option value="a100-80gb">' in before and '<option value="h200">NVIDIA H200' in before
    a100 = Accelerator.objects.get(slug="a100-80gb")
    a100.retired = True
    a100.save()
    h200 = Accelerator.objects.get(slug="h200")
    h200.name = "H200 as renamed"
    h200.save()
    price = CloudPrice.objects.get(offering__slug="azure-standard-nd96isr-h100-v5", pricing_model="on_demand")
    price.usd_per_hour *= 2  # $98.32 → $196.64 an instance-hour
    price.save()
    after = client.get("/serving/").content.decode()
    assert '<option value="a100-80gb"' not in after
    assert '<option value="h200">H200 as renamed</option>' in after
    # the same GPUs billed for the same hours at twice the price: twice the $/GPU-hour used (to the cent)
    assert _gpu_hour_usd(after, azure) == pytest.approx(2 * _gpu_hour_usd(before, azure), abs=0.011)
