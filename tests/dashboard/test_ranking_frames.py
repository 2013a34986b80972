"""The design page ranks and badges its options in one frame, the one the reader picked: the whole horizon
by default (by the NPV of each option's monthly cash flows, the verdict's basis), per run with ?frame=run;
the share view the same. A per-run pick is never badged as cheapest over the horizon, nor the other way
round."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.test import Client

from apps.dashboard.templatetags.dashboard import usd
from apps.designs.services import design_create, design_evaluate, share_link_create
from tests.designs.test_stale_prices import SPEC

pytestmark = pytest.mark.django_db

# Owning, on-demand, a 3-year reservation and spot of one offering. The test reads both orders from the
# stored result (and checks they differ) and that the page follows the one picked, whatever the prices.
RANKED = copy.deepcopy(SPEC)
RANKED["costs"]["cloud"] = [
    {"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "reserved_3y", "spot"]}
]
# One whole person runs it (staff scales with nodes by default since issue 31): owning's fixed cost then puts
# it first over the horizon but not per run, so the two frames differ.
RANKED["costs"]["on_prem"] = {**RANKED["costs"].get("on_prem", {}), "staff_fte": 1}


def _cards(html: str) -> list[tuple[str, str]]:
    """(option key, badge text) of each ranked card, in page order."""
    section = html.split('id="ranked-options"', 1)[1]
    pattern = r'data-option="([^"]+)"><div class="label">[^<]*(?:<span class="badge good">([^<]*))?'
    cards = re.findall(pattern, section)
    assert cards
    return cards


def _page(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_the_design_page_ranks_over_the_horizon_by_default_and_per_run_on_request(
    alice: Any, catalog: Any
) -> None:
    design = design_create(owner=alice, name="ranked", spec=RANKED)
    result = design_evaluate(version=design.current).result
    options = {o["key"]: o for o in result["options"]}
    horizon = [r["key"] for r in result["ranking"]["options"]]
    # The service ranks on the verdict's basis (issue #31): each shown option once, by the NPV of its
    # monthly cash flows as the cost engine's cash flows give it, cheapest first.
    cash = result["costs"]["aws-p5-48xlarge"]["cashflow"]
    npv = {"own": cash["own"]["npv_usd"]} | {
        f"aws-p5-48xlarge:{r['name']}": r["npv_usd"] for r in cash["rent"]
    }
    assert result["ranking"]["frame"] == "NPV of the monthly cash flows"
    assert horizon == sorted(options, key=lambda k: npv[k]) and set(horizon) == set(options)
    assert [r["total_usd"] for r in result["ranking"]["options"]] == [npv[k] for k in horizon]
    per_run = sorted(options, key=lambda k: options[k]["run_cost_usd"])
    assert horizon != per_run  # the two frames disagree here, so the page's choice of frame shows

    client = Client()
    client.force_login(alice)
    html = _page(client, f"/designs/{design.pk}/")
    cards = _cards(html)
    assert [k for k, _ in cards] == horizon
    assert cards[0][1] == "cheapest over the horizon (NPV)" and all(not badge for _, badge in cards[1:])
    assert "Options ranked by cost over the horizon (NPV)" in html
    first = html.split('id="ranked-options"', 1)[1].split(f'data-option="{horizon[0]}"', 1)[1]
    assert f'<div class="value">{usd(npv[horizon[0]])}</div>' in first.split("</div></div>")[0]

    html = _page(client, f"/designs/{design.pk}/?frame=run")
    cards = _cards(html)
    assert [k for k, _ in cards] == per_run
    assert cards[0][1] == "cheapest per run"
    first = html.split('id="ranked-options"', 1)[1].split(f'data-option="{per_run[0]}"', 1)[1]
    assert (
        f'<div class="value">{usd(options[per_run[0]]["run_cost_usd"])}</div>'
        in first.split("</div></div>")[0]
    )
    # An unknown frame is the default one, not an error.
    assert [k for k, _ in _cards(_page(client, f"/designs/{design.pk}/?frame=bogus"))] == horizon


def test_the_share_view_ranks_over_the_horizon_too(alice: Any, catalog: Any) -> None:
    design = design_create(owner=alice, name="ranked", spec=RANKED)
    result = design_evaluate(version=design.current).result
    _, token = share_link_create(design=design, user=alice)
    html = _page(Client(), f"/share/{token}/")
    cards = _cards(html)
    assert [k for k, _ in cards] == [r["key"] for r in result["ranking"]["options"]]
    assert cards[0][1] == "cheapest over the horizon (NPV)"
