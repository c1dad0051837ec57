"""Root-only test beds for storage: a tmpfs of a given size, a ramfs, and a loop device with an ext4
file system whose reads and writes are throttled to a known rate by a blkio cgroup.

Names carry the `io` prefix and the pid so that concurrent test runs never collide; every
resource is released in `finally`, also when the test fails.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CGROUP_V1_BLKIO = Path("/sys/fs/cgroup/blkio")
CGROUP_V2 = Path("/sys/fs/cgroup")


def _run(*argv: str) -> str:
    return subprocess.run(list(argv), check=True, capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def tmpfs(size: str, *, read_only: bool = False) -> Iterator[Path]:
    """A fresh tmpfs of `size` (e.g. '32M'); read-only when asked."""
    mnt = Path(tempfile.mkdtemp(prefix=f"io-tmpfs-{os.getpid()}-"))
    opts = f"size={size}" + (",ro" if read_only else "")
    _run("mount", "-t", "tmpfs", "-o", opts, f"io-tmpfs-{os.getpid()}", str(mnt))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


@contextlib.contextmanager
def ramfs() -> Iterator[Path]:
    """A fresh ramfs: no O_DIRECT (EINVAL, unlike tmpfs since Linux 6.6) and no size limit
    (statvfs reports 0 blocks)."""
    mnt = Path(tempfile.mkdtemp(prefix=f"io-ramfs-{os.getpid()}-"))
    _run("mount", "-t", "ramfs", f"io-ramfs-{os.getpid()}", str(mnt))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
        mnt.rmdir()


@dataclass(frozen=True, kw_only=True, slots=True)
class ThrottledDisk:
    mount: Path
    device: str  # /dev/loopN
    majmin: str  # "7:3"
    cgroup_procs: Path  # write a pid here to throttle that process (and its children)
    rate: int  # bytes/s, reads and writes


def _cgroup(name: str, majmin: str, rate: int) -> tuple[Path, Path]:
    """(directory, cgroup.procs) of a cgroup throttling `majmin` to `rate` both ways:
    cgroup v1 blkio where the kernel has it, else v2 io.max."""
    if CGROUP_V1_BLKIO.is_dir():
        d = CGROUP_V1_BLKIO / name
        d.mkdir()
        (d / "blkio.throttle.write_bps_device").write_text(f"{majmin} {rate}\n")
        (d / "blkio.throttle.read_bps_device").write_text(f"{majmin} {rate}\n")
        return d, d / "cgroup.procs"
    d = CGROUP_V2 / name
    d.mkdir()
    (d / "io.max").write_text(f"{majmin} rbps={rate} wbps={rate}\n")
    return d, d / "cgroup.procs"


_SEQ = itertools.count()


def _remove_cgroup(cg: Path, grace_s: float = 5.0) -> None:
    """Remove a disk's cgroup: it empties once its processes have exited; one still running
    after `grace_s` (a straggling child of the test's command) is killed, so nothing the bed
    started outlives it."""
    deadline = time.monotonic() + grace_s
    while True:
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                for pid in (cg / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                if time.monotonic() > deadline + 5:
                    return  # left, under this disk's own name: no later disk collides with it
            time.sleep(0.1)


@contextlib.contextmanager
def throttled_disk(rate: int, size: str = "1G", name: str = "") -> Iterator[ThrottledDisk]:
    """An ext4 loop device mounted on a temp dir, throttled to `rate` bytes/s for processes
    placed in its cgroup. Throttling acts on I/O that reaches the device (O_DIRECT).
    `name` tells apart several disks of one process (one per node of a bed)."""
    # one process makes many disks, one after another (the bed tier is one pytest): each gets
    # its own number, so a cgroup a straggler kept alive never blocks the next disk
    tag = f"io-{os.getpid()}-{next(_SEQ)}" + (f"-{name}" if name else "")
    work = Path(tempfile.mkdtemp(prefix=f"{tag}-loop-"))
    img, mnt = work / "disk.img", work / "mnt"
    mnt.mkdir()
    dev = ""
    cg: Path | None = None
    mounted = False
    try:
        _run("truncate", "-s", size, str(img))
        dev = _run("losetup", "-f", "--show", str(img))
        _run("mkfs.ext4", "-q", "-F", dev)
        _run("mount", dev, str(mnt))
        mounted = True
        st = os.stat(dev)
        majmin = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        cg, procs = _cgroup(f"{tag}-blk", majmin, rate)
        yield ThrottledDisk(mount=mnt, device=dev, majmin=majmin, cgroup_procs=procs, rate=rate)
    finally:
        if mounted:
            subprocess.run(["umount", str(mnt)], check=False)
        if dev:
            subprocess.run(["losetup", "-d", dev], check=False)
        if cg is not None:
            _remove_cgroup(cg)
        img.unlink(missing_ok=True)
        mnt.rmdir()
        work.rmdir()


def start_in_cgroup(procs_file: Path) -> None:
    """preexec_fn for subprocess: join the cgroup before exec, so the child and everything
    it starts (fio) are throttled from their first byte."""
    procs_file.write_text(f"{os.getpid()}\n")


def set_rate(disk: ThrottledDisk, rate: int) -> None:
    """Change the throttle of `disk`'s cgroup while processes run in it (both ways)."""
    d = disk.cgroup_procs.parent
    if (d / "blkio.throttle.write_bps_device").exists():
        (d / "blkio.throttle.write_bps_device").write_text(f"{disk.majmin} {rate}\n")
        (d / "blkio.throttle.read_bps_device").write_text(f"{disk.majmin} {rate}\n")
    else:
        (d / "io.max").write_text(f"{disk.majmin} rbps={rate} wbps={rate}\n")
