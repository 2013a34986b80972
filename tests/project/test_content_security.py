"""The Content-Security-Policy header (clusterdesigner.content_security): django-csp's policy, built once per
process instead of on every response, on the load target's pages and API answers; a response that varies
its policy and a changed setting still take django-csp's own path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from csp.constants import NONCE, SELF
from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
from django.http import HttpResponse
from django.test import RequestFactory, override_settings

from apps.designs.models import Design
from apps.designs.services import share_link_create
from clusterdesigner import content_security, memo
from clusterdesigner.content_security import CSPMiddleware
from tests.designs.test_api import _create

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    memo.clear_all()
    content_security._policies.cache_clear()
    yield
    memo.clear_all()
    content_security._policies.cache_clear()


def _django_csp(path: str = "/", response: HttpResponse | None = None) -> HttpResponse:
    """What django-csp's own middleware sends for ``response`` (a plain 200 by default)."""
    request = RequestFactory().get(path)
    DjangoCSPMiddleware(lambda r: HttpResponse()).process_request(request)
    answer = DjangoCSPMiddleware(lambda r: HttpResponse()).process_response(
        request, response or HttpResponse()
    )
    assert isinstance(answer, HttpResponse)
    return answer


def test_the_load_targets_answers_carry_django_csps_policy_built_once(
    user_client: Any, api_client: Any, catalog: Any
) -> None:
    design = _create(user_client)
    _, token = share_link_create(design=Design.objects.get(pk=design["id"]), user=user_client.user)
    want = _django_csp()["Content-Security-Policy"]
    assert "script-src 'self'" in want and "frame-ancestors 'none'" in want
    with mock.patch.object(content_security, "build_policy", wraps=content_security.build_policy) as built:
        content_security._policies.cache_clear()  # the requests above built it
        answers = [
            api_client.get("/api/v1/accelerators/"),
            user_client.post(f"/api/v1/designs/{design['id']}/evaluate/"),
            api_client.get(f"/share/{token}/"),
            api_client.get(f"/api/v1/shared/{token}/"),
            api_client.get("/catalog/"),
        ]
    for answer in answers:
        assert answer.status_code == 200
        assert answer["Content-Security-Policy"] == want
        assert "Content-Security-Policy-Report-Only" not in answer  # none configured, as django-csp sends
    # Built twice (the policy and the report-only one, which is empty) for five responses: django-csp
    # builds both on every response, ten times.
    assert built.call_count == 2


def test_a_response_that_varies_its_policy_gets_django_csps_answer() -> None:
    middleware = CSPMiddleware(lambda r: HttpResponse())
    for attribute, value in (
        ("_csp_update", {"img-src": ["https://example.com"]}),
        ("_csp_replace", {"script-src": ["https://cdn.example.com"]}),
        ("_csp_config", {"default-src": ["'none'"]}),
    ):
        ours, theirs = HttpResponse(), HttpResponse()
        setattr(ours, attribute, value)
        setattr(theirs, attribute, value)
        request = RequestFactory().get("/")
        middleware.process_request(request)
        sent = middleware.process_response(request, ours)["Content-Security-Policy"]
        assert sent == _django_csp(response=theirs)["Content-Security-Policy"]
        assert sent != _django_csp()["Content-Security-Policy"], attribute  # the variation took effect
    exempt = HttpResponse()
    exempt._csp_exempt = True  # type: ignore[attr-defined]
    request = RequestFactory().get("/")
    assert "Content-Security-Policy" not in middleware.process_response(request, exempt)


def test_a_nonce_asked_for_is_in_the_header() -> None:
    middleware = CSPMiddleware(lambda r: HttpResponse())
    request = RequestFactory().get("/")
    middleware.process_request(request)
    nonce = str(request.csp_nonce)  # type: ignore[attr-defined]
    with override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"script-src": [SELF, NONCE]}}):
        sent = middleware.process_response(request, HttpResponse())["Content-Security-Policy"]
    # django-csp adds its default default-src, and orders the directives as a set iterates.
    assert set(sent.split("; ")) == {"default-src 'self'", f"script-src 'self' 'nonce-{nonce}'"}


def test_a_changed_setting_changes_the_header(api_client: Any, catalog: Any) -> None:
    assert "object-src 'none'" in api_client.get("/api/v1/accelerators/")["Content-Security-Policy"]
    with override_settings(
        CONTENT_SECURITY_POLICY={
            "DIRECTIVES": {"default-src": ["'self'"]},
            "EXCLUDE_URL_PREFIXES": ["/api/"],
        },
        CONTENT_SECURITY_POLICY_REPORT_ONLY={"DIRECTIVES": {"default-src": ["'none'"]}},
    ):
        api = api_client.get("/api/v1/accelerators/")
        page = api_client.get("/catalog/")
        assert "Content-Security-Policy" not in api  # the excluded prefix
        assert page["Content-Security-Policy"] == "default-src 'self'"
        assert page["Content-Security-Policy-Report-Only"] == "default-src 'none'"
    assert "object-src 'none'" in api_client.get("/api/v1/accelerators/")["Content-Security-Policy"]
