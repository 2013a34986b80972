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
from django.utils import timezone
from rest_framework.test import APIClient

from apps.designs.models import Evaluation
from apps.designs.services import design_create
from apps.measurements.models import CalibrationSetting
from apps.teams.services import owned_move, team_create
from clusterdesigner import memo
from clusterdesigner.api_tokens import api_token_create
from tests.designs.test_api import SPEC

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "evaluate-trace.md"
LIMIT = 6  # issue 34's bound on the project files outside the engine that evaluating a design passes through


def _project_file(path: str) -> str | None:
    """``path`` relative to the project root when it is a counted file (the rule above), else None."""
    try:
        relative = Path(path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return None  # the standard library, Django, DRF and the rest of the venv
    if not relative.endswith(".py") or relative.startswith(("tests/", "clusterdesigner/engine/")):
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

    Evaluation.objects.filter(version__design=design).delete()
    memo.clear_all()
    miss, miss_files = traced(lambda: token_client.post(url))
    memo.clear_all()
    stored, stored_files = traced(lambda: token_client.post(url))
    hit, hit_files = traced(lambda: token_client.post(url))
    assert miss.status_code == stored.status_code == hit.status_code == 200
    assert Evaluation.objects.filter(version__design=design).count() == 1  # the miss stored it
    assert stored.json() == hit.json() and stored.json()["training"] == miss.json()["training"]

    cases = {"miss": miss_files - base, "stored": stored_files - base, "memo hit": hit_files - base}
    path = set().union(*cases.values())
    print(f"\nevaluate: {len(path)} project files outside the engine, plumbing subtracted ({sorted(base)})")
    for name, files in cases.items():
        print(f"  {name}: {len(files)}: {sorted(files)}")
    assert path == doc_table("Evaluate"), "docs/evaluate-trace.md's table says another set of files"
    assert len(path) <= LIMIT, sorted(path)


def test_a_team_design_with_calibration_on_also_passes_the_measurements_app(
    alice: Any, catalog: Any, token_client: APIClient
) -> None:
    """The doc's exception, measured: a team's design with its calibration switched on also runs
    apps/measurements/selectors.py (the team's label; the factors fitted on the team's runs), and nothing
    else beyond the six."""
    team = team_create(user=alice, name="Infra")
    design = design_create(owner=alice, name="team traced", spec=SPEC)
    owned_move(user=alice, obj=design, team_id=team.pk)
    CalibrationSetting.objects.create(team=team, enabled=True, changed_at=timezone.now())
    url = f"/api/v1/designs/{design.pk}/evaluate/"
    assert token_client.post(url).status_code == 200  # warm
    base = plumbing(token_client)
    memo.clear_all()
    stored, stored_files = traced(lambda: token_client.post(url))
    hit, hit_files = traced(lambda: token_client.post(url))
    assert stored.status_code == hit.status_code == 200
    assert stored.json()["calibration"]["scope"] == "team"
    extra = {"apps/measurements/selectors.py"}
    assert stored_files - base == hit_files - base == doc_table("Evaluate") | extra


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
