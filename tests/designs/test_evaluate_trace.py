"""Which project files "evaluate a design" passes through (issue 34: at most 6 outside the engine), measured.

The rule, as docs/evaluate-trace.md states it: a file counts when a function (or method, lambda or
comprehension) defined in it runs during the request, as ``sys.setprofile`` sees the calls (CI runs Python
3.11, before ``sys.monitoring``). Counted: the project's own ``.py`` files outside ``clusterdesigner/engine/``
(the engine is the math, composed in one place; what it does is the engine's layout tests' business) and
outside ``tests/``; module bodies run by an import are not calls of a function and are left out (the requests
are warmed up first anyway). Plumbing is subtracted: the files of the project package (``clusterdesigner/``)
whose functions run, measured the same way, on plain authenticated API requests that touch no design: the
API root read, a write the API refuses (403, the error envelope), a read of an object that is not there
(404) and a write whose body is not JSON (400, the parser's). App files are never subtracted. The evaluation
is traced through the API client with an API token (the door scripts use) in its three cases: nothing stored
(the engines run and the result is stored), stored but not in this process's memo (the stored text by input
hash), and in the memo.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connection, connections
from rest_framework.test import APIClient

from apps.designs.models import Evaluation
from apps.designs.services import design_create
from apps.measurements.models import CalibrationSetting
from apps.measurements.services import run_validate
from apps.teams.services import owned_move, team_create
from clusterdesigner import memo
from clusterdesigner.api_tokens import api_token_create
from tests.designs.test_api import SPEC
from tests.measurements.conftest import RUN

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evaluate-trace.md"
LIMIT = 6  # issue 34's bound on the project files outside the engine that evaluating a design passes through
RUNS = "/api/v1/measured-runs/"


def _project_file(path: str) -> str | None:
    """``path`` relative to the project root when it is a counted file (the rule above), else None."""
    try:
        relative = Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None  # the standard library, Django, DRF and the rest of the venv
    if not relative.endswith(".py") or relative.startswith(("tests/", "clusterdesigner/engine/")):
        return None
    if "site-packages" in relative.split("/"):  # a venv inside the checkout (.ci/run makes .venv there)
        return None
    return relative


def traced(request: Callable[[], Any]) -> tuple[Any, set[str]]:
    """The answer of ``request()`` and the counted files whose functions ran while it did."""
    seen: set[str] = set()
    names: dict[str, str | None] = {}  # code file -> counted path, so each file is resolved once

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":
            return
        path = frame.f_code.co_filename
        if path not in names:
            names[path] = _project_file(path)
        if names[path]:
            seen.add(str(names[path]))

    sys.setprofile(profile)
    try:
        answer = request()
    finally:
        sys.setprofile(None)
    return answer, seen


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    memo.clear_all()
    yield
    memo.clear_all()


@pytest.fixture
def token_client(alice: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=alice, scope='designs').key}")
    return client


def plumbing(client: APIClient) -> set[str]:
    """The project package's files every API request passes (the rule above), from four plain requests."""
    requests: list[tuple[Callable[[], Any], int]] = [
        (lambda: client.get("/api/v1/"), 200),
        (lambda: client.post("/api/v1/"), 403),  # refused (IsStaffOrReadOnly): the error envelope
        (lambda: client.get("/api/v1/sites/999999/"), 404),  # no such object: the envelope's 404
        # a body that is not JSON: the parser's 400 in the envelope
        (lambda: client.post("/api/v1/sites/", "{", content_type="application/json"), 400),
    ]
    found: set[str] = set()
    for request, status in requests:
        request()  # warm: first-request imports and compiled queries
        answer, files = traced(request)
        assert answer.status_code == status, answer.content
        found |= {f for f in files if f.startswith("clusterdesigner/")}
    return found


def doc_table(heading: str) -> set[str]:
    """The project files outside the engine listed by the table under ``## heading`` of the doc."""
    section = DOC.read_text().split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    files = re.findall(r"^\| [^|]+ \| `([^`]+\.py)` \|", section, flags=re.MULTILINE)
    return {f for f in files if not f.startswith("clusterdesigner/engine/")}  # the engine's rows: not counted


def test_evaluating_a_design_passes_through_at_most_six_project_files(
    alice: Any, catalog: Any, token_client: APIClient
) -> None:
    design = design_create(owner=alice, name="traced", spec=SPEC)
    url = f"/api/v1/designs/{design.pk}/evaluate/"
    assert token_client.post(url).status_code == 200  # warm
    base = plumbing(token_client)
    # The rule caught the plumbing (token authentication, the envelope) and nothing of an app.
    assert {"clusterdesigner/api_tokens.py", "clusterdesigner/api.py"} <= base

    _, traces = _traced_cases(token_client, url, design)
    assert Evaluation.objects.filter(version__design=design).count() == 1  # the miss stored it
    cases = {name: files - base for name, files in traces.items()}
    path = set().union(*cases.values())
    print(f"\nevaluate: {len(path)} project files outside the engine, plumbing subtracted ({sorted(base)})")
    for name, files in cases.items():
        print(f"  {name}: {len(files)}: {sorted(files)}")
    assert path == doc_table("Evaluate"), "docs/evaluate-trace.md's table says another set of files"
    assert len(path) <= LIMIT, sorted(path)


def _team_design_calibrated(alice: Any) -> tuple[Any, Any]:
    """A team's design whose calibration is switched on, with three team runs that give it a factor, written
    through the measurements API (which keeps the fit on the team's switch)."""
    team = team_create(user=alice, name="Infra")
    design = design_create(owner=alice, name="team traced", spec=SPEC)
    owned_move(user=alice, obj=design, team_id=team.pk)
    client = APIClient()
    client.force_authenticate(alice)
    for nodes, ratio in enumerate([1.1, 1.21, 1.331], start=1):
        data = {**RUN, "nodes": nodes, "dp": 4 * nodes, "global_batch": 128 * nodes}
        estimated = run_validate(data=data)["step_time_s"]["total"]
        body = {**data, "step_time_s": estimated * ratio, "team": team.pk}
        assert client.post(RUNS, body, format="json").status_code == 201
    switched = client.post(f"{RUNS}calibration/", {"enabled": True, "team": team.pk}, format="json")
    assert switched.status_code == 200
    return team, design


def _traced_cases(client: APIClient, url: str, design: Any) -> tuple[dict[str, Any], dict[str, set[str]]]:
    """The three cases of the rule (nothing stored, stored, in the memo): the answer and the counted files."""
    Evaluation.objects.filter(version__design=design).delete()
    memo.clear_all()
    miss, miss_files = traced(lambda: client.post(url))
    memo.clear_all()
    stored, stored_files = traced(lambda: client.post(url))
    hit, hit_files = traced(lambda: client.post(url))
    assert miss.status_code == stored.status_code == hit.status_code == 200
    assert stored.json() == hit.json() and stored.json()["training"] == miss.json()["training"]
    return hit.json(), {"miss": miss_files, "stored": stored_files, "memo hit": hit_files}


def test_a_team_design_with_calibration_on_passes_the_same_six_files(
    alice: Any, catalog: Any, token_client: APIClient
) -> None:
    """A team's design with its calibration switched on takes the personal design's path: the factors are
    read with the switch (the measurements app keeps them fitted when the runs or the switch change), not
    fitted on the team's runs by the request, and the team's label is the engine's statement's own."""
    team, design = _team_design_calibrated(alice)
    url = f"/api/v1/designs/{design.pk}/evaluate/"
    assert token_client.post(url).status_code == 200  # warm
    base = plumbing(token_client)
    answer, cases = _traced_cases(token_client, url, design)
    # Applied, from the three team runs: the geometric mean of 1.1, 1.1², 1.1³ is 1.1² = 1.21.
    statement = answer["calibration"]
    assert statement["scope"] == "team" and statement["holder"] == "team Infra" and statement["applied"]
    assert statement["runs"] == 3 and statement["factor"] == pytest.approx(1.21, rel=1e-9)
    for name, files in cases.items():
        assert files - base == doc_table("Evaluate"), name
    assert len(doc_table("Evaluate")) <= LIMIT


def test_after_a_catalog_change_the_first_evaluation_fits_the_runs_again(
    alice: Any, catalog: Any, token_client: APIClient
) -> None:
    """The kept fit was made on another catalog (the runs are estimated against it; an engine release is
    the same case): the first evaluation fits the team's runs again through the measurements app and keeps
    the fit, as the doc's second table says, and the evaluations after it take the six files again."""
    team, design = _team_design_calibrated(alice)
    url = f"/api/v1/designs/{design.pk}/evaluate/"
    before = token_client.post(url).json()  # warm, and the answer from the fit kept by the API's writes
    base = plumbing(token_client)
    kept = CalibrationSetting.objects.get(team=team)
    CalibrationSetting.objects.filter(pk=kept.pk).update(fitted_catalog="another catalog's digest")
    memo.clear_all()
    refit, refit_files = traced(lambda: token_client.post(url))
    assert refit.status_code == 200 and refit.json() == before  # the same fit, the same stored evaluation
    assert refit_files - base == doc_table("Evaluate") | doc_table("Calibration fitted again")
    again = CalibrationSetting.objects.get(team=team)
    assert again.fitted_catalog == kept.fitted_catalog and again.fit == kept.fit
    assert again.changed_at == kept.changed_at  # the runs did not change: nor does the memo's key
    memo.clear_all()
    after, after_files = traced(lambda: token_client.post(url))
    assert after.json() == before and after_files - base == doc_table("Evaluate")


def test_saving_a_design_is_traced_as_the_doc_says(alice: Any, catalog: Any, token_client: APIClient) -> None:
    """The save (POST /api/v1/designs/) traced by the same rule; its count is reported, not bounded."""
    body = {"name": "saved", "spec": SPEC}
    assert token_client.post("/api/v1/designs/", body, format="json").status_code == 201  # warm
    base = plumbing(token_client)
    answer, files = traced(lambda: token_client.post("/api/v1/designs/", body, format="json"))
    assert answer.status_code == 201, answer.json()
    path = files - base
    print(f"\nsave: {len(path)} project files outside the engine: {sorted(path)}")
    assert path == doc_table("Save"), "docs/evaluate-trace.md's save table says another set of files"


def test_a_kept_answer_at_the_wsgi_door_is_traced_as_the_doc_says(
    alice: Any, catalog: Any, token_client: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts reach evaluate through gunicorn, whose WSGI application answers a stored evaluation that this
    worker answered before from its kept answer (clusterdesigner.fastpath) after the probe's reads: traced by
    the same rule, plumbing measured the same way at that door (the four plain requests through the WSGI
    application), its files are the doc's "The kept answer" table."""
    from clusterdesigner.fastpath import FastPath
    from tests.project.test_fast_path import Django, call

    design = design_create(owner=alice, name="traced", spec=SPEC)
    base = plumbing(token_client)
    key = api_token_create(user=alice, scope="designs").key  # alice's one token from now on
    monkeypatch.setattr(connections[DEFAULT_DB_ALIAS], "close_at", None)  # the test's connection, kept
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        django = Django()
        app = FastPath(django)
        door: set[str] = set()
        for method, path in (("GET", "/api/v1/"), ("POST", "/api/v1/"), ("GET", "/api/v1/sites/999999/")):
            call(app, method, path, authorization=f"Token {key}")
            _, files = traced(lambda m=method, p=path: call(app, m, p, authorization=f"Token {key}"))
            door |= {f for f in files if f.startswith("clusterdesigner/")}
        url = f"/api/v1/designs/{design.pk}/evaluate/"
        for _ in range(3):  # the token's last use written, then Django's answer kept
            call(app, "POST", url, authorization=f"Token {key}")
        calls = django.calls
        answer, files = traced(lambda: call(app, "POST", url, authorization=f"Token {key}"))
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert answer.code == 200 and django.calls == calls  # the kept answer, not Django's stack
    assert "clusterdesigner/fastpath.py" in door
    path = files - base - door
    print(f"\nkept answer: {len(path)} project files outside the engine: {sorted(path)}")
    table = doc_table("The kept answer")
    # Elsewhere than on PostgreSQL the probe makes the view's own reads (the doc's two rows marked so).
    elsewhere = {"apps/designs/selectors.py", "apps/designs/services.py"}
    want = table - elsewhere if connection.vendor == "postgresql" else table
    assert path == want, "docs/evaluate-trace.md's kept-answer table says otherwise"
    assert len(table) <= LIMIT
