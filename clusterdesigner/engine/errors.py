"""The engine's one error type.

Every error the engines raise for bad input is an :class:`EngineError` whose ``field`` names the request
field (dotted path, e.g. ``"parallelism.tp"``) and whose message says what is wrong in words a user can act
on. The API turns it into HTTP 400 with ``{"error": {"fields": {field: [message]}}}``.
"""

from __future__ import annotations

from typing import Any


class EngineError(ValueError):
    """Bad input or an impossible request. ``field`` is the dotted request path it concerns ('' if none)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


class InputError(EngineError):
    """A request field is missing, of the wrong type, or out of range."""


class UnknownReferenceError(EngineError):
    """A slug (accelerator, fabric, preset, offering) that the engine was not given."""


class InfeasibleError(EngineError):
    """The request is well-formed but no layout can satisfy it (e.g. the model fits at no layout).

    When memory is what failed, ``need_gib`` is the least memory per GPU any structurally valid layout
    needs, ``have_gib`` the accelerator's capacity and ``layout`` that layout (a ``parallelism`` object),
    so that callers need not parse the message; all three are None otherwise."""

    def __init__(
        self,
        message: str,
        *,
        field: str = "",
        need_gib: float | None = None,
        have_gib: float | None = None,
        layout: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message, field=field)
        self.need_gib = need_gib
        self.have_gib = have_gib
        self.layout = layout
