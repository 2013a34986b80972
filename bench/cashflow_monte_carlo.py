"""Monte Carlo of the rent-or-own NPV difference (engine/cost/cashflow.monte_carlo): time per call at 10,000,
the default 100,000 and 200,000 draws on a 64-node, 3-year case with a lead time and a 21 % tax, and how far
P10/P50/P90 move across five seeds against the P10–P90 spread. Target: 10,000 draws well under a second.

    PYTHONPATH=$PWD python bench/cashflow_monte_carlo.py
"""

from __future__ import annotations

import time
from dataclasses import replace

from clusterdesigner.engine.cost.cashflow import DEFAULT_SAMPLES, monte_carlo
from tests.engine.test_cashflow import CLUSTER

# The engine tests' 64-node case (tests/engine/test_cashflow.py) with a 4-month lead time and a 21 % tax.
CASE = replace(CLUSTER, lead_time_months=4, tax_rate=0.21)


def main() -> None:
    for samples in (10_000, DEFAULT_SAMPLES, 2 * DEFAULT_SAMPLES):
        start = time.perf_counter()
        repeats = 5
        for seed in range(repeats):
            out = monte_carlo(inputs=CASE, spread=0.25, samples=samples, seed=seed)
        per_call = (time.perf_counter() - start) / repeats
        figures = ", ".join(
            f"{q} {getattr(out, f'{q.lower()}_usd'):,.0f} ± {getattr(out, f'{q.lower()}_se_usd'):,.0f}"
            for q in ("P10", "P50", "P90")
        )
        print(f"{samples:>8,} draws: {per_call * 1000:7.1f} ms a call; {figures}")
    runs = [monte_carlo(inputs=CASE, spread=0.25, seed=seed) for seed in range(5)]
    spread = runs[0].p90_usd - runs[0].p10_usd
    for name in ("p10_usd", "p50_usd", "p90_usd"):
        values = [getattr(r, name) for r in runs]
        moved = (max(values) - min(values)) / spread
        print(f"{name}: max − min over 5 seeds = {moved:.3%} of the P10–P90 spread")


if __name__ == "__main__":
    main()
