"""Server time of POST /api/v1/designs/{id}/evaluate/ (fixed layout, uncached: each call is a new version).

Run: .venv/bin/python bench/evaluate.py   (its own SQLite database under /tmp). Target: p95 under 300 ms.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.update(
    DJANGO_SETTINGS_MODULE="clusterdesigner.settings",
    DJANGO_DEBUG="1",
    DATABASE_URL=os.environ.get("BENCH_DATABASE_URL", "sqlite:////tmp/bench-evaluate.sqlite3"),
)
os.environ.pop("REDIS_URL", None)

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

RUNS = 40


def main() -> None:
    call_command("migrate", verbosity=0)
    from apps.catalog.services import catalog_load_seed
    from apps.designs.demo import DEMOS

    catalog_load_seed()
    user, _ = get_user_model().objects.get_or_create(username="bench-evaluate")
    client = APIClient(HTTP_HOST="localhost")
    client.force_authenticate(user)
    spec = DEMOS[0]["spec"]
    design = client.post("/api/v1/designs/", {"name": "bench", "spec": spec}, format="json").json()
    times = []
    for i in range(RUNS):
        # A new version each time, so no stored evaluation answers: tokens change, nothing else.
        tokens = 1.0e12 + i * 1e9
        new = {
            **spec,
            "workload": {**spec["workload"], "training": {**spec["workload"]["training"], "tokens": tokens}},
        }
        version = client.patch(
            f"/api/v1/designs/{design['id']}/", {"version": i + 1, "spec": new}, format="json"
        )
        assert version.status_code == 200, version.json()
        start = time.perf_counter()
        response = client.post(f"/api/v1/designs/{design['id']}/evaluate/")
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.json()
    times.sort()
    p95 = times[int(0.95 * (len(times) - 1))]
    print(
        f"evaluate (fixed layout, uncached, {RUNS} calls): median {statistics.median(times):.1f} ms, "
        f"p95 {p95:.1f} ms, max {times[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
