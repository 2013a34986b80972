"""Predict the measured FSDP2 memory rows of tests/engine/data/memory_fsdp2.csv (torchtitan, Llama 3.1 on
H100 96 GB) with the current engine under ``training.framework: fsdp2``: no fitting.

Shared by tests/engine/test_memory_fsdp2.py and bench/calibration.py. The data README says where each
setting comes from. The accelerator is the catalog's H100 SXM with the benchmark hosts' 96 GB (its
"96GB HBM2e"; memory_gib holds the nominal capacity as the catalog does); the memory estimate does not
depend on the clock, which those 500 W parts lower. The engine's total (including its framework reserve) is
compared with the measured peak reserved memory, as the BLOOM rows' total is compared with nvidia-smi.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from calibration_cases import all_cases
from specs import ACCELERATORS, FABRICS, H100_SXM

from clusterdesigner.engine.training.training import estimate

MEMORY_CSV = Path(__file__).parent / "data" / "memory_fsdp2.csv"
SPECS = {"accelerators": {**ACCELERATORS, "h100-sxm": replace(H100_SXM, memory_gib=96)}, "fabrics": FABRICS}


@dataclass(frozen=True)
class MemoryCase:
    run_id: str
    measured_gib: float
    predicted_gib: float
    fits: bool

    @property
    def error(self) -> float:
        return self.predicted_gib / self.measured_gib - 1.0


def load_rows() -> list[dict[str, str]]:
    with MEMORY_CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def request_for(row: dict[str, str]) -> dict[str, Any]:
    n, tp, pp = int(row["num_gpus"]), int(row["tp"]), int(row["pp"])
    return {
        "model": {"preset": row["model_preset"], "seq_len": int(row["seq_len"])},
        "training": {
            "tokens": 1e12,
            "global_batch_seqs": int(row["global_batch_seqs"]),
            "precision": row["precision"],
            "framework": "fsdp2",
            "tp_comm_overlap": row["async_tp"] == "yes",
        },
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": n // 8, "fabric": "ib-ndr400"},
        "parallelism": {
            "tp": tp,
            "pp": pp,
            "cp": int(row["cp"]),
            "vpp": int(row["vpp"]),
            "micro_batch": int(row["micro_batch"]),
            "recompute": row["recompute"],
            "sharding": "zero2" if pp > 1 else "zero3",
            "sequence_parallel": tp > 1,
        },
    }


def predict(row: dict[str, str]) -> MemoryCase:
    response = estimate(request_for(row), **SPECS)
    return MemoryCase(
        run_id=row["run_id"],
        measured_gib=float(row["measured_max_reserved_gib"]),
        predicted_gib=float(response["memory_per_gpu_gib"]["total"]),
        fits=bool(response["fits"]),
    )


def all_memory_cases() -> list[MemoryCase]:
    return [predict(row) for row in load_rows()]


def memory_medians(cases: list[MemoryCase]) -> dict[str, float]:
    """Median |error| of the FSDP2 rows, of the BLOOM rows (calibration_cases) and of both together."""
    fsdp2 = [abs(c.error) for c in cases]
    bloom = [
        abs(e)
        for c in all_cases()
        if c.row["source_id"] == "bloom_tr11_prequel" and (e := c.memory_error) is not None
    ]
    return {
        "fsdp2": statistics.median(fsdp2),
        "bloom": statistics.median(bloom),
        "both": statistics.median(fsdp2 + bloom),
    }
