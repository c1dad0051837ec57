"""A real checkpoint beside fio's: a synthetic state dict of one writer's shard (`--ckpt-bytes`)
saved by one process with torch.save and with torch.distributed.checkpoint (DCP), timed
from the first byte to the fsync, so a report can say how close fio's per-writer figure is.
torch is imported here only."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

from iobench.aggregate import HostResult

BACKENDS = ("torch.save", "torch.dcp")
_TENSOR_BYTES = 64 << 20  # a model is many tensors; 64 MiB ones keep the count realistic


def torch_missing() -> str:
    """'' when torch can be imported, else a note saying why the comparison is skipped."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch not installed: the torch.save / DCP comparison was skipped"
    return ""


def _state_dict(nbytes: int) -> dict[str, Any]:
    import torch

    # random bytes, so a compressing file system cannot make the figure look better; one
    # random block copied (not shared: torch.save would store a shared storage once)
    block = torch.randint(0, 256, (min(nbytes, _TENSOR_BYTES),), dtype=torch.uint8)
    out: dict[str, Any] = {}
    left, i = nbytes, 0
    while left > 0:
        n = min(left, _TENSOR_BYTES)
        out[f"layer{i}.weight"] = block[:n].clone()
        left -= n
        i += 1
    return out


def _fsync_tree(directory: Path) -> None:
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def save(backend: str, nbytes: int, directory: Path, host: str) -> HostResult:
    """Save `nbytes` of tensors into `directory` with `backend`; the files stay until the
    work directory is removed."""
    import torch
    import torch.distributed.checkpoint as dcp  # imported before the clock starts

    state = _state_dict(nbytes)
    target = directory / backend.replace(".", "_")
    start = time.time()
    if backend == "torch.save":
        with open(target.with_suffix(".pt"), "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
    else:
        # no_dist: each node writes its own shard even when a process group exists;
        # one thread, like torch.save; sync_files: DCP fsyncs what it wrote, as above
        writer = dcp.FileSystemWriter(str(target), thread_count=1, sync_files=True)
        with warnings.catch_warnings():  # "assuming the intent is to save in a single process": it is
            warnings.simplefilter("ignore", UserWarning)
            dcp.save(state, storage_writer=writer, no_dist=True)
        _fsync_tree(target)
    end = time.time()
    return HostResult(
        host=host, direction="write", bytes=nbytes, ios=len(state), start_s=start, end_s=end, procs=1
    )
