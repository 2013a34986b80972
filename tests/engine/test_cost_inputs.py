"""The cost engine's inputs carry the user's paths themselves (engine/cost/cost_inputs.py, issue #34 "one
parser"): a design's cost inputs are read once from its spec, each part with its spec path, and the cost
engine names a bad field there as it raises it. Nothing translates an engine path back afterwards: these tests
fail if a translation table (a paths= argument, FieldPaths, named_by) comes back on the cost side."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
from test_cost_fixtures import CATALOG

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.cost import cost, cost_request, defaults
from clusterdesigner.engine.cost.cost_inputs import CostInputs
from clusterdesigner.engine.design import design
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design.spec import parse_design_spec

COST = Path(cost.__file__).parent
ENGINE = COST.parent


def test_no_translation_table_on_the_cost_side() -> None:
    # Nowhere in the engine, since the training, RL and serving parsers name the spec's paths too.
    for module in sorted(ENGINE.rglob("*.py")):
        text = module.read_text()
        assert "FieldPaths" not in text and "named_by" not in text, module.name
    for name in ("cost_paths", "rollout_cost_paths"):
        assert not hasattr(design_spec, name), name
    for name in ("request_cost_paths", "rollout_request_cost_paths"):
        assert not hasattr(design, name), name
    for function in (cost.tco, cost.check_request, cost_request.resolve):
        assert "paths" not in inspect.signature(function).parameters, function.__name__


def _design(**costs: Any) -> dict[str, Any]:
    spec = defaults.design_spec()
    spec["cluster"].update(accelerator="h100-sxm", fabric="ib-ndr400", nodes=4)
    spec["costs"] = costs
    return spec


def _refused(inputs: CostInputs) -> EngineError:
    with pytest.raises(EngineError) as caught:
        cost.check_request(inputs, CatalogSpecs(**CATALOG))
    return caught.value


def test_a_bad_cost_field_is_named_by_its_spec_path_as_it_is_raised() -> None:
    spec = _design(cloud=[{"offering": "aws-p5-48xlarge"}, {"offering": "no-such-offering"}])
    first, second = parse_design_spec(spec).cost_inputs
    cost.check_request(first, CatalogSpecs(**CATALOG))  # the first choice is fine
    error = _refused(second)
    assert error.field == "spec.costs.cloud.1.offering"
    assert "unknown cloud offering 'no-such-offering'" in error.message


def test_an_owning_field_out_of_range_is_named_under_spec_costs() -> None:
    [inputs] = parse_design_spec(_design(on_prem={"pue": 0.5})).cost_inputs
    error = _refused(inputs)
    assert (error.field, error.message) == ("spec.costs.on_prem.pue", "must be 1 or more, got 0.5")


def test_a_bare_request_keeps_its_own_paths() -> None:
    # The cost API and the tco command send the request itself: its paths are the request's.
    with pytest.raises(EngineError) as caught:
        cost.check_request(
            {"cluster": {"accelerator": "h100-sxm", "fabric": "ib-ndr400"}, "on_prem": {"pue": 0.5}},
            CatalogSpecs(**CATALOG),
        )
    assert caught.value.field == "on_prem.pue"


def test_goals_scale_the_parsed_inputs_and_keep_their_paths() -> None:
    [inputs] = parse_design_spec(_design()).cost_inputs
    larger = inputs.with_nodes(64)
    assert larger.value("cluster")["nodes"] == 64 and inputs.value("cluster")["nodes"] == 4
    assert larger.where("cluster.nodes") == "spec.cluster.nodes"
    assert larger.request()["cluster"] == {**inputs.request()["cluster"], "nodes": 64}
