"""API tokens for scripts and internal tools: DRF's authtoken, one token per user, sent as
`Authorization: Token <key>`. The key is stored as DRF stores it (plain text, it is the primary key); the page
shows it once, right after it is created, so it does not sit on screen."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from rest_framework.authtoken.models import Token


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
