"""API tokens for scripts and internal tools, sent as `Authorization: Token <key>`: one per user, stored as
the key's SHA-256 (clusterdesigner.models.ApiToken), shown once when created, with a scope, an optional
expiry and the time it was last used.

Scopes (ApiToken.Scope), checked here for every request a token makes, whatever the view's permissions:
``read`` sends GET, HEAD and OPTIONS only (and POSTs to views that store nothing, ``token_scope = "read"``);
``designs`` writes what the user owns (designs, plans, analyses, share links); ``catalog`` also writes the
catalog, for staff (views with ``token_scope = "catalog"``). The user's own rights still apply on top: a
catalog-scope token of a non-staff user writes no catalog.

TokenAuthentication, the API's default, keeps DRF's header parsing and messages with a leaner lookup: every
API request a script makes passes through it, so the token-and-user query is compiled once per process.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from clusterdesigner.compiled_query import CompiledQuery
from clusterdesigner.models import ApiToken

KEY_BYTES = 20
# The length of every key (40 hex characters, as DRF's were): a longer one cannot match a row.
KEY_MAX_LENGTH = 2 * KEY_BYTES
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
SCOPE_RANK: dict[str, int] = {ApiToken.Scope.READ: 0, ApiToken.Scope.DESIGNS: 1, ApiToken.Scope.CATALOG: 2}
# last_used_at is written at most this often per token, so a busy script costs no write per request.
LAST_USED_RESOLUTION = dt.timedelta(minutes=1)
# The token with its user, as DRF reads it (select_related), in one query compiled once per process and
# prepared once per connection.
_TOKEN_WITH_USER: CompiledQuery[ApiToken] = CompiledQuery(
    lambda key_hash: ApiToken.objects.select_related("user").filter(key_hash=key_hash).order_by()[:1],
    prepare="clusterdesigner_token_with_user",
    key_hash=str,
)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def api_token_get(*, user: Any) -> ApiToken | None:
    return ApiToken.objects.filter(user=user).first()


@transaction.atomic
def api_token_create(
    *, user: Any, scope: str = ApiToken.Scope.READ, expires_at: dt.datetime | None = None
) -> ApiToken:
    """A new token for this user; the one they had, if any, stops working at once (one token per user). The
    returned row carries the key as ``.key``, the only time it exists outside the caller's hands: only its
    hash is stored."""
    ApiToken.objects.filter(user=user).delete()
    key = secrets.token_hex(KEY_BYTES)
    token = ApiToken.objects.create(
        user=user, key_hash=key_hash(key), prefix=key[:4], scope=scope, expires_at=expires_at
    )
    token.key = key
    return token


def api_token_revoke(*, user: Any) -> bool:
    """Delete this user's token; True when there was one. Requests that send it then answer 401."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted > 0


def _needed_scope(request: Request) -> str:
    """The scope a request needs: read for a safe method, else the view's ``token_scope`` (designs unless
    the view says otherwise). The view is known from the URL resolved before the view runs."""
    if request.method in SAFE_METHODS:
        return ApiToken.Scope.READ
    match = getattr(request._request, "resolver_match", None)
    func = getattr(match, "func", None)
    # An extra action may name its own (``@action(..., token_scope="read")``): DRF hands it to the view
    # as an init keyword, found on the routed function before the class's.
    action_scope = (getattr(func, "initkwargs", None) or {}).get("token_scope")
    view = getattr(func, "cls", None)
    return str(action_scope or getattr(view, "token_scope", ApiToken.Scope.DESIGNS))


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's TokenAuthentication (the header parsing, the 401 with ``WWW-Authenticate: Token``, the same
    messages) against hashed keys, with one database query per request compiled once per process. A key
    longer than any key or holding a NUL (which PostgreSQL cannot take in a text parameter) is refused as an
    invalid token without a query. An expired token is a 401; a token whose scope does not cover the request
    is a 403 naming the scope it needs."""

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        found = super().authenticate(request)
        if found is None:
            return None
        user, token = found
        needed = _needed_scope(request)
        if not _covers(token.scope, needed):
            raise exceptions.PermissionDenied(
                f"This token's scope is {token.scope!r}; {request.method} here needs the {needed!r} scope."
            )
        return user, token

    def authenticate_credentials(self, key: str) -> tuple[Any, ApiToken]:
        if len(key) > KEY_MAX_LENGTH or "\x00" in key:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = _TOKEN_WITH_USER.first(key_hash=key_hash(key))
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        now = timezone.now()
        refusal = _refusal(is_active=token.user.is_active, expires_at=token.expires_at, now=now)
        if refusal is not None:
            raise exceptions.AuthenticationFailed(refusal)
        if _last_use_due(token.last_used_at, now):
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token


def _refusal(*, is_active: bool, expires_at: dt.datetime | None, now: dt.datetime) -> str | None:
    """Why TokenAuthentication refuses a token it found (its 401's message), or None."""
    if not is_active:
        return str(_("User inactive or deleted."))
    if expires_at is not None and expires_at <= now:
        return "Token expired."
    return None


def _last_use_due(last_used_at: dt.datetime | None, now: dt.datetime) -> bool:
    """Whether this request writes the token's last use (at most once per LAST_USED_RESOLUTION)."""
    return last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION


def _covers(scope: str, needed: str) -> bool:
    """Whether a token of ``scope`` may make a request needing ``needed`` (an unknown scope: none)."""
    return SCOPE_RANK.get(scope, -1) >= SCOPE_RANK.get(needed, 1)


# The header TokenAuthentication reads, in the one form api_token_create's keys take.
_CANONICAL_HEADER = re.compile(rf"Token ([0-9a-f]{{{KEY_MAX_LENGTH}}})")


def api_token_header_hash(header: str) -> str | None:
    """The key hash of an ``Authorization`` header in the one form api_token_create's keys are sent in
    (``Token`` and 40 lowercase hex digits), else None: the fast path (clusterdesigner.fastpath) leaves any
    other form to TokenAuthentication, which parses it as DRF does."""
    match = _CANONICAL_HEADER.fullmatch(header)
    return None if match is None else key_hash(match.group(1))


def api_token_passes_quietly(
    *,
    scope: str,
    expires_at: dt.datetime | None,
    last_used_at: dt.datetime | None,
    is_active: bool,
    needed: str,
) -> bool:
    """Whether TokenAuthentication accepts a token with these columns (and its user's ``is_active``) for a
    request needing scope ``needed``, writing nothing (its last use recorded within LAST_USED_RESOLUTION):
    the fast path answers only such a request; any other takes TokenAuthentication's own path (its 401,
    403 or the write)."""
    now = timezone.now()
    return (
        _refusal(is_active=is_active, expires_at=expires_at, now=now) is None
        and not _last_use_due(last_used_at, now)
        and _covers(scope, needed)
    )


def api_token_accepted_quietly(header: str, *, needed: str) -> ApiToken | None:
    """The token (with its user) of an ``Authorization`` header that passes quietly
    (api_token_passes_quietly), read with TokenAuthentication's query; else None."""
    digest = api_token_header_hash(header)
    token = None if digest is None else _TOKEN_WITH_USER.first(key_hash=digest)
    if token is None or not api_token_passes_quietly(
        scope=token.scope,
        expires_at=token.expires_at,
        last_used_at=token.last_used_at,
        is_active=token.user.is_active,
        needed=needed,
    ):
        return None
    return token


def api_token_sql() -> str:
    """The token's columns api_token_passes_quietly reads, with its user's id and ``is_active``, for the key
    hash given as the one parameter, as plain SQL for a statement that embeds it (no row: no such token)."""
    quote = connection.ops.quote_name
    user_model: Any = get_user_model()
    tokens, users = quote(ApiToken._meta.db_table), quote(user_model._meta.db_table)
    return (
        "SELECT t.user_id, t.scope, t.expires_at, t.last_used_at, u.is_active"
        f" FROM {tokens} t INNER JOIN {users} u ON u.{quote(user_model._meta.pk.column)} = t.user_id"
        " WHERE t.key_hash = %s"
    )
