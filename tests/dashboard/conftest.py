"""Fixtures for the dashboard tests: the seed catalog, the demo designs and a real stored evaluation."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def demos(catalog: dict[str, int]) -> list[Any]:
    from apps.designs.demo import demo_load

    return demo_load()


@pytest.fixture
def h200_evaluation(demos: list[Any]) -> dict[str, Any]:
    """The engine's evaluation of the demo "8 × 8 H200 owned for 2 years vs AWS reserved"."""
    from apps.designs.services import design_evaluate

    return design_evaluate(version=demos[3].current).result
