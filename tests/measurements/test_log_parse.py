"""POST /api/v1/measured-runs/parse-log/: the figures of a Megatron-LM, NeMo or torchtitan log excerpt,
nothing saved; an excerpt with no step line is a 400 naming ``log``. The lines are in the frameworks' own formats
(Megatron-LM megatron/training/training.py training_log and report_memory; torchtitan's MetricsProcessor.log;
NeMo's train_step_timing as PyTorch Lightning's progress bar prints it)."""

# The log lines are the frameworks' own, whole: wrapping them would change what is parsed.
# ruff: noqa: E501

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from apps.measurements.models import MeasuredRun

URL = "/api/v1/measured-runs/parse-log/"

MEGATRON = """\
 [2026-11-02 10:00:01] iteration       10/    5000 | consumed samples:         1280 | elapsed time per iteration (ms): 14021.7 | throughput per GPU (TFLOP/s/GPU): 352.1 | learning rate: 1.500000E-05 | global batch size:   128 | lm loss: 9.812345E+00 | loss scale: 1.0 | grad norm: 4.812 | number of skipped iterations:   0 | number of nan iterations:   0 |
[Rank 0] (after 10 iterations) memory (MB) | allocated: 30211.52 | max allocated: 61440.00 | reserved: 65012.00 | max reserved: 66800.00
 [2026-11-02 10:00:13] iteration       20/    5000 | consumed samples:         2560 | elapsed time per iteration (ms): 12100.4 | throughput per GPU (TFLOP/s/GPU): 408.0 | learning rate: 3.000000E-05 | global batch size:   128 | lm loss: 8.700012E+00 | loss scale: 1.0 | grad norm: 2.101 | number of skipped iterations:   0 | number of nan iterations:   0 |
 [2026-11-02 10:00:25] iteration       30/    5000 | consumed samples:         3840 | elapsed time per iteration (ms): 12060.0 | throughput per GPU (TFLOP/s/GPU): 409.4 | learning rate: 4.500000E-05 | global batch size:   128 | lm loss: 8.100345E+00 | loss scale: 1.0 | grad norm: 1.873 | number of skipped iterations:   0 | number of nan iterations:   0 |
"""

TORCHTITAN = """\
[rank0]:[titan] 2026-11-02 10:00:00,000 - root - INFO - Training starts at step 1.
[rank0]:[titan] 2026-11-02 10:00:09,100 - root - INFO - \x1b[31mstep:  1  \x1b[32mloss: 12.2347  \x1b[38;2;180;60;0mgrad_norm:  4.1302  \x1b[38;2;54;234;195mmemory: 42.10GiB(53.16%)  \x1b[34mtps: 1,012  \x1b[36mtflops: 58.61  \x1b[35mmfu: 5.93%\x1b[39m
[rank0]:[titan] 2026-11-02 10:00:19,200 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss:  9.8710  \x1b[38;2;180;60;0mgrad_norm:  1.9031  \x1b[38;2;54;234;195mmemory: 63.52GiB(80.21%)  \x1b[34mtps: 6,543  \x1b[36mtflops: 378.90  \x1b[35mmfu: 38.31%\x1b[39m
[rank0]:[titan] 2026-11-02 10:00:29,300 - root - INFO - \x1b[31mstep: 20  \x1b[32mloss:  8.4410  \x1b[38;2;180;60;0mgrad_norm:  1.2004  \x1b[38;2;54;234;195mmemory: 63.52GiB(80.21%)  \x1b[34mtps: 6,601  \x1b[36mtflops: 382.26  \x1b[35mmfu: 38.65%\x1b[39m
"""

NEMO = """\
Epoch 0: :  40%|####      | 20/50 [02:01<03:02, reduced_train_loss=7.130, global_step=19.0, consumed_samples=2560.0, train_step_timing in s=5.910]
Epoch 0: :  60%|######    | 30/50 [03:00<02:00, reduced_train_loss=6.870, global_step=29.0, consumed_samples=3840.0, train_step_timing in s=5.900]
Epoch 0: : 100%|##########| 50/50 [04:59<00:00, reduced_train_loss=6.130, global_step=49.0, consumed_samples=6400.0, train_step_timing in s=5.880]
"""


def _post(user: Any, text: str) -> Any:
    client = APIClient()
    client.force_authenticate(user)
    return client.post(URL, {"log": text}, format="json")


def test_megatron_iteration_time_tflops_batch_and_memory(alice: Any) -> None:
    body = _post(alice, MEGATRON).json()
    assert body["format"] == "megatron-lm" and body["steps"] == 3
    # Medians of the three lines: 12,100.4 ms (the 14,021.7 ms warm-up does not move it) and 408.0 TFLOP/s.
    assert body["iteration_time_ms"] == 12100.4
    assert abs(body["step_time_s"] - 12.1004) < 1e-12
    assert body["tflops_per_gpu"] == 408.0
    assert body["global_batch"] == 128
    # max allocated 61,440 MB (MiB, Megatron's 1024 × 1024 bytes) / 1,024 = 60 GiB.
    assert body["peak_memory_gib"] == 60.0
    assert MeasuredRun.objects.count() == 0


def test_torchtitan_step_lines_with_colour_codes(alice: Any) -> None:
    body = _post(alice, TORCHTITAN).json()
    assert body["format"] == "torchtitan" and body["steps"] == 3
    assert body["tokens_per_s_per_gpu"] == 6543.0  # median of 1,012, 6,543, 6,601
    assert body["tflops_per_gpu"] == 378.90
    assert abs(body["mfu"] - 0.3831) < 1e-12
    assert body["peak_memory_gib"] == 63.52  # the largest max-reserved figure
    assert body["step_time_s"] is None


def test_nemo_train_step_timing(alice: Any) -> None:
    body = _post(alice, NEMO).json()
    assert body["format"] == "nemo" and body["steps"] == 3
    assert body["step_time_s"] == 5.9 and body["iteration_time_ms"] == 5900.0


def test_an_excerpt_without_a_step_line_is_refused_naming_log(alice: Any) -> None:
    answer = _post(alice, "loading checkpoint from /ckpt/iter_0000100\nwarmup done\n")
    assert answer.status_code == 400
    assert list(answer.json()["error"]["fields"]) == ["log"]
    assert "elapsed time per iteration (ms)" in answer.json()["error"]["fields"]["log"][0]
    assert _post(alice, "").status_code == 400


def test_a_read_only_api_token_may_parse_a_log_but_not_save_a_run(alice: Any, run_data: Any) -> None:
    from clusterdesigner.api_tokens import api_token_create

    key = api_token_create(user=alice, scope="read").key
    client = APIClient()
    parsed = client.post(URL, {"log": MEGATRON}, format="json", HTTP_AUTHORIZATION=f"Token {key}")
    assert parsed.status_code == 200 and parsed.json()["global_batch"] == 128
    saved = client.post("/api/v1/measured-runs/", run_data, format="json", HTTP_AUTHORIZATION=f"Token {key}")
    assert saved.status_code == 403 and "'designs' scope" in saved.json()["error"]["message"]
