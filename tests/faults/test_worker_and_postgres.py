"""Issue #38, "Done when": a fault test kills the worker AND restarts PostgreSQL mid-sweep, and the sweep
completes within 60 s of the database's recovery with every row exactly once.

The database is a private PostgreSQL cluster (tests/faults/conftest.py: PostgresServer) so that restarting
it touches no other test; Redis is REDIS_URL under this run's key prefix; celery beat runs the shipped
schedule. Order of events: a worker computes a chunk; it is killed with SIGKILL; PostgreSQL is stopped (fast
shutdown: every session dropped); a new worker starts during the outage; PostgreSQL is started again 10 s
after it stopped. What brings the sweep home: the
queued chunks wait in Redis for the new worker; the killed worker's chunk, whose heartbeat stopped at the
kill, is queued again by the periodic rescue once its lease (ANALYSIS_LEASE_S) is over; beat's rescues that
fell in the outage failed and the next one, 15 s later, ran. The worker and beat run with the shipped
intervals divided by five (conftest.FAST_RESCUE), and the recovery the shipped ones would give is bounded
from the run's own timestamps (test_dead_worker.shipped_recovery_s).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from apps.catalog.services import catalog_load_seed

from ..conftest import WorkerProcess
from .conftest import FAST_RESCUE, BeatProcess, PostgresServer
from .test_dead_worker import chunk_in_flight, finished_exactly_once_within_60_s, start_sweep, wait_for

pytestmark = pytest.mark.integration

OUTAGE_S = 10  # as the fault pass: a 10 s PostgreSQL outage stalled a sweep 180 s


def test_worker_killed_and_postgres_restarted_mid_sweep_completes_within_60_s_of_recovery(
    private_postgres: PostgresServer, worker_env: dict[str, str], tmp_path: Path, django_user_model: Any
) -> None:
    env = {**worker_env, **FAST_RESCUE, "DATABASE_URL": private_postgres.url("faults")}
    catalog_load_seed()
    user = django_user_model.objects.create_user("double-fault", password="pw-double-123")
    client = APIClient()
    client.force_authenticate(user)
    beat = BeatProcess(env, "beat-pg", tmp_path)
    first = WorkerProcess(env, "pw1")
    second: WorkerProcess | None = None
    try:
        beat.wait_ready()
        first.wait_ready()
        analysis_id = start_sweep(client)
        held = wait_for("a chunk in flight on the first worker", lambda: chunk_in_flight(analysis_id), 120)

        first.kill()
        held.refresh_from_db()
        last_beat = held.heartbeat_at
        assert held.status == "pending" and last_beat is not None, "the chunk finished first"
        private_postgres.stop()
        down_at = time.monotonic()
        connection.close()  # this process's session went with the server
        # The new worker comes up while the database is down: the chunks it takes fail to reach it and retry.
        second = WorkerProcess(env, "pw2")
        second.wait_ready()
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))  # the outage's length, not a wait
        private_postgres.start()
        recovered_at, recovered_on = time.monotonic(), timezone.now()
        completed_s, shipped_s = finished_exactly_once_within_60_s(
            client,
            analysis_id,
            since=recovered_at,
            origin=recovered_on,
            held=held,
            last_beat=last_beat,
            by="pw2@",
        )
        print(f"sweep completed {completed_s:.1f} s after PostgreSQL came back ({shipped_s:.1f} s shipped)")
    finally:
        first.stop()
        if second is not None:
            second.stop()
        beat.stop()
