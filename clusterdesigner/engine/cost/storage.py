"""Checkpoint size, save time per storage tier, and the dataset read bandwidth a run needs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.offerings import StorageTierSpec

# Mixed-precision Adam keeps 2 (bf16 weights) + 4 (fp32 master) + 4 + 4 (Adam m, v) bytes per parameter worth
# saving; gradients are not checkpointed. Rajbhandari et al., "ZeRO", SC'20, Sec. 3.1 (16Ψ bytes of model
# state including 2Ψ of gradients). Checks: BLOOM-176B 2.3 TB (13.1 B/param, bigscience tr11-176B-ml
# README), Megatron 1T 13.8 TB (13.8 B/param, Narayanan et al. 2021 Sec. 5.10).
CHECKPOINT_BYTES_PER_PARAM = 14.0


def checkpoint_gb(*, params: float, bytes_per_param: float = CHECKPOINT_BYTES_PER_PARAM) -> float:
    """Checkpoint size in GB (10⁹ bytes) = parameters · bytes per parameter / 10⁹."""
    if params <= 0:
        raise InputError("must be more than zero", field="run.params_b")
    if bytes_per_param <= 0:
        raise InputError("must be more than zero", field="storage.checkpoint_bytes_per_param")
    return params * bytes_per_param / 1e9


@dataclass(frozen=True)
class TierTiming:
    slug: str
    name: str
    kind: str
    write_gbps: float  # what the tier gives this many nodes, GB/s
    read_gbps: float
    blocking_save_s: float  # training stops for the whole write
    async_blocking_s: float | None  # training stops only for the copy to local NVMe
    async_upload_s: float | None  # background upload from NVMe to this tier
    read_needed_gbps: float | None
    read_ok: bool | None

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def save_timings(
    *,
    checkpoint_size_gb: float,
    nodes: int,
    tiers: Mapping[str, StorageTierSpec],
    read_needed_gbps: float | None,
    capacity_tib: float | None = None,
) -> dict[str, TierTiming]:
    """Per tier: blocking save = size / write GB/s; async = size / (nodes · NVMe write) then upload in the
    background at the tier's rate (the pattern of e.g. PyTorch DCP async save, Nebula, CheckFreq).

    Per-node tiers (local NVMe) scale with the node count; aggregate tiers (parallel FS, NFS, object store)
    give their stated total; a tier with a throughput per TiB gives capacity TiB × MB/s/TiB (``capacity_tib``,
    the capacity provisioned). Read: the tier's read GB/s against tokens/s · bytes per token.
    """
    nvme = next((t for t in tiers.values() if t.kind == "local_nvme"), None)
    snapshot_s = None if nvme is None else checkpoint_size_gb / nvme.bandwidth_gbps(nodes=nodes, write=True)
    out: dict[str, TierTiming] = {}
    for slug, tier in tiers.items():
        write = tier.bandwidth_gbps(nodes=nodes, write=True, capacity_tib=capacity_tib)
        read = tier.bandwidth_gbps(nodes=nodes, write=False, capacity_tib=capacity_tib)
        blocking = checkpoint_size_gb / write
        is_nvme = tier.kind == "local_nvme"
        out[slug] = TierTiming(
            slug=slug,
            name=tier.name,
            kind=tier.kind,
            write_gbps=write,
            read_gbps=read,
            blocking_save_s=blocking,
            async_blocking_s=blocking if is_nvme else snapshot_s,
            async_upload_s=None if is_nvme or snapshot_s is None else blocking,
            read_needed_gbps=read_needed_gbps,
            read_ok=None if read_needed_gbps is None else read >= read_needed_gbps,
        )
    return out


def dataset_read_gbps(*, tokens_per_s: float, bytes_per_token: float) -> float:
    """GB/s of training data = tokens/s · bytes per token / 10⁹ (pre-tokenised data, e.g. int32 token ids)."""
    return tokens_per_s * bytes_per_token / 1e9


def capacity_for_write_tib(*, checkpoint_size_gb: float, target_write_s: float, mb_s_per_tib: float) -> float:
    """TiB to provision on a per-TiB tier so that a checkpoint saves in ``target_write_s``:
    size GB × 1,000 ÷ (target s × MB/s/TiB). E.g. 5.67 TB of 405B state in 60 s at 125 MB/s/TiB needs
    5,670,000 ÷ 7,500 = 756 TiB."""
    if target_write_s <= 0:
        raise InputError("must be more than zero", field="storage.target_write_s")
    return checkpoint_size_gb * 1000.0 / (target_write_s * mb_s_per_tib)
