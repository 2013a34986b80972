"""API tokens for scripts and internal tools: DRF's authtoken, one token per user, sent as
`Authorization: Token <key>`. The key is stored as DRF stores it (plain text, it is the primary key); the page
shows it once, right after it is created, so it does not sit on screen.

TokenAuthentication, the API's default, is DRF's with a leaner lookup: every API request a script makes
passes through it, and DRF's builds and compiles the token-and-user query anew each time.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from clusterdesigner.compiled_query import CompiledQuery

# The longest key a token can have (DRF's 40 hex characters): a longer one cannot match a row.
KEY_MAX_LENGTH: int = Token._meta.get_field("key").max_length  # type: ignore[assignment]
# The token with its user, as DRF reads it (select_related), in one query compiled once per process.
_TOKEN_WITH_USER: CompiledQuery[Token] = CompiledQuery(
    lambda key: Token.objects.select_related("user").filter(key=key).order_by()[:1], key=str
)


def api_token_get(*, user: Any) -> Token | None:
    return Token.objects.filter(user=user).first()


@transaction.atomic
def api_token_create(*, user: Any) -> Token:
    """A new token for this user; the one they had, if any, stops working at once (one token per user)."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def api_token_revoke(*, user: Any) -> bool:
    """Delete this user's token; True when there was one. Requests that send it then answer 401."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return deleted > 0


class TokenAuthentication(authentication.TokenAuthentication):
    """DRF's TokenAuthentication (the header parsing, the 401 with ``WWW-Authenticate: Token``, the same
    messages) with one database query per request, compiled once per process. A key longer than any key
    (40 characters) or holding a NUL (which PostgreSQL cannot take in a text parameter) is refused as an
    invalid token without a query."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        if len(key) > KEY_MAX_LENGTH or "\x00" in key:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = _TOKEN_WITH_USER.first(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
