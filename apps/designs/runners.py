"""Who runs a design's evaluation when its layout is searched: a service another app registers at start-up.

The designs API evaluates a fixed layout in the request. A layout that is ``"search"`` takes a search over
every layout, too long for a request, so the API hands it to the runner registered here and answers 202 with
the run's id and URL. The analysis app registers one in ``AnalysisConfig.ready`` (an ``evaluate`` analysis on
the workers), so this app serves its own API without importing that one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured

from apps.designs.models import DesignVersion


@dataclass(frozen=True)
class StartedRun:
    """A run started for a searched design: its id, the path of its status resource, and its status."""

    id: int
    path: str
    status: str


class SearchedRunner(Protocol):
    """Starts the evaluation of ``version`` (a searched design's) for ``user``, who may read it."""

    def __call__(self, *, user: Any, version: DesignVersion) -> StartedRun: ...


_runner: SearchedRunner | None = None


def searched_runner_register(runner: SearchedRunner) -> None:
    """Make ``runner`` the one that evaluates searched designs (the last registration wins, as a reload's)."""
    global _runner
    _runner = runner


def searched_runner() -> SearchedRunner:
    """The registered runner; ImproperlyConfigured when no installed app registers one."""
    if _runner is None:
        raise ImproperlyConfigured(
            "No app registers how a searched design is evaluated: install apps.analysis (its AppConfig.ready "
            "calls apps.designs.runners.searched_runner_register)."
        )
    return _runner
