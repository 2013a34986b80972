"""Designs API: versions, concurrency, clone, evaluation, permission matrix, share links."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from rest_framework.test import APIClient

from apps.designs.models import Design, DesignVersion, ShareLink

LAYOUT = {
    "tp": 8,
    "pp": 4,
    "dp": 16,
    "cp": 1,
    "vpp": 1,
    "micro_batch": 1,
    "recompute": "selective",
    "sharding": "zero1",
    "sequence_parallel": True,
}
SPEC = {
    "workload": {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_tokens": 4194304, "precision": "bf16"},
    },
    "cluster": {
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nodes": 64,
        "fabric": "ib-ndr400",
        "storage": "lustre",
    },
    "parallelism": LAYOUT,
    "costs": {
        "horizon_years": 2,
        "utilization": 0.7,
        "cloud": [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}],
    },
}


@pytest.fixture
def other_client(db: Any, django_user_model: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(django_user_model.objects.create_user("bob", password="pw-bob-12345"))
    return client


def _create(client: Any, **overrides: Any) -> dict[str, Any]:
    response = client.post(
        "/api/v1/designs/", {"name": "70B on 512 H100", "spec": SPEC, **overrides}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_saves_version_one_and_fills_defaults(user_client: Any, catalog: Any) -> None:
    body = _create(user_client)
    assert body["version"] == 1 and body["owner"] == "alice"
    assert body["spec"]["cluster"]["oversubscription"] == 1.0  # default filled
    assert DesignVersion.objects.filter(design_id=body["id"]).count() == 1


def test_tp_that_does_not_divide_heads_is_a_400_naming_the_field_and_saves_nothing(
    user_client: Any, catalog: Any
) -> None:
    spec = copy.deepcopy(SPEC)
    spec["parallelism"] = {**LAYOUT, "tp": 3, "dp": 16}
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": spec}, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert any(f.startswith("spec.parallelism") for f in fields), fields
    assert not Design.objects.filter(name="bad").exists()


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("cluster", "accelerator"), "no-such-gpu", "spec.cluster.accelerator"),
        (("cluster", "nodes"), 0, "spec.cluster.nodes"),
        (("cluster", "nodes"), "many", "spec.cluster.nodes"),
        (("workload", "training", "tokens"), -5, "spec.workload.training.tokens"),
        (("costs", "utilization"), 1.5, "spec.costs.utilization"),
        (("workload", "model", "preset"), "gpt-9", "spec.workload.model.preset"),
    ],
)
def test_bad_spec_values_name_the_field(
    user_client: Any, catalog: Any, path: tuple[str, ...], value: Any, field: str
) -> None:
    spec = copy.deepcopy(SPEC)
    target = spec
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    assert field in response.json()["error"]["fields"], response.json()
    assert Design.objects.count() == 0


def test_every_edit_makes_a_version_and_history_is_kept(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    spec = copy.deepcopy(SPEC)
    spec["cluster"]["nodes"] = 32
    spec["parallelism"] = {**LAYOUT, "dp": 8}
    response = user_client.patch(
        f"/api/v1/designs/{design['id']}/", {"version": 1, "spec": spec}, format="json"
    )
    assert response.status_code == 200 and response.json()["version"] == 2
    assert response["ETag"] == '"2"'
    history = user_client.get(f"/api/v1/designs/{design['id']}/versions/").json()["results"]
    assert [v["number"] for v in history] == [2, 1]
    assert [v["spec"]["cluster"]["nodes"] for v in history] == [32, 64]


def test_second_save_of_the_same_version_is_a_conflict(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/"
    assert user_client.patch(url, {"name": "first"}, format="json", HTTP_IF_MATCH='"1"').status_code == 200
    response = user_client.patch(url, {"name": "second"}, format="json", HTTP_IF_MATCH='"1"')
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert Design.objects.get(pk=design["id"]).name == "first"
    assert user_client.patch(url, {"name": "x"}, format="json").status_code == 428


def test_conflict_and_missing_version_answer_the_whole_envelope(user_client: Any, catalog: Any) -> None:
    """Both come from the one exception handler (a domain Conflict, a DRF 428), not a body built in the view:
    the envelope's three keys, the current version named under "version"."""
    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/"
    assert user_client.patch(url, {"name": "first"}, format="json", HTTP_IF_MATCH='"1"').status_code == 200
    response = user_client.patch(url, {"name": "second", "version": 1}, format="json")
    assert (response.status_code, response.json()) == (
        409,
        {
            "error": {
                "code": "conflict",
                "message": "design is at version 2; your edit was based on version 1. "
                "Reload it, re-apply your change and save again.",
                "fields": {"version": ["current version is 2"]},
            }
        },
    )
    response = user_client.patch(url, {"name": "x"}, format="json")
    assert (response.status_code, response.json()) == (
        428,
        {
            "error": {
                "code": "version_required",
                "message": 'Send the version you edited ("version" in the body or an If-Match header) so '
                "concurrent edits cannot overwrite each other.",
                "fields": {},
            }
        },
    )


def test_clone_copies_the_current_spec_for_the_cloner(
    user_client: Any, other_client: Any, catalog: Any
) -> None:
    design = _create(user_client, visibility="organisation")
    response = other_client.post(f"/api/v1/designs/{design['id']}/clone/", {}, format="json")
    assert response.status_code == 201
    clone = response.json()
    assert clone["owner"] == "bob" and clone["version"] == 1 and clone["spec"] == design["spec"]


def test_evaluate_returns_training_and_cost_for_a_fixed_layout(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    response = user_client.post(f"/api/v1/designs/{design['id']}/evaluate/")
    assert response.status_code == 200
    body = response.json()
    assert body["training"]["fits"] is True and body["training"]["parallelism"]["tp"] == 8
    assert body["design"]["version"] == 1
    keys = {option["key"] for option in body["options"]}
    assert {"own", "aws-p5-48xlarge:on_demand"} <= keys
    on_demand = next(o for o in body["options"] if o["key"] == "aws-p5-48xlarge:on_demand")
    # 64 nodes × $55.04/h: the run's cost is days × 24 × 64 × 55.04 (no managed overhead by default).
    assert on_demand["run_cost_usd"] == pytest.approx(on_demand["days"] * 24 * 64 * 55.04, rel=1e-9)
    assert any(a["name"].startswith("catalog.h100-sxm") and a["source"] for a in body["assumptions"])


def test_evaluating_the_same_version_twice_reuses_the_stored_result(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    first = user_client.post(f"/api/v1/designs/{design['id']}/evaluate/").json()
    second = user_client.post(f"/api/v1/designs/{design['id']}/evaluate/").json()
    assert first["computed_at"] == second["computed_at"]


def test_a_stored_evaluation_reads_the_same_as_when_it_was_computed(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/evaluate/"
    computed = user_client.post(url)
    stored = user_client.post(url)  # sent as the stored JSON text
    assert stored.status_code == 200 and stored["Content-Type"] == "application/json"
    assert stored.json() == computed.json()
    indented = user_client.post(url, HTTP_ACCEPT="application/json; indent=2")
    assert indented.content.startswith(b'{\n  "') and indented.json() == computed.json()
    assert user_client.post(url, HTTP_ACCEPT="text/html").status_code == 200  # the browsable API


def test_a_stored_evaluation_takes_two_design_queries(user_client: Any, catalog: Any) -> None:
    """The design with its version, then the stored result (the catalog's own queries are not counted, nor
    the read of the owner's calibration switch, which joins the design to find its owner)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from clusterdesigner import memo

    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/evaluate/"
    user_client.post(url)
    # The save stored the evaluation and the first read kept its text in this process's memo: a process that
    # has not served it yet reads the stored row.
    memo.EVALUATIONS.clear()
    with CaptureQueriesContext(connection) as queries:
        assert user_client.post(url).status_code == 200
    sql = [q["sql"] for q in queries.captured_queries]
    # On PostgreSQL the version and the switch are executions of prepared statements named for what they
    # read (clusterdesigner.prepared).
    switch = [
        q for q in sql if '"measurements_calibrationsetting"' in q or q.startswith("EXECUTE designs_stamps_")
    ]
    assert len([q for q in sql if q not in switch and ('"designs_' in q or "designs_version" in q)]) == 2
    assert len(switch) == 1


def test_evaluate_takes_an_earlier_version_and_404s_for_a_missing_one(
    user_client: Any, other_client: Any, catalog: Any
) -> None:
    design = _create(user_client)
    url = f"/api/v1/designs/{design['id']}/evaluate/"
    user_client.patch(f"/api/v1/designs/{design['id']}/", {"version": 1, "name": "renamed"}, format="json")
    assert user_client.post(url).json()["design"] == {"id": design["id"], "name": "renamed", "version": 2}
    assert user_client.post(url + "?version=1").json()["design"]["version"] == 1
    missing = user_client.post(url + "?version=3")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert user_client.post(url + "?version=x").status_code == 400
    # A design you cannot see is a 404 before any parameter is looked at.
    assert other_client.post(url + "?version=x").status_code == 404


VERBS = [
    ("get", ""),
    ("patch", ""),
    ("delete", ""),
    ("post", "evaluate/"),
    ("get", "versions/"),
    ("get", "share-links/"),
    ("post", "share-links/"),
]


@pytest.mark.parametrize(("verb", "suffix"), VERBS)
def test_permission_matrix(
    user_client: Any, other_client: Any, api_client: Any, catalog: Any, verb: str, suffix: str
) -> None:
    private = _create(user_client, name="private")
    shared = _create(user_client, name="shared", visibility="organisation")
    body = {"version": 1, "name": "renamed"} if verb == "patch" else {}

    def call(client: Any, design: dict[str, Any]) -> int:
        return getattr(client, verb)(
            f"/api/v1/designs/{design['id']}/{suffix}", body, format="json"
        ).status_code

    # Anonymous: 401 (token/session auth, nothing revealed).
    assert call(api_client, private) in (401, 403) and call(api_client, shared) in (401, 403)
    # Another user: a private design does not exist for them.
    assert call(other_client, private) == 404
    reads = (verb == "get" and suffix in ("", "versions/")) or (verb == "post" and suffix == "evaluate/")
    assert call(other_client, shared) == (200 if reads else 404)
    # The owner can do everything.
    assert call(user_client, private) in (200, 201, 204)


def test_lists_show_only_what_is_visible(user_client: Any, other_client: Any, catalog: Any) -> None:
    _create(user_client, name="mine-private")
    _create(user_client, name="mine-shared", visibility="organisation")
    names = {d["name"] for d in other_client.get("/api/v1/designs/").json()["results"]}
    assert names == {"mine-shared"}
    assert {d["name"] for d in user_client.get("/api/v1/designs/", {"mine": "true"}).json()["results"]} == {
        "mine-private",
        "mine-shared",
    }


def test_share_link_reads_without_login_and_never_writes(
    user_client: Any, api_client: Any, catalog: Any
) -> None:
    design = _create(user_client)
    created = user_client.post(
        f"/api/v1/designs/{design['id']}/share-links/", {"label": "finance"}, format="json"
    )
    assert created.status_code == 201
    token = created.json()["token"]
    assert len(token) >= 43  # 32 random bytes, base64url: 256 bits
    assert not ShareLink.objects.filter(token_hash=token).exists()  # only the hash is stored
    url = f"/api/v1/shared/{token}/"
    response = api_client.get(url)
    assert response.status_code == 200 and response.json()["evaluation"]["training"]["fits"] is True
    for verb in ("post", "put", "patch", "delete"):
        assert getattr(api_client, verb)(url, {}, format="json").status_code in (403, 405)
    links = user_client.get(f"/api/v1/designs/{design['id']}/share-links/").json()["results"]
    assert links[0]["open_count"] == 1 and links[0]["last_opened_at"]


def test_share_link_is_frozen_at_its_version(user_client: Any, api_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    token = user_client.post(f"/api/v1/designs/{design['id']}/share-links/", {}, format="json").json()[
        "token"
    ]
    user_client.patch(f"/api/v1/designs/{design['id']}/", {"version": 1, "name": "changed"}, format="json")
    assert api_client.get(f"/api/v1/shared/{token}/").json()["version"] == 1


def test_revoked_expired_and_wrong_links_are_404(user_client: Any, api_client: Any, catalog: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    design = _create(user_client)
    made = user_client.post(f"/api/v1/designs/{design['id']}/share-links/", {}, format="json").json()
    revoked = user_client.post(f"/api/v1/designs/{design['id']}/share-links/{made['id']}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["active"] is False
    assert api_client.get(f"/api/v1/shared/{made['token']}/").status_code == 404
    expiring = user_client.post(f"/api/v1/designs/{design['id']}/share-links/", {}, format="json").json()
    ShareLink.objects.filter(pk=expiring["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert api_client.get(f"/api/v1/shared/{expiring['token']}/").status_code == 404
    assert api_client.get(f"/api/v1/shared/{'x' * 43}/").status_code == 404
    past = user_client.post(
        f"/api/v1/designs/{design['id']}/share-links/", {"expires_at": "2001-01-01T00:00:00Z"}, format="json"
    )
    assert past.status_code == 400 and "expires_at" in past.json()["error"]["fields"]


def test_search_layout_evaluation_starts_an_analysis(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    design = _create(user_client, spec={**SPEC, "parallelism": "search"})
    with django_capture_on_commit_callbacks(execute=True):
        response = user_client.post(f"/api/v1/designs/{design['id']}/evaluate/")
    assert response.status_code == 202
    started = response.json()
    assert started["url"] == f"http://testserver/api/v1/analyses/{started['id']}/"
    analysis = user_client.get(started["url"]).json()
    assert (
        analysis["status"] == "succeeded"
        and analysis["progress"]["done"] == analysis["progress"]["total"] == 1
    )
    assert analysis["result"]["training"]["fits"] is True
    assert analysis["result"]["training"]["layouts_evaluated"] > 1000
