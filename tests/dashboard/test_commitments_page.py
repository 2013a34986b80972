"""Commitments in view (issue #31): the design page and the share view list what signing each reservation
commits, term by term, with the per-run cost beside it (templates/includes/_commitments.html)."""

from __future__ import annotations

import html
import re
from typing import Any

from django.test import Client

from apps.designs.services import share_link_create


def _table(body: str, offering: str) -> str:
    match = re.search(rf'<table class="commitments" id="commitments-{offering}".*?</table>', body, re.S)
    assert match, "no commitments table"
    return html.unescape(match.group(0))


def test_the_design_page_and_share_view_show_each_terms_commitment(alice: Any, demos: list[Any]) -> None:
    # Demo 4: 8 × 8 H200 for 2 years, AWS p5e reserved 1-year at a negotiated $34/node-h. Two terms, months
    # 1-12 and 13-24, each 8 × 730 × 12 × 34 = $2,382,720; $4,765,440 in all, none past the horizon.
    demo = demos[3]
    client = Client()
    client.force_login(alice)
    page = client.get(f"/designs/{demo.pk}/").content.decode()
    _, token = share_link_create(design=demo, user=alice)
    share = Client().get(f"/share/{token}/").content.decode()
    for body in (page, share):
        table = _table(body, "aws-p5e-48xlarge")
        assert "reserved 1-year" in table and "1 of 2" in table and "13–24" in table
        assert table.count("$2,382,720") == 3  # two terms and the per-run note
        assert "$4,765,440" in table and "all within the horizon" in table
        assert "signing commits $2,382,720 for 12 months" in table
        assert "per run" in table


def test_every_ranked_reservation_card_shows_its_commitment_beside_the_run(
    alice: Any, demos: list[Any]
) -> None:
    client = Client()
    client.force_login(alice)
    for frame in ("run", "horizon"):
        body = html.unescape(client.get(f"/designs/{demos[3].pk}/?frame={frame}").content.decode())
        card = re.search(r'data-option="aws-p5e-48xlarge:reserved_1y".*?</div>\s*</div>', body, re.S)
        assert card and "signing commits $2,382,720 for 12 months" in card.group(0), frame
