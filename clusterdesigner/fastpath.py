"""Kept answers served before Django's stack, for the few routes a client repeats (issue 38 item 9).

A stored evaluation, the catalog list, a share page and its JSON are already kept in each process
(clusterdesigner.memo), so a repeated request costs its few statements and little else; but the rest of the
stack still ran for it, every middleware, the URL resolver, DRF's request, authentication, permissions,
content negotiation and renderer, and Django's health check of the connection (a ``SELECT 1``): more CPU than
the statements and the kept text together (bench/load_profile.py --profile design-evaluate). Here a route
that a view registers (``route``) is answered at the WSGI level when it can be:

1. The request is of the registered method and path in its canonical form (the path ``reverse()`` builds for
   the URL name, the value matching the route's pattern), with no cookie (a signed-in reader's page, a
   session, flash messages and the CSRF cookie all come with one), no Authorization header unless the
   route takes one, and no script prefix. Anything else goes to Django, unchanged.
2. The route's probe makes the reads the view's access checks and its memo key need, in a statement or
   two, and answers the key, or None when the view would answer otherwise (not visible, a token that is
   refused, that must be written to, or that does not cover the request, a revoked link): then Django
   answers, as it would have.
3. The answer Django gave for the same key and the same request (method, path, query, every header but the
   few named in IGNORED_HEADERS) is replayed: its status, headers and body, byte for byte, as the middleware
   finished them. Django's answer is kept only when the view marked it (``memo.keep``) with the key the
   probe read, so a change between the probe and the view (an edit, a revoked link) keeps nothing; only a 200
   that sets no cookie is kept.

What the response is a function of is therefore the key (the view's memo key: the version, the catalog's
version, the book's stamp, the calibration switch, the day, the engine; or the share link's row) and the
request's signature; who may read it is checked by the probe on every request, as the view checks it. A probe
that counts something (a share link's open) hands its result to the view (``handed``), so that a request that
falls through counts once. The kept answers are per process and bounded, like the memo (memo.RESPONSES).

Connections: the fast path does not send Django's request_started/finished signals, whose work here is the
connection's upkeep: a connection past CONN_MAX_AGE or with errors goes to Django, which closes it; a probe
whose statement fails (the server restarted, the connection was killed mid-query) goes to Django too, which
checks the connection (errors_occurred) and answers on a new one (tests/faults/test_postgres_drop.py). The
health check (CONN_HEALTH_CHECKS' ``SELECT 1``) runs on the first statement after a request Django answered,
not before each kept answer: a dead idle connection fails the probe instead, which Django then answers. A
probe's statements go through Django's cursor, so the query log and its counts see them.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.urls import NoReverseMatch, get_resolver, reverse

from clusterdesigner import memo

logger = logging.getLogger(__name__)

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
# A probe: (the WSGI environ, the URL's value) -> the key the view would keep its answer under, or None.
Probe = Callable[[Environ, str], Hashable | None]

# Request headers that do not change these routes' answers, left out of the signature a kept answer is found
# by: the credentials (the probe checks them on every request), hop-by-hop headers, the body's length (no
# route reads a body), the client's software and address, compression (no middleware compresses), the page
# it came from (CSRF reads it only for unsafe methods on views that are not exempt; the API's are). Every
# other header is part of the signature: a request that differs in any of them is answered by Django once.
IGNORED_HEADERS = frozenset(
    {
        "HTTP_AUTHORIZATION",
        "HTTP_CONNECTION",
        "HTTP_KEEP_ALIVE",
        "HTTP_TE",
        "HTTP_USER_AGENT",
        "HTTP_ACCEPT_ENCODING",
        "HTTP_X_FORWARDED_FOR",
        "HTTP_X_REAL_IP",
        "HTTP_REFERER",
    }
)
# What a request that is answered here must not carry (see 1. above).
_REFUSED = ("HTTP_COOKIE",)
_SIGNATURE_KEYS = (
    *("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "CONTENT_TYPE"),
    *("wsgi.url_scheme", "SERVER_NAME", "SERVER_PORT"),
)
_HANDED = "clusterdesigner.fastpath"
_PLACEHOLDER = "fastpathvalue0"


@dataclass(frozen=True)
class Route:
    """A view's route answered here: its URL name and keyword, the method, what its value looks like in its
    canonical form (a regular expression), whether it takes ``Authorization`` and its probe."""

    url_name: str
    kwarg: str | None
    method: str
    value: str
    probe: Probe
    credentials: bool = False


_routes: list[Route] = []


def route(
    url_name: str,
    *,
    method: str,
    probe: Probe,
    kwarg: str | None = None,
    value: str = "",
    credentials: bool = False,
) -> None:
    """Register a route (at import, beside its view): see the module's docstring."""
    _routes.append(Route(url_name, kwarg, method, value, probe, credentials))


def hand(environ: Environ, name: str, value: Any) -> None:
    """A probe's result for the view, so that a request that falls through does not repeat its write."""
    environ.setdefault(_HANDED, {})[name] = value


def handed(request: Any, name: str, missing: Any = None) -> Any:
    """What the probe handed the view under ``name`` (``request``: Django's or DRF's), else ``missing``."""
    return request.META.get(_HANDED, {}).get(name, missing)


def _signature(environ: Environ) -> tuple[Any, ...]:
    headers = sorted(
        (name, value)
        for name, value in environ.items()
        if name.startswith("HTTP_") and name not in IGNORED_HEADERS
    )
    return (*(environ.get(name, "") for name in _SIGNATURE_KEYS), *headers)


class FastPath:
    """The WSGI application: registered routes answered from kept answers when they can be, the rest by
    ``app`` (Django's WSGIHandler)."""

    def __init__(self, app: Callable[[Environ, StartResponse], Iterable[bytes]]) -> None:
        self.app = app
        self._table: dict[str, list[tuple[re.Pattern[str], Route]]] | None = None
        self._lock = threading.Lock()

    def table(self) -> dict[str, list[tuple[re.Pattern[str], Route]]]:
        """The routes by method, each path as ``reverse()`` builds it (the URLconf, imported here, is what
        registers them)."""
        table = self._table
        if table is None:
            with self._lock:
                if self._table is None:
                    get_resolver().url_patterns  # noqa: B018  # imports the views, which register their routes
                    built: dict[str, list[tuple[re.Pattern[str], Route]]] = {}
                    for found in _routes:
                        kwargs = {found.kwarg: _PLACEHOLDER} if found.kwarg else {}
                        try:
                            path = re.escape(reverse(found.url_name, kwargs=kwargs))
                        except NoReverseMatch:
                            logger.error("fast path: no URL named %s; Django answers it", found.url_name)
                            continue
                        pattern = path.replace(_PLACEHOLDER, f"({found.value})")
                        built.setdefault(found.method, []).append((re.compile(pattern), found))
                    self._table = built
                table = self._table
        return table

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        found = self._match(environ)
        if found is None:
            return self.app(environ, start_response)
        key = self._probe(environ, *found)
        if key is None:
            return self.app(environ, start_response)
        signature = (found[0].url_name, _signature(environ), key)
        kept = memo.RESPONSES.get(signature)
        if kept is not None:
            status, headers, body = kept
            start_response(status, list(headers))
            return [body]
        return self._answer(environ, start_response, signature, key)

    def _match(self, environ: Environ) -> tuple[Route, str] | None:
        routes = self.table().get(environ.get("REQUEST_METHOD", ""))
        if not routes or environ.get("SCRIPT_NAME") or any(name in environ for name in _REFUSED):
            return None
        path = environ.get("PATH_INFO", "")
        for pattern, found in routes:
            match = pattern.fullmatch(path)
            if match is not None:
                if "HTTP_AUTHORIZATION" in environ and not found.credentials:
                    return None
                return found, match.group(1) if match.groups() else ""
        return None

    def _probe(self, environ: Environ, found: Route, value: str) -> Hashable | None:
        connection = connections[DEFAULT_DB_ALIAS]
        close_at = connection.close_at
        if connection.errors_occurred or (close_at is not None and time.monotonic() >= close_at):
            return None  # Django's request_started closes it
        try:
            return found.probe(environ, value)
        except DatabaseError:
            return None  # Django checks the connection (errors_occurred is set) and answers
        except Exception:
            logger.exception("fast path probe of %s failed; answered by Django", found.url_name)
            return None

    def _answer(
        self, environ: Environ, start_response: StartResponse, signature: Hashable, key: Hashable
    ) -> Iterable[bytes]:
        """Django's answer, kept when the view marked it with the probe's key (see the module)."""
        started: list[tuple[str, list[tuple[str, str]]]] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started.append((status, headers))
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        response = self.app(environ, start)
        if (
            started
            and started[0][0].startswith("200 ")
            and memo.kept_as(response) == key
            and getattr(response, "streaming", True) is False
            and not any(name.lower() == "set-cookie" for name, _ in started[0][1])
        ):
            status, headers = started[0]
            body = bytes(response.content)  # type: ignore[attr-defined]
            memo.RESPONSES.put(signature, (status, tuple(headers), body), len(body))
        return response
