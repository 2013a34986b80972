"""Redis unreachable from the start: a real gunicorn process configured as deployed (cache, broker and result
backend all on REDIS_URL) with REDIS_URL at a port where nothing listens. Signing in, the design page and
the anonymous share view work without the cache; starting an analysis answers 503 with Retry-After,
promptly, instead of 500. The shared Redis is never touched.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from typing import Any

import pytest

from apps.catalog.services import catalog_load_seed
from apps.designs.demo import demo_load
from apps.designs.services import share_link_create
from clusterdesigner.api_tokens import api_token_create

from .conftest import WebServer, free_port

pytestmark = pytest.mark.integration

PARAMS = {
    "model": {"preset": "llama3-8b"},
    "training": {"tokens": 1e11, "global_batch_tokens": 2097152},
    "accelerators": ["h100-sxm"],
    "nodes": [1],
    "pricing_models": ["own"],
}


@pytest.fixture
def web_without_redis(
    collected_static: None, transactional_db: Any, postgres_required: None
) -> Iterator[WebServer]:
    server = WebServer(extra_env={"REDIS_URL": f"redis://127.0.0.1:{free_port()}/0"})
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def _open(
    opener: urllib.request.OpenerDirector, request: urllib.request.Request | str
) -> tuple[int, Any, str]:
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def test_pages_and_sign_in_work_and_starting_an_analysis_answers_503_with_redis_down(
    web_without_redis: WebServer, django_user_model: Any
) -> None:
    base = web_without_redis.base
    catalog_load_seed()
    demos = demo_load()
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    _link, token = share_link_create(design=demos[3], user=demos[3].owner)

    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    status, _, form = _open(browser, f"{base}/accounts/login/")
    assert status == 200
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert csrf is not None
    sign_in = urllib.parse.urlencode(
        {"username": "alice", "password": "pw-alice-123", "csrfmiddlewaretoken": csrf.group(1)}
    ).encode()
    status, _, home = _open(browser, urllib.request.Request(f"{base}/accounts/login/", data=sign_in))
    assert status == 200 and "<span>alice</span>" in home  # redirected home, signed in

    for _attempt in range(2):  # the second view would read the charts the first cached
        status, _, page = _open(browser, f"{base}/designs/{demos[3].pk}/")
        assert status == 200, page[:500]
        assert 'data-chart="chart-data-memory"' in page and "cannot be evaluated" not in page
    status, _, shared = _open(urllib.request.build_opener(), f"{base}/share/{token}/")
    assert status == 200 and 'data-chart="chart-data-memory"' in shared

    key = api_token_create(user=alice, scope="designs").key
    headers = {
        "Authorization": f"Token {key}",
        "Content-Type": "application/json",
        "Accept": "application/json",
    }
    payload = json.dumps({"kind": "sweep", "params": PARAMS}).encode()
    api = urllib.request.Request(f"{base}/api/v1/analyses/", data=payload, headers=headers)
    started = time.monotonic()
    status, answer_headers, body = _open(urllib.request.build_opener(), api)
    assert time.monotonic() - started < 10
    assert status == 503, body[:500]
    assert answer_headers["Retry-After"] == "10"
    assert json.loads(body)["error"]["code"] == "queue_unavailable"
