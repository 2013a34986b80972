"""Errors services raise, free of HTTP: the API's one exception handler (clusterdesigner.api) turns each into
the envelope ``{"error": {"code", "message", "fields"}}``, and pages show their message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten_fields(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Nested error detail (a serializer's ``errors``, or a dict of lists) as {"dotted.field": [messages]};
    list items by index (``spec.costs.cloud.0.offering``)."""
    out: dict[str, list[str]] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            # DRF keys a list's item errors by index: 0 is a name, not "no name".
            name = "" if key == "non_field_errors" else str(key)
            path = f"{prefix}.{name}" if prefix and name else (prefix or name)
            for field, messages in flatten_fields(value, path).items():
                out.setdefault(field, []).extend(messages)
    elif isinstance(detail, list):
        if all(not isinstance(item, (Mapping, list)) for item in detail):
            out[prefix or "non_field_errors"] = [str(item) for item in detail]
        else:
            for index, item in enumerate(detail):
                if item:
                    for field, messages in flatten_fields(
                        item, f"{prefix}.{index}" if prefix else str(index)
                    ).items():
                        out.setdefault(field, []).extend(messages)
    else:
        out[prefix or "non_field_errors"] = [str(detail)]
    return out


def first_message(fields: Mapping[str, list[str]]) -> str:
    """The first field's first message, after its path: ``spec.cluster.nodes: must be at least 1``."""
    name, messages = next(iter(fields.items()), ("", ["invalid input"]))
    return f"{name}: {messages[0]}" if name and name != "non_field_errors" else messages[0]


class DomainError(Exception):
    """An error a service raises for its caller to show."""

    code = "invalid"


class NotFound(DomainError):
    """What the caller asked for does not exist or is not theirs (the API answers 404, never 403)."""

    code = "not_found"


class InvalidInput(DomainError):
    """Input a service refuses, by field path (``{"spec.cluster.nodes": ["must be at least 1"]}``; nested
    detail is flattened to dotted paths). The message is the first field's, unless one is given."""

    def __init__(self, fields: Mapping[str, Any], message: str | None = None) -> None:
        self.fields = flatten_fields(fields)
        self.message = message or first_message(self.fields)
        super().__init__(self.message)


class Conflict(DomainError):
    """The caller's change was based on a state that has since changed (an edit of an old version)."""

    code = "conflict"

    def __init__(self, message: str, fields: Mapping[str, Any] | None = None) -> None:
        self.fields = flatten_fields(fields or {})
        self.message = message
        super().__init__(message)


class ServiceUnavailable(DomainError):
    """A service the request needs is unreachable (the task queue): the API answers 503 with Retry-After.
    Services raise a subclass; nothing was left half done that a retry would trip over."""

    code = "service_unavailable"
    retry_after_s = 10

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
