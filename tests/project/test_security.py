"""Sign-in rate limit, CSRF on session-authenticated forms and API, share tokens kept out of logs, TLS-only
cookie and HSTS settings. (Another user's design being a 404 is tested in tests/designs/test_api.py.)"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from tests.conftest import ROOT


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    cache.clear()


def _sign_in(client: Client, password: str, **extra: Any) -> Any:
    return client.post("/accounts/login/", {"username": "alice", "password": password}, **extra)


def test_sign_in_answers_429_after_the_configured_number_of_failures(
    db: Any, django_user_model: Any, settings: Any
) -> None:
    settings.LOGIN_FAILURE_LIMIT = 3
    django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client()
    assert [_sign_in(client, "wrong").status_code for _ in range(3)] == [200, 200, 200]
    blocked = _sign_in(client, "right-pw-123")  # even the right password: the window must pass first
    assert blocked.status_code == 429
    assert "Too many failed sign-ins" in blocked.content.decode()
    assert blocked["Retry-After"] == str(settings.LOGIN_FAILURE_WINDOW_S)
    assert "_auth_user_id" not in client.session


def test_sign_in_limit_is_per_address_and_a_success_clears_it(
    db: Any, django_user_model: Any, settings: Any
) -> None:
    settings.LOGIN_FAILURE_LIMIT = 2
    django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client()
    _sign_in(client, "wrong")
    assert _sign_in(client, "right-pw-123").status_code == 302  # one failure, then success: count cleared
    client.logout()
    _sign_in(client, "wrong")
    assert _sign_in(client, "wrong").status_code == 200
    assert _sign_in(client, "wrong").status_code == 429
    other_address = _sign_in(Client(), "right-pw-123", REMOTE_ADDR="10.0.0.9")
    assert other_address.status_code == 302


def test_session_api_writes_need_the_csrf_token(db: Any, django_user_model: Any) -> None:
    django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client(enforce_csrf_checks=True)
    assert client.login(username="alice", password="right-pw-123")
    refused = client.post("/api/v1/designs/", {"name": "x"}, content_type="application/json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    client.get("/designs/new/")  # sets the csrftoken cookie
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        "/api/v1/designs/",
        {"name": "x", "spec": {"cluster": {"accelerator": "nope"}}},
        content_type="application/json",
        HTTP_X_CSRFTOKEN=token,
    )
    assert accepted.status_code == 400  # past CSRF: the spec itself is what is wrong


def test_sign_in_form_needs_the_csrf_token(db: Any, django_user_model: Any) -> None:
    django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client(enforce_csrf_checks=True)
    assert _sign_in(client, "right-pw-123").status_code == 403
    page = client.get("/accounts/login/")
    token = client.cookies["csrftoken"].value
    assert 'name="csrfmiddlewaretoken"' in page.content.decode()
    response = client.post(
        "/accounts/login/", {"username": "alice", "password": "right-pw-123", "csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302


@pytest.mark.parametrize("path", ["/share/{token}/", "/api/v1/shared/{token}/"])
def test_share_tokens_never_reach_the_logs(path: str, db: Any, caplog: pytest.LogCaptureFixture) -> None:
    # A token that resolves to nothing: Django's request logger then writes "Not Found: <path>".
    token = "Zq3-secretTOKENvalue_that-must-not-leak"
    with caplog.at_level(logging.DEBUG):
        response = Client().get(path.format(token=token))
    assert response.status_code == 404
    assert caplog.records, "expected Django to log the 404"
    assert any("[redacted]" in r.getMessage() for r in caplog.records)
    assert all(token not in r.getMessage() for r in caplog.records)
    assert token not in caplog.text


def test_redaction_covers_both_share_paths() -> None:
    from clusterdesigner.logging import redact

    assert redact("Not Found: /share/abc_DEF-123/") == "Not Found: /share/[redacted]/"
    access_line = '"GET /api/v1/shared/abc?x=1 HTTP/1.1" 404'
    assert redact(access_line) == '"GET /api/v1/shared/[redacted]?x=1 HTTP/1.1" 404'
    assert redact("Not Found: /api/v1/designs/3/") == "Not Found: /api/v1/designs/3/"


def _settings_with(**env: str) -> dict[str, Any]:
    code = (
        "import json, clusterdesigner.settings as s; print(json.dumps({k: getattr(s, k, None) for k in "
        "['SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SECURE_HSTS_SECONDS', 'SECURE_SSL_REDIRECT', "
        "'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'DEBUG']}))"
    )
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    full_env.update(DJANGO_SECRET_KEY="x" * 50, **env)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=full_env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    import json

    return json.loads(result.stdout)


def test_tls_settings_turn_on_secure_cookies_and_hsts() -> None:
    on = _settings_with(DJANGO_SECURE_SSL="1")
    assert on["SESSION_COOKIE_SECURE"] is True and on["CSRF_COOKIE_SECURE"] is True
    assert on["SECURE_HSTS_SECONDS"] == 31536000 and on["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert on["SECURE_SSL_REDIRECT"] is True and on["DEBUG"] is False
    off = _settings_with()
    assert off["SESSION_COOKIE_SECURE"] is None and off["SECURE_HSTS_SECONDS"] is None


def test_hsts_header_and_secure_session_cookie_over_tls(
    db: Any, django_user_model: Any, settings: Any
) -> None:
    settings.SECURE_HSTS_SECONDS = 31536000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    django_user_model.objects.create_user("alice", password="right-pw-123")
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": "right-pw-123"}, secure=True)
    assert response.status_code == 302
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    assert response.cookies["sessionid"]["secure"] is True
    page = client.get("/accounts/login/", secure=True)
    assert page.cookies["csrftoken"]["secure"] is True
