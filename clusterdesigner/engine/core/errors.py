"""The engine's one error type.

Every error the engines raise for bad input is an :class:`EngineError` whose ``field`` names the request
field (dotted path, e.g. ``"parallelism.tp"``) and whose message says what is wrong in words a user can act
on. The API turns it into HTTP 400 with ``{"error": {"fields": {field: [message]}}}``.

Errors carry the user's own paths natively: a parser is given where the section it parses sits in what the
user sent (``at="spec.workload.model"``, a sweep's ``params.models.3``; ``""`` for a request sent as it is)
and names each field under it as it raises (:func:`under`); a typed request keeps where each of its sections
came from, so an error the engine raises later (a layout that does not divide the GPUs, memory) names the
same path. The cost engine's inputs carry each part's path the same way (engine.cost.cost_inputs), so it
raises with ``spec.costs.cloud.1.offering`` in the first place.
"""

from __future__ import annotations

import copy
from typing import Any


class EngineError(ValueError):
    """Bad input or an impossible request. ``field`` is the dotted request path it concerns ('' if none)."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}

    def within(self, at: str) -> EngineError:
        """This error raised by a typed object's own checks, which name its own fields (a model shape's
        ``heads``), as the error of the object its parser built from the section at ``at`` (a copy: its kind
        and what a subclass carries kept)."""
        located = copy.copy(self)
        located.field = under(at, self.field)
        return located


class InputError(EngineError):
    """A request field is missing, of the wrong type, or out of range."""


class UnknownReferenceError(EngineError):
    """A slug (accelerator, fabric, preset, offering) that the engine was not given."""


class SolverLimitError(EngineError):
    """A solver stopped at its work limit (or its wall-clock backstop) before it found any answer: not a sign
    that none exists."""


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


def under(at: str, path: str) -> str:
    """``path`` (a field's path inside a section: ``layers``, ``rollout.nodes``; "" the section itself) as
    the user's path, the section sitting at ``at`` ("" the top of what the user sent)."""
    return f"{at}.{path}" if at and path else at or path
