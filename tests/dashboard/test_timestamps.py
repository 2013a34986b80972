"""Times on pages are shown to the minute with their time zone ("2026-12-03 09:41 UTC"), so a reader in
another zone, or a printout, says exactly when."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.analysis.models import Analysis
from apps.designs.services import design_create

pytestmark = pytest.mark.django_db

WHEN = dt.datetime(2026, 3, 14, 15, 9, 26, tzinfo=dt.UTC)


@pytest.fixture
def alice_client(django_user_model: Any) -> tuple[Any, Client]:
    alice = django_user_model.objects.create_user("alice", password="pw-alice-123")
    client = Client()
    client.force_login(alice)
    return alice, client


def test_home_shows_when_each_design_was_updated_with_the_zone(
    alice_client: tuple[Any, Client], demos: list[Any]
) -> None:
    alice, client = alice_client
    design = design_create(owner=alice, name="Alice's 8B", spec=demos[3].current.spec)
    type(design).objects.filter(pk=design.pk).update(updated_at=WHEN)
    body = client.get("/").content.decode()
    row = re.search(rf'<a href="/designs/{design.pk}/">.*?</tr>', body, re.S).group(0)  # type: ignore[union-attr]
    assert "<td>2026-03-14 15:09 UTC</td>" in row


def test_sweep_page_lists_recent_sweeps_with_the_zone(alice_client: tuple[Any, Client]) -> None:
    alice, client = alice_client
    sweep = Analysis.objects.create(
        owner=alice,
        kind=Analysis.Kind.SWEEP,
        params={},
        snapshot={},
        input_hash="0" * 64,
        deadline_at=timezone.now(),
    )
    Analysis.objects.filter(pk=sweep.pk).update(created_at=WHEN)
    body = client.get("/sweep/").content.decode()
    assert f"Sweep #{sweep.pk}</a> · pending · 2026-03-14 15:09 UTC</li>" in body
