"""Run settings the layout search chooses beside the layout (issue 33, "the whole space searched").

Calculon (Isaev et al., SC '23, doi:10.1145/3581784.3607102, Sec. 3 and Table 2) enumerates, for each
parallel layout, the TP communication type and its overlap, the data-parallel overlap and the offload of
weights, activations and optimizer states. The engine has these as ``Training`` fields; each one the
request leaves out, and the training stack runs, is a searched dimension here (a field the request gives
stays fixed):

- ``tp_comm_overlap`` (Megatron-Core --tp-comm-overlap) and ``fsdp_overlap`` (the data-parallel overlap of
  the sharded states' gathers), searched over {on, off} on a stack whose profile overlaps them (a stack
  that cannot, such as Megatron-LM of 2022, keeps off). The TP communication *type* (all-reduce, or
  reduce-scatter + all-gather with sequence parallelism) is the layout field ``sequence_parallel``, searched
  already; the data-parallel gradient reduction of an unsharded layout is always overlapped with the last
  backward (timing.py), no setting.
Offload is searched only when the request sets ``training.search_offload: true`` (host memory is not
modelled, so an offload is never proposed unasked):

- ``optimizer_offload`` (--optimizer-cpu-offload; DeepSpeed ZeRO-Offload, arXiv:2101.06840) on Megatron-Core
  and DeepSpeed, with Adam, on an accelerator with a host link.
- ``activation_offload_layers`` (--cpu-offloading-num-layers, 0 … layers − 1; Megatron-Core only, with pp 1
  and no recompute: search._offload_checks) on an accelerator with a host link and without per-module
  offload. Weight offload is not modelled by the engine and is not searched.

Every combination is evaluated by the same ``memory_parts`` / ``step_time_parts`` as a single estimate, on
the problem with those fields replaced (:func:`with_settings`). Dominance (search.py prunes by it):

- overlap on is never slower than off at the same memory: the exposed time is
  max(0, c − x) + OVERLAP_PENALTY · min(c, x) ≤ c (timing._exposed, OVERLAP_PENALTY < 1);
- offload lowers memory and never shortens the step: optimizer offload replaces the on-GPU Adam step with
  host-link copies and a CPU step at host-memory bandwidth, and each offloaded layer adds
  max(0, copy − compute) ≥ 0 (timing._activation_offload) while keeping 1 − N / layers of the activations
  (memory._stage_activations), so a layout that fits without offload is best without it, and one that does
  not is best at the fewest offloaded layers that make it fit.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from clusterdesigner.engine.core.model import RECOMPUTE_NONE
from clusterdesigner.engine.training.framework import profile
from clusterdesigner.engine.training.workload import IntArray, Problem, Training

SEARCHED_SETTINGS = ("tp_comm_overlap", "fsdp_overlap", "optimizer_offload", "activation_offload_layers")
# The stacks with each offload: Megatron-Core's --optimizer-cpu-offload and --cpu-offloading-num-layers
# (transformer_config.py), DeepSpeed's ZeRO-Offload (arXiv:2101.06840) for the optimizer.
OFFLOAD_STACKS = {
    "optimizer_offload": ("megatron-core", "deepspeed-zero-2021"),
    "activation_offload_layers": ("megatron-core",),
}


def searchable_settings(
    tr: Mapping[str, Any], training: Training, *, layers: int, host_link_gbps: float
) -> tuple[str, ...]:
    """The settings of SEARCHED_SETTINGS the search may choose: those the request's ``training`` section
    ``tr`` leaves out (or null) that the stack runs (module docstring). The two offloads only when ``tr``
    asks for them with ``search_offload: true``: the engine does not model host memory, so an offload the
    search chose unasked could need more host RAM than the nodes have (Llama 3 405B on 4 H100 nodes would
    keep ~1.2 TB of optimizer states per node in host memory, unchecked) and would move every answer."""
    stack = profile(training.framework)
    host = host_link_gbps > 0 and tr.get("search_offload") is True
    runs = {
        "tp_comm_overlap": stack.tp_comm_overlap,
        "fsdp_overlap": stack.fsdp_overlap,
        "optimizer_offload": host
        and training.optimizer == "adam"
        and training.framework in OFFLOAD_STACKS["optimizer_offload"],
        "activation_offload_layers": host
        and layers >= 2
        and not training.activation_offload_modules
        and training.framework in OFFLOAD_STACKS["activation_offload_layers"],
    }
    return tuple(name for name in SEARCHED_SETTINGS if runs[name] and tr.get(name) is None)


def setting_values(problem: Problem) -> dict[str, list[Any]]:
    """Each searched setting's values, the dominant one first (overlap on, no offload)."""
    values: dict[str, list[Any]] = {}
    for name in problem.training.searched_settings:
        if name in ("tp_comm_overlap", "fsdp_overlap"):
            values[name] = [True, False]
        elif name == "optimizer_offload":
            values[name] = [False, True]
        else:
            values[name] = list(range(problem.model.layers))
    return values


def base_settings(problem: Problem) -> dict[str, Any]:
    """The dominant value of each searched setting."""
    return {name: values[0] for name, values in setting_values(problem).items()}


def setting_combinations(problem: Problem) -> list[dict[str, Any]]:
    """Every combination of the searched settings' values, the base (dominant) one first."""
    values = setting_values(problem)
    return [dict(zip(values, combo, strict=True)) for combo in itertools.product(*values.values())]


def with_settings(problem: Problem, settings: Mapping[str, Any]) -> Problem:
    """The problem with those Training fields replaced."""
    if not settings:
        return problem
    return replace(problem, training=replace(problem.training, **settings))


def combinations_per_layout(problem: Problem, lay: Mapping[str, IntArray]) -> IntArray:
    """How many setting combinations each layout has: the product of the searched settings' value counts,
    activation offload's layers − 1 depths counted only where it runs (pp 1, no recompute)."""
    values = setting_values(problem)
    others = 1
    for name, options in values.items():
        if name != "activation_offload_layers":
            others *= len(options)
    depths = np.ones(lay["tp"].size, dtype=np.int64)
    if "activation_offload_layers" in values:
        runs = (lay["pp"] == 1) & (lay["recompute"] == RECOMPUTE_NONE)
        depths = np.where(runs, len(values["activation_offload_layers"]), 1)
    out: IntArray = others * depths
    return out


__all__ = [
    "SEARCHED_SETTINGS",
    "base_settings",
    "combinations_per_layout",
    "searchable_settings",
    "setting_combinations",
    "setting_values",
    "with_settings",
]
