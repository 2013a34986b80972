"""Server time of the design, compare and share pages (engines' results cached), and bytes for a first visit.

Run: DJANGO_DEBUG=1 DATABASE_URL=sqlite:////tmp/bench-pages.sqlite3 .venv/bin/python bench/pages.py
(migrates that database, loads the catalog and demo designs). Target: under 300 ms a page, warm.
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterdesigner.settings")
os.environ.setdefault("DJANGO_DEBUG", "1")
os.environ.setdefault("DATABASE_URL", "sqlite:////tmp/bench-pages.sqlite3")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0)
    from apps.catalog.services import catalog_load_seed
    from apps.designs.demo import demo_load
    from apps.designs.services import share_link_create

    catalog_load_seed()
    demos = demo_load()
    user, _ = get_user_model().objects.get_or_create(username="bench")
    client = Client(HTTP_HOST="localhost")
    client.force_login(user)
    _, token = share_link_create(design=demos[3], user=demos[3].owner)
    pages = {
        "design": f"/designs/{demos[3].pk}/",
        "compare": "/compare/?" + "&".join(f"ids={d.pk}" for d in demos[:3]),
        "share": f"/share/{token}/",
    }
    for name, url in pages.items():
        client.get(url)  # first request evaluates and caches
        times = []
        for _ in range(10):
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (name, response.status_code)
        html = response.content
        assets = set(re.findall(rb'(?:src|href)="(/static/[^"]+)"', html))
        asset_bytes = sum(len(b"".join(client.get(a.decode()).streaming_content)) for a in assets)
        print(
            f"{name:8s} median {statistics.median(times):6.1f} ms  max {max(times):6.1f} ms  "
            f"html {len(html):,} B  static {asset_bytes:,} B uncompressed ({len(assets)} files)"
        )


if __name__ == "__main__":
    main()
