"""A PostgreSQL connection drops: the request using it fails cleanly (503 with Retry-After, promptly, no
traceback: the JSON error envelope under /api/, a page elsewhere) and the next request succeeds. Against a
real gunicorn process whose persistent connection is killed with pg_terminate_backend from another
connection, once while idle and once in the middle of a query.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from django.db import connection

from apps.catalog.services import catalog_load_seed

from .conftest import WebServer

pytestmark = pytest.mark.integration

LIST = "/api/v1/accelerators/"
DETAIL = "/api/v1/accelerators/h100-sxm/"  # Django's whole path (the fast path keeps lists, not rows)
PAGE = "/catalog/"  # the accelerator list page, signed out


@dataclass(frozen=True)
class Answer:
    status_code: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


def _get(server: WebServer, path: str) -> Answer:
    """A plain HTTP GET with a timeout, so a hung request fails the test instead of hanging it."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("GET", path, headers={"Accept": "application/json"})
        response = conn.getresponse()
        return Answer(
            response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
        )
    finally:
        conn.close()


@pytest.fixture
def admin() -> Iterator[psycopg.Connection[Any]]:
    """A second connection to the test database, outside Django, to kill and block the server's connection."""
    s = connection.settings_dict
    conn = psycopg.connect(
        host=s["HOST"] or "127.0.0.1",
        port=s["PORT"] or 5432,
        user=s["USER"],
        password=s["PASSWORD"] or None,
        dbname=s["NAME"],
        autocommit=True,
    )
    try:
        yield conn
    finally:
        conn.close()


def _server_backends(admin: psycopg.Connection[Any], *, waiting_on_lock: bool = False) -> list[int]:
    query = "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()"
    if waiting_on_lock:
        query += " AND wait_event_type = 'Lock'"
    return [row[0] for row in admin.execute(query, [WebServer.NAME]).fetchall()]


def _terminate(admin: psycopg.Connection[Any], pid: int) -> None:
    assert admin.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone() == (True,)
    deadline = time.monotonic() + 10
    while pid in _server_backends(admin) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid not in _server_backends(admin)


def _catalog_count() -> int:
    from apps.catalog.models import Accelerator

    return Accelerator.objects.count()


def test_idle_connection_killed_between_requests_the_next_request_reconnects(
    web_server: WebServer, admin: Any
) -> None:
    catalog_load_seed()
    first = _get(web_server, LIST)
    assert first.status_code == 200
    (pid,) = _server_backends(admin)  # one sync worker, one persistent connection (CONN_MAX_AGE 60)
    _terminate(admin, pid)
    # CONN_HEALTH_CHECKS: the dead connection is noticed before the request uses it and replaced.
    second = _get(web_server, LIST)
    assert second.status_code == 200, second.text[:500]
    assert second.json()["count"] == first.json()["count"] == _catalog_count()
    now = _server_backends(admin)
    assert now and pid not in now


def _killed_mid_query(web_server: WebServer, admin: Any, path: str) -> tuple[Answer, float]:
    """GET ``path`` while a lock held here keeps its query on catalog_accelerator waiting, kill the server's
    connection in that wait, and return the answer and how long it took."""
    # Hold a lock the query must wait for, so the server's connection is busy mid-query when killed.
    admin.execute("BEGIN")
    admin.execute("LOCK TABLE catalog_accelerator IN ACCESS EXCLUSIVE MODE")
    answer: dict[str, Any] = {}

    def request() -> None:
        started = time.monotonic()
        answer["response"] = _get(web_server, path)
        answer["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=request)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not (blocked := _server_backends(admin, waiting_on_lock=True)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(blocked) == 1, "the request never reached the locked table"
        admin.execute("SELECT pg_terminate_backend(%s)", [blocked[0]])
    finally:
        admin.execute("ROLLBACK")
        thread.join(timeout=30)
    assert not thread.is_alive(), "the request hung after its connection was killed"
    assert blocked[0] not in _server_backends(admin)
    return answer["response"], answer["seconds"]


def test_connection_killed_mid_query_fails_that_request_with_a_503_envelope_and_the_next_succeeds(
    web_server: WebServer, admin: Any
) -> None:
    catalog_load_seed()
    assert _get(web_server, DETAIL).status_code == 200
    failed, seconds = _killed_mid_query(web_server, admin, DETAIL)
    assert failed.status_code == 503, failed.text[:500]
    assert failed.headers["content-type"] == "application/json"
    assert failed.headers["retry-after"] == "5"
    message = "The database is unavailable; try again shortly."
    assert failed.json() == {"error": {"code": "database_unavailable", "message": message, "fields": {}}}
    assert "Traceback" not in failed.text
    assert seconds < 15

    # Django closed the broken connection at the end of that request; the next one reconnects.
    after = _get(web_server, LIST)
    assert after.status_code == 200, after.text[:500]
    assert after.json()["count"] == _catalog_count()


def test_connection_killed_under_the_fast_paths_probe_is_answered_by_django_on_a_new_connection(
    web_server: WebServer, admin: Any
) -> None:
    """A kept list's probe (clusterdesigner.fastpath: the catalog's version) loses its connection mid-query:
    the request goes to Django's path, which closes the broken connection and answers on a new one, promptly
    (the probe only reads, so reading again is safe)."""
    catalog_load_seed()
    assert _get(web_server, LIST).status_code == 200  # Django's answer, now kept
    kept = _get(web_server, LIST)
    answer, seconds = _killed_mid_query(web_server, admin, LIST)
    assert answer.status_code == 200, answer.text[:500]
    assert answer.text == kept.text and seconds < 15
    assert _get(web_server, LIST).status_code == 200


def test_connection_killed_under_a_page_answers_a_503_page_with_retry_after_and_the_next_succeeds(
    collected_static: None, web_server: WebServer, admin: Any
) -> None:
    catalog_load_seed()
    assert _get(web_server, PAGE).status_code == 200
    failed, seconds = _killed_mid_query(web_server, admin, PAGE)
    assert failed.status_code == 503, failed.text[:500]
    assert failed.headers["content-type"] == "text/html; charset=utf-8"
    assert failed.headers["retry-after"] == "5"
    assert "<h1>Temporarily unavailable</h1>" in failed.text and "reload the page shortly" in failed.text
    assert "Traceback" not in failed.text
    assert seconds < 15

    after = _get(web_server, PAGE)
    assert after.status_code == 200, after.text[:500]
    assert "H100" in after.text
