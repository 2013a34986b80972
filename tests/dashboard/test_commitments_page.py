"""Commitments in view (issue #31): the design page and the share view list what signing each reservation
commits, term by term, with the per-run cost beside it (templates/includes/_commitments.html)."""

from __future__ import annotations

import html
import re
from typing import Any

from django.test import Client

from apps.designs.services import share_link_create


def _usd(value: float) -> str:
    """As the page's usd filter writes dollars: −$1,234 for a negative figure."""
    return f"-${abs(value):,.0f}" if value < 0 else f"${value:,.0f}"


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


def test_the_share_view_shows_the_monte_carlo_with_its_standard_errors(alice: Any, demos: list[Any]) -> None:
    # The figures are the API's, each percentile beside its batch-means standard error, against the rent
    # option fixed before the draws.
    from apps.designs.services import design_evaluate

    demo = demos[3]
    uncertainty = design_evaluate(version=demo.current).result["costs"]["aws-p5e-48xlarge"]["cashflow"][
        "uncertainty"
    ]
    _, token = share_link_create(design=demo, user=alice)
    body = html.unescape(Client().get(f"/share/{token}/").content.decode())
    table = re.search(r'<p class="caption" id="uncertainty-note-aws-p5e-48xlarge".*?</table>', body, re.S)
    assert table, "no uncertainty table"
    text = table.group(0)
    assert f"against {uncertainty['option']}, chosen before the draws" in text and "100,000 draws" in text
    for q in ("p10", "p50", "p90"):
        row = re.search(rf'data-figure="{q}">(.*?)</tr>', text, re.S)
        assert row and _usd(uncertainty[f"{q}_usd"]) in row.group(1)
        assert f"± ${uncertainty[f'{q}_se_usd']:,.0f}" in row.group(1)
