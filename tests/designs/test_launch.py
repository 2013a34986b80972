"""Launch configurations: torchrun, sbatch and Volcano for the evaluated layout, and NCCL settings per fabric.

The shell outputs are executed with stub ``torchrun``/``srun``/``scontrol`` functions, so the tests check the
arguments a real launch would receive after shell quoting, not just the text.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from apps.designs.launch import (
    launch_sbatch,
    launch_torchrun,
    launch_volcano,
    nccl_env,
    nccl_settings,
)
from tests.designs.fixtures import evaluation_fixture, with_cluster, with_layout, with_model

ROOT = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash") or "/bin/bash"


def run_bash(script: str, env: dict[str, str] | None = None) -> list[str]:
    """Run ``script`` with stub launchers that print their argv one per line; return those lines."""
    stubs = (
        'torchrun() { printf "torchrun\\n"; printf "%s\\n" "$@"; }\n'
        'srun() { printf "srun\\n"; while [[ "$1" == --* ]]; do printf "%s\\n" "$1"; shift; done; "$@"; }\n'
        "scontrol() { printf 'node-001\\nnode-002\\n'; }\n"
    )
    out = subprocess.run(
        [BASH, "-c", stubs + script.removeprefix("#!/bin/bash\n")],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        check=True,
    )
    return out.stdout.splitlines()


def flags(argv: list[str]) -> dict[str, str | None]:
    """{--flag: value or None} from an argv list (flags of the form --x=y are split)."""
    result: dict[str, str | None] = {}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("--"):
            if "=" in token:
                key, value = token.split("=", 1)
                result[key] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                result[token] = argv[i + 1]
                i += 1
            else:
                result[token] = None
        i += 1
    return result


def torchrun_flags(evaluation: dict[str, Any]) -> dict[str, str | None]:
    argv = run_bash(launch_torchrun(evaluation=evaluation), {"NODE_RANK": "3", "MASTER_ADDR": "10.0.0.1"})
    assert argv[0] == "torchrun"
    return flags(argv[1:])


# ---- torchrun ----------------------------------------------------------------------------------------------
def test_torchrun_passes_the_layout_and_the_llama3_70b_shape() -> None:
    f = torchrun_flags(evaluation_fixture())
    expected = {
        "--nnodes": "64",
        "--nproc-per-node": "8",
        "--node-rank": "3",
        "--master-addr": "10.0.0.1",
        "--master-port": "29500",
        "--tensor-model-parallel-size": "8",
        "--pipeline-model-parallel-size": "4",
        "--context-parallel-size": "1",
        "--micro-batch-size": "1",
        "--global-batch-size": "512",  # 4,194,304 tokens / 8,192 per sequence
        "--num-layers": "80",
        "--hidden-size": "8192",
        "--ffn-hidden-size": "28672",
        "--num-attention-heads": "64",
        "--num-query-groups": "8",
        "--seq-length": "8192",
        "--max-position-embeddings": "8192",
        "--vocab-size": "128256",
        "--recompute-granularity": "selective",
        "--train-iters": str(math.ceil(1e12 / 4194304)),  # 238,419 steps
    }
    assert {k: f.get(k) for k in expected} == expected
    for flag in (
        "--sequence-parallel",
        "--group-query-attention",
        "--swiglu",
        "--use-distributed-optimizer",
        "--bf16",
        "--untie-embeddings-and-output-weights",
        "--mock-data",
    ):
        assert flag in f and f[flag] is None, flag
    for absent in (
        "--num-layers-per-virtual-pipeline-stage",
        "--fp8-format",
        "--expert-model-parallel-size",
        "--recompute-method",
        "--use-megatron-fsdp",
        "--decoder-first-pipeline-num-layers",
    ):
        assert absent not in f, absent


def test_torchrun_exports_the_infiniband_nccl_settings_with_reasons() -> None:
    text = launch_torchrun(evaluation=evaluation_fixture())
    assert "export NCCL_IB_HCA=mlx5  # " in text
    assert "export NCCL_NET_GDR_LEVEL=PXB  # " in text
    assert "export CUDA_DEVICE_MAX_CONNECTIONS=1  # " in text
    assert "export NCCL_IB_GID_INDEX" not in text and "# NCCL_IB_GID_INDEX not set: " in text
    assert "# layout: TP8 PP4 DP16 CP1 VPP1 mb1 recompute=selective sharding=zero1 SP" in text


def test_virtual_pipeline_sets_layers_per_virtual_stage() -> None:
    f = torchrun_flags(with_layout(evaluation_fixture(), vpp=2))
    assert f["--num-layers-per-virtual-pipeline-stage"] == "10"  # 80 layers / (pp 4 × vpp 2)


def test_virtual_pipeline_that_does_not_divide_the_layers_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"80 layers do not split into pp×vpp = 4×3"):
        launch_torchrun(evaluation=with_layout(evaluation_fixture(), vpp=3))


def test_llama3_interleaving_counts_the_embedding_and_loss_as_virtual_stages() -> None:
    # Llama 3 405B (arXiv:2407.21783 Sec. 3.3.2): 126 layers + embedding + loss = 128 chunks = pp 16 × vpp 8.
    evaluation = with_model(with_layout(evaluation_fixture(), tp=8, pp=16, dp=4, vpp=8), "llama3-405b")
    f = torchrun_flags(evaluation)
    assert f["--num-virtual-stages-per-pipeline-rank"] == "8"
    assert "--account-for-embedding-in-pipeline-split" in f and "--account-for-loss-in-pipeline-split" in f
    assert (
        "--num-layers-per-virtual-pipeline-stage" not in f and "--decoder-first-pipeline-num-layers" not in f
    )
    # Llama trains without dropout, as the estimate assumed; Megatron's defaults are 0.1.
    assert (f["--attention-dropout"], f["--hidden-dropout"]) == ("0.0", "0.0")


def test_uneven_pipeline_lightens_first_and_last_stage() -> None:
    # Llama 3 405B: 126 layers over pp 16 → 14 middle stages of 8 and 7 + 7 at the ends (7 + 14×8 + 7 = 126).
    evaluation = with_model(with_layout(evaluation_fixture(), tp=8, pp=16, dp=4), "llama3-405b")
    f = torchrun_flags(evaluation)
    assert (f["--num-layers"], f["--hidden-size"], f["--num-attention-heads"]) == ("126", "16384", "128")
    assert f["--decoder-first-pipeline-num-layers"] == "7" and f["--decoder-last-pipeline-num-layers"] == "7"


def test_full_recompute_and_fp8() -> None:
    evaluation = with_layout(evaluation_fixture(), recompute="full")
    evaluation["training"]["summary"]["training"]["precision"] = "fp8"
    f = torchrun_flags(evaluation)
    assert f["--recompute-granularity"] == "full" and f["--recompute-method"] == "uniform"
    assert f["--recompute-num-layers"] == "1"
    assert "--bf16" in f and f["--fp8-format"] == "hybrid"


def test_no_recompute_and_no_sharding_leave_the_flags_out() -> None:
    f = torchrun_flags(with_layout(evaluation_fixture(), recompute="none", sharding="none"))
    assert "--recompute-granularity" not in f and "--use-distributed-optimizer" not in f


def test_zero3_uses_megatron_fsdp_and_leaves_cuda_connections_unset() -> None:
    evaluation = with_layout(evaluation_fixture(), sharding="zero3")
    f = torchrun_flags(evaluation)
    assert "--use-megatron-fsdp" in f and f["--data-parallel-sharding-strategy"] == "optim_grads_params"
    assert "--use-distributed-optimizer" in f and f["--ckpt-format"] == "fsdp_dtensor"
    text = launch_torchrun(evaluation=evaluation)
    assert "export CUDA_DEVICE_MAX_CONNECTIONS" not in text


def test_hsdp_shards_within_a_node_and_replicates_across_nodes() -> None:
    # 8 nodes × 8 GPUs, TP1 DP64: shard groups of the 8 data-parallel ranks in a node → 8 replicas.
    evaluation = with_cluster(evaluation_fixture(), nodes=8)
    evaluation = with_layout(evaluation, tp=1, pp=1, dp=64, sharding="hsdp", sequence_parallel=False)
    f = torchrun_flags(evaluation)
    assert f["--num-distributed-optimizer-instances"] == "8"
    assert f["--outer-dp-sharding-strategy"] == "no_shard"
    assert "--sequence-parallel" not in f


def test_the_shape_is_the_one_the_engine_reported_over_the_preset() -> None:
    # A spec that overrides the preset's layers: the engine's summary carries the override.
    evaluation = with_model(evaluation_fixture(), "llama3-70b", layers=40)
    f = torchrun_flags(evaluation)
    assert (f["--num-layers"], f["--ffn-hidden-size"], f["--num-query-groups"]) == ("40", "28672", "8")


def test_a_private_model_is_launched_with_the_shape_the_engine_reported() -> None:
    evaluation = evaluation_fixture()
    evaluation["spec"]["workload"]["model"] = {"preset": "my-private-model"}
    f = torchrun_flags(evaluation)
    assert (f["--num-layers"], f["--hidden-size"], f["--global-batch-size"]) == ("80", "8192", "512")


def test_moe_preset_sets_experts_shared_experts_and_dense_first_layers() -> None:
    # DeepSeek-V3: 61 layers, the first 3 dense, 256 routed experts top-8 of 2048, 1 shared expert.
    evaluation = with_model(with_layout(evaluation_fixture(), tp=8, pp=8, dp=8, ep=8), "deepseek-v3")
    evaluation["training"]["summary"]["training"]["global_batch_seqs"] = 1024
    f = torchrun_flags(evaluation)
    assert f["--expert-model-parallel-size"] == "8"
    assert (f["--num-experts"], f["--moe-router-topk"], f["--moe-ffn-hidden-size"]) == ("256", "8", "2048")
    assert f["--moe-shared-expert-intermediate-size"] == "2048"
    assert f["--moe-layer-freq"] == "([0]*3+[1]*58)"
    assert "--group-query-attention" not in f
    # 61 layers over pp 8: 6 middle stages of 8; the 3 missing layers come off the ends: 6 + 6×8 + 7 = 61.
    assert f["--decoder-first-pipeline-num-layers"] == "6" and f["--decoder-last-pipeline-num-layers"] == "7"


def test_deepseek_v3_launches_with_mla_mtp_and_its_pipeline_layout() -> None:
    # DeepSeek-V3's config.json widths as Megatron-LM's arguments: --qk-head-dim is the no-RoPE part (128),
    # --qk-pos-emb-head-dim the RoPE part (64); one MTP module; the layout Megatron-Core's docs give for
    # PP 16 × VPP 2 replaces the first/last-stage split.
    evaluation = with_model(
        with_layout(evaluation_fixture(), tp=2, pp=16, dp=16, ep=16, vpp=2), "deepseek-v3"
    )
    evaluation["training"]["summary"]["training"]["global_batch_seqs"] = 1024
    evaluation["spec"]["workload"]["training"]["pipeline_layout"] = "Et*3|(tt|)*29,m|L"
    f = torchrun_flags(evaluation)
    assert "--multi-latent-attention" in f
    assert (f["--q-lora-rank"], f["--kv-lora-rank"]) == ("1536", "512")
    assert (f["--qk-head-dim"], f["--qk-pos-emb-head-dim"], f["--v-head-dim"]) == ("128", "64", "128")
    assert f["--mtp-num-layers"] == "1"
    assert f["--pipeline-model-parallel-layout"] == "Et*3|(tt|)*29,m|L"
    assert "--decoder-first-pipeline-num-layers" not in f
    assert "--kv-channels" not in f


def test_a_layout_list_is_spelled_out_and_must_match_pp_times_vpp() -> None:
    evaluation = with_model(
        with_layout(evaluation_fixture(), tp=2, pp=16, dp=16, ep=16, vpp=1), "deepseek-v3"
    )
    evaluation["training"]["summary"]["training"]["global_batch_seqs"] = 1024
    evaluation["spec"]["workload"]["training"]["pipeline_layout"] = [4] * 15 + [1]
    f = torchrun_flags(evaluation)
    assert f["--pipeline-model-parallel-layout"] == "Etttt|" + "tttt|" * 14 + "tmL"
    evaluation["spec"]["workload"]["training"]["pipeline_layout"] = [2] * 30 + [1]
    with pytest.raises(ValueError, match=r"pipeline_layout has 31 stages but pp × vpp = 16×1"):
        launch_torchrun(evaluation=evaluation)


def test_qwen3_head_dim_is_passed_as_kv_channels() -> None:
    # Qwen3-30B-A3B: 32 heads of 128 on hidden 2048 (hidden / heads would be 64).
    evaluation = with_model(with_layout(evaluation_fixture(), tp=1, pp=1, dp=512, ep=8), "qwen3-30b-a3b")
    f = torchrun_flags(evaluation)
    assert f["--kv-channels"] == "128"
    assert "--multi-latent-attention" not in f


def test_missing_layout_is_a_clear_error() -> None:
    evaluation = evaluation_fixture()
    evaluation["training"] = {"fits": False, "assumptions": []}
    for launcher in (launch_torchrun, launch_sbatch, launch_volcano):
        with pytest.raises(ValueError, match="no parallel layout"):
            launcher(evaluation=evaluation)


def test_a_stored_spec_that_no_longer_parses_is_a_clear_error() -> None:
    evaluation = evaluation_fixture()
    evaluation["spec"]["costs"]["retired_setting"] = 1
    for launcher in (launch_torchrun, launch_sbatch, launch_volcano):
        with pytest.raises(ValueError, match="stored spec no longer parses"):
            launcher(evaluation=evaluation)
    del evaluation["spec"]["cluster"]
    with pytest.raises(ValueError, match="no spec.cluster"):
        launch_torchrun(evaluation=evaluation)


def test_layout_that_does_not_fit_is_a_clear_error() -> None:
    evaluation = evaluation_fixture()
    evaluation["training"]["fits"] = False
    evaluation["training"]["memory_per_gpu_gib"]["total"] = 93.4
    with pytest.raises(
        ValueError, match=r"does not fit in GPU memory \(needs 93.4 GiB per GPU, has 80 GiB\)"
    ):
        launch_sbatch(evaluation=evaluation)


def test_layout_that_does_not_cover_the_cluster_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"8×4×8×1 = 256 GPUs but the cluster has 64 nodes × 8 = 512"):
        launch_torchrun(evaluation=with_layout(evaluation_fixture(), dp=8))


def test_global_batch_that_does_not_split_over_data_parallel_is_rejected() -> None:
    evaluation = with_layout(evaluation_fixture(), micro_batch=3)
    with pytest.raises(ValueError, match=r"512 sequences does not divide by micro_batch × dp = 3×16"):
        launch_torchrun(evaluation=evaluation)


# ---- sbatch ------------------------------------------------------------------------------------------------
def test_sbatch_script_passes_bash_syntax_check(tmp_path: Path) -> None:
    script = tmp_path / "train.sbatch"
    script.write_text(launch_sbatch(evaluation=evaluation_fixture()))
    subprocess.run([BASH, "-n", str(script)], check=True, timeout=30)


def test_sbatch_directives_come_before_any_command() -> None:
    lines = launch_sbatch(evaluation=evaluation_fixture()).splitlines()
    assert lines[0] == "#!/bin/bash"
    first_command = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    directives = [line for line in lines[:first_command] if line.startswith("#SBATCH")]
    assert directives[1:6] == [
        "#SBATCH --nodes=64",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
    ]
    assert directives[0] == "#SBATCH --job-name=70b-on-64-h100-nodes"
    assert not any(line.startswith("#SBATCH") for line in lines[first_command:])


def test_sbatch_runs_torchrun_with_rendezvous_on_the_first_node() -> None:
    env = {"SLURM_JOB_NODELIST": "node-[001-064]", "SLURM_JOB_NUM_NODES": "64", "SLURM_JOB_ID": "4242"}
    argv = run_bash(launch_sbatch(evaluation=evaluation_fixture()), env)
    assert argv[:4] == ["srun", "--kill-on-bad-exit=1", "--ntasks-per-node=1", "torchrun"]
    f = flags(argv[4:])
    assert f["--rdzv-endpoint"] == "node-001:29500" and f["--rdzv-backend"] == "c10d"
    assert (f["--nnodes"], f["--nproc-per-node"], f["--rdzv-id"]) == ("64", "8", "4242")
    assert f["--tensor-model-parallel-size"] == "8" and f["--global-batch-size"] == "512"
    assert argv[9] == "/workspace/Megatron-LM/pretrain_gpt.py"  # ${MEGATRON_DIR:-...} expanded


def test_sbatch_exports_efa_settings_for_an_efa_cluster() -> None:
    text = launch_sbatch(evaluation=with_cluster(evaluation_fixture(), fabric="aws-efa"))
    assert "export FI_PROVIDER=efa  # " in text
    assert "export FI_EFA_USE_DEVICE_RDMA=1  # " in text
    assert "export NCCL_PROTO=simple  # " in text
    assert "NCCL_IB_HCA" not in text


# ---- Volcano -----------------------------------------------------------------------------------------------
def volcano(evaluation: dict[str, Any]) -> dict[str, Any]:
    doc = yaml.safe_load(launch_volcano(evaluation=evaluation))
    assert isinstance(doc, dict)
    return doc


def test_volcano_job_gang_schedules_one_pod_per_node() -> None:
    doc = volcano(evaluation_fixture())
    assert doc["apiVersion"] == "batch.volcano.sh/v1alpha1" and doc["kind"] == "Job"
    assert doc["metadata"]["name"] == "70b-on-64-h100-nodes"
    spec = doc["spec"]
    assert spec["schedulerName"] == "volcano" and spec["minAvailable"] == 64
    tasks = {t["name"]: t for t in spec["tasks"]}
    assert (tasks["master"]["replicas"], tasks["worker"]["replicas"]) == (1, 63)
    assert spec["plugins"]["pytorch"] == ["--master=master", "--worker=worker", "--port=23456"]


def test_volcano_pods_ask_for_all_gpus_and_the_rdma_devices() -> None:
    for task in volcano(evaluation_fixture())["spec"]["tasks"]:
        pod = task["template"]["spec"]
        container = pod["containers"][0]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": 8, "rdma/rdma_shared_device_a": 1}
        assert "IPC_LOCK" in container["securityContext"]["capabilities"]["add"]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env["NCCL_IB_HCA"] == "mlx5" and env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
        assert all(isinstance(v, str) for v in env.values())  # Kubernetes env values must be strings
        assert pod["volumes"][0]["emptyDir"]["medium"] == "Memory"


def test_volcano_script_launches_torchrun_with_the_plugin_rank() -> None:
    container = volcano(evaluation_fixture())["spec"]["tasks"][1]["template"]["spec"]["containers"][0]
    assert container["command"] == ["/bin/bash", "-c"]
    argv = run_bash(
        container["args"][0], {"RANK": "5", "MASTER_ADDR": "job-master-0", "MASTER_PORT": "23456"}
    )
    f = flags(argv[1:])
    assert (f["--node-rank"], f["--master-addr"], f["--master-port"]) == ("5", "job-master-0", "23456")
    assert f["--nnodes"] == "64" and f["--pipeline-model-parallel-size"] == "4"


def test_volcano_on_efa_asks_for_the_efa_interfaces() -> None:
    doc = volcano(with_cluster(evaluation_fixture(), fabric="aws-efa"))
    limits = doc["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 8, "vpc.amazonaws.com/efa": 32}  # p5.48xlarge has 32 EFA interfaces


def test_volcano_single_node_job_has_only_the_master_task() -> None:
    evaluation = with_layout(with_cluster(evaluation_fixture(), nodes=1, fabric="eth-100g"), pp=1, dp=1)
    evaluation["spec"]["workload"]["training"]["global_batch_tokens"] = 8192 * 64
    evaluation["training"]["summary"]["training"]["global_batch_seqs"] = 64
    doc = volcano(evaluation)
    assert doc["spec"]["minAvailable"] == 1 and [t["name"] for t in doc["spec"]["tasks"]] == ["master"]
    pod = doc["spec"]["tasks"][0]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8}


# ---- NCCL --------------------------------------------------------------------------------------------------
def test_nccl_env_for_infiniband() -> None:
    env = nccl_env(fabric_kind="infiniband", fabric_slug="ib-ndr400")
    assert env == {"NCCL_IB_HCA": "mlx5", "NCCL_NET_GDR_LEVEL": "PXB"}  # GID index deliberately unset


def test_nccl_env_for_roce() -> None:
    env = nccl_env(fabric_kind="roce", fabric_slug="roce-400g")
    assert env["NCCL_IB_GID_INDEX"] == "3" and env["NCCL_IB_TC"] == "106" and env["NCCL_IB_HCA"] == "mlx5"
    assert env["NCCL_IB_QPS_PER_CONNECTION"] == "4"


def test_nccl_env_for_efa_follows_aws_ofi_nccl() -> None:
    env = nccl_env(fabric_kind="efa", fabric_slug="aws-efa")
    assert env == {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "NCCL_PROTO": "simple"}


def test_nccl_env_for_plain_ethernet_scales_socket_threads_with_link_speed() -> None:
    fast = nccl_env(fabric_kind="ethernet", fabric_slug="eth-100g")
    slow = nccl_env(fabric_kind="ethernet", fabric_slug="eth-10g")
    assert fast["NCCL_IB_DISABLE"] == "1" and fast["NCCL_SOCKET_IFNAME"] == "^lo,docker,veth,virbr"
    assert (fast["NCCL_SOCKET_NTHREADS"], fast["NCCL_NSOCKS_PERTHREAD"]) == ("4", "4")
    assert "NCCL_SOCKET_NTHREADS" not in slow and slow["NCCL_IB_DISABLE"] == "1"


def test_every_nccl_setting_says_why() -> None:
    for kind, slug in (
        ("infiniband", "ib-hdr200"),
        ("roce", "roce-400g"),
        ("efa", "aws-efa"),
        ("ethernet", "eth-100g"),
    ):
        for setting in nccl_settings(fabric_kind=kind, fabric_slug=slug):
            assert len(setting.why) > 20, setting


def test_unknown_fabric_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fabric kind 'omnipath'"):
        nccl_env(fabric_kind="omnipath", fabric_slug="opa-100")
    with pytest.raises(ValueError, match="cannot tell the fabric kind of 'opa-100'"):
        launch_torchrun(evaluation=with_cluster(evaluation_fixture(), fabric="opa-100"))


def test_every_seed_fabric_gets_a_kind_and_settings() -> None:
    seed = json.loads((ROOT / "apps/catalog/data/seed_catalog.json").read_text())
    for fabric in seed["fabrics"]:
        evaluation = with_cluster(evaluation_fixture(), fabric=fabric["slug"])
        text = launch_torchrun(evaluation=evaluation)
        expected = nccl_env(fabric_kind=fabric["kind"], fabric_slug=fabric["slug"])
        for name, value in expected.items():
            assert f"export {name}={value}  # " in text.replace("'", ""), (fabric["slug"], name)


def test_real_engine_evaluation_produces_valid_launch_files(tmp_path: Path) -> None:
    # The engine's evaluate_design on the seed catalog: 8 × 8 H200 on IB NDR400, TP1 DP64 mb2.
    from apps.designs.demo import DEMOS
    from tests.designs.fixtures import evaluated_json

    records = json.loads((ROOT / "apps/catalog/data/seed_catalog.json").read_text())
    spec = next(d["spec"] for d in DEMOS if d["spec"]["cluster"]["accelerator"] == "h200")
    evaluation = evaluated_json(spec=spec, records=records)
    evaluation["design"] = {"id": 1, "name": "8 x 8 H200", "version": 1}
    f = torchrun_flags(evaluation)
    assert (f["--tensor-model-parallel-size"], f["--micro-batch-size"], f["--global-batch-size"]) == (
        "1",
        "2",
        "512",
    )
    assert (f["--num-layers"], f["--hidden-size"], f["--vocab-size"]) == (
        "32",
        "4096",
        "128256",
    )  # Llama 3 8B
    script = tmp_path / "job.sbatch"
    script.write_text(launch_sbatch(evaluation=evaluation))
    subprocess.run([BASH, "-n", str(script)], check=True, timeout=30)
    assert volcano(evaluation)["spec"]["minAvailable"] == 8


def test_the_header_counts_one_node_in_the_singular() -> None:
    one = with_layout(with_cluster(evaluation_fixture(), nodes=1), tp=8, pp=1, dp=1)
    assert "'70B on 64 H100 nodes': 1 node x 8 GPUs (h100-sxm)" in launch_torchrun(evaluation=one)
    assert ": 64 nodes x 8 GPUs" in launch_torchrun(evaluation=evaluation_fixture())
    with pytest.raises(ValueError, match=r"cluster has 1 node × 8 = 8$"):
        launch_torchrun(evaluation=with_layout(with_cluster(evaluation_fixture(), nodes=1), dp=8))
