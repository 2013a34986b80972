"""Fault-test fixtures: a private redis-server a test may kill, and a gunicorn process on the test database.

The shared Redis (REDIS_URL) is never restarted or flushed here: other tests use it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import ROOT, WorkerProcess, _database_url, need


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every fault test is marked ``faults`` and put in one xdist group: they kill workers and stop servers
    the others would be using. ``make test`` runs them in its serial phase (tests/conftest.py marks this
    folder ``serial``); a hand-run ``pytest -n N --dist loadgroup`` still keeps them one after another on one
    worker, and ``-m "not faults"`` leaves them out."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.faults)
            item.add_marker(pytest.mark.xdist_group("faults"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A throwaway `redis-server` on loopback that keeps nothing: a restart loses every queued message."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10) -> None:
        import redis

        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                redis.Redis.from_url(self.url, socket_connect_timeout=1).ping()
                return
            except redis.RedisError:
                time.sleep(0.1)
        raise RuntimeError(f"redis-server on port {self.port} did not answer in {timeout}s")

    def kill(self) -> None:
        """SIGKILL: no shutdown, no save; clients see their connections drop."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def private_redis(postgres_required: None) -> Iterator[RedisServer]:
    need(shutil.which("redis-server") is not None, "redis-server is not installed")
    server = RedisServer(free_port())
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def broker_at_private_redis(private_redis: RedisServer) -> Iterator[RedisServer]:
    """Point this process's Celery app at the private Redis (tasks really queued, not run in-process)."""
    from clusterdesigner.celery import app

    def drop_pools() -> None:
        # The app caches its connection and producer pools for the broker it first used; drop them so the next
        # publish connects to the URL set now (what celery's own _after_fork does).
        app._pool = None
        if "amqp" in app.__dict__:
            app.amqp._producer_pool = None

    before = (app.conf.broker_url, app.conf.task_always_eager)
    drop_pools()
    app.conf.broker_url, app.conf.task_always_eager = private_redis.url, False
    try:
        yield private_redis
    finally:
        drop_pools()
        app.conf.broker_url, app.conf.task_always_eager = before


@pytest.fixture
def private_worker_env(worker_env: dict[str, str], private_redis: RedisServer) -> dict[str, str]:
    """The usual worker environment (test database, this run's broker key prefix) on the private Redis."""
    return {**worker_env, "REDIS_URL": private_redis.url}


class WebServer(WorkerProcess):
    """gunicorn with one sync worker on the test database: one process, one persistent database connection
    (CONN_MAX_AGE 60, CONN_HEALTH_CHECKS on), as in production. Its connection's application_name is NAME.
    Stopped like a worker process (stop/kill inherited)."""

    NAME = "faults-web"

    def __init__(self, extra_env: dict[str, str] | None = None) -> None:  # not super().__init__(): a worker
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = ROOT / "artifacts" / "faults-gunicorn.log"
        self.log_path.parent.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
        env.update(
            DATABASE_URL=f"{_database_url()}?application_name={self.NAME}",
            DB_CONN_MAX_AGE="60",
            DJANGO_DEBUG="0",
            DJANGO_SECRET_KEY="test-faults-secret",
            DJANGO_ALLOWED_HOSTS="127.0.0.1",
            **(extra_env or {}),
        )
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "clusterdesigner.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                "1",
                "--worker-class",
                "sync",
                "--timeout",
                "60",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited: {self.log_path.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"gunicorn not listening in {timeout}s: {self.log_path.read_text()[-3000:]}")


@pytest.fixture
def web_server(transactional_db: Any, postgres_required: None) -> Iterator[WebServer]:
    server = WebServer()
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def collected_static() -> None:
    """The static files as a debug-off server serves pages with them (whitenoise's manifest), collected once:
    without the manifest every page that links a static file answers 500."""
    env = {**os.environ, "DJANGO_SECRET_KEY": "collectstatic-only"}
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=600,
    )


class BeatProcess(WorkerProcess):
    """`celery beat` with the shipped schedule (CELERY_BEAT_SCHEDULE: the stall rescue every
    ANALYSIS_RESCUE_EVERY_S), as the "beat" service runs in docker-compose.yml, its schedule file private to
    the test. Ready once its scheduler started (the first rescue follows one period later)."""

    READY = "beat: Starting..."

    def __init__(self, env: dict[str, str], name: str, schedule_dir: Path) -> None:  # not a worker's command
        schedule, pidfile = schedule_dir / "celerybeat-schedule", schedule_dir / "celerybeat.pid"
        self._start(env, name, ["beat", "--loglevel=INFO", f"--schedule={schedule}", f"--pidfile={pidfile}"])


# The dead-worker rescue's intervals for the worker and beat processes of the kill tests (test_dead_worker,
# test_worker_and_postgres): the shipped ones (ANALYSIS_HEARTBEAT_S 5, ANALYSIS_LEASE_S 20,
# ANALYSIS_RESCUE_EVERY_S 15) divided by five, the lease still four beats, so the kill, the lapsed lease and
# beat's rescue happen for real in ~8 s instead of ~35 s of waiting. Each test then bounds the recovery the
# shipped intervals would give from its own measured timestamps (test_dead_worker.shipped_recovery_s).
FAST_RESCUE = {"ANALYSIS_HEARTBEAT_S": "1", "ANALYSIS_LEASE_S": "4", "ANALYSIS_RESCUE_EVERY_S": "3"}


@pytest.fixture
def rescue_env(worker_env: dict[str, str]) -> dict[str, str]:
    """The worker environment with the kill tests' short rescue intervals (FAST_RESCUE)."""
    return {**worker_env, **FAST_RESCUE}


@pytest.fixture
def beat_process(rescue_env: dict[str, str], tmp_path: Path) -> Iterator[BeatProcess]:
    beat = BeatProcess(rescue_env, "beat", tmp_path)
    try:
        beat.wait_ready()
        yield beat
    finally:
        beat.stop()


class PostgresServer:
    """A private PostgreSQL cluster (initdb in a temporary directory, on its own port) that a test may stop
    and start: a real server restart, every connection dropped and refused until it is back, without
    touching the shared server other tests (and other runs) use. Runs as the postgres user under root."""

    BIN = Path("/usr/lib/postgresql/15/bin")

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.data = root / "pgdata"
        self.log_path = root / "postgres.log"  # where the postgres user may write
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_postgres:
            shutil.chown(root, user="postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, tool: str, *args: str, timeout: float = 60) -> None:
        path = self.BIN / tool if (self.BIN / tool).exists() else Path(shutil.which(tool) or tool)
        subprocess.run(
            [*self.as_postgres, str(path), *args],
            check=True,
            timeout=timeout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log_path), "-o", options, "-w", "start")

    def stop(self) -> None:
        """A fast shutdown: sessions are terminated, as in a service restart."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, name: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"


@pytest.fixture
def private_postgres(transactional_db: Any, postgres_required: None) -> Iterator[PostgresServer]:
    """A private PostgreSQL with this project's schema, and this process's Django connection pointed at it for
    the test (put back after). Needs PostgreSQL's server binaries (initdb, pg_ctl) on this machine."""
    from django.core.management import call_command
    from django.db import connection
    from django.test import override_settings

    need(shutil.which("runuser") is not None or os.geteuid() != 0, "runuser is not installed")
    need((PostgresServer.BIN / "initdb").exists() or shutil.which("initdb") is not None, "initdb is missing")
    # Not under pytest's tmp_path: its parents are private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="cd-faults-pg-"))
    server = PostgresServer(root)
    server.start()
    saved = dict(connection.settings_dict)
    try:
        subprocess.run(
            [
                "psql",
                "-h",
                "127.0.0.1",
                "-p",
                str(server.port),
                "-U",
                "postgres",
                "-c",
                "CREATE DATABASE faults",
            ],
            check=True,
            timeout=60,
            stdout=subprocess.DEVNULL,
        )
        connection.close()
        connection.settings_dict.update(
            HOST="127.0.0.1", PORT=str(server.port), NAME="faults", USER="postgres"
        )
        connection.settings_dict["PASSWORD"] = ""
        # Every migration from empty, the apps' own (make test's --nomigrations hides them from the loader:
        # this is where the suite runs them on PostgreSQL).
        with override_settings(MIGRATION_MODULES={}):
            call_command("migrate", verbosity=0)
        yield server
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)
        try:
            server.stop()
        except subprocess.CalledProcessError:
            pass  # already stopped by the test
        shutil.rmtree(root, ignore_errors=True)
