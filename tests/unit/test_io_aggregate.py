"""Aggregation across hosts, the cache rule, space rule, mounts and launcher detection (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from iobench.aggregate import HostResult, RecordContext, aggregate
from iobench.coordinator import host_name, launcher_rank
from iobench.safety import mount_of, space_problem

CTX = RecordContext(run_id="r", workload="checkpoint_write", path="/p", scope="shared", direct=True)


def test_two_hosts_aggregate_over_the_common_window() -> None:
    a = HostResult(
        host="a",
        direction="write",
        bytes=4_000_000_000,
        ios=1000,
        start_s=100.0,
        end_s=102.0,
        procs=4,
        p50_ms=2.0,
        p99_ms=5.0,
    )
    b = HostResult(
        host="b",
        direction="write",
        bytes=2_000_000_000,
        ios=500,
        start_s=100.5,
        end_s=104.0,
        procs=4,
        p50_ms=3.0,
        p99_ms=9.0,
    )
    rec = aggregate([a, b], CTX)
    # 6e9 bytes from 100.0 to 104.0 s: 1.5 GB/s; a: 4e9/2 s = 2 GB/s, b: 2e9/3.5 s
    assert rec.bw_GBps == pytest.approx(1.5)
    assert rec.per_host_bw_GBps == {"a": pytest.approx(2.0), "b": pytest.approx(2 / 3.5, abs=1e-6)}
    assert rec.iops == pytest.approx(1500 / 4.0)
    assert rec.extra["slowest_host"] == "b" and rec.procs == 8 and rec.nodes == 2
    assert rec.lat_ms == {"p50": pytest.approx((1000 * 2 + 500 * 3) / 1500), "p99": 9.0}
    assert rec.cache_suspect is False and rec.runtime_s == pytest.approx(4.0)


def test_cache_rules() -> None:
    read = HostResult(host="a", direction="read", bytes=10**9, ios=10, start_s=0, end_s=1, procs=1)
    buffered = RecordContext(
        run_id="r",
        workload="checkpoint_read",
        path="/p",
        scope="local",
        direct=False,
        buffered_data_bytes=10**9,
        ram_bytes=8 * 10**9,
    )
    assert aggregate([read], buffered).cache_suspect is True  # data set < RAM, buffered
    dropped = RecordContext(
        **{**{f: getattr(buffered, f) for f in buffered.__slots__}, "caches_dropped": True}
    )
    assert aggregate([read], dropped).cache_suspect is False
    direct = RecordContext(run_id="r", workload="checkpoint_read", path="/p", scope="local", direct=True)
    assert aggregate([read], direct).cache_suspect is False
    fast = HostResult(host="a", direction="read", bytes=200 * 10**9, ios=10, start_s=0, end_s=1, procs=1)
    assert aggregate([fast], direct).cache_suspect is True  # 200 GB/s from one host


def test_metadata_records_count_operations_not_bytes() -> None:
    ctx = RecordContext(
        run_id="r",
        workload="metadata",
        op="create",
        direction="write",
        path="/p",
        scope="local",
        metadata_only=True,
        cache_check=False,
    )
    r = HostResult(host="a", direction="read", bytes=4096 * 400, ios=400, start_s=0, end_s=0.5, procs=2)
    rec = aggregate([r], ctx)
    assert (rec.bytes, rec.bw_GBps, rec.direction) == (0, 0.0, "write")
    assert rec.iops == pytest.approx(800) and rec.extra["ops_per_s"] == pytest.approx(800)
    assert rec.extra["op"] == "create"


def test_space_rule_half_of_free() -> None:
    assert space_problem(free_bytes=1000, free_inodes=100, need_bytes=500, need_inodes=50) == ""
    assert (
        space_problem(free_bytes=None, free_inodes=None, need_bytes=1 << 40, need_inodes=10**9) == ""
    )  # no limit reported
    assert "needs 0.00 GB" in space_problem(free_bytes=1000, free_inodes=100, need_bytes=501, need_inodes=1)
    assert "inodes" in space_problem(free_bytes=1000, free_inodes=100, need_bytes=1, need_inodes=51)
    assert space_problem(free_bytes=1000, free_inodes=None, need_bytes=1, need_inodes=10**9) == ""


def test_mount_of_longest_prefix() -> None:
    mounts = (
        "/dev/vda / ext4 rw 0 0\nsrv:/export /mnt/data nfs4 rw,vers=4.2 0 0\ntmpfs /mnt/data2 tmpfs rw 0 0\n"
    )
    m = mount_of(Path("/mnt/data/proj"), mounts)
    assert (m.mountpoint, m.fstype, m.device) == ("/mnt/data", "nfs4", "srv:/export")
    assert mount_of(Path("/mnt/data2"), mounts).fstype == "tmpfs"
    assert mount_of(Path("/home/x"), mounts).fstype == "ext4"


@pytest.mark.parametrize(
    "env, expected",
    [
        ({}, (0, 1)),
        ({"RANK": "1", "WORLD_SIZE": "2"}, (1, 2)),
        ({"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, (3, 4)),
        ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "8"}, (0, 8)),
    ],
)
def test_launcher_rank(env: dict[str, str], expected: tuple[int, int]) -> None:
    assert launcher_rank(env) == expected


def test_host_name_override() -> None:
    assert host_name({"STOKER_HOSTNAME": "node7"}) == "node7"
    assert host_name({}) != ""


def test_collective_alone_passes_values_and_errors_through() -> None:
    from iobench.coordinator import Coordinator
    from iobench.runner import DiskFull
    from iobench.session import collective

    solo = Coordinator(host="h")
    assert collective(solo, lambda: 7) == [7]

    def full() -> int:
        raise DiskFull("disk full during x")

    with pytest.raises(DiskFull, match="^disk full during x$"):
        collective(solo, full)


def test_fio_bandwidth_samples_spread_reaches_the_record_and_the_baseline() -> None:
    """fio kept 6 bandwidth samples, mean 2,000,000 KiB/s, deviation 500,000: CV 0.25; the record
    carries `bw_cv` 0.25 (the noisier host's of two: 0.1 and 0.25), and the baseline figure of a
    3.0 GB/s fio record reaches down to 3.0 / 1.25 = 2.4 GB/s: spread 20%, tolerance 2 x 0.2 = 0.4
    (over the storage floor of 0.25)."""
    import json

    from iobench.aggregate import host_results
    from reports import evidence
    from reports.judging.fleet.baseline import tolerance_for
    from reports.judging.fleet.baseline_figures import figures
    from reports.shared.fio_json import parse_fio
    from reports.table.read import RecordSet
    from tests.unit.recordgen import io

    job = {"jobname": "w", "write": {"io_bytes": 6 << 30, "bw_bytes": 1 << 30, "runtime": 6000, "total_ios": 1536,
           "bw_mean": 2_000_000, "bw_dev": 500_000, "bw_samples": 6}}  # fmt: skip
    doc = parse_fio(json.dumps({"fio version": "fio-3.33", "timestamp_ms": 1000000, "jobs": [job]}), host="a")
    (a,) = host_results(doc, "a", 1)
    assert a.bw_cv == 0.25
    b = HostResult(
        host="b", direction="write", bytes=1, ios=1, start_s=999.0, end_s=1000.0, procs=1, bw_cv=0.1
    )
    assert aggregate([a, b], CTX).extra["bw_cv"] == 0.25
    rec = io("checkpoint_write", "write", "/nvme", 3.0, scope="local", per_host={"n1": 3.0})
    rec.extra["bw_cv"] = 0.25
    (fig,) = figures(evidence.build(RecordSet(io=[rec])))
    assert (fig.value, round(fig.low or 0, 6), tolerance_for(fig)) == (3.0, 2.4, 0.4)
