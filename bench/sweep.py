"""Sweep throughput on real Celery workers: 10 accelerators × 12 cluster sizes × 4 pricing models
(480 designs), each with a full layout search for a 70B model, on 1 and on 2 worker processes. Target:
under 30 s with 2.

Needs PostgreSQL and Redis (it uses its own database and Redis db so it can run beside the tests):
    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/clusterdesigner_bench \
    BENCH_REDIS_URL=redis://127.0.0.1:6379/5 .venv/bin/python bench/sweep.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/clusterdesigner_bench"
)
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/5")
ACCELERATORS = [
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "gb200",
    "mi300x",
    "mi325x",
    "mi355x",
    "l40s",
]
NODES = [4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512]

sys.path.insert(0, str(ROOT))
from clusterdesigner.engine import defaults  # noqa: E402  (the design defaults: the sweep's pricing models)

PRICING = list(defaults.SWEEP_PRICING)
os.environ.update(
    DATABASE_URL=DATABASE_URL, REDIS_URL=REDIS_URL, DJANGO_SETTINGS_MODULE="clusterdesigner.settings"
)
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret")


def _ensure_database() -> None:
    import psycopg

    name = DATABASE_URL.rsplit("/", 1)[1]
    with psycopg.connect(DATABASE_URL.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def run(workers: int) -> tuple[float, int]:
    from django.contrib.auth import get_user_model

    from apps.analysis.models import Analysis
    from apps.analysis.services import analysis_create

    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "clusterdesigner",
                "worker",
                "--concurrency=1",
                f"--hostname=bench{i}@%h",
                "--loglevel=WARNING",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(workers)
    ]
    try:
        time.sleep(4)  # let the workers connect before the clock starts
        user, _ = get_user_model().objects.get_or_create(username="bench")
        Analysis.objects.filter(owner=user).delete()  # no stored result may answer for us
        start = time.perf_counter()
        analysis = analysis_create(
            owner=user,
            kind="sweep",
            params={
                "model": defaults.model(),
                "accelerators": ACCELERATORS,
                "nodes": NODES,
                "pricing_models": PRICING,
                "training": defaults.training(),
            },
        )
        while True:
            analysis.refresh_from_db()
            if analysis.status in ("succeeded", "failed"):
                break
            time.sleep(0.1)
        elapsed = time.perf_counter() - start
        if analysis.status != "succeeded":
            raise SystemExit(f"sweep failed: {analysis.error}")
        return elapsed, len(analysis.result["rows"])
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def main() -> None:
    _ensure_database()
    import django

    django.setup()
    import redis
    from django.core.management import call_command

    from apps.catalog.services import catalog_load_seed

    call_command("migrate", verbosity=0)
    catalog_load_seed()
    redis.Redis.from_url(REDIS_URL).flushdb()
    print(
        f"sweep: {len(ACCELERATORS)} accelerators × {len(NODES)} sizes × {len(PRICING)} pricing models, "
        "Llama-3 70B, layout search per design"
    )
    for workers in (1, 2):
        elapsed, designs = run(workers)
        print(
            f"{workers} worker(s): {designs} designs in {elapsed:.2f} s = {designs / elapsed:.1f} designs/s"
        )


if __name__ == "__main__":
    main()
