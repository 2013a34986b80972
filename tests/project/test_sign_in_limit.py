"""One failed-sign-in limit on every sign-in path (/accounts/login/ and /admin/login/), keyed on the account
and the client address as the trusted proxy reports it."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from tests.conftest import ROOT

PROXY = "10.0.0.2"
RIGHT = "right-pw-123"


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    cache.clear()


@pytest.fixture
def alice(db: Any, django_user_model: Any) -> Any:
    return django_user_model.objects.create_user("alice", password=RIGHT, is_staff=True)


def _sign_in(client: Client, path: str, password: str, **extra: Any) -> Any:
    return client.post(path, {"username": "alice", "password": password}, **extra)


def _via_proxy(client_ip: str) -> dict[str, str]:
    return {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": client_ip}


def test_admin_sign_in_answers_429_on_the_sixth_failure(alice: Any, settings: Any) -> None:
    assert settings.LOGIN_FAILURE_LIMIT == 5
    client = Client()
    assert [_sign_in(client, "/admin/login/", "wrong").status_code for _ in range(5)] == [200] * 5
    blocked = _sign_in(client, "/admin/login/", RIGHT)  # even the right password: the window must pass first
    assert blocked.status_code == 429
    assert "Too many failed sign-ins" in blocked.content.decode()
    assert blocked["Retry-After"] == str(settings.LOGIN_FAILURE_WINDOW_S)
    assert "_auth_user_id" not in client.session
    assert Client().get("/admin/").status_code == 302  # not signed in


def test_failures_on_either_sign_in_page_count_towards_one_limit(alice: Any) -> None:
    client = Client()
    for _ in range(3):
        assert _sign_in(client, "/accounts/login/", "wrong").status_code == 200
    for _ in range(2):
        assert _sign_in(client, "/admin/login/", "wrong").status_code == 200
    assert _sign_in(client, "/accounts/login/", RIGHT).status_code == 429
    assert _sign_in(client, "/admin/login/", RIGHT).status_code == 429


def test_a_success_on_the_admin_page_clears_the_count(alice: Any) -> None:
    client = Client()
    for _ in range(4):
        _sign_in(client, "/admin/login/", "wrong")
    assert _sign_in(client, "/admin/login/", RIGHT).status_code == 302
    client.logout()
    for _ in range(4):
        assert _sign_in(client, "/accounts/login/", "wrong").status_code == 200


def test_failures_through_the_trusted_proxy_do_not_lock_out_other_clients(alice: Any, settings: Any) -> None:
    settings.TRUSTED_PROXIES = [PROXY]
    attacker = Client()
    for _ in range(5):
        assert _sign_in(attacker, "/admin/login/", "wrong", **_via_proxy("203.0.113.5")).status_code == 200
    assert _sign_in(attacker, "/admin/login/", RIGHT, **_via_proxy("203.0.113.5")).status_code == 429
    # Alice, behind the same proxy from her own address, signs in on both pages.
    assert _sign_in(Client(), "/admin/login/", RIGHT, **_via_proxy("198.51.100.20")).status_code == 302
    assert _sign_in(Client(), "/accounts/login/", RIGHT, **_via_proxy("198.51.100.20")).status_code == 302


def test_a_client_cannot_dodge_the_limit_with_its_own_forwarded_for(alice: Any, settings: Any) -> None:
    # No trusted proxy: the header is ignored, whatever it says.
    for attempt in range(5):
        extra = {"REMOTE_ADDR": "198.51.100.7", "HTTP_X_FORWARDED_FOR": f"192.0.2.{attempt}"}
        assert _sign_in(Client(), "/admin/login/", "wrong", **extra).status_code == 200
    extra = {"REMOTE_ADDR": "198.51.100.7", "HTTP_X_FORWARDED_FOR": "192.0.2.99"}
    assert _sign_in(Client(), "/admin/login/", RIGHT, **extra).status_code == 429
    # Behind the proxy: the entries the client sent (left of what the proxy appended) are ignored too.
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]
    for attempt in range(5):
        extra = _via_proxy(f"192.0.2.{attempt}, 203.0.113.9")
        assert _sign_in(Client(), "/accounts/login/", "wrong", **extra).status_code == 200
    assert (
        _sign_in(Client(), "/accounts/login/", RIGHT, **_via_proxy("192.0.2.77, 203.0.113.9")).status_code
        == 429
    )


def _trusted_proxies_setting(value: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(DJANGO_SECRET_KEY="x" * 50, TRUSTED_PROXIES=value)
    code = "import clusterdesigner.settings as s; print(s.TRUSTED_PROXIES)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)


def test_trusted_proxies_come_from_the_environment_and_a_bad_one_stops_start_up() -> None:
    assert _trusted_proxies_setting("10.0.0.2, 10.1.0.0/16").stdout.strip() == "['10.0.0.2', '10.1.0.0/16']"
    refused = _trusted_proxies_setting("10.0.0.2,proxy.local")
    assert refused.returncode != 0
    assert "TRUSTED_PROXIES: 'proxy.local' is not an IP address or network" in refused.stderr
