"""A database key as the URL, a query or a form sends it.

Every key is PostgreSQL's ``bigint``: a bigger number overflows the database driver (OverflowError, a 500),
so a number past it is no such object, as a word is.
``isascii``: ``int()`` also reads other scripts' digits."""

from __future__ import annotations

MAX_ID = 2**63 - 1


def as_id(text: str) -> int | None:
    """``text`` as a key (a whole number from 1 to MAX_ID, ASCII digits only); None when it cannot be one."""
    if text.isascii() and text.isdigit() and 0 < int(text) <= MAX_ID:
        return int(text)
    return None
