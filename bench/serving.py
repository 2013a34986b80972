"""Time one serving estimate (engine only, the seed catalog): the fewest-GPU layout search, the latency
curve, the disaggregated option and the costs owning and per offering. Target: under 50 ms.

    .venv/bin/python bench/serving.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clusterdesigner.engine import serving  # noqa: E402
from clusterdesigner.engine.catalog import specs_from_records  # noqa: E402

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
    "Llama 3 405B on GB200 NVL72, fp4": {
        "model": {"preset": "llama3-405b"},
        "accelerator": "gb200",
        "weight_precision": "fp4",
        "input_tokens": 4096,
        "output_tokens": 512,
        "demand": {"requests_per_s": 50},
    },
}


def main() -> None:
    catalog = specs_from_records(json.loads((ROOT / "apps/catalog/data/seed_catalog.json").read_text()))
    for name, request in CASES.items():
        times = []
        result = serving.estimate(request, catalog=catalog)  # warm-up
        for _ in range(RUNS):
            start = time.perf_counter()
            result = serving.estimate(request, catalog=catalog)
            times.append((time.perf_counter() - start) * 1000)
        best = result.best
        own = result.costs[0]
        print(
            f"{name}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms (target < 50 ms) | "
            f"{best.gpus} GPUs as {best.replicas} × tp{best.tp} pp{best.pp}, batch {best.batch}, "
            f"{best.output_tokens_per_s_per_gpu:,.0f} output tok/s/GPU, TTFT {best.ttft_s:.2f} s, "
            f"TPOT {best.tpot_s * 1000:.0f} ms | own ${own.usd_per_m_output_tokens:.3f}/M output, "
            f"${own.usd_per_m_input_tokens:.3f}/M input at {result.utilization:.0%} utilization"
        )


if __name__ == "__main__":
    main()
