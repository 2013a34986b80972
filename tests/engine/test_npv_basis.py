"""One basis for the rent-or-own answer (engine/cost/npv_basis.py, issue #31 item 5) and the price that flips
it.

Property: moving any one of the verdict's flip inputs (utilization, the server price, the rival's rate, the
electricity price, resale) to its stated threshold and running the whole cost engine again makes NPV(own)
and NPV(rival) equal within $1. Hand check: at the NPV break-even utilization of a pay-as-you-go option both
NPVs are affine in u, so the root is -g(0) / (g(1) - g(0)) of the gap g = rent - own.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cost import run

from clusterdesigner.engine.cost.cashflow import CashflowInputs
from clusterdesigner.engine.cost.npv_basis import break_even_utilization, npv_pair, root


def _moved(request: dict[str, Any], name: str, value: float) -> dict[str, Any]:
    """The request with resolved input ``name`` (``on_prem.server_usd``, ``cloud.usd_per_node_hour.spot``,
    ``utilization``) set to ``value``."""
    out = copy.deepcopy(request)
    node = out
    *parents, leaf = name.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return out


def _gap(out: dict[str, Any], option: str) -> float:
    rent = next(r for r in out["cashflow"]["rent"] if r["name"] == option)
    return float(rent["npv_usd"] - out["cashflow"]["own"]["npv_usd"])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(min_value=1, max_value=64),
    utilization=st.floats(min_value=0.2, max_value=0.95),
    on_demand=st.floats(min_value=20.0, max_value=120.0),
    spot=st.floats(min_value=8.0, max_value=40.0),
    models=st.sampled_from([["on_demand"], ["on_demand", "spot"], ["on_demand", "reserved_1y"]]),
)
def test_each_input_at_its_stated_threshold_makes_the_two_npvs_equal_within_a_dollar(
    nodes: int, utilization: float, on_demand: float, spot: float, models: list[str]
) -> None:
    request = {
        "cluster": {"accelerator": "h100-sxm", "nodes": nodes},
        "utilization": utilization,
        "horizon_years": 3,
        "cloud": {
            "offering": "aws-p5-48xlarge",
            "pricing_models": models,
            "usd_per_node_hour": {"on_demand": on_demand, "spot": spot},
        },
        "uncertainty": {"samples": 5},
    }
    out = run(request)
    verdict = out["verdict"]
    rival = out["cashflow"]["reference"]
    assert rival in models  # never an option that was not ticked
    stated = [f for f in verdict["flips"] if f["threshold"] is not None]
    assert {f["name"] for f in verdict["flips"]} >= {"on_prem.server_usd", f"cloud.usd_per_node_hour.{rival}"}
    for flip in stated:
        again = run(_moved(request, flip["name"], flip["threshold"]))
        assert abs(_gap(again, rival)) < 1.0, flip


def test_the_break_even_utilization_is_where_the_npvs_cross_not_the_closed_form() -> None:
    # One node, on-demand only: the closed form (annualised capital recovery over the 5-year life) and the
    # NPV of 3 years of monthly flows with resale at the horizon cross at different utilizations.
    out = run(
        {
            "cluster": {"accelerator": "h100-sxm", "nodes": 1},
            "cloud": {"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]},
            "uncertainty": {"samples": 5},
        }
    )
    inputs = CashflowInputs.from_json(out["cashflow"]["inputs"])
    # Hand: the gap is affine in u, so two points fix the root.
    g0 = npv_pair(inputs=replace(inputs, utilization=0.0), option="on_demand").gap_usd
    g1 = npv_pair(inputs=replace(inputs, utilization=1.0), option="on_demand").gap_usd
    by_hand = -g0 / (g1 - g0)
    u_star = out["verdict"]["break_even_utilization"]
    assert u_star == pytest.approx(by_hand, abs=1e-9)
    assert u_star == break_even_utilization(inputs=inputs, option="on_demand")
    # The cost result's own break-even is the same figure from the same solver (one basis), ...
    stated = out["break_even_utilization"]["on_demand"]
    assert stated["utilization"] == u_star and stated["basis"].startswith("NPV of the monthly cash flows")
    assert stated["meaning"] == f"owning is cheaper above {u_star:.1%} utilization"
    # ... and the annualised closed form u* = (A − C)/(c − B) of the horizon cost lines crosses elsewhere.
    own, rent = out["on_prem"]["cost_vs_utilization"], out["cloud"]["on_demand"]["cost_vs_utilization"]
    closed = (own["fixed_usd"] - rent["fixed_usd"]) / (
        rent["per_utilization_usd"] - own["per_utilization_usd"]
    )
    assert abs(u_star - closed) > 1e-3  # the two bases differ; every break-even stated is the NPV one
    assert f"below {u_star:.1%} utilization renting on-demand is cheaper" in out["verdict"]["sentence"]


def test_a_root_outside_the_range_is_none_not_extrapolated() -> None:
    assert root(gap=lambda x: x - 2.0, low=0.0, high=1.0) is None
    assert root(gap=lambda x: x - 0.25, low=0.0, high=1.0) == pytest.approx(0.25, abs=1e-12)


def test_an_unknown_pricing_model_is_refused_naming_the_field() -> None:
    from clusterdesigner.engine.core.errors import InputError

    with pytest.raises(InputError) as err:
        run({"cloud": {"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "bogus"]}})
    assert err.value.field == "cloud.pricing_models" and "'bogus'" in err.value.message


@pytest.mark.parametrize(
    ("price", "where", "cheaper"), [(17.0, "above", "renting reserved 3-year"), (14.0, "below", "owning")]
)
def test_the_sentence_puts_the_crossing_on_the_side_where_the_other_option_wins(
    price: float, where: str, cheaper: str
) -> None:
    # A 3-year reservation bills every hour whatever the use, while owning's energy ($0.50/kWh here) grows
    # with u. At $17 a node-hour owning wins at 30 % and loses to the reservation above the crossing (86.2 %
    # with the owning defaults of engine 11: market resale, staff per node); at $14 the reservation wins at
    # 30 % and owning is cheaper only below the crossing (3.8 %). The side is checked by hand below.
    out = run(
        {
            "cluster": {"accelerator": "h100-sxm", "nodes": 8},
            "utilization": 0.3,
            "on_prem": {"usd_per_kwh": 0.5},
            "cloud": {
                "offering": "aws-p5-48xlarge",
                "pricing_models": ["reserved_3y"],
                "usd_per_node_hour": {"reserved_3y": price},
            },
            "uncertainty": {"samples": 5},
            # Servers on hand: no procurement lead time, so owning's first months are not bridged by rent.
            "cashflow": {"lead_time_months": 0},
        }
    )
    verdict = out["verdict"]
    be = verdict["break_even_utilization"]
    assert be is not None and (be > 0.3) == (where == "above")
    inputs = CashflowInputs.from_json(out["cashflow"]["inputs"])
    # Hand check of the side: the gap rent − own on the far side of the crossing has the other sign.
    far = min(1.0, be + 0.05) if where == "above" else max(1e-6, be - 0.05)
    gap_far = npv_pair(inputs=replace(inputs, utilization=far), option="reserved_3y").gap_usd
    assert (gap_far > 0) == (cheaper == "owning") == (verdict["saving_usd"] < 0)
    assert f"{where} {be:.1%} utilization {cheaper} is cheaper" in verdict["sentence"]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prices=st.lists(st.floats(min_value=15.0, max_value=90.0), min_size=3, max_size=3),
    order=st.permutations(["a-cloud", "b-cloud", "c-cloud"]),
)
def test_the_design_verdict_is_the_same_in_every_order_and_names_the_cheapest_chosen_option(
    prices: list[float], order: list[str]
) -> None:
    # Three offerings of the same node at different on-demand prices (spot priced too, but ticked only on
    # c-cloud): the design verdict cannot depend on the order the offerings are listed in, and its rival is
    # the chosen option of lowest NPV, here by hand from each result's cash flows.
    from clusterdesigner.engine.cost.cost import MODEL_LABELS
    from clusterdesigner.engine.cost.cost_result import CostResult
    from clusterdesigner.engine.cost.design_verdict import design_verdict

    results = {}
    for slug, price in zip(("a-cloud", "b-cloud", "c-cloud"), prices, strict=True):
        request = {
            "cluster": {"accelerator": "h100-sxm", "nodes": 4},
            "cloud": {
                "offering": "aws-p5-48xlarge",
                "pricing_models": ["on_demand", "spot"] if slug == "c-cloud" else ["on_demand"],
                "usd_per_node_hour": {"on_demand": price, "spot": price / 3},
            },
            "uncertainty": {"samples": 5},
        }
        results[slug] = CostResult.from_json(run(request))
    chosen = {"a-cloud": ["on_demand"], "b-cloud": ["on_demand"], "c-cloud": ["on_demand", "spot"]}
    names = {k: k.upper() for k in results}
    base = design_verdict(costs=results, chosen=chosen, names=names, model_labels=MODEL_LABELS)
    shuffled = design_verdict(
        costs={k: results[k] for k in order}, chosen=chosen, names=names, model_labels=MODEL_LABELS
    )
    assert base is not None and shuffled == base
    npvs = {
        f"{slug}:{row.name}": row.npv_usd
        for slug, result in results.items()
        for row in (result.cashflow.rent or () if result.cashflow else ())
    }
    assert base.rival.key == min(npvs, key=lambda k: (npvs[k], k))
    assert base.saving_usd == pytest.approx(npvs[base.rival.key] - base.own.npv_usd, abs=1e-6)
    assert (
        {o.key for o in base.options}
        == set(npvs)
        == {"a-cloud:on_demand", "b-cloud:on_demand", "c-cloud:on_demand", "c-cloud:spot"}
    )
    # A stored choice narrower than what was priced still rules: an option not ticked never appears.
    narrower = design_verdict(
        costs=results, chosen={**chosen, "c-cloud": ["on_demand"]}, names=names, model_labels=MODEL_LABELS
    )
    assert narrower is not None and all(o.pricing_model == "on_demand" for o in narrower.options)


def test_one_solver_gives_every_break_even_in_the_cash_flows_and_the_cost_result() -> None:
    # Issue #31: two NPV break-even solvers (a two-point line for pay-as-you-go options only, and the root on
    # the NPV pair) solved the same equation; now the cash-flow result, the cost result, the verdict and the
    # design verdict all read the one (cashflow.break_even_utilization), for every option, within (0, 1].
    request = {
        "cluster": {"accelerator": "h100-sxm", "nodes": 8},  # spot: 8 nodes obtainable by default
        "horizon_years": 3,
        "cloud": {
            "offering": "aws-p5-48xlarge",
            "pricing_models": ["on_demand", "reserved_1y", "spot"],
            "usd_per_node_hour": {"spot": 20.0},  # the offering has no spot price of its own
        },
        "uncertainty": {"samples": 5},
    }
    out = run(request)
    inputs = CashflowInputs.from_json(out["cashflow"]["inputs"])
    flows = out["cashflow"]["break_even_utilization"]
    assert set(flows) == {"on_demand", "reserved_1y", "spot"}  # term options too, not only pay-as-you-go
    for model, u_star in flows.items():
        assert u_star == break_even_utilization(inputs=inputs, option=model), model
        assert out["break_even_utilization"][model]["utilization"] == u_star, model
        assert u_star is None or 0 < u_star <= 1, model
        if u_star is not None:  # the NPVs are equal there, within a dollar
            assert abs(npv_pair(inputs=replace(inputs, utilization=u_star), option=model).gap_usd) < 1.0
    assert out["verdict"]["break_even_by_option"] == flows
    # The reservation's bill does not move with u and owning's grows only by energy: its NPV line meets
    # owning's nowhere in (0, 1] here, and the result says so instead of a crossing at thousands of percent.
    assert flows["reserved_1y"] is None
    assert out["break_even_utilization"]["reserved_1y"]["meaning"].endswith("at every utilization in (0, 1]")


def test_the_order_of_the_rent_options_changes_no_break_even() -> None:
    from clusterdesigner.engine.cost.cashflow import cash_flows

    out = run(
        {
            "cluster": {"accelerator": "h100-sxm", "nodes": 4},
            "cloud": {
                "offering": "aws-p5-48xlarge",
                "pricing_models": ["on_demand", "reserved_1y", "spot"],
                "usd_per_node_hour": {"spot": 20.0},
            },
            "uncertainty": {"samples": 5},
        }
    )
    inputs = CashflowInputs.from_json(out["cashflow"]["inputs"])
    forward = cash_flows(inputs=inputs)
    backward = cash_flows(inputs=replace(inputs, rent=tuple(reversed(inputs.rent))))
    assert dict(backward.break_even_utilization) == dict(forward.break_even_utilization)
    assert backward.reference == forward.reference and backward.own.npv_usd == forward.own.npv_usd
