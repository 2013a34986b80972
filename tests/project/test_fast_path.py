"""The fast path (clusterdesigner.fastpath) through the URL, at the WSGI door gunicorn calls
(clusterdesigner.wsgi.application): a stored evaluation, a catalog list, a share page and its JSON are
replayed from the answer Django gave for the same key, byte for byte, after the probe's checks; and every
check the view makes still holds on the next request after a change: another user's design, a refused token,
a visibility, price book, calibration or catalog change, a revoked link; the token's last use and the share
link's opens are still recorded."""

from __future__ import annotations

import datetime as dt
import io
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, DatabaseError, close_old_connections, connection, connections
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.catalog.models import CloudPrice
from apps.designs.models import Design, ShareLink
from apps.designs.selectors import share_link_list
from apps.designs.services import design_create, design_update, share_link_create, share_link_revoke
from apps.measurements.services import calibration_set
from apps.pricebook.models import PriceEntry
from apps.teams.services import owned_move, team_create
from clusterdesigner import fastpath, wsgi
from clusterdesigner.api_tokens import api_token_create, api_token_revoke
from clusterdesigner.models import ApiToken
from tests.designs.test_api import SPEC
from tests.project.test_request_cost import empty_memo  # noqa: F401  # autouse: each test starts empty

pytestmark = pytest.mark.django_db


class Django:
    """Django's WSGI handler, counting the requests it answers (the rest the fast path answered)."""

    def __init__(self) -> None:
        self.handler = WSGIHandler()
        self.calls = 0

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        self.calls += 1
        return self.handler(environ, start_response)


@pytest.fixture
def django_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Django]:
    # As Django's test client does: the test's transaction is not the request's to close, nor its
    # connection past CONN_MAX_AGE (which the fast path leaves to Django to close).
    monkeypatch.setattr(connections[DEFAULT_DB_ALIAS], "close_at", None)
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield Django()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def app(django_app: Django) -> fastpath.FastPath:
    return fastpath.FastPath(django_app)


@dataclass
class Answer:
    status: str
    headers: list[tuple[str, str]]
    body: bytes

    @property
    def code(self) -> int:
        return int(self.status.split()[0])

    def json(self) -> Any:
        return json.loads(self.body)


def call(app: Any, method: str, path: str, query: str = "", **headers: str) -> Answer:
    """One request as gunicorn makes it (wrk's headers, bench/load.lua), the iterable closed after."""
    body = b"{}" if method == "POST" else b""
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "testserver",
        "HTTP_ACCEPT": "application/json, text/html",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)),
        **({"CONTENT_TYPE": "application/json"} if body else {}),
        **{f"HTTP_{name.upper()}": value for name, value in headers.items()},
    }
    started: list[tuple[str, list[tuple[str, str]]]] = []
    chunks = app(environ, lambda status, headers, exc_info=None: started.append((status, headers)))
    try:
        content = b"".join(chunks)
    finally:
        if hasattr(chunks, "close"):
            chunks.close()
    return Answer(started[0][0], list(started[0][1]), content)


@dataclass
class Fixture:
    design: Design
    key: str
    share: str

    def evaluate(self, app: Any, key: str | None = None, **headers: str) -> Answer:
        token = f"Token {key or self.key}"
        return call(
            app, "POST", f"/api/v1/designs/{self.design.pk}/evaluate/", authorization=token, **headers
        )


@pytest.fixture
def made(alice: Any, catalog: Any) -> Fixture:
    design = design_create(owner=alice, name="fast", spec=SPEC)
    _, share = share_link_create(design=design, user=alice, label="fast path")
    token = api_token_create(user=alice, scope="designs")
    # As a script that used its token a moment ago: its last use is recorded, so a request writes nothing
    # (test_the_tokens_last_use_is_recorded_as_before starts from a token never used).
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return Fixture(design, token.key, share)


ROUTES = {
    "catalog-list": lambda made: ("GET", "/api/v1/accelerators/", {}),
    "design-evaluate": lambda made: (
        "POST",
        f"/api/v1/designs/{made.design.pk}/evaluate/",
        {"authorization": f"Token {made.key}"},
    ),
    "share-view": lambda made: ("GET", f"/share/{made.share}/", {}),
    "shared-json": lambda made: ("GET", f"/api/v1/shared/{made.share}/", {}),
}


def test_the_wsgi_application_is_the_fast_path() -> None:
    assert isinstance(wsgi.application, fastpath.FastPath)


@pytest.mark.parametrize("name", ROUTES)
def test_a_kept_answer_is_djangos_byte_for_byte(
    name: str, made: Fixture, app: fastpath.FastPath, django_app: Django
) -> None:
    method, path, headers = ROUTES[name](made)
    first = call(app, method, path, **headers)  # Django answers, and its answer is kept
    assert first.code == 200 and django_app.calls == 1
    replayed = call(app, method, path, **headers)
    assert django_app.calls == 1  # the fast path answered
    full = call(django_app, method, path, **headers)  # Django's whole stack, now
    assert (replayed.status, replayed.headers, replayed.body) == (full.status, full.headers, full.body)
    assert (first.status, first.headers, first.body) == (full.status, full.headers, full.body)
    names = {header for header, _ in replayed.headers}
    assert {"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options", "Content-Length"} <= names
    if name in ("share-view", "shared-json"):
        assert ("Cache-Control", "private, no-store") in replayed.headers


def test_a_kept_evaluation_is_404_to_another_user(made: Fixture, app: Any, bob: Any) -> None:
    assert made.evaluate(app).code == 200
    assert made.evaluate(app).code == 200  # kept
    bobs = api_token_create(user=bob, scope="designs").key
    refused = made.evaluate(app, bobs)
    assert refused.code == 404 and b"training" not in refused.body


def test_a_refused_token_is_refused_at_once(made: Fixture, app: Any, alice: Any, bob: Any) -> None:
    assert made.evaluate(app).code == 200
    assert made.evaluate(app).code == 200  # kept
    api_token_revoke(user=alice)
    revoked = made.evaluate(app)
    assert revoked.code == 401 and revoked.json()["error"]["message"] == "Invalid token."
    assert ("WWW-Authenticate", "Token") in revoked.headers
    expiring = api_token_create(user=alice, scope="read", expires_at=timezone.now() + dt.timedelta(hours=1))
    assert made.evaluate(app, expiring.key).code == 200  # a read token may evaluate: it stores nothing
    assert made.evaluate(app, expiring.key).code == 200
    ApiToken.objects.filter(pk=expiring.pk).update(expires_at=timezone.now() - dt.timedelta(seconds=1))
    expired = made.evaluate(app, expiring.key)
    assert expired.code == 401 and expired.json()["error"]["message"] == "Token expired."
    fresh = api_token_create(user=alice, scope="designs").key
    assert made.evaluate(app, fresh).code == 200
    alice.is_active = False
    alice.save()
    inactive = made.evaluate(app, fresh)
    assert inactive.code == 401 and inactive.json()["error"]["message"] == "User inactive or deleted."
    # A scope no request has (a row written by hand): refused as TokenAuthentication refuses it.
    alice.is_active = True
    alice.save()
    ApiToken.objects.filter(user=alice).update(scope="")
    assert made.evaluate(app, fresh).code == 403


def test_a_visibility_change_is_seen_at_once(made: Fixture, app: Any, alice: Any, bob: Any) -> None:
    design = design_update(
        design=made.design, user=alice, base_version=1, visibility=Design.Visibility.ORGANISATION
    )
    bobs = api_token_create(user=bob, scope="read").key
    assert made.evaluate(app, bobs).code == 200
    kept = made.evaluate(app, bobs)
    assert kept.code == 200 and kept.json()["design"]["version"] == 2
    design_update(design=design, user=alice, base_version=2, visibility=Design.Visibility.PRIVATE)
    assert made.evaluate(app, bobs).code == 404
    assert made.evaluate(app).code == 200  # alice still reads it


def test_price_book_calibration_and_catalog_changes_give_a_new_answer_at_once(
    made: Fixture, app: Any, django_app: Django, alice: Any
) -> None:
    def changed(before: Answer) -> Answer:
        calls = django_app.calls
        after = made.evaluate(app)
        assert after.code == 200 and django_app.calls == calls + 1  # not the kept answer
        assert after.json() != before.json()
        # A new evaluation is answered as computed, then from the stored text, which is kept in turn.
        stored = made.evaluate(app)
        assert stored.json() == after.json() and django_app.calls == calls + 2
        assert made.evaluate(app).body == stored.body and django_app.calls == calls + 2
        return stored

    made.evaluate(app)
    first = made.evaluate(app)
    PriceEntry.objects.create(
        owner=alice,
        kind="server_quote",
        accelerator="h100-sxm",
        gpus_per_node=8,
        value=123_456,
        valid_from=dt.date(2026, 1, 1),
        source="a quote",
    )
    priced = changed(first)
    assert any(row.get("entry_id") for row in priced.json()["assumptions"])
    calibration_set(owner_id=alice.pk, team_id=None, enabled=True)
    calibrated = changed(priced)
    assert calibrated.json()["calibration"] != priced.json()["calibration"]
    for price in CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand"):
        price.usd_per_hour *= 2
        price.save()
    changed(calibrated)


def test_a_team_design_is_kept_for_its_members(
    made: Fixture, app: Any, django_app: Django, alice: Any
) -> None:
    team = team_create(user=alice, name="Infra")
    owned_move(user=alice, obj=made.design, team_id=team.pk)
    assert made.evaluate(app).code == 200  # priced with the team's (empty) book: computed, then stored
    assert made.evaluate(app).code == 200
    calls = django_app.calls
    assert made.evaluate(app).code == 200 and django_app.calls == calls
    calibration_set(owner_id=None, team_id=team.pk, enabled=True)  # the team's switch, not alice's
    assert made.evaluate(app).code == 200 and django_app.calls == calls + 1


def test_the_catalog_list_follows_a_catalog_write(made: Fixture, app: Any, django_app: Django) -> None:
    first = call(app, "GET", "/api/v1/accelerators/")
    assert call(app, "GET", "/api/v1/accelerators/").body == first.body and django_app.calls == 1
    price = CloudPrice.objects.first()
    assert price is not None
    price.save()
    again = call(app, "GET", "/api/v1/accelerators/")
    assert django_app.calls == 2 and again.body == first.body  # the same rows, answered by Django again


def _opens(share: str) -> int:
    link = ShareLink.objects.get(token_hint=share[:6])
    return share_link_list(design=link.design).get(pk=link.pk).opens


def test_a_revoked_share_link_is_404_at_once_and_each_open_counts_once(made: Fixture, app: Any) -> None:
    for _ in range(3):
        assert call(app, "GET", f"/share/{made.share}/").code == 200
        assert call(app, "GET", f"/api/v1/shared/{made.share}/").code == 200
    assert call(app, "GET", f"/share/{made.share}/", query="frame=run").code == 200  # Django's, counted there
    assert _opens(made.share) == 7
    share_link_revoke(link=ShareLink.objects.get(token_hint=made.share[:6]))
    assert call(app, "GET", f"/share/{made.share}/").code == 404
    assert call(app, "GET", f"/api/v1/shared/{made.share}/").code == 404
    assert _opens(made.share) == 7  # a revoked link's request counts nothing


def test_the_tokens_last_use_is_recorded_as_before(made: Fixture, app: Any, django_app: Django) -> None:
    ApiToken.objects.update(last_used_at=None)  # never used
    token = ApiToken.objects.get()
    made.evaluate(app)
    assert django_app.calls == 1 and ApiToken.objects.get(pk=token.pk).last_used_at is not None
    made.evaluate(app)  # nothing to write now: Django's answer is kept
    calls = django_app.calls
    made.evaluate(app)
    assert django_app.calls == calls  # within a minute: nothing to write, the kept answer
    earlier = timezone.now() - dt.timedelta(minutes=2)
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=earlier)
    assert made.evaluate(app).code == 200 and django_app.calls == calls + 1  # Django writes it
    assert ApiToken.objects.get(pk=token.pk).last_used_at > earlier


def test_requests_the_fast_path_leaves_to_django(made: Fixture, app: Any, django_app: Django) -> None:
    made.evaluate(app)
    made.evaluate(app)
    calls = django_app.calls
    path = f"/api/v1/designs/{made.design.pk}/evaluate/"
    token = f"Token {made.key}"
    assert call(app, "POST", path, authorization=token, cookie="sessionid=x").code == 200
    assert call(app, "POST", path, query="version=1", authorization=token).code == 200
    assert call(app, "POST", path, authorization=token.lower()).code == 200  # "token": DRF's, case-blind
    assert call(app, "POST", f"/api/v1/designs/0{made.design.pk}/evaluate/", authorization=token).code == 200
    assert call(app, "GET", "/api/v1/accelerators/", authorization=token).code == 200
    assert django_app.calls == calls + 5
    # Another Accept is another kind of client: Django answers it once, then it is kept too.
    assert made.evaluate(app, accept="application/json").code == 200
    assert made.evaluate(app, accept="application/json").code == 200
    assert django_app.calls == calls + 6


def test_a_failing_probe_leaves_the_request_to_django(
    made: Fixture, app: Any, django_app: Django, monkeypatch: pytest.MonkeyPatch
) -> None:
    made.evaluate(app)
    route = next(r for r in fastpath._routes if r.url_name == "design-evaluate")

    def fail(environ: dict[str, Any], value: str) -> None:
        raise DatabaseError("the server restarted")

    routes = [fastpath.Route(**{**r.__dict__, "probe": fail}) if r is route else r for r in fastpath._routes]
    monkeypatch.setattr(fastpath, "_routes", routes)
    broken = fastpath.FastPath(django_app)
    calls = django_app.calls
    assert made.evaluate(broken).code == 200 and django_app.calls == calls + 1


def test_a_kept_evaluation_takes_one_statement(made: Fixture, app: Any) -> None:
    made.evaluate(app)
    made.evaluate(app)
    with CaptureQueriesContext(connection) as queries:
        assert made.evaluate(app).code == 200
    if connection.vendor == "postgresql":
        # The token with its user, the version if the user may read it, the book's and the switch's stamps
        # and the catalog's version: one prepared statement (three for Django's path).
        assert [q["sql"].split("(")[0] for q in queries] == ["EXECUTE designs_evaluation_key_by_token"]
    else:
        assert len(queries) == 4  # the token, the version, the catalog's version, the stamps


def test_the_one_statement_reads_the_key_the_view_reads(
    made: Fixture, alice: Any, bob: Any, postgres_required: None
) -> None:
    """evaluation_memo_key_by_token (PostgreSQL's one statement) answers the key that
    services.design_evaluation_key reads through the view's three statements, for the token's user, through
    every change the key follows: a personal and a team design, the switch never written, off and on, the
    book empty and not, the design visible to another user or not; and the token's columns as they are."""
    from apps.designs.pricing import evaluation_memo_key_by_token
    from apps.designs.selectors import design_version_get_visible
    from apps.designs.services import design_evaluation_key
    from clusterdesigner.api_tokens import key_hash

    bobs = api_token_create(user=bob, scope="read", expires_at=timezone.now() + dt.timedelta(days=1))
    team = team_create(user=alice, name="Infra")
    seen = set()

    def check(step: str) -> None:
        made.design.refresh_from_db()
        for user, key in ((alice, made.key), (bob, bobs.key)):
            found = evaluation_memo_key_by_token(key_hash=key_hash(key), design_id=made.design.pk)
            assert found is not None
            token = ApiToken.objects.get(user=user)
            assert found[:4] == (token.scope, token.expires_at, token.last_used_at, user.is_active), step
            version = design_version_get_visible(user=user, design_id=made.design.pk)
            want = None if version is None else design_evaluation_key(version=version)
            assert found.key == want, (step, user.username)
            seen.add(found.key)

    check("personal, no switch")
    calibration_set(owner_id=alice.pk, team_id=None, enabled=False)
    check("personal, off")
    calibration_set(owner_id=alice.pk, team_id=None, enabled=True)
    check("personal, on")
    PriceEntry.objects.create(
        owner=alice, kind="power", value=0.1, valid_from=dt.date(2026, 1, 1), source="x"
    )
    check("personal, an entry")
    design = design_update(
        design=made.design, user=alice, base_version=1, visibility=Design.Visibility.ORGANISATION
    )
    check("shared with the organisation")
    owned_move(user=alice, obj=design, team_id=team.pk)
    check("the team's, no switch")
    calibration_set(owner_id=None, team_id=team.pk, enabled=True)
    check("the team's, on")
    PriceEntry.objects.create(
        owner=alice, team=team, kind="power", value=0.2, valid_from=dt.date(2026, 1, 1), source="y"
    )
    check("the team's, an entry")
    # Each step moved the key (bob's are alice's once the design is shared); bob read nothing of it before.
    assert None in seen and len(seen - {None}) == 8
    assert evaluation_memo_key_by_token(key_hash=key_hash("0" * 40), design_id=made.design.pk) is None
