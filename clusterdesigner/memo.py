"""Results as the project stores and serves them: the input hash a result is stored under, a value made safe
for a JSON column, JSON already encoded as text, and the rendered texts kept in this process. One module, so
that a stored result's text (read from the database, kept in the memo, sent as it is) has one home, in the
project package, which every app may import (no app imports another's private helpers, and no service
imports the API's renderer).

The memo: a stored evaluation (~40 kB of JSON), a catalog list page and a share page and its JSON are
functions of rows that the request reads anyway (a version and the catalog's version; a share link and its
frozen evaluation), so the key holds those rows' identities and change stamps: an edit, a catalog write or a
revoked link changes or removes the key, and nothing has to be invalidated, in this process or in another
one. The memo is per-process on purpose: correctness never depends on a shared cache being reachable or in
step, and a worker that restarts starts empty. It never decides who may read what: every caller checks
access first and keys by the object that check returned.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Generic, TypeVar


def snapshot_hash(snapshot: dict[str, Any]) -> str:
    """SHA-256 of the snapshot's JSON with sorted keys (values JSON cannot hold are written with str())."""
    return hashlib.sha256(json.dumps(snapshot, sort_keys=True, default=str).encode()).hexdigest()


def jsonable(value: Any) -> Any:
    """Round-trip through JSON so NaN/inf never reach the database (JSON has no such numbers: they become
    null), and dates and other objects become their str()."""
    return json.loads(json.dumps(value, default=str), parse_constant=lambda _token: None)


class JSONText(str):
    """A JSON document that is already text, such as a stored result read from its jsonb column as text.

    A service returns one and a view sends it with ``Response(JSONText(text))``: the API's renderer
    (clusterdesigner.renderers.JSONRenderer) writes it out without decoding it and encoding it again. The
    bytes are the database's spelling of the same JSON (jsonb puts a space after ``,`` and ``:`` and writes
    1e-05 as 0.00001): a JSON reader gets the same values. ``kept_as``: the memo key the text is kept under,
    when it is a kept one (clusterdesigner.fastpath replays the answer for that key).
    """

    kept_as: Hashable | None = None


V = TypeVar("V")
R = TypeVar("R")
_KEPT_AS = "_memo_kept_as"


def keep(response: R, key: Hashable) -> R:
    """Mark a view's ``response`` as its answer for memo key ``key``, a function of that key (and of the
    request's URL and headers): clusterdesigner.fastpath keeps the whole answer and replays it to a request
    whose probe reads the same key. Returns the response."""
    setattr(response, _KEPT_AS, key)
    return response


def kept_as(response: Any) -> Hashable | None:
    """The key ``keep`` marked ``response`` with, or None."""
    return getattr(response, _KEPT_AS, None)


class Memo(Generic[V]):
    """A thread-safe LRU mapping with a bound on entries and on the total size of its values (``len``)."""

    def __init__(self, *, max_entries: int, max_chars: int) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._items: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: Hashable, value: V, size: int) -> None:
        if size > self.max_chars:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._chars -= old[1]
            self._items[key] = (value, size)
            self._chars += size
            while len(self._items) > self.max_entries or self._chars > self.max_chars:
                _, (_, dropped) = self._items.popitem(last=False)
                self._chars -= dropped

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._items)


# About 20 MB per process at most for each: hundreds of designs' results, every catalog page, share pages.
EVALUATIONS: Memo[str] = Memo(max_entries=512, max_chars=20_000_000)
CATALOG_PAGES: Memo[tuple[bytes, str, str]] = Memo(max_entries=256, max_chars=20_000_000)
SHARE_PAGES: Memo[bytes] = Memo(max_entries=256, max_chars=20_000_000)
SHARED_JSON: Memo[str] = Memo(max_entries=256, max_chars=20_000_000)
# Whole answers (status, headers, body) as Django sent them, replayed by clusterdesigner.fastpath: keyed by
# the request's signature and the memo key its view read (one entry per kind of client: its Host, Accept...).
RESPONSES: Memo[tuple[str, tuple[tuple[str, str], ...], bytes]] = Memo(max_entries=1024, max_chars=40_000_000)


def clear_all() -> None:
    for memo in (EVALUATIONS, CATALOG_PAGES, SHARE_PAGES, SHARED_JSON, RESPONSES):
        memo.clear()
