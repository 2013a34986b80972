"""Fixtures for the dashboard tests: a real stored evaluation (catalog and demos: tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def h200_evaluation(demos: list[Any]) -> dict[str, Any]:
    """The engine's evaluation of the demo "8 × 8 H200 owned for 2 years vs AWS reserved"."""
    from apps.designs.services import design_evaluate

    return design_evaluate(version=demos[3].current).result
