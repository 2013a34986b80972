"""Malformed input found by the attack pass (#20): each is a 400 (or 404) in the error envelope naming the
field, never a 500, and saves nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from apps.analysis.models import Analysis
from apps.catalog.models import CloudPrice
from apps.designs.models import Design, ShareLink

SPEC = {
    "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8, "fabric": "ib-ndr400"},
    "parallelism": {"tp": 8, "pp": 1},
}
SWEEP = {"accelerators": ["h100-sxm"], "nodes": [8], "pricing_models": ["on_demand"]}


def _assert_envelope(response: Any, status: int, field: str | None, reason: str = "") -> dict[str, Any]:
    assert response.status_code == status, response.content[:800]
    error = response.json()["error"]
    assert set(error) == {"code", "message", "fields"}, error
    if field is not None:
        assert field in error["fields"], error
        assert any(reason in message for message in error["fields"][field]), error["fields"][field]
    return error


def _nested(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


DEEP = 5000
# The error names the deepest path (issue #38 item 6): the 64 open containers' keys and indexes.
ZEROS = ".0" * 63
DEEP_BODIES = [
    ("/api/v1/designs/", '{"name": "x", "spec": ' + _nested(DEEP) + "}", "spec" + ZEROS),
    ("/api/v1/designs/", _nested(DEEP), "non_field_errors"),
    (
        "/api/v1/analyses/",
        '{"kind": "sweep", "params": {"model": ' + _nested(DEEP) + "}}",
        "params.model" + ZEROS[2:],
    ),
    ("/api/v1/accelerators/", '{"slug": "x1", "source": ' + _nested(DEEP) + "}", "source" + ZEROS),
    (
        "/api/v1/designs/",
        '{"name": "x", "spec": {"workload": ' + _nested(200) + "}}",
        "spec.workload" + ZEROS[2:],
    ),
]


DEEP_IDS = ["design spec", "bare array", "analysis params", "catalog write", "200 deep"]


@pytest.mark.parametrize(("url", "body", "field"), DEEP_BODIES, ids=DEEP_IDS)
def test_deeply_nested_json_is_a_400_naming_the_field(
    url: str, body: str, field: str, catalog: Any, staff_client: Any
) -> None:
    response = staff_client.post(url, body, content_type="application/json")
    _assert_envelope(response, 400, field, "nested more than")
    assert not Design.objects.exists() and not Analysis.objects.exists()


def test_deep_json_in_an_edit_and_a_share_link_is_a_400(catalog: Any, user_client: Any) -> None:
    created = user_client.post("/api/v1/designs/", {"name": "x", "spec": SPEC}, format="json")
    assert created.status_code == 201, created.content
    design_id = created.json()["id"]
    url = f"/api/v1/designs/{design_id}/"
    body = '{"version": 1, "spec": ' + _nested(DEEP) + "}"
    patch = user_client.patch(url, body, content_type="application/json")
    _assert_envelope(patch, 400, "spec" + ZEROS, "nested more than")
    body = '{"label": ' + _nested(DEEP) + "}"
    share = user_client.post(f"{url}share-links/", body, content_type="application/json")
    _assert_envelope(share, 400, "label" + ZEROS, "nested more than")
    assert Design.objects.get().version == 1 and not ShareLink.objects.exists()


SURROGATE_BODIES = [
    (
        "design spec key",
        "/api/v1/designs/",
        '{"name": "x", "spec": {"cluster": {"\\ud800": 1, "accelerator": "h100-sxm"}}}',
        "spec.cluster.\\ud800",
    ),
    ("design name", "/api/v1/designs/", '{"name": "bad \\udfff name", "spec": {}}', "name"),
    (
        "analysis params value",
        "/api/v1/analyses/",
        '{"kind": "sweep", "params": {"accelerators": ["h100\\ud800"], "nodes": [8]}}',
        "params.accelerators.0",
    ),
    (
        "analysis params key",
        "/api/v1/analyses/",
        '{"kind": "recommend", "params": {"\\ud800x": 1}}',
        "params.\\ud800x",
    ),
]


@pytest.mark.parametrize(
    ("case", "url", "body", "field"), SURROGATE_BODIES, ids=[c[0] for c in SURROGATE_BODIES]
)
def test_unpaired_surrogates_are_a_400_naming_the_field(
    case: str, url: str, body: str, field: str, catalog: Any, user_client: Any
) -> None:
    response = user_client.post(url, body, content_type="application/json")
    _assert_envelope(response, 400, field, "unpaired surrogate")
    assert not Design.objects.exists() and not Analysis.objects.exists()


ANALYSIS_CASES = [
    ("evaluate design text", "evaluate", {"design": "abc"}, "params.design", "must be a number"),
    ("evaluate design list", "evaluate", {"design": [1]}, "params.design", "must be a number"),
    ("evaluate design missing", "evaluate", {}, "params.design", "required"),
    ("evaluate design huge", "evaluate", {"design": 2**70}, "params.design", "less than or equal to"),
    (
        "evaluate version text",
        "evaluate",
        {"design": "{design}", "version": "abc"},
        "params.version",
        "must be a number",
    ),
    (
        "evaluate version list",
        "evaluate",
        {"design": "{design}", "version": [1]},
        "params.version",
        "must be a number",
    ),
    ("evaluate design fraction", "evaluate", {"design": 1.7}, "params.design", "must be a whole number"),
    ("evaluate design true", "evaluate", {"design": True}, "params.design", "must be a number"),
    (
        "evaluate version true",
        "evaluate",
        {"design": "{design}", "version": True},
        "params.version",
        "must be",
    ),
    ("evaluate unknown key", "evaluate", {"design": "{design}", "bogus": 1}, "params.bogus", "unknown field"),
    ("compare id fraction", "compare", {"designs": [1.5, 2]}, "params.designs", "must be a whole number"),
    ("compare unknown key", "compare", {"designs": [1, 2], "extra": 1}, "params.extra", "unknown field"),
    ("sweep unknown key", "sweep", {**SWEEP, "node": [1]}, "params.node", "unknown field"),
    ("recommend unknown key", "recommend", {"tokens": 1e12, "budget": 1}, "params.budget", "unknown field"),
    ("compare ids text", "compare", {"designs": ["a", "b"]}, "params.designs", "must be a number"),
    ("compare ids lists", "compare", {"designs": [[1], [2]]}, "params.designs", "must be a number"),
    ("compare null id", "compare", {"designs": [None, 1]}, "params.designs.0", "may not be null"),
    ("compare not a list", "compare", {"designs": "1,2"}, "params.designs", "must be a list"),
    ("sweep preset list", "sweep", {**SWEEP, "model": {"preset": []}}, "params.model.preset", "must be"),
    ("sweep preset object", "sweep", {**SWEEP, "model": {"preset": {}}}, "params.model.preset", "must be"),
    (
        "sweep models preset",
        "sweep",
        {**SWEEP, "models": [{"preset": "llama3-8b"}, {"preset": [1]}]},
        "params.models.1.preset",
        "must be",
    ),
    (
        "recommend preset list",
        "recommend",
        {"model": {"preset": []}, "tokens": 1e12},
        "params.model.preset",
        "must be",
    ),
    (
        "recommend preset object",
        "recommend",
        {"model": {"preset": {}}, "tokens": 1e12},
        "params.model.preset",
        "must be",
    ),
]


@pytest.mark.parametrize(
    ("case", "kind", "params", "field", "reason"), ANALYSIS_CASES, ids=[c[0] for c in ANALYSIS_CASES]
)
def test_malformed_analysis_params_are_a_400_naming_the_field(
    case: str, kind: str, params: dict[str, Any], field: str, reason: str, catalog: Any, user_client: Any
) -> None:
    if "{design}" in json.dumps(params):  # saving a design runs validation, pricing and the engines: only for
        # the cases whose params name it (the others would not read it)
        created = user_client.post("/api/v1/designs/", {"name": "x", "spec": SPEC}, format="json")
        assert created.status_code == 201, created.content
        params = json.loads(json.dumps(params).replace('"{design}"', str(created.json()["id"])))
    response = user_client.post("/api/v1/analyses/", {"kind": kind, "params": params}, format="json")
    _assert_envelope(response, 400, field, reason)
    assert not Analysis.objects.exists()


@pytest.mark.parametrize(
    "prefix",
    [
        "accelerators",
        "server-types",
        "fabrics",
        "switches",
        "storage-tiers",
        "cloud-offerings",
        "cloud-prices",
    ],
)
@pytest.mark.parametrize("lookup", ["%00", "a%00b", "%F0%9F%92%A9", "x" * 300])
def test_a_catalog_lookup_that_is_no_slug_is_a_404_without_sign_in(
    prefix: str, lookup: str, catalog: Any, api_client: Any
) -> None:
    response = api_client.get(f"/api/v1/{prefix}/{lookup}/")
    error = _assert_envelope(response, 404, None)
    assert error["code"] == "not_found"


def test_catalog_lookups_by_slug_and_id_still_answer(catalog: Any, api_client: Any) -> None:
    for prefix, slug in (
        ("accelerators", "h100-sxm"),
        ("fabrics", "ib-ndr400"),
        ("cloud-offerings", "aws-p5-48xlarge"),
    ):
        response = api_client.get(f"/api/v1/{prefix}/{slug}/")
        assert response.status_code == 200 and response.json()["slug"] == slug
    price = CloudPrice.objects.order_by("pk").first()
    response = api_client.get(f"/api/v1/cloud-prices/{price.pk}/")
    assert response.status_code == 200 and response.json()["id"] == price.pk


LLAMA_8B = {"preset": "llama3-8b"}
CUSTOM = {"layers": 32, "hidden": 4096, "heads": 32, "vocab": 128256}
SWEEP_BOUNDS = [
    (
        "hidden 1e300",
        "sweep",
        {"model": {**LLAMA_8B, "hidden": 1e300}},
        "params.model.hidden",
        "from 1 to 10,000,000, got 1e+300",
    ),
    ("layers 1e300", "sweep", {"model": {**LLAMA_8B, "layers": 1e300}}, "params.model.layers", "from 1 to"),
    ("heads zero", "sweep", {"model": {**LLAMA_8B, "heads": 0}}, "params.model.heads", "from 1 to"),
    (
        "vocab 1e12",
        "sweep",
        {"model": {**LLAMA_8B, "vocab": 10**12}},
        "params.model.vocab",
        "from 1 to 100,000,000",
    ),
    ("seq_len negative", "sweep", {"model": {**LLAMA_8B, "seq_len": -1}}, "params.model.seq_len", "from 1"),
    (
        "experts 1e9",
        "sweep",
        {"model": {**LLAMA_8B, "experts": 10**9, "top_k": 2}},
        "params.model.experts",
        "from 0 to 100,000",
    ),
    (
        "second model's ffn",
        "sweep",
        {"models": [LLAMA_8B, {**LLAMA_8B, "ffn_hidden": 1e300}]},
        "params.models.1.ffn_hidden",
        "from 1 to",
    ),
    ("custom shape", "sweep", {"model": {**CUSTOM, "seq_len": 1e300}}, "params.model.seq_len", "from 1 to"),
    (
        "batch 1e300 tokens",
        "sweep",
        {"training": {"tokens": 1e12, "global_batch_tokens": 1e300}},
        "params.training.global_batch_tokens",
        "at most 1e+10",
    ),
    (
        "batch 1e300 sequences",
        "sweep",
        {"training": {"tokens": 1e12, "global_batch_seqs": 1e300}},
        "params.training.global_batch_seqs",
        "at most 1e+08",
    ),
    (
        "tokens 1e300",
        "sweep",
        {"training": {"tokens": 1e300, "global_batch_tokens": 4194304}},
        "params.training.tokens",
        "at most 1e+16",
    ),
    (
        "recommend hidden 1e300",
        "recommend",
        {"model": {**LLAMA_8B, "hidden": 1e300}, "tokens": 1e12},
        "params.model.hidden",
        "from 1 to 10,000,000",
    ),
    (
        "recommend custom seq_len",
        "recommend",
        {"model": {**CUSTOM, "seq_len": 10**9}, "tokens": 1e12},
        "params.model.seq_len",
        "from 1 to 100,000,000",
    ),
]


@pytest.mark.parametrize(
    ("case", "kind", "change", "field", "reason"), SWEEP_BOUNDS, ids=[c[0] for c in SWEEP_BOUNDS]
)
def test_a_sweep_with_an_absurd_shape_is_refused_at_creation(
    case: str, kind: str, change: dict[str, Any], field: str, reason: str, catalog: Any, user_client: Any
) -> None:
    params = {**SWEEP, "model": LLAMA_8B, **change} if kind == "sweep" else change
    response = user_client.post("/api/v1/analyses/", {"kind": kind, "params": params}, format="json")
    _assert_envelope(response, 400, field, reason)
    assert not Analysis.objects.exists()


def test_a_sweep_at_the_largest_shape_is_accepted(catalog: Any, user_client: Any) -> None:
    model = {
        "preset": "llama3-8b",
        "hidden": 10_000_000,
        "heads": 100_000,
        "kv_heads": 100_000,
        "layers": 100_000,
    }
    body = {"kind": "sweep", "params": {**SWEEP, "model": model}}
    response = user_client.post("/api/v1/analyses/", body, format="json")
    assert response.status_code == 202, response.content[:500]
    assert Analysis.objects.get().params["model"]["hidden"] == 10_000_000
