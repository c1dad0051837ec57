"""Root-only storage tests on real block devices: a throttled loop device (the measured
checkpoint rate must match the throttle), a read-only mount, and a disk that fills up."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import REPO, STOKER, needs_root, needs_tool
from tests.harness.blockdev import ramfs, start_in_cgroup, throttled_disk, tmpfs
from tests.integration.test_io_local import one_line_error, stoker

pytestmark = [needs_root, needs_tool("fio")]
RATE = 50 << 20  # 52.4 MB/s


def test_checkpoint_matches_the_throttle(tmp_path: Path) -> None:
    with throttled_disk(RATE) as disk:
        out = tmp_path / "out"
        # stoker starts inside the cgroup, so its fio children are throttled from the first byte
        p = subprocess.run(
            [
                *STOKER,
                "io",
                "--path",
                str(disk.mount),
                "--out",
                str(out),
                "--workloads",
                "checkpoint",
                "--ckpt-bytes",
                "64M",
                "--writers",
                "2",
                "--no-torch",
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
            preexec_fn=lambda: start_in_cgroup(disk.cgroup_procs),
        )
        assert p.returncode == 0, p.stderr
        recs = {r.workload: r for r in read_records(out).io}
        for name in ("checkpoint_write", "checkpoint_read"):
            rec = recs[name]
            # time_based: the bytes are the steady window's (checked through bw against the throttle)
            assert rec.direct is True and rec.bytes > 0
            print(f"{name}: {rec.bw_GBps:.4f} GB/s against a {RATE / 1e9:.4f} GB/s throttle")
            assert rec.bw_GBps == pytest.approx(RATE / 1e9, rel=0.10), (name, rec.bw_GBps)
        assert [x.name for x in disk.mount.iterdir() if x.name.startswith(".stoker-")] == []


def test_read_only_path_is_refused() -> None:
    with tmpfs("8M", read_only=True) as ro:
        one_line_error(stoker("io", "--path", str(ro)), 2, "is not writable")


def test_disk_full_mid_test_cleans_up_and_exits_3(tmp_path: Path) -> None:
    with tmpfs("32M") as small:
        (small / "theirs.dat").write_bytes(b"x" * 4096)
        out = tmp_path / "out"
        # the space check would refuse 64M on a 32M disk; skipping it is how this test gets
        # a disk that fills up during the measurement
        p = stoker(
            "io",
            "--path",
            str(small),
            "--out",
            str(out),
            "--workloads",
            "checkpoint",
            "--ckpt-bytes",
            "64M",
            "--writers",
            "1",
            "--ckpt-block",
            "1M",
            "--no-torch",
            env={"STOKER_IO_SKIP_SPACE_CHECK": "1", "PATH": "/usr/bin:/bin"},
        )
        one_line_error(p, 3, "disk full during checkpoint_write")
        assert sorted(x.name for x in small.iterdir()) == ["theirs.dat"]
        (rec,) = read_records(out).io
        assert rec.workload == "checkpoint_write" and rec.failed.startswith("disk full")
        assert rec.bytes == 0 and rec.bw_GBps == 0.0  # nothing is claimed for a failed test


def test_no_o_direct_falls_back_and_says_so(tmp_path: Path) -> None:
    with ramfs() as mnt:
        (mnt / "theirs.dat").write_bytes(b"x")
        out = tmp_path / "out"
        p = stoker(
            "io",
            "--path",
            str(mnt),
            "--out",
            str(out),
            "--workloads",
            "checkpoint",
            "--no-torch",
            "--ckpt-bytes",
            "8M",
            "--ckpt-block",
            "1M",
            "--writers",
            "2",
        )
        assert p.returncode == 0, p.stderr
        assert "O_DIRECT refused here" in p.stdout
        recs = {r.workload: r for r in read_records(out).io}
        assert set(recs) == {"checkpoint_write", "checkpoint_read"}
        for r in recs.values():
            # time_based jobs loop over the data set: 2 writers x 8 MiB of files, more bytes moved
            assert r.direct is False and "O_DIRECT refused" in r.extra["direct_fallback"]
            assert r.extra["data_bytes"] == 16 << 20 and r.bytes >= 16 << 20
        assert sorted(x.name for x in mnt.iterdir()) == ["theirs.dat"]
