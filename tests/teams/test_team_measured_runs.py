"""Measured runs and the calibration switch belong to a user or a team (issue 40, with the teams work): a
team's members read its runs, summary and switch, its owners and editors change them, a viewer's change and
anyone else's request answer 404 (the page too); a personal run moves into a team; a design's estimate takes
its owner's calibration (the team's for a team design, its maker's for a personal one), the same for every
reader and for a share link, and says so on the API, the design page, the share page and the XLSX/CSV
export."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook

from apps.designs.services import design_create
from apps.measurements.models import CalibrationSetting, MeasuredRun
from apps.measurements.services import run_validate
from apps.teams.services import member_add
from tests.measurements.conftest import RUN
from tests.teams.conftest import ROLES, People

RUNS = "/api/v1/measured-runs/"
ANON = 401
# The team design (Llama 3 70B on 512 H100) is regime hopper/bf16/dense/lt32k/ge512; the runs (1 to 3 nodes)
# are .../lt512 and count under hopper/bf16/dense/lt32k/*, the first key of the design's regime with 3 runs.
KEY = "hopper/bf16/dense/lt32k/*"


def _run(nodes: int, ratio: float, **extra: Any) -> dict[str, Any]:
    """The conftest run on ``nodes`` nodes, measured at ``ratio`` × the engine's step time of its layout."""
    data = {**RUN, "model": dict(RUN["model"]), "nodes": nodes, "dp": 4 * nodes, "global_batch": 128 * nodes}
    estimated = run_validate(data={**data, "measured_on": None})["step_time_s"]["total"]
    return {**data, "step_time_s": estimated * ratio, **extra}


def _add_runs(client: Any, ratios: list[float], team: int | None = None) -> list[int]:
    ids = []
    for nodes, ratio in enumerate(ratios, start=1):
        answer = client.post(RUNS, _run(nodes, ratio, team=team), format="json")
        assert answer.status_code == 201, answer.json()
        assert answer.json()["team"] == team
        ids.append(answer.json()["id"])
    return ids


def test_an_editor_adds_a_run_to_the_team_and_a_viewer_or_outsider_cannot(
    people: People, catalog: Any
) -> None:
    (run_id,) = _add_runs(people.client("editor"), [1.1], team=people.team.pk)
    run = MeasuredRun.objects.get(pk=run_id)
    assert (run.owner, run.team) == (people.editor, people.team)
    # The team's stamp moved (its switch created off), not the editor's own.
    assert CalibrationSetting.objects.get(team=people.team).enabled is False
    assert not CalibrationSetting.objects.filter(owner=people.editor).exists()
    for who in ("viewer", "outsider"):
        refused = people.client(who).post(RUNS, _run(1, 1.0, team=people.team.pk), format="json")
        assert refused.status_code == 400
        assert refused.json()["error"]["fields"]["team"] == ["must be the id of a team you own or edit"]
        csv_text = "model,accelerator,nodes,fabric,tp,dp,global_batch,seq_len,step_time_s,measured_on\n"
        csv_text += "llama3-8b,h100-sxm,1,ib-ndr400,2,4,128,8192,12.0,2026-11-02\n"
        imported = people.client(who).post(f"{RUNS}import/", {"csv": csv_text, "team": people.team.pk})
        assert imported.status_code == 400 and "team" in imported.json()["error"]["fields"]
    assert MeasuredRun.objects.count() == 1  # nothing half-saved
    # A saved run changes holder only through move.
    moved = people.client("editor").patch(f"{RUNS}{run_id}/", {"team": None}, format="json")
    assert moved.status_code == 400 and "move" in moved.json()["error"]["fields"]["team"][0]


@pytest.mark.parametrize("who", ROLES)
def test_who_reads_and_writes_a_teams_runs_summary_and_switch_through_the_api(
    people: People, catalog: Any, who: str
) -> None:
    (run_id,) = _add_runs(people.client("editor"), [1.1], team=people.team.pk)
    team = people.team.pk
    read = {"owner": 200, "editor": 200, "viewer": 200, "outsider": 404, "anonymous": ANON}[who]
    write = {"owner": 200, "editor": 200, "viewer": 404, "outsider": 404, "anonymous": ANON}[who]
    client = people.client(who)
    assert client.get(f"{RUNS}{run_id}/").status_code == read
    listed = client.get(RUNS, {"team": team})
    assert listed.status_code == read
    if read == 200:
        assert [r["id"] for r in listed.json()["results"]] == [run_id]
        assert [r["id"] for r in client.get(RUNS).json()["results"]] == [run_id]  # all I may read
        summary = client.get(f"{RUNS}summary/", {"team": team}).json()
        assert (summary["scope"], summary["team"], summary["holder"]) == ("team", team, "team Training infra")
        assert summary["summary"][0]["runs"] == 1
        # Their own summary does not count the team's run.
        assert client.get(f"{RUNS}summary/").json()["summary"] == []
    else:
        assert client.get(f"{RUNS}summary/", {"team": team}).status_code == read
    switched = client.post(f"{RUNS}calibration/", {"enabled": True, "team": team}, format="json")
    assert switched.status_code == write
    assert CalibrationSetting.objects.get(team=people.team).enabled is (write == 200)
    assert client.patch(f"{RUNS}{run_id}/", {"note": "re-measured"}, format="json").status_code == write
    assert client.post(f"{RUNS}{run_id}/move/", {"team": team}, format="json").status_code in (
        {200: 200, 404: 404, ANON: ANON}[write],
    )
    assert client.delete(f"{RUNS}{run_id}/").status_code == (204 if write == 200 else write)
    assert MeasuredRun.objects.filter(pk=run_id).exists() == (write != 200)


@pytest.mark.parametrize("who", ROLES)
def test_who_reads_and_switches_a_teams_runs_on_the_page(people: People, catalog: Any, who: str) -> None:
    _add_runs(people.client("editor"), [1.1], team=people.team.pk)
    page = f"/measured-runs/?team={people.team.pk}"
    client = Client()
    if who != "anonymous":
        client.force_login(getattr(people, who))
    read = {"owner": 200, "editor": 200, "viewer": 200, "outsider": 404, "anonymous": 302}[who]
    write = {"owner": 302, "editor": 302, "viewer": 404, "outsider": 404, "anonymous": 302}[who]
    got = client.get(page)
    assert got.status_code == read
    if read == 200:
        body = got.content.decode()
        assert "Measured runs: team Training infra" in body and 'data-run="' in body
        # A viewer sees the switch's state but no form to change it, nor to add a run.
        assert ('id="calibration-form"' in body) is (who != "viewer")
        assert ('id="run-form"' in body) is (who != "viewer")
    switched = client.post(page, {"action": "calibration", "enabled": "on", "team": people.team.pk})
    assert switched.status_code == write
    assert CalibrationSetting.objects.get(team=people.team).enabled is (who in ("owner", "editor"))
    # Adding a run on the team's page (the form's fields as the browser posts them) and importing likewise.
    form = {k: v for k, v in {**RUN, "model": "llama3-8b", "team": people.team.pk}.items() if v is not None}
    added = client.post(page, {**form, "action": "add"})
    csv_text = "model,accelerator,nodes,fabric,tp,dp,global_batch,seq_len,step_time_s,measured_on\n"
    csv_text += "llama3-8b,h100-sxm,1,ib-ndr400,2,4,128,8192,12.0,2026-11-02\n"
    imported = client.post(page, {"action": "import", "csv": csv_text, "team": people.team.pk})
    assert (added.status_code, imported.status_code) == (write, write)
    assert people.team.measured_runs.count() == (3 if write == 302 and who != "anonymous" else 1)
    assert client.get("/measured-runs/?team=x").status_code == (302 if who == "anonymous" else 404)


def test_a_personal_run_moves_into_a_team_its_maker_edits(people: People, catalog: Any) -> None:
    oscar = people.client("outsider")
    (run_id,) = _add_runs(oscar, [1.1])
    url = f"{RUNS}{run_id}/move/"
    refused = oscar.post(url, {"team": people.team.pk}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {"team": ["must be the id of a team you own or edit"]}
    assert people.client("viewer").post(url, {"team": people.team.pk}, format="json").status_code == 404
    member_add(team=people.team, identifier="oscar", role="editor")
    moved = oscar.post(url, {"team": people.team.pk}, format="json")
    assert moved.status_code == 200 and moved.json()["team"] == people.team.pk
    # It now counts for the team's summary, not oscar's own; the team's viewer reads it.
    assert oscar.get(f"{RUNS}summary/").json()["summary"] == []
    team_summary = people.client("viewer").get(f"{RUNS}summary/", {"team": people.team.pk}).json()
    assert team_summary["summary"][0]["runs"] == 1
    # Moved on the page too: a second personal run, through its Move form.
    (second,) = _add_runs(oscar, [1.2])
    page = Client()
    page.force_login(people.outsider)
    assert (
        page.post("/measured-runs/", {"action": "move", "run": second, "to_team": people.team.pk}).status_code
        == 302
    )
    assert MeasuredRun.objects.get(pk=second).team == people.team


def _evaluate(client: Any, design_id: int) -> dict[str, Any]:
    answer = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert answer.status_code == 200, answer.json()
    return dict(answer.json())


def _export_rows(client: Client, design_id: int, fmt: str) -> dict[str, Any]:
    """The Summary's field → value of the design's export (CSV text or the XLSX's Summary sheet)."""
    answer = client.get(f"/api/v1/designs/{design_id}/export/?format={fmt}")
    assert answer.status_code == 200
    if fmt == "csv":
        return {row[0]: row[1] for row in csv.reader(io.StringIO(answer.content.decode())) if len(row) > 1}
    sheet = load_workbook(io.BytesIO(answer.content))["Summary"]
    return {row[0]: row[1] for row in sheet.iter_rows(values_only=True) if row and row[0]}


def test_a_team_design_takes_the_teams_calibration_for_every_reader_and_its_share_link(
    people: People, team_design: Any, api_client: Any
) -> None:
    eddie = people.client("editor")
    before = _evaluate(people.client("viewer"), team_design.pk)
    assert before["calibration"] == {
        "applied": False,
        "reason": "the calibration of team Training infra is switched off",
        "band_source": "published calibration (engine/training/error_band_table.py)",
        "scope": "team",
        "holder": "team Training infra",
    }
    # Eddie's own runs (every one measured at 1.5 × the engine) and his own switch on: they calibrate his
    # personal designs, never the team's, although he made the team design.
    _add_runs(eddie, [1.5, 1.5, 1.5])
    eddie.post(f"{RUNS}calibration/", {"enabled": True}, format="json")
    assert _evaluate(eddie, team_design.pk) == before
    personal = design_create(owner=people.editor, name="eddie's own", spec=team_design.current.spec)
    own = _evaluate(eddie, personal.pk)["calibration"]
    assert (own["scope"], own["holder"], own["runs"]) == ("personal", "eddie", 3)
    assert own["factor"] == pytest.approx(1.5, rel=1e-12)  # geometric mean of 1.5, 1.5, 1.5

    # The team's runs: 1.1, 1.21, 1.331 × the engine; geometric mean = 1.1² = 1.21. The owner switches on.
    _add_runs(eddie, [1.1, 1.21, 1.331], team=people.team.pk)
    people.client("owner").post(
        f"{RUNS}calibration/", {"enabled": True, "team": people.team.pk}, format="json"
    )
    seen = {who: _evaluate(people.client(who), team_design.pk) for who in ("owner", "editor", "viewer")}
    assert seen["owner"] == seen["editor"] == seen["viewer"]  # the same answer for every reader
    on = seen["viewer"]
    statement = on["calibration"]
    assert statement["applied"] is True and (statement["scope"], statement["holder"]) == (
        "team",
        "team Training infra",
    )
    assert statement["factor"] == pytest.approx(1.21, rel=1e-9) and statement["runs"] == 3
    assert statement["regime"] == KEY
    assert (
        statement["band_source"]
        == f"leave-one-out residuals of 3 measured runs of team Training infra under {KEY}"
    )
    assert on["training"]["time_to_train_days"] == pytest.approx(
        before["training"]["time_to_train_days"] * 1.21, rel=1e-9
    )
    assert on["training"]["error_band"]["basis"] == f"measured runs of team Training infra: {KEY}"

    # A share link shows what the owner sees and says which calibration applied.
    token = eddie.post(f"/api/v1/designs/{team_design.pk}/share-links/", {}, format="json").json()["token"]
    shared = api_client.get(f"/api/v1/shared/{token}/").json()
    assert shared["evaluation"]["calibration"] == statement
    share_page = Client().get(f"/share/{token}/").content.decode()
    assert 'Team calibration (<span id="calibration-holder">team Training infra</span>) applied' in share_page
    assert '<span id="calibration-factor">1.210</span>' in share_page
    assert '<span id="calibration-runs">3</span> measured runs' in share_page
    viewer_page = Client()
    viewer_page.force_login(people.viewer)
    design_page = viewer_page.get(f"/designs/{team_design.pk}/").content.decode()
    assert (
        '<span id="calibration-factor">1.210</span>' in design_page and "team Training infra" in design_page
    )
    # Its "Measured runs" link opens the team's runs (whose calibration it is), not the reader's own.
    assert f'id="calibration-runs-link" href="/measured-runs/?team={people.team.pk}"' in design_page

    # The exports state it too: whose, applied, factor, runs and the band's source.
    for fmt in ("csv", "xlsx"):
        rows = _export_rows(viewer_page, team_design.pk, fmt)
        assert rows["Calibration"] == "team calibration: team Training infra", fmt
        assert str(rows["Calibration applied"]) in ("True", "TRUE"), fmt
        assert float(rows["Calibration factor (step time ×)"]) == pytest.approx(1.21, rel=1e-9), fmt
        assert int(rows["Calibration runs"]) == 3, fmt
        assert rows["Error band source"] == statement["band_source"], fmt

    # Switched off, the stored result is the published one again, every key of it.
    people.client("editor").post(
        f"{RUNS}calibration/", {"enabled": False, "team": people.team.pk}, format="json"
    )
    assert _evaluate(people.client("viewer"), team_design.pk) == before


def test_a_team_run_added_or_deleted_through_the_api_moves_the_team_designs_answer(
    people: People, team_design: Any
) -> None:
    """A team design's evaluation reads the fit kept on the team's switch (apps.designs.pricing), and every
    write to the team's runs keeps a new one: the answer moves with the runs, and back."""
    eddie = people.client("editor")
    _add_runs(eddie, [1.1, 1.21, 1.331], team=people.team.pk)
    people.client("owner").post(
        f"{RUNS}calibration/", {"enabled": True, "team": people.team.pk}, format="json"
    )
    three = _evaluate(eddie, team_design.pk)
    assert three["calibration"]["runs"] == 3
    assert three["calibration"]["factor"] == pytest.approx(1.21, rel=1e-9)  # 1.1², as above
    # A fourth team run, at 1.5 × the engine: the geometric mean (1.1⁶ · 1.5)^(1/4) = 1.3392 on 4 runs.
    added = eddie.post(RUNS, _run(1, 1.5, team=people.team.pk), format="json")
    assert added.status_code == 201
    four = _evaluate(people.client("viewer"), team_design.pk)
    assert four["calibration"]["runs"] == 4
    assert four["calibration"]["factor"] == pytest.approx((1.1**6 * 1.5) ** 0.25, rel=1e-9)
    assert four["training"]["time_to_train_days"] == pytest.approx(
        three["training"]["time_to_train_days"] * four["calibration"]["factor"] / 1.21, rel=1e-9
    )
    # Deleted again: the three runs' answer, every key of it.
    assert eddie.delete(f"{RUNS}{added.json()['id']}/").status_code == 204
    assert _evaluate(people.client("viewer"), team_design.pk) == three


def test_an_empty_team_in_the_query_is_a_400_naming_it(people: People, catalog: Any) -> None:
    """``?team=`` is neither a team nor "your own" (omitting it is): the list and the summary say so."""
    client = people.client("owner")
    for path in (RUNS, f"{RUNS}summary/"):
        answer = client.get(f"{path}?team=")
        assert answer.status_code == 400, path
        assert "team" in answer.json()["error"]["fields"], path
        assert client.get(path).status_code == 200
