"""training.precision recipes and training.optimizer through the designs API: an NVFP4 or MXFP8 GB200/B200
design evaluates and its launch export carries the recipe's Megatron-LM flags; a part without the hardware
is a 400 naming spec.workload.training.precision."""

from __future__ import annotations

from typing import Any

import pytest

# The owning price is an input (the catalog has no GB200 tray price); its value enters no assertion here.
NO_CLOUD = {"horizon_years": 3, "utilization": 0.7, "cloud": [], "on_prem": {"server_usd": 400_000}}


def _spec(accelerator: str, precision: str, gpus_per_node: int, **training: Any) -> dict[str, Any]:
    return {
        "workload": {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_seqs": 512, "precision": precision, **training},
        },
        "cluster": {
            "accelerator": accelerator,
            "gpus_per_node": gpus_per_node,
            "nodes": 64 // gpus_per_node,
            "fabric": "ib-ndr400",
        },
        "parallelism": {
            "tp": 4,
            "pp": 2,
            "cp": 1,
            "micro_batch": 1,
            "recompute": "selective",
            "sharding": "zero1",
            "sequence_parallel": True,
        },
        "costs": NO_CLOUD,
    }


def _create(client: Any, spec: dict[str, Any]) -> int:
    created = client.post("/api/v1/designs/", {"name": "recipe", "spec": spec}, format="json")
    assert created.status_code == 201, created.content
    return int(created.json()["id"])


def _flags(text: str) -> list[str]:
    return text.replace("\\\n", " ").split()


@pytest.mark.parametrize(
    ("accelerator", "gpus_per_node", "precision", "peak"),
    [("gb200", 4, "nvfp4", 10000.0), ("b200", 8, "nvfp4", 9000.0), ("gb200", 4, "mxfp8", 5000.0)],
)
def test_a_blackwell_design_evaluates_with_its_recipe(
    user_client: Any, catalog: Any, accelerator: str, gpus_per_node: int, precision: str, peak: float
) -> None:
    design = _create(user_client, _spec(accelerator, precision, gpus_per_node))
    response = user_client.post(f"/api/v1/designs/{design}/evaluate/")
    assert response.status_code == 200, response.content[:400]
    training = response.json()["training"]
    assert training["summary"]["training"]["precision"] == precision
    # MFU is against the recipe's dense peak: FP4 for NVFP4 (seed catalog: B200 9,000, GB200 10,000
    # TFLOP/s), FP8 for MXFP8.
    assert training["summary"]["cluster"]["peak_tflops"] == peak
    assert training["mfu"] == pytest.approx(training["model_tflops_per_gpu"] / peak)
    assert f"no measured {precision} run" in training["error_band"]["basis"]


def test_nvfp4_is_faster_than_fp8_on_the_same_gb200_design(user_client: Any, catalog: Any) -> None:
    days = {}
    for precision in ("fp8", "nvfp4"):
        design = _create(user_client, _spec("gb200", precision, 4))
        days[precision] = user_client.post(f"/api/v1/designs/{design}/evaluate/").json()["training"][
            "time_to_train_days"
        ]
    assert days["nvfp4"] < days["fp8"]


@pytest.mark.parametrize("precision", ["nvfp4", "mxfp8"])
def test_hopper_refuses_blackwell_recipes_naming_the_spec_field(
    user_client: Any, catalog: Any, precision: str
) -> None:
    spec = _spec("h100-sxm", precision, 8)
    response = user_client.post("/api/v1/designs/", {"name": "x", "spec": spec}, format="json")
    assert response.status_code == 400, response.content[:400]
    assert list(response.json()["error"]["fields"]) == ["spec.workload.training.precision"]
    assert "H100" in response.json()["error"]["message"]
    assert user_client.get("/api/v1/designs/").json()["count"] == 0  # nothing half-saved


def test_an_unknown_recipe_or_optimizer_is_a_400_naming_the_spec_field(
    user_client: Any, catalog: Any
) -> None:
    for training, field in (({"precision": "fp6"}, "precision"), ({"optimizer": "lion"}, "optimizer")):
        spec = _spec("gb200", "bf16", 4)
        spec["workload"]["training"].update(training)
        response = user_client.post("/api/v1/designs/", {"name": "x", "spec": spec}, format="json")
        assert response.status_code == 400, response.content
        assert list(response.json()["error"]["fields"]) == [f"spec.workload.training.{field}"]


@pytest.mark.parametrize(
    ("precision", "flags"),
    [
        ("fp8", [("--fp8-format", "hybrid"), ("--fp8-recipe", "delayed")]),
        ("fp8_current", [("--fp8-format", "hybrid"), ("--fp8-recipe", "tensorwise")]),
        ("fp8_blockwise", [("--fp8-format", "e4m3"), ("--fp8-recipe", "blockwise")]),
        ("mxfp8", [("--fp8-format", "e4m3"), ("--fp8-recipe", "mxfp8")]),
        # Llama 3 70B's 80 layers: round(0.16 x 80) = 13 in BF16, round(13 / 5) = 3 first and 10 last.
        (
            "nvfp4",
            [
                ("--fp4-format", "e2m1"),
                ("--fp4-recipe", "nvfp4"),
                ("--num-layers-at-start-in-bf16", "3"),
                ("--num-layers-at-end-in-bf16", "10"),
            ],
        ),
    ],
)
def test_the_torchrun_export_carries_the_recipe_flags(
    user_client: Any, catalog: Any, precision: str, flags: list[tuple[str, str]]
) -> None:
    design = _create(user_client, _spec("gb200", precision, 4))
    response = user_client.get(f"/api/v1/designs/{design}/export/?format=torchrun")
    assert response.status_code == 200, response.content[:400]
    tokens = _flags(response.content.decode())
    assert "--bf16" in tokens
    for flag, value in flags:
        assert tokens[tokens.index(flag) + 1] == value, flag
    if precision == "nvfp4":
        assert "--first-last-layers-bf16" in tokens and "--fp8-format" not in tokens
    else:
        assert "--fp4-format" not in tokens


def test_a_muon_design_evaluates_and_exports_megatrons_muon_flags(user_client: Any, catalog: Any) -> None:
    design = _create(user_client, _spec("gb200", "mxfp8", 4, optimizer="muon"))
    adam = _create(user_client, _spec("gb200", "mxfp8", 4))
    muon_body = user_client.post(f"/api/v1/designs/{design}/evaluate/").json()["training"]
    adam_body = user_client.post(f"/api/v1/designs/{adam}/evaluate/").json()["training"]
    assert muon_body["memory_per_gpu_gib"]["optimizer"] < adam_body["memory_per_gpu_gib"]["optimizer"]
    assert muon_body["step_time_s"]["optimizer"] > adam_body["step_time_s"]["optimizer"]
    tokens = _flags(user_client.get(f"/api/v1/designs/{design}/export/?format=torchrun").content.decode())
    assert tokens[tokens.index("--optimizer") + 1] == "muon"
    assert tokens[tokens.index("--muon-tp-mode") + 1] == "duplicated"
    assert "--use-distributed-optimizer" in tokens
