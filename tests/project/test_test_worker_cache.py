"""Each pytest-xdist worker's cache database is counted on from REDIS_URL's own, so two suites run on one
machine with databases apart (REDIS_URL=…/4 and …/10, say) never FLUSHDB each other's throttle counters."""

from __future__ import annotations

import pytest

from clusterdesigner import settings


@pytest.mark.parametrize(
    ("redis_url", "worker", "expected"),
    [
        ("redis://127.0.0.1:6379/0", "gw0", "redis://127.0.0.1:6379/1"),
        ("redis://127.0.0.1:6379/0", "gw1", "redis://127.0.0.1:6379/2"),
        ("redis://127.0.0.1:6379", "gw1", "redis://127.0.0.1:6379/2"),
        ("redis://127.0.0.1:6379/4", "gw0", "redis://127.0.0.1:6379/5"),
        ("redis://127.0.0.1:6379/4", "gw1", "redis://127.0.0.1:6379/6"),
        ("redis://127.0.0.1:6379/4", "", "redis://127.0.0.1:6379/4"),
    ],
)
def test_a_test_workers_cache_database_counts_on_from_redis_urls(
    monkeypatch: pytest.MonkeyPatch, redis_url: str, worker: str, expected: str
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert settings._test_worker_cache_url(redis_url) == expected
