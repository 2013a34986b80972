"""Sweep throughput on real Celery workers: 10 accelerators × 12 cluster sizes × 4 pricing models
(480 designs), each with a full layout search for a 70B model, on 1 and on 2 worker processes. Target:
under 8 s with 2, and faster with 2 than with 1.

The clock starts once every worker has answered a ping (no fixed sleep: on a loaded machine a worker can take
longer than any guess to start, and the first chunks then waited on it), and stops when the analysis has
succeeded. Beside each time: the CPU seconds the workers spent (from /proc: far less moved by other work on
the machine than the wall clock) and the load average. The service cuts the sweep for the worker count it is
told (ANALYSIS_WORKERS, set here to the run's).

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
from clusterdesigner.engine.cost import defaults  # noqa: E402  (the design defaults: the sweep's pricing

# models)

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


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and their children (a prefork worker computes in its
    child), read from /proc."""
    ticks, seen = 0, set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                todo.extend(int(child) for child in f.read().split())
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _wait_for_workers(names: list[str], timeout_s: float = 120.0) -> None:
    """Return once every worker has answered a ping."""
    from clusterdesigner.celery import app

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        answered = {name for reply in app.control.ping(timeout=0.5) or [] for name in reply}
        if all(any(a.startswith(name) for a in answered) for name in names):
            return
    raise SystemExit(f"workers {names} did not answer within {timeout_s:.0f} s")


def _load() -> str:
    return "/".join(open("/proc/loadavg").read().split()[:3])


def run(workers: int) -> tuple[float, int, int, float]:
    """(seconds, designs, chunks, worker CPU seconds) of one sweep on ``workers`` worker processes."""
    from django.contrib.auth import get_user_model
    from django.test import override_settings

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
        _wait_for_workers([f"bench{i}@" for i in range(workers)])
        user, _ = get_user_model().objects.get_or_create(username="bench")
        Analysis.objects.filter(owner=user).delete()  # no stored result may answer for us
        cpu_before = _cpu_seconds([proc.pid for proc in procs])
        start = time.perf_counter()
        with override_settings(ANALYSIS_WORKERS=workers):
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
            time.sleep(0.05)  # the bench's own poll of the row; the workers never wait on it
        elapsed = time.perf_counter() - start
        cpu = _cpu_seconds([proc.pid for proc in procs]) - cpu_before
        if analysis.status != "succeeded":
            raise SystemExit(f"sweep failed: {analysis.error}")
        return elapsed, len(analysis.result["rows"]), analysis.chunks.count(), cpu
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
    timings = {}
    for workers in (1, 2):
        elapsed, designs, chunks, cpu = run(workers)
        timings[workers] = elapsed
        print(
            f"{workers} worker(s): {designs} designs in {elapsed:.2f} s = {designs / elapsed:.1f} designs/s, "
            f"{chunks} chunks, worker CPU {cpu:.1f} s, load average {_load()}"
        )
    print(
        f"2 workers vs 1: {timings[1] / timings[2]:.2f}× as fast; target: under 8 s on 2 "
        f"({'met' if timings[2] < 8 else 'missed'}), faster on 2 than on 1 "
        f"({'met' if timings[2] < timings[1] else 'missed'})"
    )


if __name__ == "__main__":
    main()
