"""Identical analysis requests at the same moment start one analysis, and the start throttle counts every
request exactly once (issue #20, part F). Threads against PostgreSQL, each request on its own connection, as
gunicorn's threads or processes would send them."""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import redis
from django.core.cache import cache
from django.db import connection
from rest_framework.test import APIClient

from apps.analysis.api import CreateThrottle
from apps.analysis.models import Analysis
from tests.conftest import seed_catalog

pytestmark = pytest.mark.integration

PARAMS = {
    "model": {"preset": "llama3-8b"},
    "training": {"tokens": 1e11, "global_batch_tokens": 2097152},
    "accelerators": ["h100-sxm"],
    "nodes": [1],
    "pricing_models": ["own"],
}
SWEEP = {"kind": "sweep", "params": PARAMS}


def _in_threads(count: int, workers: int, request: Callable[[], int]) -> Counter[int]:
    """Run ``request`` ``count`` times on ``workers`` threads, released together; each closes its
    connection."""
    barrier = threading.Barrier(workers)

    def run(index: int) -> int:
        if index < workers:
            barrier.wait(timeout=30)
        try:
            return request()
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return Counter(pool.map(run, range(count)))


@pytest.fixture
def alice(transactional_db: Any, postgres_required: None, django_user_model: Any) -> Any:
    seed_catalog()  # the seed catalog's rows; loaded row by row once a process, in bulk after that
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    # A fresh test database gives the same id again: a counter an earlier run left in Redis must not count.
    key = f"throttle-count:analysis-create:{user.pk}"
    cache.delete_many([key, f"{key}:opened"])
    return user


def _post(user: Any) -> int:
    client = APIClient()
    client.force_authenticate(user)
    return int(client.post("/api/v1/analyses/", SWEEP, format="json").status_code)


def _rate(monkeypatch: pytest.MonkeyPatch, rate: str) -> None:
    # DRF's throttles read their rates from the dict bound when the class was defined: set it there.
    monkeypatch.setitem(CreateThrottle.THROTTLE_RATES, "analysis-create", rate)


def test_ten_identical_sweeps_at_once_start_exactly_one_analysis(
    alice: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rate(monkeypatch, "1000/minute")
    statuses = _in_threads(10, 10, lambda: _post(alice))
    assert statuses == Counter({202: 10})
    assert Analysis.objects.filter(owner=alice).count() == 1
    assert Analysis.objects.get(owner=alice).status == "succeeded"


def test_a_failed_analysis_does_not_stop_the_same_input_starting_again(alice: Any) -> None:
    assert _post(alice) == 202
    Analysis.objects.filter(owner=alice).update(status="failed", error="a worker died")
    assert _post(alice) == 202
    assert sorted(Analysis.objects.filter(owner=alice).values_list("status", flat=True)) == [
        "failed",
        "succeeded",
    ]


@pytest.fixture
def shared_cache(redis_url: str, settings: Any) -> Iterator[None]:
    """The cache on Redis, as deployed (the counter must be atomic across processes), under a key prefix of
    this run's own."""
    prefix = f"cdtest{os.getpid()}-throttle"
    backend = "clusterdesigner.cache.ResilientRedisCache"
    settings.CACHES = {"default": {"BACKEND": backend, "LOCATION": redis_url, "KEY_PREFIX": prefix}}
    yield
    client = redis.Redis.from_url(redis_url)
    for key in client.scan_iter(match=f"{prefix}:*"):
        client.delete(key)


def test_a_hundred_requests_at_once_pass_a_60_per_minute_throttle_exactly_60_times(
    alice: Any, shared_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rate(monkeypatch, "60/minute")
    statuses = _in_threads(100, 16, lambda: _post(alice))
    assert statuses == Counter({202: 60, 429: 40})
    assert Analysis.objects.filter(owner=alice).count() == 1
    client = APIClient()
    client.force_authenticate(alice)
    refused = client.post("/api/v1/analyses/", SWEEP, format="json")
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 60
