"""gunicorn settings: ``gunicorn -c python:clusterdesigner.gunicorn_conf clusterdesigner.wsgi:application``.

Share tokens never reach gunicorn's logs. A token in ``/share/<token>/`` or ``/api/v1/shared/<token>/`` is a
working link for anyone who reads the log, and gunicorn's access log writes the request line, the path and
the Referer (a share page's own stylesheet and scripts are requested with the share URL as their Referer).
RedactingLogger writes ``[redacted]`` in place of the token in every value the access log format can name and
in the error log, with the rule Django's logging uses (clusterdesigner.logging).

The worker model (issue 38 item 9: p99 under 50 ms at 32 connections, bench/load.sh): gthread workers that
keep connections alive, two processes of two threads by default, each holding at most 16 connections.

- Keep-alive: a sync worker answers one request per connection, so every request of a client that keeps its
  connection (wrk, browsers, scripts with a session) paid a new TCP connection and the worker woke on an
  accept for each. On this project's 2 shared cores, alternating runs at the same load (11-14) served 1.8 to
  5 times as many requests a second with gthread and keep-alive as with 2 sync workers.
- Two threads: one thread computes while the other waits on PostgreSQL (the per-request statements).
- ``worker_connections`` 16 a worker: a gthread worker accepts while it has fewer, so 32 connections are split
  16 and 16 across the two workers. Without the bound the first worker to wake took most of them (one run put
  24 of 32 on one of 3 workers, whose GIL holds it to one core), and the queue there set the p99. A client
  past the bound waits in the listen backlog until a connection closes; idle kept connections close after
  ``keepalive`` seconds, and behind nginx (HTTP/1.0 to the upstream by default) no connection is kept.
- Processes: two for two cores (a process runs Python on one core at a time); WEB_CONCURRENCY sets another
  number (gunicorn's own variable), GUNICORN_THREADS and GUNICORN_WORKER_CONNECTIONS the other two.

Warm-up: each worker draws a page once before it accepts (post_worker_init, apps.dashboard.warmup): a new
worker's first share page cost 0.7-1.1 s of CPU (imports, URL patterns, plotly's validators, templates), and
the requests queued behind it on that worker waited as long.

Frozen heap: after the warm-up a worker holds about 210,000 objects that live as long as it does (Django,
DRF, plotly's validators, the templates, the catalog), and each full collection of Python's cyclic garbage
collector scanned them all: about 100 ms of CPU (250 ms wall at a load of 6) with both threads held, every
few thousand requests, which is what a run's maximum latencies showed. ``gc.freeze()`` after the warm-up
moves them to the permanent generation (a full collection then costs under a millisecond) and the resident
memory did not move (176 MB a worker either way). Alternating runs of the share view at 32 connections on
the shared machine (load 10-12): p99 762/307/418/317 ms without, 348/172/121/206 ms with.

Command-line options still apply on top (``--access-logfile -``, ``--workers``, ``--bind``).
"""

from __future__ import annotations

import datetime as dt
import gc
import os
from typing import Any

from gunicorn.glogging import Logger

from clusterdesigner.logging import RedactShareTokens, redact

_REDACT_FILTER = RedactShareTokens()


class RedactingLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger with share tokens redacted from every access-log value (request line, path, query,
    Referer, headers, environ) and from error-log messages."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.error_log.addFilter(_REDACT_FILTER)  # one shared instance: a config reload adds nothing twice

    def atoms(self, resp: Any, req: Any, environ: Any, request_time: dt.timedelta) -> dict[str, Any]:
        atoms = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()}


logger_class = "clusterdesigner.gunicorn_conf.RedactingLogger"

workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", "16"))
keepalive = 5
timeout = 30


def post_worker_init(worker: Any) -> None:
    """Warm the worker (apps.dashboard.warmup) after it loaded the application, before it accepts; then
    collect the warm-up's garbage and freeze what is left, so that the cyclic collector never scans it."""
    from apps.dashboard.warmup import pages_warm_up

    pages_warm_up()
    gc.collect()
    gc.freeze()
