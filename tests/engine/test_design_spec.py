"""The engine's design-spec parser (clusterdesigner/engine/design/spec.py): one definition of the workload,
cluster, parallelism and goals sections, whose errors name the path the user sent (issue 14)."""

from __future__ import annotations

from typing import Any

import pytest

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.design.spec import (
    SpecError,
    parse_cluster,
    parse_design_spec,
    parse_workload,
)


def _spec(**cluster: Any) -> dict[str, Any]:
    spec = defaults.design_spec()
    spec["cluster"].update(cluster)
    return spec


@pytest.mark.parametrize(
    ("cluster", "path", "message"),
    [
        ({"nodes": 0}, "spec.cluster.nodes", "Ensure this value is greater than or equal to 1."),
        ({"nodes": 100_001}, "spec.cluster.nodes", "Ensure this value is less than or equal to 100000."),
        ({"nodes": "64"}, "spec.cluster.nodes", "must be a number"),
        ({"nodes": 6.5}, "spec.cluster.nodes", "must be a whole number"),
        ({"nodes": True}, "spec.cluster.nodes", "must be a number"),
        ({"nodes": None}, "spec.cluster.nodes", "This field may not be null."),
        ({"oversubscription": 0.5}, "spec.cluster.oversubscription", "greater than or equal to 1.0."),
        ({"fabric": "ib ndr"}, "spec.cluster.fabric", 'Enter a valid "slug"'),
        ({"fabric": "  "}, "spec.cluster.fabric", "This field may not be blank."),
        ({"bogus": 1}, "spec.cluster.bogus", "unknown field; known: accelerator, gpus_per_node, nodes"),
    ],
)
def test_a_bad_cluster_field_is_named_by_its_spec_path(
    cluster: dict[str, Any], path: str, message: str
) -> None:
    with pytest.raises(SpecError) as caught:
        parse_design_spec(_spec(**cluster))
    assert isinstance(caught.value, InputError)  # the engine's error type: the API's handler answers 400
    assert caught.value.field == path
    assert message in caught.value.message


def test_every_refused_field_of_a_section_is_reported_nested_as_sent() -> None:
    with pytest.raises(SpecError) as caught:
        parse_cluster({"accelerator": "h100-sxm", "nodes": 0, "gpus_per_node": 100})
    assert caught.value.errors == {
        "gpus_per_node": ["Ensure this value is less than or equal to 72."],
        "nodes": ["Ensure this value is greater than or equal to 1."],
        "fabric": ["This field is required."],
    }


def test_a_model_without_a_preset_must_give_its_shape() -> None:
    with pytest.raises(SpecError) as caught:
        parse_workload({"model": {"layers": 80}, "training": {"tokens": 1e12, "global_batch_seqs": 1024}})
    assert list(caught.value.errors["model"]) == ["hidden", "heads", "vocab", "seq_len"]
    assert caught.value.field == "model.hidden"  # a section parsed alone: paths within the section


def test_a_training_without_a_batch_is_refused_naming_global_batch_tokens() -> None:
    with pytest.raises(SpecError) as caught:
        parse_design_spec(
            {**defaults.design_spec(), "workload": {"model": {"preset": "x"}, "training": {"tokens": 1e9}}}
        )
    assert caught.value.field == "spec.workload.training.global_batch_tokens"


def test_the_default_spec_parses_to_the_training_request_the_engine_takes() -> None:
    spec = defaults.design_spec()
    del spec["cluster"]["oversubscription"]  # filled from the defaults module
    parsed = parse_design_spec(spec)
    assert parsed.cluster.oversubscription == 1.0 and parsed.cluster.nodes == 64
    assert parsed.training_request() == {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "precision": "bf16", "global_batch_tokens": 4_194_304},
        "cluster": {
            "accelerator": "h100-sxm",
            "gpus_per_node": 8,
            "nodes": 64,
            "fabric": "ib-ndr400",
            "oversubscription": 1.0,
        },
    }
    layout = parse_design_spec({**spec, "parallelism": {"tp": 8, "pp": 2}})
    assert layout.training_request()["parallelism"] == {"tp": 8, "pp": 2}
    assert parse_design_spec({**spec, "goals": {"deadline_days": 30}}).goals.deadline_days == 30.0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("costs", "path", "message"),
    [
        ({"cloud": [{"offering": "aws p5"}]}, "spec.costs.cloud.0.offering", 'Enter a valid "slug"'),
        ({"cloud": [{}]}, "spec.costs.cloud.0.offering", "This field is required."),
        (
            {"cloud": [{"offering": "a"}, {"offering": "b", "pricing_models": ["monthly"]}]},
            "spec.costs.cloud.1.pricing_models.0",
            '"monthly" is not a valid choice.',
        ),
        (
            {"cloud": [{"offering": "a", "pricing_models": []}]},
            "spec.costs.cloud.0.pricing_models",
            "at least 1",
        ),
        (
            {"cloud": [{"offering": "a", "pricing_models": [1]}]},
            "spec.costs.cloud.0.pricing_models",
            "must be a string",
        ),
        (
            {"cloud": [{"offering": "a", "usd_per_node_hour": {"spot": -1}}]},
            "spec.costs.cloud.0.usd_per_node_hour.spot",
            "Ensure this value is greater than or equal to 0.",
        ),
        ({"cloud": [{"offering": f"o{i}"} for i in range(7)]}, "spec.costs.cloud", "compare at most 6"),
        ({"cloud": ["aws"]}, "spec.costs.cloud.0", "Expected a dictionary, but got str."),
        ({"utilization": 0}, "spec.costs.utilization", "greater than or equal to 0.01."),
        ({"cashflow": {"loan_rte": 0.1}}, "spec.costs.cashflow.loan_rte", "unknown field; known: "),
        ({"cashflow": {"loan_rate": -2}}, "spec.costs.cashflow.loan_rate", "got -2"),
        ({"on_prem": []}, "spec.costs.on_prem", "must be an object"),
    ],
)
def test_a_bad_costs_field_is_named_by_its_spec_path(costs: dict[str, Any], path: str, message: str) -> None:
    spec = defaults.design_spec()
    spec["costs"].update(costs)
    with pytest.raises(SpecError) as caught:
        parse_design_spec(spec)
    assert caught.value.field == path
    assert message in caught.value.message
    assert message in caught.value.fields()[path][0]


def test_costs_are_parsed_with_their_defaults_into_the_cost_requests() -> None:
    spec = defaults.design_spec()
    spec["costs"] = {
        "cloud": [{"offering": "aws-p5-48xlarge", "usd_per_node_hour": {"spot": 30}}],
        "egress_tb": 5,
    }
    parsed = parse_design_spec(spec)
    assert parsed.costs.horizon_years == 3 and parsed.costs.utilization == 0.7 and parsed.costs.on_prem == {}
    assert parsed.costs.cloud[0].pricing_models is None  # omitted: every priced model
    [request] = parsed.cost_requests()
    assert request["cloud"] == {
        "offering": "aws-p5-48xlarge",
        "egress_tb": 5.0,
        "usd_per_node_hour": {"spot": 30.0},
    }
    assert request["horizon_years"] == 3 and request["cluster"]["storage"] == "lustre"


def test_a_serving_section_may_not_give_what_the_design_gives() -> None:
    with pytest.raises(SpecError) as caught:
        parse_design_spec({**defaults.design_spec(), "serving": {"accelerator": "b200", "model": {}}})
    assert caught.value.fields() == {
        "spec.serving": ["accelerator, model come from the design; leave them out"]
    }


def test_every_refused_section_is_reported_and_an_unknown_top_key_first() -> None:
    spec = _spec(nodes=0)
    spec["goals"] = {"deadline_days": 0}
    with pytest.raises(SpecError) as caught:
        parse_design_spec(spec)
    assert list(caught.value.fields()) == ["spec.cluster.nodes", "spec.goals.deadline_days"]
    with pytest.raises(SpecError) as caught:
        parse_design_spec({**spec, "goal": {}})
    assert caught.value.fields() == {
        "spec.goal": ["unknown field; known: workload, cluster, parallelism, costs, goals, serving, site, rl"]
    }


@pytest.mark.parametrize(
    ("field", "index", "path"),
    [
        ("cloud.usd_per_node_hour.spot", 2, "spec.costs.cloud.2.usd_per_node_hour.spot"),
        ("cloud.offering", 1, "spec.costs.cloud.1.offering"),
        ("cloud.egress_tb", 0, "spec.costs.egress_tb"),
        ("on_prem.pue", 1, "spec.costs.on_prem.pue"),
        ("cashflow.loan_rate", 2, "spec.costs.cashflow.loan_rate"),
        ("horizon_years", 0, "spec.costs.horizon_years"),
        ("cluster.nodes", 0, "spec.cluster.nodes"),
        ("site", 0, "spec.site"),
        ("run.days", 0, "spec.run.days"),
        ("", 0, "spec"),
    ],
)
def test_each_cost_input_knows_its_spec_path(field: str, index: int, path: str) -> None:
    # The cost inputs are read once at parse time, each part placed with its spec path: the cost engine
    # names a field there as it raises, with no table mapping a request's path back.
    spec = defaults.design_spec()
    spec["costs"] = {"cloud": [{"offering": s} for s in ("a", "b", "c")], "egress_tb": 5}
    inputs = parse_design_spec(spec).cost_inputs
    assert [i.offering for i in inputs] == ["a", "b", "c"]
    assert inputs[index].where(field) == path


def test_a_spec_with_the_training_fields_of_issue_19_parses() -> None:
    # memory_headroom (w5) and pipeline_layout (w4) are spec fields: the design spec's Training takes both
    # (a pipeline_layout raised TypeError here, a 500 on save, before).
    spec = _spec()
    spec["workload"]["training"] |= {"memory_headroom": 0.2, "pipeline_layout": [16, 16]}
    parsed = parse_design_spec(spec)
    assert parsed.training.memory_headroom == 0.2
    assert parsed.training.pipeline_layout == [16, 16]
