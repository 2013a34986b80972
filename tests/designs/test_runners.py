"""The designs API hands a searched design's evaluation to the runner an app registers
(apps/designs/runners.py); the analysis app registers its own at start-up, so designs mounts its
own viewset."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.analysis.services import analysis_evaluate_searched
from apps.designs import runners


def test_the_analysis_app_registers_the_searched_runner_at_start_up() -> None:
    assert runners.searched_runner() is analysis_evaluate_searched


def test_with_no_runner_registered_the_error_names_the_app_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runners, "_runner", None)
    with pytest.raises(ImproperlyConfigured, match="install apps.analysis"):
        runners.searched_runner()
