"""The chosen serving configuration as something to run: a ``vllm serve`` command line, the same
configuration for SGLang and TensorRT-LLM, and a Kubernetes manifest (a Deployment of the replicas and a
Service), built from the estimate and its request.

Flags are vLLM's engine arguments (docs.vllm.ai, "Engine Arguments": --tensor-parallel-size,
--pipeline-parallel-size, --max-num-seqs, --max-model-len, --gpu-memory-utilization, --kv-cache-dtype fp8,
--quantization fp8; --enable-expert-parallel from vLLM 0.8). The image is vLLM's OpenAI-compatible server
(``vllm/vllm-openai`` on Docker Hub); GPUs are requested as ``nvidia.com/gpu`` (NVIDIA's device plugin) or
``amd.com/gpu`` (AMD's) by the accelerator's vendor.

SGLang's server arguments (docs.sglang.io, "Server Arguments"): --tp-size, --pp-size, --ep-size,
--max-running-requests, --context-length, --mem-fraction-static, --quantization fp8, --kv-cache-dtype
fp8_e4m3. TensorRT-LLM's ``trtllm-serve`` options (nvidia.github.io/TensorRT-LLM, "trtllm-serve"):
--backend pytorch, --tp_size, --pp_size, --ep_size, --max_batch_size, --max_seq_len,
--kv_cache_free_gpu_memory_fraction; it takes FP8/FP4 weights and an FP8 KV cache from a quantized
checkpoint (NVIDIA's ModelOpt ones), not from a flag.

Attention data parallelism with wide expert parallelism (``LayoutResult.attention_dp``, N = the replica's
tp): vLLM runs N data-parallel attention ranks of tp 1 whose experts form one expert-parallel group
(``--data-parallel-size N --enable-expert-parallel``, vLLM's "Data Parallel Deployment" and "Expert
Parallel Deployment" guides); SGLang ``--tp-size N --dp-size N --enable-dp-attention --ep-size N``
(server_args.py); TensorRT-LLM ``--tp_size N --ep_size N`` with ``enable_attention_dp: true`` in the
LLM API options file (``--extra_llm_api_options``), as its perf overview's MoE commands set it.
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from clusterdesigner.engine.core.hardware import AcceleratorSpec
from clusterdesigner.engine.core.presets import PRESET_WEIGHTS
from clusterdesigner.engine.serving.serving import ServingInput, ServingResult

# A preset without public weights (GPT-3, Megatron) or a custom shape: a placeholder the user replaces.
PLACEHOLDER_MODEL = "<your-model-path>"
IMAGE = "vllm/vllm-openai:latest"


def model_path(request: dict[str, Any]) -> str:
    """The Hugging Face repository of the request's preset, or a placeholder for any other shape."""
    model = request.get("model") or {}
    preset = model.get("preset") if isinstance(model, dict) and set(model) == {"preset"} else None
    return PRESET_WEIGHTS.get(str(preset), PLACEHOLDER_MODEL)


def vllm_args(inp: ServingInput, result: ServingResult, *, model: str) -> list[str]:
    """``vllm serve`` arguments for one replica of the chosen layout: its tp and pp, the batch cap as
    --max-num-seqs, the longest request as --max-model-len, memory kept back as --gpu-memory-utilization,
    FP8 weights and KV cache where chosen, expert parallelism for an MoE layout with ep > 1."""
    best = result.best
    longest = max(n_in + n_out for n_in, n_out, _ in inp.classes)
    # attention data-parallel: tp data-parallel ranks of tensor parallelism 1
    parallel = (
        ["--tensor-parallel-size", "1", "--data-parallel-size", str(best.tp)]
        if best.attention_dp
        else ["--tensor-parallel-size", str(best.tp)]
    )
    args = [
        "vllm",
        "serve",
        model,
        *parallel,
        "--pipeline-parallel-size",
        str(best.pp),
        "--max-num-seqs",
        str(best.batch),
        "--max-model-len",
        str(longest),
        "--gpu-memory-utilization",
        f"{1.0 - inp.efficiency.memory_reserve_fraction:g}",
    ]
    if inp.weight_precision == "fp8":
        args += ["--quantization", "fp8"]
    if inp.kv_precision == "fp8":
        args += ["--kv-cache-dtype", "fp8"]
    # switches last, after the options that take a value
    args += ["--enable-chunked-prefill"]
    if best.ep > 1 or best.attention_dp:
        args += ["--enable-expert-parallel"]
    return args


def vllm_command(inp: ServingInput, result: ServingResult, *, model: str) -> str:
    return shlex.join(vllm_args(inp, result, model=model))


def sglang_args(inp: ServingInput, result: ServingResult, *, model: str) -> list[str]:
    """``sglang.launch_server`` arguments for one replica of the chosen layout, flag for flag what
    :func:`vllm_args` sets: tp, pp, ep (MoE with ep > 1), the batch cap, the longest request, the memory
    share, FP8 weights and KV cache where chosen."""
    best = result.best
    longest = max(n_in + n_out for n_in, n_out, _ in inp.classes)
    args = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        model,
        "--tp-size",
        str(best.tp),
        "--pp-size",
        str(best.pp),
        "--max-running-requests",
        str(best.batch),
        "--context-length",
        str(longest),
        "--mem-fraction-static",
        f"{1.0 - inp.efficiency.memory_reserve_fraction:g}",
    ]
    if best.attention_dp:
        args += ["--dp-size", str(best.tp), "--enable-dp-attention"]
    if best.ep > 1:
        args += ["--ep-size", str(best.ep)]
    if inp.weight_precision == "fp8":
        args += ["--quantization", "fp8"]
    if inp.kv_precision == "fp8":
        args += ["--kv-cache-dtype", "fp8_e4m3"]
    return args


def trtllm_args(inp: ServingInput, result: ServingResult, *, model: str) -> list[str]:
    """``trtllm-serve`` arguments (PyTorch backend) for one replica of the chosen layout: tp, pp, ep (MoE
    with ep > 1), the batch cap as --max_batch_size, the longest request as --max_seq_len, the memory share
    as the KV cache's fraction of free memory. Precision comes with the checkpoint (see the module note)."""
    best = result.best
    longest = max(n_in + n_out for n_in, n_out, _ in inp.classes)
    args = [
        "trtllm-serve",
        model,
        "--backend",
        "pytorch",
        "--tp_size",
        str(best.tp),
        "--pp_size",
        str(best.pp),
    ]
    if best.ep > 1:
        args += ["--ep_size", str(best.ep)]
    args += [
        "--max_batch_size",
        str(best.batch),
        "--max_seq_len",
        str(longest),
        "--kv_cache_free_gpu_memory_fraction",
        f"{1.0 - inp.efficiency.memory_reserve_fraction:g}",
    ]
    if best.attention_dp:
        args += ["--extra_llm_api_options", TRTLLM_OPTIONS_FILE]
    return args


# The LLM API options file trtllm_command writes before starting the server under attention DP.
TRTLLM_OPTIONS_FILE = "extra-llm-api-config.yml"


def trtllm_command(inp: ServingInput, result: ServingResult, *, model: str) -> str:
    """The ``trtllm-serve`` command line; under attention data parallelism preceded by writing the options
    file that turns it on (``enable_attention_dp: true``: the flag has no command-line form)."""
    line = shlex.join(trtllm_args(inp, result, model=model))
    if not result.best.attention_dp:
        return line
    return f"printf 'enable_attention_dp: true\\n' > {TRTLLM_OPTIONS_FILE} && {line}"


def _gpu_resource(accelerator: AcceleratorSpec) -> str:
    return "amd.com/gpu" if "amd" in accelerator.vendor.lower() else "nvidia.com/gpu"


def kubernetes_manifest(inp: ServingInput, result: ServingResult, *, model: str) -> str:
    """A Deployment of ``best.replicas`` pods, each one replica on tp × pp GPUs of one node, and a Service on
    port 8000. A replica wider than a node (tp · pp > GPUs per node) needs a multi-node runner
    (LeaderWorkerSet with Ray); the manifest says so in a comment instead of pretending one pod fits."""
    best = result.best
    gpus = best.tp * best.pp
    name = "llm-" + result.model.lower().replace(" ", "-").replace(".", "-")[:40].strip("-")

    def labels() -> dict[str, str]:  # a fresh dict each time: a shared one would be dumped as a YAML anchor
        return {"app": name}

    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels()},
        "spec": {
            "replicas": best.replicas,
            "selector": {"matchLabels": labels()},
            "template": {
                "metadata": {"labels": labels()},
                "spec": {
                    "containers": [
                        {
                            "name": "vllm",
                            "image": IMAGE,
                            "command": vllm_args(inp, result, model=model)[:2],
                            "args": vllm_args(inp, result, model=model)[2:] + ["--port", "8000"],
                            "ports": [{"containerPort": 8000}],
                            "resources": {"limits": {_gpu_resource(inp.accelerator): gpus}},
                            "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                        }
                    ],
                    # tensor-parallel workers exchange tensors through shared memory
                    "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name},
        "spec": {"selector": labels(), "ports": [{"port": 8000, "targetPort": 8000}]},
    }
    head = (
        f"# {result.model} on {inp.accelerator.name}: {best.replicas} replica(s) of tp{best.tp} pp{best.pp}"
        + (f" (attention data-parallel, ep{best.ep})" if best.attention_dp else "")
        + f" ({gpus} GPUs each, {best.gpus} in all), batch cap {best.batch}:"
        " ClusterDesigner serving estimate\n"
    )
    if gpus > inp.gpus_per_node:
        head += (
            f"# NOTE: a replica needs {gpus} GPUs, more than a node's {inp.gpus_per_node}: run it across"
            " nodes (LeaderWorkerSet + Ray); this single-pod Deployment does not fit as written\n"
        )
    if model == PLACEHOLDER_MODEL:
        head += f"# NOTE: replace {PLACEHOLDER_MODEL} with the model's weights (no public repository known)\n"
    return head + yaml.safe_dump_all([deployment, service], sort_keys=False)


def deploy_texts(request: dict[str, Any], inp: ServingInput, result: ServingResult) -> dict[str, str]:
    """The exports of the chosen configuration, keyed as the API returns them."""
    model = model_path(request)
    return {
        "vllm_command": vllm_command(inp, result, model=model),
        "sglang_command": shlex.join(sglang_args(inp, result, model=model)),
        "trtllm_command": trtllm_command(inp, result, model=model),
        "kubernetes_manifest": kubernetes_manifest(inp, result, model=model),
    }
