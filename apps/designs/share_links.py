"""A share link's page and JSON before Django's stack (clusterdesigner.fastpath): the probe both views share,
and what it hands them."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from apps.designs import services
from clusterdesigner import fastpath

# A share token as share_link_create makes it (secrets.token_urlsafe(32)); a URL with anything else is
# Django's to answer.
TOKEN = r"[A-Za-z0-9_-]{43}"


def share_link_opened(request: Any, token: str) -> tuple[Any, ...] | None:
    """services.share_link_open's answer for this request: the one the fast path's probe counted when it
    answered it (clusterdesigner.fastpath), else counted now."""
    found = fastpath.handed(request, "share_link_open")
    if found is not None and found[0] == token:
        return found[1]  # type: ignore[no-any-return]
    return services.share_link_open(token=token)


def share_link_probe(environ: dict[str, Any], token: str) -> Hashable | None:
    """The fast path's probe of a share link's page and JSON: the open counted (the one statement the views
    make), handed to the view, and its key when the views keep their answer for it (not a link that follows
    the approved version, whose answer moves with the approval); None for a revoked, expired or unknown
    link, whose 404 the view answers. A page or JSON with a query string is Django's to answer."""
    if environ.get("QUERY_STRING"):
        return None
    key = services.share_link_open(token=token)
    fastpath.hand(environ, "share_link_open", (token, key))
    return None if key is None or key[-1] else key
