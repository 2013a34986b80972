"""An RL design's page (issue 39): the step timeline and the split chart, drawn from its evaluation."""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import pytest
from django.test import Client

from apps.dashboard import charts
from apps.designs.selectors import evaluation_read
from apps.designs.services import design_create, design_evaluate
from tests.designs.test_rl_api import SPEC_8B

pytestmark = pytest.mark.django_db


def _evaluation(alice: Any, **rl: Any) -> Any:
    spec = copy.deepcopy(SPEC_8B)
    spec["rl"].update(rl)
    design = design_create(owner=alice, name="GRPO 8B", spec=spec)
    return design, evaluation_read(result=design_evaluate(version=design.current).result)


def _pools(figure: dict[str, Any]) -> dict[str, float]:
    """Each pool's end of step: the latest base + width of its segments."""
    ends: dict[str, float] = defaultdict(float)
    for trace in figure["data"]:
        for pool, width, base in zip(trace["y"], trace["x"], trace["base"], strict=True):
            ends[pool] = max(ends[pool], base + width)
    return dict(ends)


def test_design_page_draws_the_rl_charts_and_cards(alice: Any, catalog: Any) -> None:
    design, evaluation = _evaluation(alice)
    client = Client()
    client.force_login(alice)
    body = client.get(f"/designs/{design.pk}/").content.decode()
    for chart in ("rl-timeline", "rl-split", "memory", "cost-utilization"):
        assert f'data-chart="chart-data-{chart}"' in body, chart
    chosen = evaluation.rl.chosen
    assert 'id="design-rl"' in body
    assert f'Days for 400 steps</div><div class="value">{chosen.days:.2f}</div>' in body
    assert f"{chosen.step.seconds:.1f} s</div>" in body


def test_colocated_timeline_runs_the_phases_one_after_another(alice: Any, catalog: Any) -> None:
    _, evaluation = _evaluation(alice, placement="colocated")
    figure = charts.rl_timeline_chart(evaluation)
    step = evaluation.rl.chosen.step
    assert _pools(figure) == {"All 32 GPUs": pytest.approx(step.seconds)}
    names = [t["name"] for t in figure["data"]]
    assert names[0] == "Rollout" and "Training" in names and "Idle" not in names
    assert f"{step.seconds:,.1f} s per step (colocated)" in figure["layout"]["title"]["text"]
    assert figure["layout"]["xaxis"]["title"]["text"] == "Time from the step's start (s)"


def test_sync_disaggregated_timeline_shows_each_pool_idle_while_the_other_works(
    alice: Any, catalog: Any
) -> None:
    _, evaluation = _evaluation(alice, placement="disaggregated")
    chosen = evaluation.rl.chosen
    figure = charts.rl_timeline_chart(evaluation)
    assert list(_pools(figure).values()) == [pytest.approx(chosen.step.seconds)] * 2
    idle = next(t for t in figure["data"] if t["name"] == "Idle")
    by_pool = dict(zip(idle["y"], idle["x"], strict=True))
    rollout_pool = f"Rollout pool ({chosen.rollout_gpus} GPUs)"
    trainer_pool = f"Trainer pool ({chosen.trainer_gpus} GPUs)"
    # The idle bars are the idle shares of the step the engine reports.
    assert by_pool[rollout_pool] == pytest.approx(chosen.step.rollout_idle_share * chosen.step.seconds)
    assert by_pool[trainer_pool] == pytest.approx(chosen.step.trainer_idle_share * chosen.step.seconds)


def test_split_chart_plots_the_days_of_every_split_tried(alice: Any, catalog: Any) -> None:
    _, evaluation = _evaluation(alice)
    figure = charts.rl_split_chart(evaluation)
    (trace,) = figure["data"]
    assert trace["x"] == [p.rollout_nodes for p in evaluation.rl.splits if p.days is not None]
    assert trace["y"] == pytest.approx([p.days for p in evaluation.rl.splits if p.days is not None])
    # Cost scales with days on the same nodes: the chosen split's point costs the cheapest option's run.
    cheapest = min(o.run_cost_usd for o in evaluation.options if o.run_cost_usd is not None)
    chosen_at = trace["y"].index(min(trace["y"]))
    assert trace["customdata"][chosen_at] == pytest.approx(cheapest)
