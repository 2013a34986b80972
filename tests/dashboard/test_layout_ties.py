"""Issue 19 on the design page: the candidates within the chosen layout's error band are marked as ties, in
the engine's robust order (``ties``, most robust first), on the design page and on the share view."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from apps.designs import selectors
from apps.designs.services import design_create, design_evaluate, share_link_create

pytestmark = pytest.mark.django_db


def _searched(owner: Any, demos: list[Any]) -> Any:
    # The demo 8 × 8 H200 with Llama 3 8B, its layout searched instead of fixed.
    return design_create(
        owner=owner, name="Searched 8B", spec={**demos[3].current.spec, "parallelism": "search"}
    )


def _tie_marks(body: str) -> dict[int, int]:
    """Candidate number (1-based, as shown) -> robust rank, for every row marked as a tie."""
    rows = re.findall(r'<tr data-candidate="(\d+)" class="tie" data-robust-rank="(\d+)">', body)
    return {int(number): int(rank) for number, rank in rows}


def test_ties_are_marked_in_the_engines_robust_order_on_the_design_and_share_pages(
    alice: Any, demos: list[Any]
) -> None:
    design = _searched(alice, demos)
    training = selectors.evaluation_read(result=design_evaluate(version=design.current).result).training
    assert training is not None and training.mode == "search"
    assert len(training.ties) > 1, training.ties  # the fixture must tie, or this test shows nothing
    expected = {index + 1: rank for rank, index in enumerate(training.ties, start=1)}

    client = Client()
    client.force_login(alice)
    body = client.get(f"/designs/{design.pk}/").content.decode()
    assert _tie_marks(body) == expected
    assert f'data-ties="{len(training.ties)}"' in body
    assert "the engine cannot tell these apart" in body
    assert (
        f'<strong id="most-robust" data-candidate="{training.ties[0] + 1}">#{training.ties[0] + 1}</strong>'
        in body
    )
    assert "Robust rank among ties" in body

    _, token = share_link_create(design=design, user=alice)
    shared = Client().get(f"/share/{token}/").content.decode()
    assert _tie_marks(shared) == expected


def test_a_fixed_layout_shows_no_tie_marks(alice: Any, demos: list[Any]) -> None:
    client = Client()
    client.force_login(alice)
    body = client.get(f"/designs/{demos[3].pk}/").content.decode()
    assert _tie_marks(body) == {} and 'id="layout-ties"' not in body
