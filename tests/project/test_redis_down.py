"""Redis unreachable: signing in, design pages (charts cached before Redis went, or never cached) and the
anonymous share view keep working without the cache, and starting an analysis answers 503 with Retry-After
instead of 500 (issue #20, part D). Redis is pointed at a port where nothing listens, or is a throwaway
redis-server of this test's own, killed mid-test; the shared Redis is never touched."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from apps.analysis.models import Analysis
from apps.designs.services import share_link_create
from clusterdesigner.settings import caches_for

PARAMS = {
    "model": {"preset": "llama3-8b"},
    "training": {"tokens": 1e11, "global_batch_tokens": 2097152},
    "accelerators": ["h100-sxm"],
    "nodes": [1],
    "pricing_models": ["own"],
}
SWEEP = {"kind": "sweep", "params": PARAMS}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cache_at(settings: Any, url: str) -> None:
    """The cache as settings.py configures it for REDIS_URL=url."""
    settings.CACHES = caches_for(url)


@pytest.fixture
def dead_redis(settings: Any) -> str:
    """A Redis URL where nothing listens, as the cache."""
    url = f"redis://127.0.0.1:{_free_port()}/0"
    _cache_at(settings, url)
    return url


@pytest.fixture
def dead_broker(dead_redis: str) -> Iterator[str]:
    """This process's Celery app publishing to the dead Redis (tasks really sent, not run in-process)."""
    from clusterdesigner.celery import app

    def drop_pools() -> None:
        app._pool = None
        if "amqp" in app.__dict__:
            app.amqp._producer_pool = None

    before = (app.conf.broker_url, app.conf.task_always_eager)
    drop_pools()
    app.conf.broker_url, app.conf.task_always_eager = dead_redis, False
    try:
        yield dead_redis
    finally:
        drop_pools()
        app.conf.broker_url, app.conf.task_always_eager = before


def _charts(body: str) -> list[str]:
    """The figures a page draws (the json_script elements), in order."""
    found = re.findall(r'<script id="chart-data-[^"]+" type="application/json">.*?</script>', body, re.S)
    assert len(found) >= 7
    return found


def _page(client: Client, url: str) -> str:
    started = time.monotonic()
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    assert time.monotonic() - started < 10, url
    return response.content.decode()


def test_sign_in_works_with_redis_down(dead_redis: str, db: Any, django_user_model: Any) -> None:
    django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client(raise_request_exception=False)
    wrong = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert wrong.status_code == 200 and "password didn't match" in wrong.content.decode()
    right = client.post("/accounts/login/", {"username": "alice", "password": "right-pw-123"})
    assert right.status_code == 302 and right["Location"] == "/"
    assert "<span>alice</span>" in _page(client, "/")


def test_design_pages_and_the_share_view_work_with_redis_down(
    dead_redis: str, demos: list[Any], django_user_model: Any
) -> None:
    user = django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client(raise_request_exception=False)
    client.force_login(user)
    body = _page(client, f"/designs/{demos[3].pk}/")
    assert 'data-chart="chart-data-memory"' in body and "cannot be evaluated" not in body
    assert 'data-chart="chart-data-memory"' in _page(client, f"/designs/{demos[3].pk}/results/")
    _link, token = share_link_create(design=demos[3], user=demos[3].owner)
    assert 'data-chart="chart-data-memory"' in _page(
        Client(raise_request_exception=False), f"/share/{token}/"
    )


def test_charts_cached_before_redis_went_are_drawn_again_after(
    settings: Any, demos: list[Any], django_user_model: Any
) -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        import redis

        own = redis.Redis(port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                own.ping()
                break
            except redis.RedisError:
                assert time.monotonic() < deadline, "the throwaway redis-server did not start"
                time.sleep(0.1)
        _cache_at(settings, f"redis://127.0.0.1:{port}/0")
        client = Client(raise_request_exception=False)
        client.force_login(django_user_model.objects.create_user("alice", password="right-pw-123"))
        cached = _page(client, f"/designs/{demos[3].pk}/")
        assert any(b"dashboard:charts" in key for key in own.keys("*"))
    finally:
        server.kill()
        server.wait(timeout=10)
    assert _charts(_page(client, f"/designs/{demos[3].pk}/")) == _charts(cached)


def test_starting_an_analysis_with_the_broker_down_answers_503_with_retry_after(
    dead_broker: str, transactional_db: Any, django_user_model: Any
) -> None:
    from apps.catalog.services import catalog_load_seed

    catalog_load_seed()
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_user("alice", password="right-pw-123"))
    started = time.monotonic()
    response = client.post("/api/v1/analyses/", SWEEP, format="json")
    assert time.monotonic() - started < 10
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "10"
    assert response.json() == {
        "error": {
            "code": "queue_unavailable",
            "fields": {},
            "message": ("The task queue is unavailable, so the analysis was not started; try again shortly."),
        }
    }
    # Nothing a retry would trip over: the row says it never ran, and does not stand in for a new request.
    (analysis,) = Analysis.objects.all()
    assert analysis.status == "failed" and "task queue was unreachable" in analysis.error
    listed = client.get("/api/v1/analyses/")
    assert listed.status_code == 200 and listed.json()["count"] == 1
