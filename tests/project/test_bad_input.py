"""Bad input: each case is a 4xx whose envelope names the field and the reason, saves nothing and answers
fast."""

from __future__ import annotations

import time
from typing import Any

import pytest

from apps.analysis.models import Analysis
from apps.catalog.models import Accelerator, CloudPrice
from apps.catalog.selectors import engine_catalog_records
from apps.designs.models import Design
from clusterdesigner.engine.core.errors import EngineError
from tests.designs.fixtures import evaluated_json

FAST_S = 3.0
CLUSTER = {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8, "fabric": "ib-ndr400"}


def _post(client: Any, url: str, body: Any, **extra: Any) -> tuple[Any, float]:
    start = time.monotonic()
    if isinstance(body, (bytes, str)):
        response = client.post(url, body, content_type="application/json", **extra)
    else:
        response = client.post(url, body, format="json", **extra)
    return response, time.monotonic() - start


def _assert_refused(response: Any, elapsed: float, field: str, reason: str, status: int = 400) -> None:
    assert response.status_code == status, response.content[:500]
    error = response.json()["error"]
    assert field in error["fields"], error
    assert any(reason in message for message in error["fields"][field]), error["fields"][field]
    assert elapsed < FAST_S


def _spec(**cluster: Any) -> dict[str, Any]:
    return {"cluster": {**CLUSTER, **cluster}, "parallelism": {"tp": 8, "pp": 1}}


DESIGN_CASES = [
    ("zero nodes", {"spec": _spec(nodes=0)}, "spec.cluster.nodes", "greater than or equal to 1"),
    ("negative nodes", {"spec": _spec(nodes=-4)}, "spec.cluster.nodes", "greater than or equal to 1"),
    ("a billion GPUs", {"spec": _spec(nodes=125_000_000)}, "spec.cluster.nodes", "less than or equal to"),
    ("nodes as text", {"spec": _spec(nodes="64")}, "spec.cluster.nodes", "must be a number"),
    ("wrong type name", {"name": 7}, "name", "must be a string"),
    ("unknown accelerator", {"spec": _spec(accelerator="h9000")}, "spec.cluster.accelerator", "unknown"),
    (
        "unknown preset",
        {
            "spec": {
                **_spec(),
                "workload": {
                    "model": {"preset": "gpt-17"},
                    "training": {"tokens": 1e12, "global_batch_tokens": 4194304},
                },
            }
        },
        "spec.workload.model.preset",
        "gpt-17",
    ),
    (
        "huge tokens",
        {
            "spec": {
                **_spec(),
                "workload": {
                    "model": {"preset": "llama3-70b"},
                    "training": {"tokens": 1e308, "global_batch_tokens": 4194304},
                },
            }
        },
        "spec.workload.training.tokens",
        "less than",
    ),
    (
        "absurd negotiated price",
        {
            "spec": {
                **_spec(),
                "costs": {
                    "cloud": [{"offering": "aws-p5-48xlarge", "usd_per_node_hour": {"on_demand": 1e300}}]
                },
            }
        },
        "spec.costs.cloud.0.usd_per_node_hour.on_demand",
        "less than",
    ),
    # The cost engine's checks run when the design is saved, not first when it is evaluated, and name the
    # offering by its place in the list.
    (
        "zero negotiated price",
        {
            "spec": {
                **_spec(),
                "costs": {"cloud": [{"offering": "aws-p5-48xlarge", "usd_per_node_hour": {"on_demand": 0}}]},
            }
        },
        "spec.costs.cloud.0.usd_per_node_hour.on_demand",
        "must be more than zero",
    ),
    (
        "second offering's zero price",
        {
            "spec": {
                **_spec(),
                "costs": {
                    "cloud": [
                        {"offering": "aws-p5-48xlarge"},
                        {"offering": "gcp-a3-highgpu-8g", "usd_per_node_hour": {"spot": 0}},
                    ]
                },
            }
        },
        "spec.costs.cloud.1.usd_per_node_hour.spot",
        "must be more than zero",
    ),
    (
        "negative server price",
        {"spec": {**_spec(), "costs": {"on_prem": {"server_usd": -1}}}},
        "spec.costs.on_prem.server_usd",
        "must be zero or more",
    ),
    (
        "PUE below 1",
        {"spec": {**_spec(), "costs": {"on_prem": {"pue": 0.5}}}},
        "spec.costs.on_prem.pue",
        "must be 1 or more",
    ),
    (
        "misspelt owning field",
        {"spec": {**_spec(), "costs": {"on_prem": {"server_cost": 250000}}}},
        "spec.costs.on_prem.server_cost",
        "unknown on_prem field 'server_cost'; known: capital_payments_per_year, colo_contracted_kw",
    ),
    # 6 GPUs a node so that 48 GPUs split into TP 3: what is left wrong is Llama-3-70B's 64 heads.
    (
        "tp not dividing heads",
        {"spec": {**_spec(gpus_per_node=6), "parallelism": {"tp": 3, "pp": 1}}},
        "spec.parallelism.tp",
        "tp 3 does not divide 64 heads",
    ),
]


@pytest.mark.parametrize(("case", "body", "field", "reason"), DESIGN_CASES, ids=[c[0] for c in DESIGN_CASES])
def test_bad_design_input_is_a_400_naming_the_field(
    case: str, body: dict[str, Any], field: str, reason: str, catalog: Any, user_client: Any
) -> None:
    before = Design.objects.count()
    response, elapsed = _post(user_client, "/api/v1/designs/", {"name": "bad", **body})
    _assert_refused(response, elapsed, field, reason)
    assert Design.objects.count() == before


def test_a_stored_spec_that_no_longer_evaluates_names_the_spec_field(catalog: Any) -> None:
    """A spec saved before a rule existed (or under another catalog) fails its evaluation on the spec's
    path, as the editor and API callers know it, not the engine request's."""
    spec = {
        "workload": {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_tokens": 4194304},
        },
        "cluster": CLUSTER,
        "parallelism": {"tp": 8, "pp": 1},
        "costs": {
            "on_prem": {"pue": 0.5},
            "cloud": [
                {"offering": "aws-p5-48xlarge"},
                {"offering": "gcp-a3-highgpu-8g"},
            ],
        },
    }
    with pytest.raises(EngineError) as exc:
        evaluated_json(spec=spec, records=engine_catalog_records())
    assert (exc.value.field, exc.value.message) == ("spec.costs.on_prem.pue", "must be 1 or more, got 0.5")
    # A rule of the spec's parser (the evaluation parses the stored spec first) is named on its path too.
    spec["costs"]["cloud"][1]["usd_per_node_hour"] = {"spot": 0}
    spec["costs"]["on_prem"] = {}
    with pytest.raises(EngineError) as exc:
        evaluated_json(spec=spec, records=engine_catalog_records())
    assert exc.value.field == "spec.costs.cloud.1.usd_per_node_hour.spot"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_json_numbers_are_refused_with_the_field(
    literal: str, catalog: Any, user_client: Any
) -> None:
    body = (
        '{"name": "x", "spec": {"workload": {"model": {"preset": "llama3-70b"}, "training": {"tokens": '
        + literal
        + ', "global_batch_tokens": 4194304}}}}'
    )
    response, elapsed = _post(user_client, "/api/v1/designs/", body)
    _assert_refused(response, elapsed, "spec.workload.training.tokens", "finite number")
    assert not Design.objects.exists()


def test_oversized_json_body_is_a_413_with_the_envelope(
    catalog: Any, user_client: Any, settings: Any
) -> None:
    body = '{"name": "x", "description": "' + "a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10) + '"}'
    response, elapsed = _post(user_client, "/api/v1/designs/", body)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert elapsed < FAST_S and not Design.objects.exists()


ANALYSIS_CASES = [
    ("unknown kind", {"kind": "divine", "params": {}}, "kind", "not a valid choice"),
    ("params not an object", {"kind": "sweep", "params": [1, 2]}, "params", "must be an object"),
    ("compare one design", {"kind": "compare", "params": {"designs": [1]}}, "params.designs", ""),
]


@pytest.mark.parametrize(
    ("case", "body", "field", "reason"), ANALYSIS_CASES, ids=[c[0] for c in ANALYSIS_CASES]
)
def test_bad_analysis_input_is_a_400_naming_the_field(
    case: str, body: dict[str, Any], field: str, reason: str, catalog: Any, user_client: Any
) -> None:
    response, elapsed = _post(user_client, "/api/v1/analyses/", body)
    assert response.status_code == 400, response.content[:500]
    fields = response.json()["error"]["fields"]
    assert any(name.startswith(field) for name in fields), fields
    assert reason in " ".join(m for name, ms in fields.items() for m in ms)
    assert elapsed < FAST_S and not Analysis.objects.exists()


def test_analysis_nan_in_free_form_params_is_refused(catalog: Any, user_client: Any) -> None:
    response, elapsed = _post(
        user_client, "/api/v1/analyses/", '{"kind": "recommend", "params": {"budget_usd": NaN}}'
    )
    _assert_refused(response, elapsed, "params.budget_usd", "finite number")
    assert not Analysis.objects.exists()


ACCELERATOR = {
    "slug": "x1",
    "name": "X1",
    "vendor": "nvidia",
    "family": "other",
    "memory_gib": 80,
    "hbm_bandwidth_tbps": 3.35,
    "bf16_dense_tflops": 989,
    "tdp_w": 700,
    "source": "test",
}
CATALOG_CASES = [
    ("zero memory", {"memory_gib": 0}, "memory_gib", ""),
    ("negative tdp", {"tdp_w": -1}, "tdp_w", ""),
    ("memory as text", {"memory_gib": "80"}, "memory_gib", "must be a number"),
    ("unknown vendor", {"vendor": "acme"}, "vendor", "does not exist"),
]


@pytest.mark.parametrize(
    ("case", "change", "field", "reason"), CATALOG_CASES, ids=[c[0] for c in CATALOG_CASES]
)
def test_bad_catalog_write_is_a_400_naming_the_field(
    case: str, change: dict[str, Any], field: str, reason: str, catalog: Any, staff_client: Any
) -> None:
    before = Accelerator.objects.count()
    response, elapsed = _post(staff_client, "/api/v1/accelerators/", {**ACCELERATOR, **change})
    _assert_refused(response, elapsed, field, reason)
    assert Accelerator.objects.count() == before


def test_catalog_write_by_a_non_staff_user_is_refused(
    catalog: Any, user_client: Any, api_client: Any
) -> None:
    assert _post(user_client, "/api/v1/accelerators/", ACCELERATOR)[0].status_code == 403
    assert _post(api_client, "/api/v1/accelerators/", ACCELERATOR)[0].status_code == 401
    assert not Accelerator.objects.filter(slug="x1").exists()


def _upload(client: Any, content: bytes) -> tuple[Any, float]:
    from django.core.files.uploadedfile import SimpleUploadedFile

    start = time.monotonic()
    response = client.post(
        "/api/v1/cloud-prices/import/", {"file": SimpleUploadedFile("p.csv", content)}, format="multipart"
    )
    return response, time.monotonic() - start


HEADER = b"offering,pricing_model,usd_per_hour,currency,region,as_of,source\n"
CSV_CASES = [
    ("not utf-8", b"\x89PNG\r\n\x1a\n\x00\x00", "file", "not UTF-8"),
    ("nul bytes", HEADER + b"aws-p5-48xlarge,on_demand,98\x00,USD,us-east-1,2025-01-01,x\n", "file", "NUL"),
    ("missing columns", b"offering,price\nx,1\n", "line 1.header", "missing column"),
    (
        "absurd price",
        HEADER + b"aws-p5-48xlarge,on_demand,1e400,USD,us-east-1,2025-01-01,x\n",
        "line 2.usd_per_hour",
        "finite",
    ),
    (
        "negative price",
        HEADER + b"aws-p5-48xlarge,on_demand,-5,USD,us-east-1,2025-01-01,x\n",
        "line 2.usd_per_hour",
        "above 0",
    ),
    (
        "zero price",
        HEADER + b"aws-p5-48xlarge,spot,0,USD,us-east-1,2025-01-01,x\n",
        "line 2.usd_per_hour",
        "above 0",
    ),
]


@pytest.mark.parametrize(("case", "content", "field", "reason"), CSV_CASES, ids=[c[0] for c in CSV_CASES])
def test_bad_price_import_is_a_400_and_imports_nothing(
    case: str, content: bytes, field: str, reason: str, catalog: Any, staff_client: Any
) -> None:
    before = CloudPrice.objects.count()
    response, elapsed = _upload(staff_client, content)
    _assert_refused(response, elapsed, field, reason)
    assert CloudPrice.objects.count() == before


def test_oversized_price_import_is_refused_before_it_is_read(
    catalog: Any, staff_client: Any, settings: Any
) -> None:
    row = b"aws-p5-48xlarge,on_demand,98.32,USD,us-east-1,2025-01-01,x\n"
    content = HEADER + row * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE // len(row) + 10)
    before = CloudPrice.objects.count()
    response, elapsed = _upload(staff_client, content)
    assert response.status_code in (400, 413)
    assert response.json()["error"]["fields"] or response.json()["error"]["code"] == "too_large"
    assert elapsed < FAST_S and CloudPrice.objects.count() == before


def test_more_rows_than_the_import_limit_imports_nothing(
    catalog: Any, staff_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from apps.catalog import services

    monkeypatch.setattr(services, "MAX_IMPORT_ROWS", 3)
    rows = b"".join(
        f"aws-p5-48xlarge,on_demand,9{i},USD,us-east-1,2025-01-0{i + 1},x\n".encode() for i in range(5)
    )
    before = CloudPrice.objects.count()
    response, elapsed = _upload(staff_client, HEADER + rows)
    _assert_refused(response, elapsed, "line 5.file", "more than 3 rows")
    assert CloudPrice.objects.count() == before
