"""What resolving a design's prices through a 500-entry price book adds to an evaluation (issue #35).

Run: .venv/bin/python bench/pricebook.py   (its own SQLite database under /tmp). Target: under 5 ms added.

Prints (1) the time of the resolution itself (apps.designs.pricing.design_prices: the book's query, the
resolution and its digest) with an empty book and with 500 entries, and (2) the server time of a repeated
POST /api/v1/designs/{id}/evaluate/ (the stored result answering) for a design without a book and for one
whose owner has 500 entries: the difference is what the book adds to every evaluation request.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.update(
    DJANGO_SETTINGS_MODULE="clusterdesigner.settings",
    DJANGO_DEBUG="1",
    DATABASE_URL=os.environ.get("BENCH_DATABASE_URL", "sqlite:////tmp/bench-pricebook.sqlite3"),
)
os.environ.pop("REDIS_URL", None)

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

RUNS = 200
ENTRIES = 500


KINDS = (
    "server_quote",
    "cloud_discount",
    "private_rate",
    "power",
    "colocation",
    "network_quote",
    "storage_quote",
    "capacity_block",
    "committed_rate",
    "enterprise_discount",
    "quota",
    "staff_cost",
)
NETWORK_ITEMS = ("switch", "cable", "transceiver", "lump_sum")


def _target(kind: str, i: int, accelerators: list[str], offerings: list[str], switches: list[str]) -> dict:
    """An entry's target and value for ``kind``, spread over the catalog's rows."""
    offering = offerings[i % len(offerings)]
    if kind == "server_quote":
        return {"accelerator": accelerators[i % len(accelerators)], "gpus_per_node": 8, "value": 2e5 + i}
    if kind in ("cloud_discount", "private_rate", "quota"):
        value = {"cloud_discount": 0.1, "private_rate": 30.0, "quota": float(i % 200)}[kind]
        return {"offering": offering, "pricing_model": "on_demand", "value": value}
    if kind == "committed_rate":
        return {"offering": offering, "pricing_model": "reserved_1y", "value": 25.0}
    if kind == "capacity_block":
        return {"offering": offering, "pricing_model": "on_demand", "duration_hours": 336.0,
                "block_nodes": 16, "value": 2e5}  # fmt: skip
    if kind == "network_quote":
        item = NETWORK_ITEMS[i % len(NETWORK_ITEMS)]
        return {"network_item": item, "switch_model": switches[i % len(switches)] if item == "switch" else "",
                "value": 1e4}  # fmt: skip
    if kind == "colocation":
        return {"value": 150.0, "colocation_basis": "drawn_kw"}
    return {"value": {"power": 0.1, "storage_quote": 150.0, "enterprise_discount": 0.05}.get(kind, 2e5)}


def _book(user: object) -> None:
    """500 entries over every kind, most of them for other accelerators and offerings than the design's, a
    quarter expired: a book a buyer might hold after a few years of quotes."""
    from apps.catalog.selectors import engine_catalog_snapshot
    from apps.pricebook.models import PriceEntry

    PriceEntry.objects.filter(owner=user).delete()
    specs = engine_catalog_snapshot().specs
    accelerators, offerings = sorted(specs.accelerators), sorted(specs.offerings)
    switches = sorted(specs.switches)
    start = dt.date(2023, 1, 1)
    rows = []
    for i in range(ENTRIES):
        valid = start + dt.timedelta(days=2 * i)
        expires = valid + dt.timedelta(days=180) if i % 4 == 0 else None
        common = {"owner": user, "entered_by": user, "valid_from": valid, "expires_on": expires}
        kind = KINDS[i % len(KINDS)]
        target = _target(kind, i, accelerators, offerings, switches)
        rows.append(PriceEntry(kind=kind, source=f"bench {i}", **common, **target))
    PriceEntry.objects.bulk_create(rows)


def _times(call: Callable[[], object]) -> tuple[float, float, float]:
    """Median and p95 wall-clock ms, and mean CPU ms of this process (SQLite runs in it): on a shared machine
    the CPU time is the steadier figure."""
    times = []
    cpu = time.process_time()
    for _ in range(RUNS):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    cpu_ms = (time.process_time() - cpu) * 1000 / RUNS
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))], cpu_ms


def main() -> None:
    call_command("migrate", verbosity=0)
    from apps.catalog.selectors import engine_catalog_snapshot
    from apps.catalog.services import catalog_load_seed
    from apps.designs.demo import DEMOS
    from apps.designs.models import Design
    from apps.designs.pricing import design_prices

    catalog_load_seed()
    users = [get_user_model().objects.get_or_create(username=f"bench-pricebook-{n}")[0] for n in ("a", "b")]
    _book(users[1])
    spec = DEMOS[0]["spec"]
    results = {}
    for user, label in zip(users, ("empty book", f"{ENTRIES}-entry book"), strict=True):
        client = APIClient(HTTP_HOST="localhost")
        client.force_authenticate(user)
        made = client.post("/api/v1/designs/", {"name": "bench", "spec": spec}, format="json").json()
        url = f"/api/v1/designs/{made['id']}/evaluate/"
        first = client.post(url)  # stored once; the runs below read it
        assert first.status_code == 200, first.json()
        version = Design.objects.get(pk=made["id"]).current
        snapshot = engine_catalog_snapshot()
        resolve = _times(lambda v=version, s=snapshot: design_prices(version=v, catalog=s))
        evaluate = _times(lambda c=client, u=url: c.post(u))
        results[label] = (resolve, evaluate)
        print(
            f"{label}: resolution median {resolve[0]:.2f} ms, p95 {resolve[1]:.2f} ms,"
            f" CPU {resolve[2]:.2f} ms; evaluate (stored) median {evaluate[0]:.2f} ms,"
            f" p95 {evaluate[1]:.2f} ms, CPU {evaluate[2]:.2f} ms ({RUNS} calls each)"
        )
    empty, full = (results[key] for key in ("empty book", f"{ENTRIES}-entry book"))
    print(
        f"added by a {ENTRIES}-entry book to an evaluate request: median {full[1][0] - empty[1][0]:+.2f} ms,"
        f" CPU {full[1][2] - empty[1][2]:+.2f} ms. Target: under 5 ms."
    )


if __name__ == "__main__":
    main()
