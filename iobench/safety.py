"""Keeping people's file systems safe: path checks, free space and inodes, the work
directory and its removal, and probes of what the file system allows (O_DIRECT).

All of stoker's files live under `<path>/.stoker-<run_id>/<host>/`; only that directory is
ever removed, and nothing outside it is written.
"""

from __future__ import annotations

import mmap
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from reports.shared.errors import UsageError
from reports.shared.io_dir import io_dir_problem

WORK_PREFIX = ".stoker-"
SCOPE_MARKER = "scope-marker"
# File systems that are one name space seen by many nodes by construction
SHARED_FS_TYPES = frozenset(
    {
        "nfs",
        "nfs4",
        "lustre",
        "gpfs",
        "beegfs",
        "cephfs",
        "ceph",
        "glusterfs",
        "fuse.glusterfs",
        "wekafs",
        "fuse.juicefs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "9p",
        "cifs",
        "smb3",
        "panfs",
        "orangefs",
    }
)


@dataclass(frozen=True, kw_only=True, slots=True)
class MountInfo:
    mountpoint: str
    device: str
    fstype: str
    options: str


def check_path(text: str) -> Path:
    """A directory stoker may work in, or UsageError (exit 2) saying what is wrong."""
    problem = io_dir_problem(text)
    if problem is not None:
        raise UsageError(f"--path {text!r} {problem[0]}; {problem[1]}")
    return Path(text).expanduser().resolve()


def space_problem(
    *, free_bytes: int | None, free_inodes: int | None, need_bytes: int, need_inodes: int
) -> str:
    """Why the test must not run here ('' when it may): it may use at most half of what
    is free, so that a production file system never fills up because of it. None: the file
    system reports no limit (0 total), as ramfs does for bytes and btrfs for inodes."""
    if free_bytes is not None and need_bytes * 2 > free_bytes:
        return (
            f"the test needs {need_bytes / 1e9:.2f} GB but only {free_bytes / 1e9:.2f} GB is free "
            "(stoker uses at most half); lower --ckpt-bytes or choose another --path"
        )
    # some file systems (btrfs, many network ones) report no inode limit: 0 total
    if free_inodes is not None and need_inodes * 2 > free_inodes:
        return (
            f"the test needs {need_inodes} inodes but only {free_inodes} are free "
            "(stoker uses at most half); lower the file counts or choose another --path"
        )
    return ""


def check_space(path: Path, need_bytes: int, need_inodes: int) -> None:
    st = os.statvfs(path)
    free_inodes = st.f_favail if st.f_files > 0 else None
    free_bytes = st.f_bavail * st.f_frsize if st.f_blocks > 0 else None
    problem = space_problem(
        free_bytes=free_bytes, free_inodes=free_inodes, need_bytes=need_bytes, need_inodes=need_inodes
    )
    if problem:
        raise UsageError(f"{path}: {problem}")


def mount_of(path: Path, mounts_text: str | None = None) -> MountInfo:
    """The mount that holds `path` (the longest matching mount point in /proc/self/mounts)."""
    if mounts_text is None:
        try:
            mounts_text = Path("/proc/self/mounts").read_text()
        except OSError:
            mounts_text = ""
    best = MountInfo(mountpoint="/", device="unknown", fstype="unknown", options="")
    target = str(path)
    for line in mounts_text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        mp = fields[1].replace("\\040", " ")
        inside = target == mp or target.startswith(mp.rstrip("/") + "/")
        if inside and len(mp) >= len(best.mountpoint):
            best = MountInfo(mountpoint=mp, device=fields[0], fstype=fields[2], options=fields[3])
    return best


def probe_direct(directory: Path) -> str:
    """'' when O_DIRECT works here, else why not (tmpfs, some FUSE and network file systems)."""
    if not hasattr(os, "O_DIRECT"):
        return "O_DIRECT does not exist on this platform"
    probe = directory / ".direct-probe"
    buf = mmap.mmap(-1, 4096)  # page-aligned memory, as O_DIRECT requires
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_DIRECT, 0o600)
        try:
            os.write(fd, buf)
        finally:
            os.close(fd)
        return ""
    except OSError as exc:
        return f"O_DIRECT refused here ({exc.strerror}); buffered IO with page-cache invalidation instead"
    finally:
        buf.close()
        probe.unlink(missing_ok=True)


def ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def drop_caches() -> bool:
    """Drop the page cache (root only); True when done. Used before buffered reads of
    data just written, so a resume is measured from the device, not memory."""
    if os.geteuid() != 0:
        return False
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1\n")
        return True
    except OSError:
        return False


class WorkDir:
    """`<path>/.stoker-<run_id>/<host>/`, created on enter and removed on exit (success,
    error or Ctrl-C). The top directory is removed only when it is empty, because other
    nodes of the run may still be using it on a shared file system."""

    def __init__(self, path: Path, run_id: str, host: str) -> None:
        self.top = path / f"{WORK_PREFIX}{run_id}"
        self.dir = self.top / host.replace("/", "_")
        self._created = False

    def __enter__(self) -> WorkDir:
        # The top dir is shared by the run's nodes (so exist_ok), but never followed: a symlink
        # planted at `.stoker-<run id>` sent the writes, and the measurement, to another file
        # system under this path's name. Checked on the opened dir, and the host's own dir is
        # made inside that very dir (dir_fd), exclusively.
        try:
            self.top.mkdir(exist_ok=True)
            fd = os.open(self.top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            raise UsageError(
                f"{self.top}: {exc.strerror or exc} (a symlink or a file where stoker's work dir goes?); "
                "remove it or give another --path"
            ) from None
        try:
            os.mkdir(self.dir.name, 0o777, dir_fd=fd)
        except FileExistsError:
            raise UsageError(
                f"{self.dir} already exists: another stoker run uses this run id; "
                "unset STOKER_RUN_ID or give a new one"
            ) from None
        finally:
            os.close(fd)
        self._created = True
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def remove(self) -> None:
        if self._created:
            shutil.rmtree(self.dir, ignore_errors=True)
            self._created = False
        try:
            self.top.rmdir()
        except OSError:
            pass  # other hosts' directories are still there; the last one out removes it
