"""Checkpoint size, save time per tier and dataset bandwidth."""

from __future__ import annotations

import pytest
from test_cost_fixtures import STORAGE

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.storage import checkpoint_gb, dataset_read_gbps, save_timings


def test_checkpoint_of_bloom_176b_is_about_its_measured_2_3_tb() -> None:
    # 176e9 × 14 B = 2,464 GB; BLOOM measured 2.3 TB (bigscience tr11-176B-ml README), within 7 %.
    size = checkpoint_gb(params=176e9)
    assert size == pytest.approx(2464.0)
    assert abs(size - 2300) / 2300 < 0.08


def test_blocking_and_async_save_times_by_hand() -> None:
    # 70B × 14 B = 980 GB. Lustre 12.5 GB/s aggregate: 980 / 12.5 = 78.4 s blocking.
    # Async: 8 nodes × 12 GB/s NVMe = 96 GB/s → 980 / 96 = 10.21 s blocking, then 78.4 s upload.
    t = save_timings(checkpoint_size_gb=980.0, nodes=8, tiers=STORAGE, read_needed_gbps=0.5)
    assert t["lustre"].blocking_save_s == pytest.approx(78.4)
    assert t["lustre"].async_blocking_s == pytest.approx(980 / 96)
    assert t["lustre"].async_upload_s == pytest.approx(78.4)
    # NFS 3 GB/s write: 326.7 s.
    assert t["nfs"].blocking_save_s == pytest.approx(980 / 3)
    assert t["lustre"].read_ok is True


def test_dataset_read_bandwidth_by_hand() -> None:
    # 3.0M tokens/s × 4 B = 12 GB/s: more than a 10 GB/s tier gives.
    assert dataset_read_gbps(tokens_per_s=3e6, bytes_per_token=4) == pytest.approx(0.012)
    t = save_timings(checkpoint_size_gb=1.0, nodes=1, tiers=STORAGE, read_needed_gbps=12.0)
    assert t["nfs"].read_ok is False and t["lustre"].read_ok is True


def test_rejects_zero_parameters() -> None:
    with pytest.raises(InputError) as err:
        checkpoint_gb(params=0)
    assert err.value.field == "run.params_b"
