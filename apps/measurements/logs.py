"""Measured figures read from a training log excerpt, without saving anything (issue 40): Megatron-LM's
per-iteration line and memory report, NeMo's ``train_step_timing in s``, torchtitan's step line.

Formats (as the frameworks print them):
- Megatron-LM ``training_log``: ``iteration 50/ 5000 | consumed samples: 51200 | elapsed time per iteration
  (ms): 1234.5 | throughput per GPU (TFLOP/s/GPU): 412.3 | learning rate: ... | global batch size: 512 | ...``
  and ``report_memory``: ``[Rank 0] (after 10 iterations) memory (MB) | allocated: ... | max allocated: ... |
  reserved: ... | max reserved: ...`` (MB of 2^20 bytes).
- NeMo (PyTorch Lightning's progress bar or NeMo 2's log): ``train_step_timing in s=5.900`` or
  ``train_step_timing in s: 5.9``.
- torchtitan ``MetricsProcessor.log``: ``step: 10  loss:  7.1234  memory: 35.12GiB(44.35%)  tps: 6,543
  tflops: 300.12  mfu: 30.35%`` (tps is tokens per second per GPU; colour codes stripped).

Each figure is the median over the step lines found (a warm-up step does not move it); peak memory is the
largest reported.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from clusterdesigner.errors import InvalidInput

MAX_CHARS = 200_000
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)"
MEGATRON_STEP = re.compile(
    r"iteration\s+\d+\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*" + _NUMBER
)
MEGATRON_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*" + _NUMBER)
MEGATRON_BATCH = re.compile(r"global batch size:\s*" + _NUMBER)
MEGATRON_MEMORY = re.compile(r"memory \(MB\)\s*\|.*?max allocated:\s*" + _NUMBER)
NEMO_STEP = re.compile(r"train_step_timing in s\s*[=:]\s*" + _NUMBER)
TITAN_STEP = re.compile(r"step:\s*\d+\s.*?tps:\s*" + _NUMBER)
TITAN_MEMORY = re.compile(r"memory:\s*" + _NUMBER + r"\s*GiB")
TITAN_TFLOPS = re.compile(r"tflops:\s*" + _NUMBER)
TITAN_MFU = re.compile(r"mfu:\s*" + _NUMBER + "%")


@dataclass(frozen=True, kw_only=True)
class ParsedLog:
    """What a log excerpt says: its format, the step lines read, and the medians of the figures found
    (None when the format does not print one)."""

    format: str
    steps: int
    step_time_s: float | None = None
    iteration_time_ms: float | None = None
    tflops_per_gpu: float | None = None
    tokens_per_s_per_gpu: float | None = None
    mfu: float | None = None
    peak_memory_gib: float | None = None
    global_batch: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _all(pattern: re.Pattern[str], lines: list[str]) -> list[float]:
    return [_number(m.group(1)) for line in lines if (m := pattern.search(line))]


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _megatron(lines: list[str]) -> ParsedLog | None:
    step_lines = [line for line in lines if MEGATRON_STEP.search(line)]
    if not step_lines:
        return None
    ms = _median(_all(MEGATRON_STEP, step_lines))
    batch = _median(_all(MEGATRON_BATCH, step_lines))
    memory = _all(MEGATRON_MEMORY, lines)
    return ParsedLog(
        format="megatron-lm",
        steps=len(step_lines),
        iteration_time_ms=ms,
        step_time_s=None if ms is None else ms / 1000.0,
        tflops_per_gpu=_median(_all(MEGATRON_TFLOPS, step_lines)),
        peak_memory_gib=max(memory) / 1024.0 if memory else None,
        global_batch=None if batch is None else int(batch),
    )


def _torchtitan(lines: list[str]) -> ParsedLog | None:
    step_lines = [line for line in lines if TITAN_STEP.search(line)]
    if not step_lines:
        return None
    memory = _all(TITAN_MEMORY, step_lines)
    mfu = _median(_all(TITAN_MFU, step_lines))
    return ParsedLog(
        format="torchtitan",
        steps=len(step_lines),
        tokens_per_s_per_gpu=_median(_all(TITAN_STEP, step_lines)),
        tflops_per_gpu=_median(_all(TITAN_TFLOPS, step_lines)),
        mfu=None if mfu is None else mfu / 100.0,
        peak_memory_gib=max(memory) if memory else None,
    )


def _nemo(lines: list[str]) -> ParsedLog | None:
    times = [t for line in lines for t in map(_number, NEMO_STEP.findall(line))]
    if not times:
        return None
    step = statistics.median(times)
    return ParsedLog(format="nemo", steps=len(times), step_time_s=step, iteration_time_ms=step * 1000.0)


def log_parse(*, text: str) -> ParsedLog:
    """The figures of a Megatron-LM, NeMo or torchtitan log excerpt; InvalidInput naming ``log`` when none of
    their step lines is in it."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput({"log": ["paste a log excerpt with at least one training step line"]})
    if len(text) > MAX_CHARS:
        raise InvalidInput({"log": [f"at most {MAX_CHARS:,} characters; paste the steady-state steps only"]})
    lines = _ANSI.sub("", text).splitlines()
    for parser in (_megatron, _torchtitan, _nemo):
        parsed = parser(lines)
        if parsed is not None:
            return parsed
    raise InvalidInput(
        {
            "log": [
                "no training step line found: expected Megatron-LM's 'elapsed time per iteration (ms)', "
                "NeMo's 'train_step_timing in s' or torchtitan's 'step: ... tps: ...'"
            ]
        }
    )
