"""One parser (issue 34): a design spec parsed with the catalog holds its training request parsed once
(``DesignSpec.training_problem``), the design's composition estimates it as it is, and every error names the
same spec field as the JSON path (the request rebuilt from the clean spec and parsed by training.estimate).
Guard: for a table of specs the spec's own rules accept but the training engine refuses, the field named
both ways is the one written here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clusterdesigner.engine.core.catalog import CatalogSpecs, specs_from_records
from clusterdesigner.engine.core.errors import EngineError, InfeasibleError
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design.design import evaluate_design_json
from clusterdesigner.engine.training import training

SEED = Path(__file__).resolve().parents[2] / "apps" / "catalog" / "data" / "seed_catalog.json"


@pytest.fixture(scope="module")
def catalog() -> tuple[CatalogSpecs, dict[str, Any]]:
    records = json.loads(SEED.read_text())
    return specs_from_records(records), records


def _spec(edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    spec = defaults.design_spec()
    spec["workload"]["model"] = {"preset": "llama3-8b"}
    spec["workload"]["training"] = {"tokens": 1e11, "global_batch_tokens": 2_097_152, "precision": "bf16"}
    spec["cluster"].update(accelerator="h100-sxm", nodes=2, fabric="ib-ndr400")
    spec["parallelism"] = {"tp": 8, "pp": 1, "micro_batch": 1, "recompute": "full", "sharding": "zero1"}
    edit(spec)
    return spec


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(spec: dict[str, Any]) -> None:
        *heads, last = path.split(".")
        node = spec
        for head in heads:
            node = node[head]
        node[last] = value

    return edit


# (what is wrong, the spec's field) for specs the spec's own rules accept and the training engine refuses.
BAD = [
    (_set("cluster.accelerator", "h900"), "spec.cluster.accelerator"),
    (_set("cluster.fabric", "ib-xdr9000"), "spec.cluster.fabric"),
    (_set("workload.model", {"preset": "llama-99b"}), "spec.workload.model.preset"),
    (_set("workload.training.etp", 2), "spec.workload.training.etp"),
    (_set("workload.training.recompute_modules", ["nope"]), "spec.workload.training.recompute_modules"),
    (_set("workload.training.global_batch_tokens", 1000), "spec.workload.training.global_batch_tokens"),
    (_set("workload.training.pipeline_layout", [10, 10]), "spec.workload.training.pipeline_layout"),
    (_set("parallelism.tp", 3), "spec.parallelism.tp"),
    (_set("parallelism.dp", 5), "spec.parallelism.dp"),
]


@pytest.mark.parametrize(("edit", "path"), BAD)
def test_the_parsed_request_names_the_spec_field_the_json_path_names(
    catalog: tuple[CatalogSpecs, dict[str, Any]], edit: Callable[[dict[str, Any]], None], path: str
) -> None:
    specs, records = catalog
    spec = _spec(edit)
    clean = design_spec.parse_design_spec(spec).json  # the spec's own rules accept it
    with pytest.raises(EngineError) as by_json:
        training.estimate(
            design_spec.training_request(clean), paths=design_spec.TRAINING_PATHS, **specs.training_kwargs()
        )
    with pytest.raises(EngineError) as typed:
        parsed = design_spec.parse_design_spec(spec, catalog=specs)
        evaluate_design_json(spec=parsed, catalog=specs, records=records)
    assert by_json.value.field == path
    assert (typed.value.field, typed.value.message) == (path, by_json.value.message)


def test_an_infeasible_design_keeps_its_memory_figures_and_its_spec_path(
    catalog: tuple[CatalogSpecs, dict[str, Any]],
) -> None:
    # 405B parameters in BF16 with Adam on one 8-GPU node: the weights alone (~810 GB) pass 8 × 80 GB.
    specs, records = catalog
    spec = _spec(_set("workload.model", {"preset": "llama3-405b"}))
    spec["parallelism"] = "search"
    spec["cluster"]["nodes"] = 1
    parsed = design_spec.parse_design_spec(spec, catalog=specs)
    with pytest.raises(InfeasibleError) as caught:
        evaluate_design_json(spec=parsed, catalog=specs, records=records)
    assert caught.value.field == "spec.cluster.nodes"
    need, have = caught.value.need_gib, caught.value.have_gib
    assert have == pytest.approx(80.0, rel=0.05)
    assert need is not None and have is not None and need > have


def test_the_design_estimates_the_parsed_request_without_parsing_it_again(
    catalog: tuple[CatalogSpecs, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    specs, records = catalog
    parsed = design_spec.parse_design_spec(_spec(lambda spec: None), catalog=specs)
    assert parsed.training_problem is not None
    assert parsed.training_problem.problem.cluster.num_gpus == 16
    assert dict(parsed.training_problem.fixed)["tp"] == 8

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the training request was parsed again")

    expected = training.estimate_problem(parsed.training_problem).to_json()
    monkeypatch.setattr(training, "parse_request", refuse)
    monkeypatch.setattr(training, "parse_problem", refuse)
    result = evaluate_design_json(spec=parsed, catalog=specs, records=records)
    assert result["training"] == expected
    assert result["training"]["parallelism"]["tp"] == 8


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (itself included)."""
    if isinstance(value, dict):
        return [value, *(c for item in value.values() for c in _containers(item))]
    if isinstance(value, list):
        return [value, *(c for item in value for c in _containers(item))]
    return []


def test_the_clean_spec_is_json_as_stored_and_shares_nothing_with_what_was_sent() -> None:
    # spec_validate stores the parser's clean spec as it is (no JSON round trip): it must already be what a
    # JSON column holds (lists, not tuples), and filling it in (a choice's pricing models) must leave the
    # spec that was sent untouched.
    from tests.designs.test_rl_mixed_fleet_api import MIXED

    sent = design_spec.with_defaults(json.loads(json.dumps(MIXED)))
    sent["serving"] = {"demand": {"requests_per_s": 5}, "cost": {"horizon_years": 3}}
    sent["costs"]["on_prem"] = {"pue": 1.3}
    sent["costs"]["cashflow"] = {"loan_rate": 0.07}
    before = json.dumps(sent, sort_keys=True)
    clean = design_spec.parse_design_spec(sent).json
    assert clean == json.loads(json.dumps(clean))
    assert repr(clean) == repr(json.loads(json.dumps(clean)))  # no tuple nor other non-JSON type inside
    ids = {id(c) for c in _containers(sent)}
    assert [c for c in _containers(clean) if id(c) in ids] == []
    clean["costs"]["cloud"][0]["pricing_models"].append("spot")
    clean["rl"]["rollout"]["cloud"][0]["pricing_models"].append("spot")
    clean["serving"]["demand"]["requests_per_s"] = 6
    assert json.dumps(sent, sort_keys=True) == before
