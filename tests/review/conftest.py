"""Fixtures for the design-review paths: the seed catalog, the demo designs and signed-in page clients."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client


@pytest.fixture
def demos(catalog: dict[str, int]) -> list[Any]:
    from apps.designs.demo import demo_load

    return demo_load()


@pytest.fixture
def alice_client(alice: Any) -> Client:
    client = Client()
    client.force_login(alice)
    return client
