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
        where = design_spec.training_sections()
        parsed_again = training.parse_request(
            design_spec.training_request(clean), where=where, **specs.training_kwargs()
        )
        training.estimate_problem(parsed_again)
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


# ---- errors carry the user's own paths natively (issue 34): no translation table ---------------------------
# The same bad request sent to an engine as it is (the training or serving API: its own request paths) and
# built from a design spec (the spec's paths, where the parser was told each section sits). An error raised
# while parsing and one raised later by the engine (a layout that does not divide the GPUs, memory, a
# serving load no layout meets) both name the user's field, with nothing renaming them afterwards.
def _training_request(**edit: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 2_097_152, "precision": "bf16"},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 2, "fabric": "ib-ndr400"},
        "parallelism": {"tp": 8, "pp": 1, "micro_batch": 1, "recompute": "full", "sharding": "zero1"},
    }
    for path, value in edit.items():
        section, key = path.split("__")
        request[section] = {**request[section], key: value}
    return request


TRAINING_BAD = [
    # parsed: the model's own shape check (ModelShape), a training field, an unknown accelerator
    ({"model__kv_heads": 7}, "model.kv_heads", "spec.workload.model.kv_heads"),
    ({"training__etp": 2}, "training.etp", "spec.workload.training.etp"),
    ({"cluster__accelerator": "h900"}, "cluster.accelerator", "spec.cluster.accelerator"),
    # the cluster's own check (a node of 16 H100s is no HGX system)
    ({"cluster__gpus_per_node": 16}, "cluster.gpus_per_node", "spec.cluster.gpus_per_node"),
    # raised by the engine on the parsed request: a degree that does not divide the GPUs
    ({"parallelism__tp": 3}, "parallelism.tp", "spec.parallelism.tp"),
    # memory: 405B parameters on one node fit at no layout (the search's InfeasibleError)
    ({"model__preset": "llama3-405b", "cluster__nodes": 1}, "cluster.nodes", "spec.cluster.nodes"),
]


@pytest.mark.parametrize(("edit", "own", "in_spec"), TRAINING_BAD)
def test_a_training_error_names_the_request_path_sent_alone_and_the_spec_path_from_a_design(
    catalog: tuple[CatalogSpecs, dict[str, Any]], edit: dict[str, Any], own: str, in_spec: str
) -> None:
    specs, _ = catalog
    request = _training_request(**edit)
    if "model__preset" in edit:
        request.pop("parallelism")  # searched
    with pytest.raises(EngineError) as alone:
        training.estimate(request, **specs.training_kwargs())
    with pytest.raises(EngineError) as from_spec:
        parsed = training.parse_request(
            request, where=design_spec.training_sections(), **specs.training_kwargs()
        )
        training.estimate_problem(parsed)
    assert (alone.value.field, from_spec.value.field) == (own, in_spec)
    assert alone.value.message == from_spec.value.message
    # The training API's request may sit elsewhere (a sweep's, a plan's): its parser is told where.
    with pytest.raises(EngineError) as elsewhere:
        training.estimate(request, at="params.runs.2", **specs.training_kwargs())
    assert elsewhere.value.field == f"params.runs.2.{own}"


def _serving_spec(serving: dict[str, Any], preset: str = "llama3-8b") -> dict[str, Any]:
    spec = _spec(_set("workload.model", {"preset": preset}))
    spec["serving"] = serving
    return spec


@pytest.mark.parametrize(
    ("serving", "preset", "own", "in_spec"),
    [
        # parsed
        (
            {"demand": {"requests_per_s": -1}},
            "llama3-8b",
            "demand.requests_per_s",
            "spec.serving.demand.requests_per_s",
        ),
        # raised later: no layout meets a target; the design's model fits the design's accelerator at no
        # layout (named the serving section as a whole, which does not give them)
        (
            {"demand": {"requests_per_s": 1}, "targets": {"tpot_s": 1e-6}},
            "llama3-8b",
            "targets.tpot_s",
            "spec.serving.targets.tpot_s",
        ),
        ({"demand": {"requests_per_s": 1}}, "llama3-405b", "accelerator", "spec.serving"),
    ],
)
def test_a_serving_error_names_the_request_path_sent_alone_and_the_spec_path_from_a_design(
    catalog: tuple[CatalogSpecs, dict[str, Any]], serving: dict[str, Any], preset: str, own: str, in_spec: str
) -> None:
    from clusterdesigner.engine.design.design import serving_estimate
    from clusterdesigner.engine.serving_cost import serving_cost

    specs, _ = catalog
    spec = _serving_spec(serving, preset)
    spec["cluster"]["accelerator"] = "l4" if preset == "llama3-405b" else "h100-sxm"
    spec["cluster"]["gpus_per_node"] = 1 if preset == "llama3-405b" else 8
    clean = dict(design_spec.parse_design_spec(spec).json)
    request = design_spec.serving_request(clean)
    assert request is not None
    with pytest.raises(EngineError) as alone:
        serving_cost.estimate(request, catalog=specs)
    with pytest.raises(EngineError) as from_spec:
        serving_estimate(clean, specs)
    assert (alone.value.field, from_spec.value.field) == (own, in_spec)
    assert alone.value.message == from_spec.value.message


@pytest.mark.parametrize(
    ("preset", "nodes", "rollout", "own", "in_spec"),
    [
        # parsed: the rollout pool's part is not in the catalog
        (
            "llama3-8b",
            2,
            {"nodes": 1, "accelerator": "tpu-v9"},
            "rl.rollout.accelerator",
            "spec.rl.rollout.accelerator",
        ),
        # raised later: 405B parameters fit no placement on one node
        ("llama3-405b", 1, None, "cluster.nodes", "spec.cluster.nodes"),
    ],
)
def test_an_rl_error_names_the_request_path_sent_alone_and_the_spec_path_from_a_design(
    catalog: tuple[CatalogSpecs, dict[str, Any]],
    preset: str,
    nodes: int,
    rollout: dict[str, Any] | None,
    own: str,
    in_spec: str,
) -> None:
    from clusterdesigner.engine.design.design import rl_estimate
    from clusterdesigner.engine.rl import rl
    from tests.designs.test_rl_mixed_fleet_api import GRPO_8B

    specs, _ = catalog
    spec = _spec(_set("workload.model", {"preset": preset}))
    spec["parallelism"] = "search"
    spec["cluster"]["nodes"] = nodes
    spec["rl"] = {**GRPO_8B, "steps": 10, **({"rollout": rollout} if rollout else {})}
    clean = dict(design_spec.parse_design_spec(spec).json)
    request = design_spec.rl_request(clean)
    assert request is not None
    with pytest.raises(EngineError) as alone:
        rl.estimate(request, **specs.training_kwargs())
    with pytest.raises(EngineError) as from_spec:
        rl_estimate(clean, specs)
    assert (alone.value.field, from_spec.value.field) == (own, in_spec)
    assert alone.value.message == from_spec.value.message


def test_no_translation_table_names_the_training_rl_or_serving_errors() -> None:
    # Fails if a table that renames an engine's request paths after the fact comes back on the training, RL
    # or serving path: their entry points take where the request sits (at=, where=), never paths=, and their
    # modules neither import nor use FieldPaths or named_by; the spec and the sweep state no such table.
    import ast
    import inspect

    from apps.analysis import services as analysis_services
    from clusterdesigner.engine.design import design
    from clusterdesigner.engine.rl import rl, rl_request
    from clusterdesigner.engine.serving import serving
    from clusterdesigner.engine.serving_cost import serving_cost
    from clusterdesigner.engine.training import layout_search, levers, precision, timing, workload

    entry_points = [
        training.parse_request,
        training.estimate,
        training.check_request,
        training.parse_problem,
        rl.estimate,
        serving.sizing,
        serving.parse_request,
        serving_cost.estimate,
    ]
    for function in entry_points:
        assert "paths" not in inspect.signature(function).parameters, function.__qualname__
    modules = [
        training,
        layout_search,
        levers,
        precision,
        timing,
        workload,
        rl,
        rl_request,
        serving,
        serving_cost,
    ]
    for module in modules:
        names = {
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.name
            for node in ast.walk(ast.parse(inspect.getsource(module)))
            if isinstance(node, (ast.Name, ast.Attribute, ast.alias))
        }
        assert not names & {"FieldPaths", "named_by"}, module.__name__
    for function in (design.serving_estimate, design.rl_estimate, design._engine_answers):
        source = inspect.getsource(function)
        assert "named_by" not in source and "_PATHS" not in source, function.__name__
    for table in ("TRAINING_PATHS", "RL_PATHS", "SERVING_PATHS"):
        assert not hasattr(design_spec, table), table
    assert not hasattr(analysis_services, "_sweep_paths")
