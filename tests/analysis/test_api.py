"""Analyses API (tasks run in-process here; tests/integration runs them in real workers)."""

from __future__ import annotations

from typing import Any

import pytest

from apps.analysis.models import Analysis, AnalysisChunk
from apps.analysis.services import analysis_run_chunk

SWEEP = {
    "kind": "sweep",
    "params": {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
        "accelerators": ["h100-sxm", "a100-80gb"],
        "nodes": [1, 2, 4],
        "pricing_models": ["on_demand", "own"],
    },
}


RECOMMEND = {
    "kind": "recommend",
    "params": {
        "model": {"preset": "llama3-8b"},
        "tokens": 1e11,
        "deadline_days": 30,
        "interruption_tolerance": "none",
        "accelerators": ["h100-sxm", "a100-80gb"],
        "nodes": [1, 2, 4, 8],
    },
}


def _post(client: Any, payload: dict[str, Any], capture: Any) -> Any:
    with capture(execute=True):
        return client.post("/api/v1/analyses/", payload, format="json")


def test_sweep_answers_202_and_completes_with_progress(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    response = _post(user_client, SWEEP, django_capture_on_commit_callbacks)
    assert response.status_code == 202 and response["Location"].endswith(
        f"/api/v1/analyses/{response.json()['id']}/"
    )
    body = user_client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded"
    assert body["progress"] == {
        "done": 12,
        "total": 12,
        "fraction": 1.0,
    }  # 2 accelerators × 3 sizes × 2 models
    rows = body["result"]["rows"]
    assert len(rows) == 12
    h100 = {(r["nodes"], r["pricing_model"]): r for r in rows if r["accelerator"] == "h100-sxm"}
    # More nodes finish sooner (the 8B model scales well from 8 to 32 GPUs).
    assert h100[(4, "on_demand")]["days"] < h100[(2, "on_demand")]["days"] < h100[(1, "on_demand")]["days"]
    front = body["result"]["pareto"]
    assert front and all(r["cost_usd"] is not None for r in front)
    days = [r["days"] for r in front]
    assert days == sorted(days, reverse=True)  # cheapest first, each next one faster


def test_same_input_twice_returns_the_stored_analysis(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    first = _post(user_client, SWEEP, django_capture_on_commit_callbacks).json()
    second = _post(user_client, SWEEP, django_capture_on_commit_callbacks).json()
    assert first["id"] == second["id"] and Analysis.objects.count() == 1


def test_a_chunk_run_twice_is_counted_once(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    body = _post(user_client, SWEEP, django_capture_on_commit_callbacks).json()
    chunk = AnalysisChunk.objects.filter(analysis_id=body["id"]).first()
    analysis_run_chunk(chunk_id=chunk.pk)  # a redelivered message
    again = user_client.get(body["url"]).json()
    assert again["progress"]["done"] == 12 and len(again["result"]["rows"]) == 12


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        (
            {"kind": "sweep", "params": {**SWEEP["params"], "accelerators": ["warp-drive"]}},
            "params.accelerators",
        ),
        ({"kind": "sweep", "params": {**SWEEP["params"], "nodes": [0]}}, "params.nodes.0"),
        ({"kind": "compare", "params": {"designs": [1]}}, "params.designs"),
        ({"kind": "teleport", "params": {}}, "kind"),
        # What would fail every row of a sweep is refused before it is queued, on the sweep's own names.
        (
            {"kind": "sweep", "params": {**SWEEP["params"], "model": {"preset": "gpt-17"}}},
            "params.model.preset",
        ),
        (
            {
                "kind": "sweep",
                "params": {**SWEEP["params"], "models": [{"preset": "llama3-8b"}, {"layers": 2}]},
            },
            "params.models.1.hidden",
        ),
        (
            {
                "kind": "sweep",
                "params": {**SWEEP["params"], "training": {"tokens": -1, "global_batch_tokens": 2097152}},
            },
            "params.training.tokens",
        ),
        ({"kind": "sweep", "params": {**SWEEP["params"], "fabric": "carrier-pigeon"}}, "params.fabric"),
        ({"kind": "sweep", "params": {**SWEEP["params"], "storage": "punch-cards"}}, "params.storage"),
        ({"kind": "sweep", "params": {**SWEEP["params"], "on_prem": {"pue": 0.9}}}, "params.on_prem.pue"),
        (
            {"kind": "sweep", "params": {**SWEEP["params"], "on_prem": {"server_cost": 1}}},
            "params.on_prem.server_cost",
        ),
        (
            {"kind": "sweep", "params": {**SWEEP["params"], "offerings": {"h100-sxm": "aws-p99"}}},
            "params.offerings.h100-sxm",
        ),
        # fp8 on A100 alone fails every row.
        (
            {
                "kind": "sweep",
                "params": {
                    **SWEEP["params"],
                    "accelerators": ["a100-80gb"],
                    "training": {**SWEEP["params"]["training"], "precision": "fp8"},
                },
            },
            "params.training.precision",
        ),
    ],
)
def test_bad_analysis_requests_are_400_and_save_nothing(
    user_client: Any, catalog: Any, payload: dict[str, Any], field: str
) -> None:
    response = user_client.post("/api/v1/analyses/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"], response.json()
    assert Analysis.objects.count() == 0


def test_a_sweep_that_fails_on_some_accelerators_only_is_queued_and_says_so_on_their_rows(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    fp8 = {**SWEEP["params"]["training"], "precision": "fp8"}
    params = {**SWEEP["params"], "nodes": [1], "training": fp8}
    response = _post(user_client, {"kind": "sweep", "params": params}, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    rows = user_client.get(response["Location"]).json()["result"]["rows"]
    a100 = [r for r in rows if r["accelerator"] == "a100-80gb"]
    h100 = [r for r in rows if r["accelerator"] == "h100-sxm"]
    assert a100 and all("has no dense fp8 peak" in r["error"] for r in a100)
    assert h100 and all("error" not in r for r in h100)


def test_another_users_analysis_is_404(
    user_client: Any, catalog: Any, django_user_model: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from rest_framework.test import APIClient

    body = _post(user_client, SWEEP, django_capture_on_commit_callbacks).json()
    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_user("eve", password="pw-eve-12345"))
    assert other.get(body["url"]).status_code == 404


def test_a_run_past_its_deadline_fails_with_a_message(user_client: Any, catalog: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    body = user_client.post(
        "/api/v1/analyses/", SWEEP, format="json"
    ).json()  # on_commit never runs: no worker
    Analysis.objects.filter(pk=body["id"]).update(deadline_at=timezone.now() - timedelta(seconds=1))
    after = user_client.get(body["url"]).json()
    assert after["status"] == "failed" and "time limit" in after["error"] and "0 of 12" in after["error"]


def test_recommend_returns_a_pareto_front_and_reasons(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    payload = {**RECOMMEND, "params": {**RECOMMEND["params"], "budget_usd": 5e6}}
    body = _post(user_client, payload, django_capture_on_commit_callbacks).json()
    result = user_client.get(body["url"]).json()["result"]
    choice = result["recommendation"]
    assert choice["days"] <= 30 and choice["cost_usd"] <= 5e6
    assert all(r["pricing_model"] != "spot" for r in result["rows"])
    assert result["reasons"] and result["rule_of_thumb_gpus"] == "16–64 GPUs"


def test_a_run_whose_queued_chunks_were_lost_is_queued_again_on_read_and_completes(
    user_client: Any, catalog: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    # on_commit never runs here: the chunks were never queued, as if Redis lost them.
    body = user_client.post("/api/v1/analyses/", SWEEP, format="json").json()
    assert user_client.get(body["url"]).json()["status"] == "pending"  # not quiet long enough yet
    quiet = timedelta(seconds=settings.ANALYSIS_STALL_S + 1)
    Analysis.objects.filter(pk=body["id"]).update(created_at=timezone.now() - quiet)
    with django_capture_on_commit_callbacks(execute=True):
        user_client.get(body["url"])
    after = user_client.get(body["url"]).json()
    assert after["status"] == "succeeded", after.get("error")
    assert (after["progress"]["done"], after["progress"]["total"]) == (12, 12)
    assert Analysis.objects.get(pk=body["id"]).requeues == 1
    assert set(AnalysisChunk.objects.filter(analysis_id=body["id"]).values_list("attempts", flat=True)) == {1}


def test_a_chunk_a_worker_holds_keeps_a_quiet_run_from_being_queued_again(
    user_client: Any, catalog: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    body = user_client.post("/api/v1/analyses/", SWEEP, format="json").json()
    long_ago = timezone.now() - timedelta(seconds=settings.ANALYSIS_STALL_S + 1)
    Analysis.objects.filter(pk=body["id"]).update(created_at=long_ago)
    # A worker took chunk 0 long ago and still beats (a slow chunk, not a lost one: its heartbeat is within
    # ANALYSIS_LEASE_S; a lapsed one is tests/analysis/test_dead_worker_reclaim.py).
    AnalysisChunk.objects.filter(analysis_id=body["id"], index=0).update(
        started_at=long_ago, heartbeat_at=timezone.now(), attempts=1
    )
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        after = user_client.get(body["url"]).json()
    assert after["status"] == "pending" and not callbacks
    assert Analysis.objects.get(pk=body["id"]).requeues == 0


@pytest.mark.parametrize(
    ("params", "field", "reason"),
    [
        ({"nodes": [1, 200_000]}, "params.nodes.1", "Ensure this value is less than or equal to 100000."),
        (
            {"accelerators": [f"gpu-{i}" for i in range(21)]},
            "params.accelerators",
            "Ensure this field has no more than 20 elements.",
        ),
    ],
    ids=["a node count over the sweep's limit", "more accelerators than a sweep takes"],
)
def test_recommend_refuses_what_its_sweep_would_refuse_naming_the_params_field(
    user_client: Any, catalog: Any, params: dict[str, Any], field: str, reason: str
) -> None:
    """A recommendation runs a sweep; a list the sweep refuses is refused up front, named where it was sent
    (it was a 400 naming "nodes.1" or "accelerators", paths the request does not have)."""
    payload = {"kind": "recommend", "params": {"tokens": 1e11, **params}}
    response = user_client.post("/api/v1/analyses/", payload, format="json")
    assert (response.status_code, response.json()) == (
        400,
        {"error": {"code": "invalid", "message": f"{field}: {reason}", "fields": {field: [reason]}}},
    )
    assert not Analysis.objects.exists()


def test_recommend_states_each_proposals_capex_or_commitment(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Issue #31: "b200 × 256, own: $381,632" priced one run with the capex unstated. Every owned row now
    # carries its capex and every term row the dollars one term commits (nodes × 730 h × 12 or 36 months ×
    # $/node-h); the recommendation's reason says which.
    params = {"model": {"preset": "llama3-8b"}, "tokens": 1e11, "accelerators": ["b200"], "nodes": [4]}
    body = _post(user_client, {"kind": "recommend", "params": params}, django_capture_on_commit_callbacks)
    result = user_client.get(body.json()["url"]).json()["result"]
    rows = {r["pricing_model"]: r for r in result["rows"]}
    assert rows["own"]["capex_usd"] > rows["own"]["cost_usd"] > 0
    # AWS p6-b200 reserved 1-year $68.36/node-h: 4 × 730 × 12 × 68.36 = $2,395,334.40 for 12 months.
    assert rows["reserved_1y"]["offering"] == "aws-p6-b200-48xlarge"
    assert rows["reserved_1y"]["commitment_usd"] == pytest.approx(4 * 730 * 12 * 68.36, rel=1e-12)
    assert rows["reserved_1y"]["commitment_term_months"] == 12
    assert rows["on_demand"].get("commitment_usd") is None
    choice = result["recommendation"]
    reason = next(r for r in result["reasons"] if "per run" in r)
    if choice["pricing_model"] == "own":
        assert f"${choice['capex_usd']:,.0f} capex" in reason
    else:
        assert f"commits ${choice['commitment_usd']:,.0f} for 12 months" in reason
