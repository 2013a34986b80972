"""The typed evaluation (engine.design.evaluation.DesignEvaluation) holds every key the composition writes
(issue 34: one typed object from parse to storage): for every demo design, every model preset and the
engines' test cases that evaluate (savings plans, spot, RL, serving, a mixed fleet, on-prem only, unpriced
offerings, calibration on, stale prices, the price book's rows), the stored JSON read typed and written back
is the same JSON, key for key and value for value; and each engine's JSON answer the composition reads typed
(training, cost per offering, assumptions, findings) is read without losing a key.

Before the typed classes modelled them, this listed what they dropped: a savings plan's
``commitment_usd_per_hour`` and ``commitment_formula`` (CloudOption), and the serving estimate wrote its
layouts, curve, Pareto frontier and costs as tuples where the stored JSON holds lists (ServingResult).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.designs.demo import DEMOS
from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.json_object import JsonObject
from clusterdesigner.engine.core.offerings import Freshness
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.cost.cost_result import CostResult
from clusterdesigner.engine.design.design import evaluate_design
from clusterdesigner.engine.design.evaluation import (
    DesignEvaluation,
    EvaluationAssumption,
    EvaluationFinding,
)
from clusterdesigner.engine.design.spec import parse_design_spec
from clusterdesigner.engine.training.error_band import ALL_ROWS
from clusterdesigner.engine.training.training_result import TrainingEstimate
from clusterdesigner.engine.training.user_calibration import (
    CalibrationState,
    RegimeFactor,
    UserCalibration,
)
from tests.designs.test_rl_mixed_fleet_api import GRPO_8B, MIXED
from tests.designs.test_xlsx_finance import CASES as CASHFLOW_CASES
from tests.engine.specs import GPT3_1024_A100

ROOT = Path(__file__).resolve().parents[2]
RECORDS = json.loads((ROOT / "apps/catalog/data/seed_catalog.json").read_text())
CATALOG = specs_from_records(RECORDS)
# Test inputs, not published prices: demo 1's AWS p5 (64 nodes) with a rate for every pricing model.
EVERY_MODEL = {"on_demand": 55.04, "reserved_1y": 34.0, "savings_1y": 36.0, "savings_3y": 25.0, "spot": 20.0}
# A price book's resolved rows and warning as apps/designs/pricing.py writes them (test inputs).
PRICE_ROWS = [
    {
        "name": "prices.cloud.aws-p5-48xlarge.on_demand",
        "value": None,
        "unit": "USD/node-hour",
        "origin": "catalog",
        "as_of": "",
        "source": "the public catalog (or the engine's default)",
    },
    {
        "name": "prices.power_usd_per_kwh",
        "value": 0.1,
        "unit": "USD/kWh",
        "origin": "price_book",
        "as_of": "2026-01-01",
        "entry_id": 3,
        "source": "power contract, valid from 2026-01-01",
    },
]
PRICE_FINDINGS = [{"severity": "warning", "code": "price_entry_expired", "message": "an entry expired"}]
CALIBRATION_ON = CalibrationState(
    enabled=True,
    calibration=UserCalibration(factors=(RegimeFactor(key=ALL_ROWS, factor=1.2, runs=3, p10=-0.1, p90=0.1),)),
    scope="personal",
    holder="alice",
)


def _demo(index: int) -> dict[str, Any]:
    return copy.deepcopy(DEMOS[index]["spec"])


def _with(spec: dict[str, Any], **costs: Any) -> dict[str, Any]:
    spec["costs"] = {**spec["costs"], **costs}
    return spec


def _cashflow_case(case: dict[str, Any]) -> dict[str, Any]:
    """Demo 1 with one of the XLSX finance cases' money-over-time inputs (tests/designs/test_xlsx_finance)."""
    spec = _with(_demo(0), horizon_years=case["horizon_years"], cashflow=case["cashflow"])
    spec["costs"]["on_prem"] = {**spec["costs"].get("on_prem", {}), **case.get("on_prem", {})}
    if "spot_capacity_nodes" in case:
        spec["costs"]["spot_capacity_nodes"] = case["spot_capacity_nodes"]
    if "prices" in case:
        offering = {"offering": "aws-p5-48xlarge", "usd_per_node_hour": case["prices"]}
        spec["costs"]["cloud"] = [{**offering, "pricing_models": list(case["prices"])}]
    return spec


def _cases() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(id, spec, evaluate_design's other arguments) of every case."""
    for demo in DEMOS:
        yield f"demo: {demo['name']}", copy.deepcopy(demo["spec"]), {}
    for index, demo in enumerate(DEMOS):  # goals missed: the search for the node count that meets them
        spec = {**copy.deepcopy(demo["spec"]), "goals": {"deadline_days": 2, "budget_usd": 1000}}
        spec["goals"]["budget_npv_usd"] = 1000
        yield f"goals missed, demo {index + 1}", spec, {}
    for preset in PRESETS:  # each preset on demo 1's cluster, its layout searched
        spec = _demo(0)
        spec["workload"]["model"], spec["parallelism"] = {"preset": preset}, "search"
        yield f"preset {preset}", spec, {}
    for name, case in CASHFLOW_CASES.items():
        yield f"cash flows: {name}", _cashflow_case(case), {}
    every = [{"offering": "aws-p5-48xlarge", "usd_per_node_hour": EVERY_MODEL}]
    yield "every pricing model, savings plans included", _with(_demo(0), cloud=every), {}
    yield "on-prem only", _with(_demo(0), cloud=[]), {}
    unpriced = [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "reserved_1y", "spot"]}]
    yield "a pricing model without a price", _with(_demo(0), cloud=unpriced), {}
    spot = [{"offering": "aws-p5-48xlarge", "pricing_models": ["spot"]}]
    yield "spot past its capacity", _with(_demo(0), cloud=spot), {}
    three = [{"offering": o} for o in ("aws-p5-48xlarge", "gcp-a3-megagpu-8g", "coreweave-8x-h100-node")]
    yield "three offerings", _with(_demo(0), cloud=three), {}
    serving = {"targets": {"ttft_s": 2.0, "tpot_s": 0.05}, "demand": {"requests_per_s": 5}}
    yield "serving", {**_demo(0), "serving": serving}, {}
    yield "RL", {**copy.deepcopy(MIXED), "rl": dict(GRPO_8B)}, {}
    yield "RL mixed fleet", copy.deepcopy(MIXED), {}
    gpt3 = {
        "workload": {"model": GPT3_1024_A100["model"], "training": GPT3_1024_A100["training"]},
        "cluster": {**GPT3_1024_A100["cluster"], "gpus_per_node": 8},
        "parallelism": "search",
        "costs": {"horizon_years": 3, "utilization": 0.8, "cloud": [{"offering": "aws-p4de-24xlarge"}]},
    }
    yield "GPT-3 175B on 1,024 A100 (tests/engine/specs.py)", gpt3, {}
    yield "calibration on", _demo(0), {"calibration": CALIBRATION_ON}
    yield "calibration off", _demo(0), {"calibration": CalibrationState(enabled=False)}
    stale = Freshness(today=dt.date(2030, 1, 1), stale_after_days=90)
    yield "stale prices", _demo(3), {"freshness": stale}
    yield "price book rows", _demo(0), {"price_rows": PRICE_ROWS, "price_findings": PRICE_FINDINGS}


CASES = {name: (spec, kwargs) for name, spec, kwargs in _cases()}
assert len(CASES) == len(list(_cases()))  # no two cases share an id

# The classes the composition reads an engine's JSON answer with.
READ_TYPED = (TrainingEstimate, CostResult, EvaluationAssumption, EvaluationFinding)
Reads = list[tuple[type, Any, JsonObject]]

# Both tests below look at the same evaluation of a case: evaluate_design runs once per case in this process
# (~0.1-0.5 s of CPU each), with each of READ_TYPED's from_json wrapped to record what it reads and returns;
# the wrapper hands back what from_json returned, so the evaluation is the one an unwrapped run gives. The
# stored JSON is that evaluation's to_json(), which is what evaluate_design_json returns (its whole body);
# tests/designs/fixtures.py and tests/engine/test_one_parser.py call evaluate_design_json itself.
_RUNS: dict[str, tuple[DesignEvaluation, Reads]] = {}


def _run(case: str) -> tuple[DesignEvaluation, Reads]:
    """The case's evaluation and every engine answer the composition read typed on the way: (class, JSON
    read, typed object)."""
    if case not in _RUNS:
        spec, kwargs = CASES[case]
        reads: Reads = []
        with pytest.MonkeyPatch.context() as patch:
            for cls in READ_TYPED:
                original = cls.from_json

                def spy(data: Any, _cls: type = cls, _original: Any = original) -> Any:
                    typed = _original(data)
                    reads.append((_cls, data, typed))
                    return typed

                patch.setattr(cls, "from_json", spy)
            evaluation = evaluate_design(
                spec=parse_design_spec(spec), catalog=CATALOG, records=RECORDS, **kwargs
            )
        _RUNS[case] = (evaluation, reads)
    return _RUNS[case]


@pytest.mark.parametrize("case", list(CASES))
def test_the_stored_evaluation_reads_typed_and_writes_back_the_same(case: str) -> None:
    stored = _run(case)[0].to_json()
    assert DesignEvaluation.from_json(stored).to_json() == stored
    # As the database holds it (JSON text: lists, not tuples), too.
    text = json.loads(json.dumps(stored))
    assert DesignEvaluation.from_json(text).to_json() == text


@pytest.mark.parametrize("case", list(CASES))
def test_every_engine_answer_the_composition_reads_typed_keeps_every_key(case: str) -> None:
    evaluation, reads = _run(case)
    assert {cls for cls, _, _ in reads} >= {TrainingEstimate, CostResult, EvaluationAssumption}
    for cls, data, typed in reads:
        assert json.loads(json.dumps(typed.to_json())) == json.loads(json.dumps(data)), cls.__name__
    assert evaluation.training is not None


def test_a_savings_plans_commitment_is_stored_typed() -> None:
    # Demo 1's 64 nodes of AWS p5 at the test inputs above: the commitment that covers the cluster is nodes ×
    # the plan's rate: 64 × $36 = $2,304 an hour (1 year), 64 × $25 = $1,600 (3 years).
    spec = _with(_demo(0), cloud=[{"offering": "aws-p5-48xlarge", "usd_per_node_hour": EVERY_MODEL}])
    evaluation = evaluate_design(spec=parse_design_spec(spec), catalog=CATALOG, records=RECORDS)
    cloud = evaluation.costs["aws-p5-48xlarge"].cloud
    assert cloud["savings_1y"].commitment_usd_per_hour == 2_304.0
    assert cloud["savings_3y"].commitment_usd_per_hour == 1_600.0
    assert cloud["savings_3y"].commitment_formula == (
        "64 nodes × $25.00/node-h, committed for every hour of each 3-year term"
    )
    assert cloud["reserved_1y"].commitment_usd_per_hour is None
    stored = evaluation.to_json()["costs"]["aws-p5-48xlarge"]["cloud"]
    assert stored["savings_1y"]["commitment_usd_per_hour"] == 2_304.0
    assert "commitment_usd_per_hour" not in stored["reserved_1y"]
