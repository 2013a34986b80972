"""Time one serving estimate two ways: the engine alone on the seed catalog (the fewest-GPU layout search,
the latency curve, the disaggregated option and the costs owning and per offering), and the full HTTP
request ``POST /api/v1/serving/estimate/`` through Django's test client (parsing, validation, the catalog
from the database, the engine, serialisation). Target: under 50 ms.

    .venv/bin/python bench/serving.py

The HTTP half migrates and seeds its own SQLite database (``BENCH_SERVING_DB``, default
/tmp/bench-serving.sqlite3) unless ``DATABASE_URL`` is set.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clusterdesigner.engine.core.catalog import specs_from_records  # noqa: E402
from clusterdesigner.engine.serving import serving  # noqa: E402
from clusterdesigner.engine.serving_cost import serving_cost  # noqa: E402

RUNS = 30
CASES = {
    "Llama 3 70B on H100, 20 req/s": dict(serving.EXAMPLE_REQUEST),
    "Mixtral 8x7B on H200, 1e9 tokens/day": {
        "model": {"preset": "mixtral-8x7b"},
        "accelerator": "h200",
        "input_tokens": 2048,
        "output_tokens": 512,
        "targets": {"ttft_s": 1.0, "tpot_s": 0.04},
        "demand": {"output_tokens_per_day": 1e9},
    },
    "Llama 3 70B on H100, length mix, office hours": {
        **{k: v for k, v in serving.EXAMPLE_REQUEST.items() if k not in ("input_tokens", "output_tokens")},
        "lengths": [
            {"input": 256, "output": 128, "share": 0.6},
            {"input": 2048, "output": 512, "share": 0.3},
            {"input": 16384, "output": 1024, "share": 0.1},
        ],
        "targets": {"ttft_s": 3.0, "tpot_s": 0.05, "percentile": 95},
        "demand": {"requests_per_s": 20, "hourly_profile": [0.5] * 8 + [3.0] * 8 + [0.5] * 8},
    },
    "Llama 3 405B on GB200 NVL72, fp4": {
        "model": {"preset": "llama3-405b"},
        "accelerator": "gb200",
        # Owned as whole NVL72 racks, the GB200 system the seed catalog prices (an 8-GPU GB200 server does
        # not exist, so the default of 8 GPUs a node has no price and the owning cost is refused).
        "gpus_per_node": 72,
        "weight_precision": "fp4",
        "input_tokens": 4096,
        "output_tokens": 512,
        "demand": {"requests_per_s": 50},
    },
    # Multi-head latent attention: the latent KV cache, replicated on every tensor-parallel GPU.
    "DeepSeek-V3 (MLA) on H200, fp8": {
        **serving.EXAMPLE_REQUEST,
        "model": {"preset": "deepseek-v3"},
        "accelerator": "h200",
    },
}


def _median_max(call: object, runs: int = RUNS) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def _http_client() -> object:
    """Django's test client on a migrated database holding the seed catalog."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterdesigner.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    db = os.environ.get("BENCH_SERVING_DB", "/tmp/bench-serving.sqlite3")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{db}")
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from apps.catalog.services import catalog_load_seed

    call_command("migrate", verbosity=0)
    catalog_load_seed()
    return Client(HTTP_HOST="localhost")


def main() -> None:
    client = _http_client()
    catalog = specs_from_records(json.loads((ROOT / "apps/catalog/data/seed_catalog.json").read_text()))
    for name, request in CASES.items():
        result = serving_cost.estimate(request, catalog=catalog)  # warm-up
        engine_median, engine_max = _median_max(lambda r=request: serving_cost.estimate(r, catalog=catalog))
        body = json.dumps(request)

        def post(body: str = body) -> None:
            response = client.post(  # type: ignore[attr-defined]
                "/api/v1/serving/estimate/", data=body, content_type="application/json"
            )
            assert response.status_code == 200, response.content[:300]

        post()  # warm-up (first catalog read)
        http_median, http_max = _median_max(post)
        best = result.best
        own = result.costs[0]
        print(
            f"{name}: engine median {engine_median:.1f} ms, max {engine_max:.1f} ms; "
            f"HTTP POST median {http_median:.1f} ms, max {http_max:.1f} ms (target < 50 ms) | "
            f"{best.gpus} GPUs as {best.replicas} × tp{best.tp} pp{best.pp}, batch {best.batch}, "
            f"{best.output_tokens_per_s_per_gpu:,.0f} output tok/s/GPU, TTFT {best.ttft_s:.2f} s, "
            f"TPOT {best.tpot_s * 1000:.0f} ms | own, billed: ${own.usd_per_m_output_tokens:.3f}/M output, "
            f"${own.usd_per_m_input_tokens:.3f}/M input at {result.utilization:.0%} utilization"
        )


if __name__ == "__main__":
    main()
