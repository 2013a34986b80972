"""The engine's one error type.

Every error the engines raise for bad input is an :class:`EngineError` whose ``field`` names the request
field (dotted path, e.g. ``"parallelism.tp"``) and whose message says what is wrong in words a user can act
on. The API turns it into HTTP 400 with ``{"error": {"fields": {field: [message]}}}``.
"""

from __future__ import annotations


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
    """The request is well-formed but no layout can satisfy it (e.g. the model fits at no layout)."""
