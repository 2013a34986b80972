"""Rendered responses kept in this process, keyed by what they are a function of.

A stored evaluation (~40 kB of JSON), a catalog list page and a share page and its JSON are functions of
rows that the request reads anyway (a version and the catalog's version; a share link and its frozen
evaluation), so the key holds those rows' identities and change stamps: an edit, a catalog write or a
revoked link changes or removes the key, and nothing has to be invalidated, in this process or in another
one. The memo is per-process on purpose: correctness never depends on a shared cache being reachable or in
step, and a worker that restarts starts empty. It never decides who may read what: every caller checks
access first and keys by the object that check returned.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


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


def clear_all() -> None:
    for memo in (EVALUATIONS, CATALOG_PAGES, SHARE_PAGES, SHARED_JSON):
        memo.clear()
