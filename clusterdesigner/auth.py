"""Sign-in with a limit on failed attempts per account and client address, on every sign-in path.

The count lives in the authentication backend, so /accounts/login/, /admin/login/ and anything else that calls
``django.contrib.auth.authenticate()`` with a request share one limit: a path that forgot a view mixin cannot
become the unlimited way in. The client address is the one the trusted proxy reports (``X-Forwarded-For``
only from an address in TRUSTED_PROXIES), so failures sent through the proxy count against the client who
sent them, not against the proxy's address that every user shares.

Why not django-axes (tried with 8.3.1, cache handler, limit and window from these settings, client_address as
its IP callable): it answers the failure that reaches the limit with the lockout itself, so with a limit of 5
the fifth wrong password is a 429 where the sign-in form (200) is expected; with a limit of 6 the right
password after five failures signs in (302) where 429 is expected. Its backend raises ValueError when
authenticate() has no request (the test client's login()), it slides the window on each failure (here it
runs from the first), and it adds an app with four tables. Seven of the 15 tests in
tests/project/test_sign_in_limit.py and test_security.py failed with it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from clusterdesigner.models import SignInAttempts

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(proxy, strict=False) for proxy in proxies)


def _is_trusted(address: str, networks: tuple[IPNetwork, ...]) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, unless that is a trusted proxy; then the right-most address in
    X-Forwarded-For that is not a trusted proxy. Each proxy appends the address it received the request from,
    so the entries left of that one are whatever the client chose to send and are never used."""
    remote = str(request.META.get("REMOTE_ADDR", ""))
    networks = _networks(tuple(settings.TRUSTED_PROXIES))
    if not networks or not _is_trusted(remote, networks):
        return remote
    hops = [
        hop.strip() for hop in str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",") if hop.strip()
    ]
    for hop in reversed(hops):
        if not _is_trusted(hop, networks):
            return hop[:64]
    return hops[0][:64] if hops else remote


def _failure_key(request: HttpRequest, username: Any) -> str:
    account = str(username or "").strip().lower()[:150]
    return hashlib.sha256(f"{client_address(request)}\n{account}".encode()).hexdigest()


def _take_attempt(key: str) -> bool:
    """Count one sign-in attempt for ``key`` before its password is checked; False (check nothing) once
    LOGIN_FAILURE_LIMIT attempts are counted in the window, which runs LOGIN_FAILURE_WINDOW_S from the first.

    Counted in the database under a row lock (SELECT ... FOR UPDATE), not read-then-written: with a read
    first, 20 simultaneous wrong passwords all read a count under the limit and 6 were checked against a
    limit of 5, and a right password in the same burst got in. A database row also holds across web
    processes with Redis down (the cache reads as empty then). An attempt is counted as a failure until it
    succeeds (forget_attempts)."""
    now = timezone.now()
    window_start = now - dt.timedelta(seconds=settings.LOGIN_FAILURE_WINDOW_S)
    if not SignInAttempts.objects.filter(key=key).exists():
        # A first attempt: the moment to drop rows whose window has passed, so they do not pile up.
        SignInAttempts.objects.filter(window_started_at__lt=window_start).delete()
    with transaction.atomic():
        row = SignInAttempts.objects.select_for_update().filter(key=key).first()
        if row is None:
            try:
                with transaction.atomic():  # a savepoint: a concurrent first attempt may create it first
                    SignInAttempts.objects.create(key=key, attempts=1, window_started_at=now)
                return True
            except IntegrityError:
                row = SignInAttempts.objects.select_for_update().get(key=key)
        if row.window_started_at < window_start:
            row.attempts, row.window_started_at = 0, now
        if row.attempts >= settings.LOGIN_FAILURE_LIMIT:
            return False
        row.attempts += 1
        row.save(update_fields=["attempts", "window_started_at"])
        return True


def _forget_attempts(key: str) -> None:
    SignInAttempts.objects.filter(key=key).delete()


class SignInLimited(Exception):
    """Raised instead of checking a password once the limit is reached; SignInLimitMiddleware answers 429."""


class RateLimitedModelBackend(ModelBackend):
    """Django's ModelBackend with a limit: after LOGIN_FAILURE_LIMIT failed sign-ins for one account from one
    client address within LOGIN_FAILURE_WINDOW_S seconds, every further attempt (even with the right password)
    is refused without checking the password until the window has passed (each attempt is counted before its
    password is checked, atomically: _take_attempt). A success clears the count. Keyed
    on both, so one attacker cannot lock a user out from everywhere.

    Calls without a request (a management command, a test client's login()) are not sign-ins over HTTP and are
    not counted."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        if request is None:
            return super().authenticate(request, username=username, password=password, **kwargs)
        if username is None:
            username = kwargs.get(get_user_model().USERNAME_FIELD)
        key = _failure_key(request, username)
        if not _take_attempt(key):
            raise SignInLimited
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            _forget_attempts(key)
        return user

    async def aauthenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        return await sync_to_async(self.authenticate)(request, username=username, password=password, **kwargs)


def too_many_sign_ins() -> HttpResponse:
    minutes = max(1, settings.LOGIN_FAILURE_WINDOW_S // 60)
    message = f"Too many failed sign-ins for this user from your address. Try again in {minutes} minute(s)."
    response = HttpResponse(message, status=429, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW_S)
    return response


class SignInLimitMiddleware:
    """Turns the backend's SignInLimited, from whichever sign-in view called authenticate(), into a 429."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        return too_many_sign_ins() if isinstance(exception, SignInLimited) else None
