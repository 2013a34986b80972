"""DesignEvaluation reads the design's cloud choices typed (engine.design.spec.CloudChoice): from the parsed
spec, and choice by choice from a stored spec that no longer parses."""

from __future__ import annotations

from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.design.evaluation import DesignEvaluation
from clusterdesigner.engine.design.spec import CloudChoice


def _evaluation(cloud: list[dict[str, object]], **costs: object) -> DesignEvaluation:
    spec = defaults.design_spec()
    spec["costs"] = {**spec["costs"], "cloud": cloud, **costs}
    return DesignEvaluation(spec=spec, training=None)


def test_the_chosen_pricing_models_of_each_offering_are_shown_and_others_not() -> None:
    evaluation = _evaluation(
        [
            {"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "spot"]},
            {"offering": "gcp-a3-highgpu-8g"},  # no choice: every priced model
        ]
    )
    assert evaluation.cloud_choices == (
        CloudChoice(offering="aws-p5-48xlarge", pricing_models=("on_demand", "spot")),
        CloudChoice(offering="gcp-a3-highgpu-8g", pricing_models=None),
    )
    assert evaluation.chosen("aws-p5-48xlarge", "spot")
    assert not evaluation.chosen("aws-p5-48xlarge", "reserved_1y")
    assert evaluation.chosen("gcp-a3-highgpu-8g", "reserved_1y")
    assert evaluation.chosen("an-offering-not-chosen", "on_demand")


def test_a_stored_spec_that_no_longer_parses_still_gives_its_choices() -> None:
    # A spec stored under other rules (here a horizon past today's 20 years) no longer parses; its pages
    # still show what it compared.
    evaluation = _evaluation(
        [{"offering": "aws-p5-48xlarge", "pricing_models": ["reserved_1y"]}], horizon_years=30
    )
    assert evaluation.design_spec is None
    assert evaluation.cloud_choices == (
        CloudChoice(offering="aws-p5-48xlarge", pricing_models=("reserved_1y",)),
    )
    assert evaluation.chosen("aws-p5-48xlarge", "reserved_1y")
    assert not evaluation.chosen("aws-p5-48xlarge", "on_demand")
