"""Every figure the demo designs return is finite: no NaN or Infinity in any output (invalid JSON)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.designs.demo import demo_load


def _refuse(constant: str) -> Any:
    raise AssertionError(f"{constant} in a JSON response")


@pytest.mark.django_db
def test_every_demo_evaluation_is_finite_json(catalog: Any, user_client: Any) -> None:
    for design in demo_load():
        response = user_client.post(f"/api/v1/designs/{design.id}/evaluate/")
        assert response.status_code == 200, response.content
        body = json.loads(response.content, parse_constant=_refuse)
        assert body["costs"], design.name
