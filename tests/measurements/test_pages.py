"""The measured-runs page through /measured-runs/: add a run, read a log excerpt into the form without saving,
a bad run refused naming the field, the CSV import, the switch, and only the owner's runs shown."""

from __future__ import annotations

from typing import Any

from django.test import Client

from apps.measurements.models import CalibrationSetting, MeasuredRun
from tests.measurements.test_log_parse import MEGATRON

PAGE = "/measured-runs/"


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(run_data: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = {**run_data, "model": run_data["model"]["preset"], **changes}
    return {k: v for k, v in data.items() if v is not None}


def test_the_page_needs_sign_in_and_shows_the_defaults(alice: Any, catalog: Any) -> None:
    assert Client().get(PAGE).status_code == 302
    page = _client(alice).get(PAGE).content.decode()
    assert 'id="no-runs"' in page and 'name="model" id="f-model" value="llama3-8b"' in page
    assert "off: published calibration" in page


def test_adding_a_run_shows_it_with_the_estimate_and_error(
    alice: Any, bob: Any, catalog: Any, run_data: Any
) -> None:
    client = _client(alice)
    answer = client.post(PAGE, {**_form(run_data), "action": "add"})
    assert answer.status_code == 302
    run = MeasuredRun.objects.get(owner=alice)
    page = client.get(PAGE).content.decode()
    assert f'data-run="{run.pk}"' in page and "12.000 s" in page
    assert 'data-group="all runs"' in page and 'data-group="hopper/bf16/dense/lt32k/lt512"' in page
    assert f'data-run="{run.pk}"' not in _client(bob).get(PAGE).content.decode()


def test_a_run_the_engine_cannot_express_is_a_form_error_naming_the_field(
    alice: Any, catalog: Any, run_data: Any
) -> None:
    answer = _client(alice).post(PAGE, {**_form(run_data, tp=3), "action": "add"})
    assert answer.status_code == 400
    assert "tp: tp 3 does not divide" in answer.content.decode()
    assert MeasuredRun.objects.count() == 0


def test_a_pasted_log_fills_the_form_and_saves_nothing(alice: Any, catalog: Any, run_data: Any) -> None:
    form = _form(run_data, step_time_s=None, global_batch=None, note="")
    answer = _client(alice).post(PAGE, {**form, "log": MEGATRON, "action": "parse"})
    assert answer.status_code == 200
    page = answer.content.decode()
    assert 'id="parsed-ms">12100.4 ms' in page and 'id="parsed-tflops">408.0' in page
    assert 'id="parsed-memory">60.0 GiB' in page
    assert 'name="step_time_s" id="f-step_time_s" value="12.1004"' in page
    assert 'name="global_batch" id="f-global_batch" type="number" min="1" value="128"' in page
    assert MeasuredRun.objects.count() == 0
    bad = _client(alice).post(PAGE, {**form, "log": "nothing here", "action": "parse"})
    assert bad.status_code == 400 and 'id="log-error"' in bad.content.decode()


def test_the_switch_and_the_csv_import(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    assert client.post(PAGE, {"action": "calibration", "enabled": "on"}).status_code == 302
    assert CalibrationSetting.objects.get(owner=alice).enabled is True
    client.post(PAGE, {"action": "calibration"})
    assert CalibrationSetting.objects.get(owner=alice).enabled is False
    header = "model,accelerator,nodes,fabric,tp,dp,global_batch,seq_len,step_time_s,measured_on\n"
    bad = client.post(
        PAGE,
        {"action": "import", "csv": header + "llama3-8b,h100-sxm,1,ib-ndr400,3,4,128,8192,12,2026-11-02\n"},
    )
    assert bad.status_code == 400 and "row 2.tp" in bad.content.decode()
    good = header + "llama3-8b,h100-sxm,1,ib-ndr400,2,4,128,8192,12,2026-11-02\n"
    assert client.post(PAGE, {"action": "import", "csv": good}).status_code == 302
    assert MeasuredRun.objects.filter(owner=alice).count() == 1
