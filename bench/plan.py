"""Solve time of a 3-year capacity plan with hourly demand and 10 workloads
(clusterdesigner.engine.capacity.capacity).

Run: .venv/bin/python bench/plan.py   (pure engine, no database). Target: under 10 s on one core.

The plan: 36 months, 8-GPU nodes, 10 workloads (4 training runs, 3 inference services with their own peak
hours, 3 research baselines by hour of day × day of week, one of them an irregular hourly trace so that
every hour of the representative week differs), 3 %/month growth, and every supply option: owned nodes
(3-month lead time), 1- and 3-year reservations, on-demand and capped spot. Prices are the p5.48xlarge
catalog rates and the demo owning model's per-node figures (tests/engine/test_capacity.py).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the target says
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from clusterdesigner.engine.capacity.capacity import SLOTS_PER_WEEK, CapacityPlan, plan_solve  # noqa: E402

TARGET_S = 10.0


def bench_plan() -> CapacityPlan:
    rng = np.random.default_rng(17)
    trace = 24 + 16 * rng.random((7, 24))  # an irregular hourly research trace, GPUs
    office = [[(48.0 if d < 5 else 8.0) if 9 <= h < 18 else 8.0 for h in range(24)] for d in range(7)]
    evenings = [[32.0 if 18 <= h < 23 else 4.0 for h in range(24)] for d in range(7)]
    runs = [
        ("70B pretrain", 512 * 24 * 28.36, 512, 0, 5),
        ("70B long run", 256 * 24 * 53.78, 256, 3, 12),
        ("405B pretrain", 1024 * 24 * 60.0, 1024, 12, 20),
        ("8B fine-tunes", 64 * 24 * 120.0, 64, 6, 35),
    ]
    return CapacityPlan.from_json(
        {
            "horizon_months": 36,
            "gpus_per_node": 8,
            "growth_pct_per_month": 3.0,
            "discount_rate": 0.08,
            "training": [
                {
                    "name": name,
                    "gpu_hours": gpu_hours,
                    "gpus": gpus,
                    "earliest_start_month": start,
                    "deadline_month": deadline,
                    "splittable": name == "8B fine-tunes",
                }
                for name, gpu_hours, gpus, start, deadline in runs
            ],
            "inference": [
                {
                    "name": "chat",
                    "peak_gpus": 96,
                    "offpeak_fraction": 0.4,
                    "peak_start_hour": 8,
                    "peak_end_hour": 20,
                },
                {
                    "name": "api",
                    "peak_gpus": 64,
                    "offpeak_fraction": 0.6,
                    "peak_start_hour": 13,
                    "peak_end_hour": 23,
                },
                {"name": "batch", "peak_gpus": 32, "offpeak_fraction": 1.0, "start_month": 6},
            ],
            "baseline": [
                {"name": "research trace", "gpus_by_day_hour": trace.tolist()},
                {"name": "office hours", "gpus_by_day_hour": office},
                {"name": "evening evals", "gpus_by_day_hour": evenings},
            ],
            "supply": {
                "owned": {
                    "lead_time_months": 3,
                    "capex_usd_per_node": 336_883.91,
                    "fixed_usd_per_node_month": 9_539.32,
                    "usd_per_node_hour_used": 0.76986,
                },
                "reservations": [
                    {"term_months": 12, "usd_per_node_hour": 38.50},
                    {"term_months": 36, "usd_per_node_hour": 23.776},
                ],
                "on_demand": {"usd_per_node_hour": 55.04},
                "spot": {"usd_per_node_hour": 20.784, "goodput": 0.85, "cap_nodes": 16},
            },
        }
    )


def main() -> int:
    plan = bench_plan()
    workloads = len(plan.training) + len(plan.inference) + len(plan.baseline)
    # CPU time of this process is the one-core figure; wall time is printed too, since on a shared machine
    # it also counts the time other processes held the core.
    start, cpu_start = time.perf_counter(), time.process_time()
    result = plan_solve(plan=plan, compare=False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    s = result.size
    print(
        f"plan: {plan.horizon_months} months × {SLOTS_PER_WEEK} hourly slots of a representative week, "
        f"{workloads} workloads"
    )
    print(
        f"MILP: {s.variables:,} variables ({s.integer_variables:,} integer), {s.constraints:,} constraints, "
        f"{s.nonzeros:,} nonzeros"
    )
    print(
        f"time: {cpu:.2f} s CPU on one core (target < {TARGET_S:g} s); {elapsed:.2f} s wall, of which HiGHS "
        f"{s.solve_seconds:.2f} s; proven gap {s.mip_gap:.4%}"
    )
    owned = [m.owned_nodes for m in result.months]
    utilization = "n/a" if result.owned_utilization is None else f"{result.owned_utilization:.1%}"
    print(
        f"optimum: NPV ${result.npv_usd:,.0f} (the objective), cash out undiscounted"
        f" ${result.total_usd:,.0f}; owned nodes by month {owned}"
    )
    print(
        f"  {len(result.reservations)} reservation starts; "
        f"on-demand {result.on_demand_node_hours:,.0f} node-h; "
        f"spot {result.spot_node_hours:,.0f} node-h; owned utilization {utilization}"
    )
    return 0 if cpu < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
