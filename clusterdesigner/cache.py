"""The cache backend: Redis, as an optimisation only.

Django's RedisCache raises when Redis is unreachable, which turned every page that reads the cache (sign-in,
design pages, the share view) into a 500 while Redis was down. Here a connection error or a timeout reads as
a miss and a write as a no-op, and for a few seconds after one the cache is not tried at all, so a page does
not wait on a dead server for each of its reads. Sessions live in the database (SESSION_ENGINE is Django's
default), so sign-in does not depend on Redis either.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)
UNAVAILABLE = (RedisConnectionError, RedisTimeoutError)
SKIP_AFTER_FAILURE_S = 5.0


class ResilientRedisCache(RedisCache):
    """RedisCache whose reads miss and writes do nothing while Redis is unreachable. ``incr`` raises
    ValueError then, as it does for a key that is not there, so a counter's caller handles both alike."""

    _down_until = 0.0

    def _available(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, operation: str, exc: Exception) -> None:
        if self._available():
            logger.warning(
                "cache unavailable (%s: %s); reading as misses for %ss", operation, exc, SKIP_AFTER_FAILURE_S
            )
        self._down_until = time.monotonic() + SKIP_AFTER_FAILURE_S

    def get(self, key: Any, default: Any = None, version: Any = None) -> Any:
        if self._available():
            try:
                return super().get(key, default, version)
            except UNAVAILABLE as exc:
                self._failed("get", exc)
        return default

    def get_many(self, keys: Any, version: Any = None) -> dict[Any, Any]:
        if self._available():
            try:
                return super().get_many(keys, version)
            except UNAVAILABLE as exc:
                self._failed("get_many", exc)
        return {}

    def has_key(self, key: Any, version: Any = None) -> bool:
        if self._available():
            try:
                return bool(super().has_key(key, version))
            except UNAVAILABLE as exc:
                self._failed("has_key", exc)
        return False

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        if self._available():
            try:
                return bool(super().add(key, value, timeout, version))
            except UNAVAILABLE as exc:
                self._failed("add", exc)
        return False

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> None:
        if self._available():
            try:
                super().set(key, value, timeout, version)
            except UNAVAILABLE as exc:
                self._failed("set", exc)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> list[Any]:
        if self._available():
            try:
                return list(super().set_many(data, timeout, version))
            except UNAVAILABLE as exc:
                self._failed("set_many", exc)
        return list(data)  # the keys not stored

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: Any = None) -> bool:
        if self._available():
            try:
                return bool(super().touch(key, timeout, version))
            except UNAVAILABLE as exc:
                self._failed("touch", exc)
        return False

    def delete(self, key: Any, version: Any = None) -> bool:
        if self._available():
            try:
                return bool(super().delete(key, version))
            except UNAVAILABLE as exc:
                self._failed("delete", exc)
        return False

    def delete_many(self, keys: Any, version: Any = None) -> None:
        if self._available():
            try:
                super().delete_many(keys, version)
            except UNAVAILABLE as exc:
                self._failed("delete_many", exc)

    def incr(self, key: Any, delta: int = 1, version: Any = None) -> int:
        if self._available():
            try:
                return int(super().incr(key, delta, version))
            except UNAVAILABLE as exc:
                self._failed("incr", exc)
        raise ValueError(f"Key {key!r} not found (the cache is unavailable).")
