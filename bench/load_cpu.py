"""CPU seconds (user + system) spent so far by a gunicorn master's workers and by the PostgreSQL backends
connected to DATABASE_URL's database, read from /proc, for bench/load.sh.

Divided by a run's requests, that is the CPU a request costs: a figure that other work on a shared machine
changes far less than it changes latency (which on 2 cores with a load average of 10 says more about the
neighbours than about the code).

    python bench/load_cpu.py GUNICORN_PID            # prints "<worker seconds> <backend seconds>"
    python bench/load_cpu.py --per-request RESULT_LINE BEFORE AFTER
"""

from __future__ import annotations

import os
import re
import sys
from urllib.parse import unquote, urlparse


def _stat(pid: str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (which may hold spaces): state is [0], ppid [1],
    utime [11], stime [12]."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _seconds(pids: list[str]) -> float:
    ticks = 0
    for pid in pids:
        fields = _stat(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _backends() -> list[str]:
    import psycopg

    url = urlparse(os.environ["DATABASE_URL"])
    name = unquote(url.path.lstrip("/"))
    conninfo = {
        "host": url.hostname,
        "port": url.port or 5432,
        "user": unquote(url.username or "") or None,
        "password": unquote(url.password or "") or None,
        "dbname": name,
    }
    with psycopg.connect(**{k: v for k, v in conninfo.items() if v is not None}) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [name]
        ).fetchall()
    return [str(row[0]) for row in rows]


def cpu_seconds(master: str) -> tuple[float, float]:
    workers = [p for p in os.listdir("/proc") if p.isdigit() and (_stat(p) or ["", ""])[1] == master]
    return _seconds(workers), _seconds(_backends())


def per_request(result: str, before: str, after: str) -> str:
    requests = int(re.search(r"requests=(\d+)", result).group(1))  # type: ignore[union-attr]
    (app0, db0), (app1, db1) = (map(float, s.split()) for s in (before, after))
    n = max(requests, 1)
    # A worker or backend that ended during the run (a timeout, a restart) takes its CPU with it: no figure.
    app = f"{(app1 - app0) * 1e3 / n:.2f}" if app1 >= app0 else "n/a"
    db = f"{(db1 - db0) * 1e3 / n:.2f}" if db1 >= db0 else "n/a"
    return f"app_cpu_ms={app} db_cpu_ms={db}"


if __name__ == "__main__":
    if sys.argv[1] == "--per-request":
        print(per_request(*sys.argv[2:5]))
    else:
        app, db = cpu_seconds(sys.argv[1])
        print(f"{app:.2f} {db:.2f}")
