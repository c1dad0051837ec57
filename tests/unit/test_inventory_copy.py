"""The host-link copy test's pure parts and its place in the inventory: GPUs found
by UUID, not by nvidia-smi's index; CPUs of the GPU's NUMA node bound (for real, with
sched_setaffinity) before pinned memory is allocated; the median of the samples; one GPU's
CUDA error a skipped line, not the end of the inventory."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from netbench.inventory.copy import (
    cpu_affinity,
    median_gbps,
    numa_cpus,
    parse_cpulist,
    uuid_to_index,
)
from netbench.inventory.read import read_inventory
from tests.unit.test_inventory import ScriptedCopier, materialise, runner


def test_cpulist_by_hand(tmp_path: Path) -> None:
    assert parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert parse_cpulist("") == set()
    node = tmp_path / "devices/system/node/node1"
    node.mkdir(parents=True)
    (node / "cpulist").write_text("56-111,168-223\n")  # a DGX H100's second socket
    assert len(numa_cpus(1, tmp_path)) == 112 and numa_cpus(None, tmp_path) == set()
    assert numa_cpus(0, tmp_path) == set()  # unreadable: no binding, never a guess


def test_affinity_is_really_set_and_restored() -> None:
    before = os.sched_getaffinity(0)
    one = {min(before)}
    with cpu_affinity(one) as used:
        assert os.sched_getaffinity(0) == one == used
    assert os.sched_getaffinity(0) == before
    with cpu_affinity({10_000}) as used:  # a node this process may not run on: left alone
        assert os.sched_getaffinity(0) == before == used


def test_torch_device_found_by_uuid_not_by_index() -> None:
    # CUDA_VISIBLE_DEVICES=3,1 (or CUDA_DEVICE_ORDER=FASTEST_FIRST): torch's device 0 is the
    # GPU nvidia-smi calls 3; torch's properties carry the UUID without the 'GPU-' prefix
    props = [
        SimpleNamespace(uuid="7c1f0e2a-55d1-4b3e-9a0c-000000000003"),
        SimpleNamespace(uuid="7c1f0e2a-55d1-4b3e-9a0c-000000000001"),
    ]
    assert uuid_to_index(props) == {
        "GPU-7c1f0e2a-55d1-4b3e-9a0c-000000000003": 0,
        "GPU-7c1f0e2a-55d1-4b3e-9a0c-000000000001": 1,
    }


def test_median_of_samples_by_hand() -> None:
    # 5 copies of 1 GiB per sample; samples of 20, 25 and 100 ms (one disturbed):
    # the median rate is the 25 ms sample's, 5 x 1073741824 B / 0.025 s = 214.75 GB/s
    assert median_gbps(1 << 30, 5, [20.0, 25.0, 100.0]) == pytest.approx(214.748364, rel=1e-6)


class FailingOn(ScriptedCopier):
    def __init__(self, bad: int) -> None:
        super().__init__({i: (55.0, 55.1, 17.9) for i in range(8)})
        self.bad = bad

    def __call__(self, which: dict[str, Any], nbytes: int, during: Any) -> dict[str, float]:
        if which["gpu"] == self.bad:
            raise RuntimeError("CUDA error: out of memory\nCUDA kernel errors might be reported ...")
        return super().__call__(which, nbytes, during)


def test_one_gpus_cuda_error_is_a_skipped_line(tmp_path: Path) -> None:
    root, outputs = materialise(tmp_path, {})
    copier = FailingOn(3)
    inv = read_inventory(sys_root=root, run=runner(outputs), kernel_log=lambda: "", copier=copier)
    links = {r["gpu"]: r for r in inv.records if r["component"] == "host link"}
    assert len(links) == 8 and "h2d_pinned_GBps" not in links[3] and links[4]["h2d_pinned_GBps"] == 55.0
    assert "host-link copy test of GPU3: RuntimeError: CUDA error: out of memory" in inv.skipped
    # what the copier is told: the UUID nvidia-smi printed and the GPU's NUMA node from sysfs
    w = {x["gpu"]: x for x in copier.which}
    assert w[0] == {"gpu": 0, "uuid": "GPU-7c1f0e2a-55d1-4b3e-9a0c-000000000000", "numa_node": 0}
    assert w[6]["numa_node"] == 1
