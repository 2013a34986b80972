"""CPU one request costs in the Django process for bench/load.sh's four endpoints, measured in-process.

The requests go through the project's WSGI application as gunicorn calls it (clusterdesigner.wsgi: the fast
path, clusterdesigner.fastpath, in front of Django's handler with its signals, every middleware, debug off,
the manifest static storage), on PostgreSQL, with bench/load.sh's fixtures
(``--setup-only`` makes them for it): a copy of a fixed-layout demo design evaluated once, an API token, a
share link. Each endpoint is warmed (its first request fills the worker's memo), then timed with
time.process_time() over REQUESTS requests: CPU, not wall clock, so other work on a shared machine moves it
less. Beside it, the CPU the PostgreSQL backend serving the process spent (bench/load_cpu.py counts the
same two under load).

    .venv/bin/python bench/load_profile.py          # DATABASE_URL: postgres://postgres@127.0.0.1:5432/clusterdesigner_load
    ... bench/load_profile.py --requests 2000                  # more requests per endpoint
    ... bench/load_profile.py --profile design-evaluate        # and cProfile's top functions for one endpoint
    ... bench/load_profile.py --queries                        # and the SQL each endpoint runs per request

The database is migrated and loaded (catalog, demo designs) like bench/load.sh's; it must be on loopback.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/clusterdesigner_load")
os.environ.update(
    DJANGO_SETTINGS_MODULE="clusterdesigner.settings",
    DJANGO_DEBUG="0",
    DJANGO_ALLOWED_HOSTS="127.0.0.1",
    LOG_LEVEL=os.environ.get("LOG_LEVEL", "WARNING"),
)
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-load-profile-" + "x" * 40)
os.environ.pop("REDIS_URL", None)
if urlparse(os.environ["DATABASE_URL"]).hostname not in ("127.0.0.1", "localhost", "::1"):
    sys.exit("bench/load_profile.py only talks to a database on loopback")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

Request = Callable[[], int]
WSGIApp = Callable[..., Any]


def _setup() -> tuple[int, str, str]:
    """bench/load.sh's fixtures: (design id, API token, share token)."""
    from django.contrib.auth import get_user_model

    from apps.catalog.services import catalog_load_seed
    from apps.designs.demo import demo_load
    from apps.designs.models import Design
    from apps.designs.services import design_clone, design_evaluate, share_link_create
    from clusterdesigner.api_tokens import api_token_create

    call_command("migrate", verbosity=0)
    catalog_load_seed()
    demo_load()
    call_command("collectstatic", interactive=False, verbosity=0)
    user, _ = get_user_model().objects.get_or_create(username="load-bench")
    Design.objects.filter(owner=user).delete()
    demo = next(
        d
        for d in Design.objects.filter(is_demo=True).order_by("pk")
        if isinstance(d.current.spec.get("parallelism"), dict)
    )
    design = design_clone(design=demo, owner=user, name="load bench: " + demo.name)
    design_evaluate(version=design.current)
    _, share = share_link_create(design=design, user=user, label="bench/load_profile.py")
    token = api_token_create(user=user, scope="designs")  # stored hashed: a new key each run
    return design.pk, token.key, share


def _request(app: WSGIApp, method: str, path: str, body: bytes = b"", **headers: str) -> Request:
    """A WSGI call as gunicorn makes it, with wrk's headers (bench/load.lua); returns the status."""

    def call() -> int:
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "QUERY_STRING": "",
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "127.0.0.1",
            "HTTP_HOST": "127.0.0.1",
            "HTTP_ACCEPT": "application/json, text/html",
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "CONTENT_LENGTH": str(len(body)),
            **{f"HTTP_{k.upper()}": v for k, v in headers.items()},
        }
        if body:
            environ["CONTENT_TYPE"] = "application/json"
        status: list[str] = []
        chunks = app(environ, lambda s, h, exc_info=None: status.append(s))
        try:
            for _ in chunks:
                pass
        finally:
            if hasattr(chunks, "close"):
                chunks.close()  # request_finished, as gunicorn does
        return int(status[0].split()[0])

    return call


def _backend() -> tuple[int, float]:
    """The PostgreSQL backend serving this process (on this machine: loopback) and its CPU seconds so far."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_ms(call: Request, requests: int) -> tuple[float, float]:
    """(this process's, its database backend's) CPU milliseconds per request; the second is NaN when the
    connection was replaced during the round (CONN_MAX_AGE)."""
    pid, backend = _backend()
    start = time.process_time()
    for _ in range(requests):
        call()
    app = (time.process_time() - start) * 1e3 / requests
    pid_after, backend_after = _backend()
    return app, (backend_after - backend) * 1e3 / requests if pid_after == pid else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000, help="timed requests per endpoint")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds; the lowest is printed")
    parser.add_argument("--profile", help="endpoint to run under cProfile (catalog-list, design-evaluate, …)")
    parser.add_argument("--top", type=int, default=35, help="functions to print from the profile")
    parser.add_argument("--queries", action="store_true", help="print the SQL of one request per endpoint")
    parser.add_argument(
        "--setup-only", action="store_true", help="make the fixtures; print 'design-id api-token share-token'"
    )
    args = parser.parse_args()

    design_id, api_token, share_token = _setup()
    if args.setup_only:  # bench/load.sh's fixtures
        print(design_id, api_token, share_token)
        return
    from clusterdesigner.wsgi import application as app

    endpoints = {
        "catalog-list": _request(app, "GET", "/api/v1/accelerators/"),
        "design-evaluate": _request(
            app,
            "POST",
            f"/api/v1/designs/{design_id}/evaluate/",
            b"{}",
            authorization=f"Token {api_token}",
        ),
        "share-view": _request(app, "GET", f"/share/{share_token}/"),
        "shared-json": _request(app, "GET", f"/api/v1/shared/{share_token}/"),
    }
    for name, call in endpoints.items():
        for _ in range(20):  # the memo, the catalog snapshot, the connection, the compiled queries
            status = call()
            if status != 200:
                sys.exit(f"{name} answered {status}")
        if args.queries:
            with CaptureQueriesContext(connection) as queries:
                call()
            print(f"== {name}: {len(queries)} queries")
            for query in queries:
                print("  ", query["sql"][:300])
    print(f"CPU per request (the round with the least app CPU of {args.rounds} rounds of {args.requests}):")
    for name, call in endpoints.items():
        app, db = min(_cpu_ms(call, args.requests) for _ in range(args.rounds))
        print(f"  {name:16s} app_cpu_ms={app:.2f} db_cpu_ms={db:.2f}")
    if args.profile:
        profile = cProfile.Profile(time.process_time)  # CPU, as the figures above: waits do not count
        profile.runcall(_cpu_ms, endpoints[args.profile], args.requests)
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).sort_stats("cumulative")
        stats.print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        print(f"== cProfile of {args.requests} {args.profile} requests")
        print(out.getvalue())


if __name__ == "__main__":
    main()
