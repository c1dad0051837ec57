"""A real checkpoint beside fio's: a synthetic state dict of one writer's shard (`--ckpt-bytes`)
saved with torch.save and with torch.distributed.checkpoint (DCP), timed from the first byte
to the fsync: by one process (the per-process figure), then by as many processes at once as
the node has GPUs, each its own shard, as every rank of a sharded checkpoint saves (the
node's figure; reports/judging/storage/ckpt_save.py uses both). Without GPUs the node's processes are
`--writers` (default one per core, 2 to 8). torch is imported here only; the processes of a
node are children started as `python -m iobench.torch_ckpt BACKEND BYTES DIR`, each building
its state dicts first and all saving when the parent names the size.

Every repeat saves two sizes, the half shard then the whole (`sizes`): a write-back cache or a
disk's burst credits absorb a small save, so a save's rate depends on its size; the two give
the seconds each byte past the smaller adds (iobench/sustained.py), the rate a larger
checkpoint is written at. The smaller dict's tensors are the larger one's first tensors, so
the two cost the memory of one shard."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from iobench.aggregate import HostResult

BACKENDS = ("torch.save", "torch.dcp")
# Before each save, every node says whether it is still fine and learns whether all are
# (session: an all-gather over the coordinator): the nodes start each save together, so a
# shared file system's figure is every node writing at once, and they stop together, so
# a node whose save failed never leaves the others waiting at the next save's agreement.
Agree = Callable[[bool], bool]
T = TypeVar("T")
# the sizes of a repeat, in the order saved: the half shard, then the whole (the figure)
SIZES = ("small", "large")
Pair = tuple[HostResult, HostResult]  # one repeat: the small save's result, the large one's


def alone(ok: bool) -> bool:
    """The agreement of a node saving on its own."""
    return ok


_TENSOR_BYTES = 64 << 20  # a model is many tensors; 64 MiB ones keep the count realistic
NVIDIA_GPUS = Path("/proc/driver/nvidia/gpus")  # one entry per GPU the driver sees


def node_writers(fallback: int, gpus_dir: Path = NVIDIA_GPUS) -> int:
    """Saving processes per node: one per GPU, as training saves one shard per rank; on a
    node without NVIDIA GPUs `fallback` (the run's --writers)."""
    try:
        gpus = sum(1 for _ in gpus_dir.iterdir())
    except OSError:
        gpus = 0
    return gpus or max(1, fallback)


def torch_missing() -> str:
    """'' when torch can be imported, else a note saying why the comparison is skipped."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return "torch not installed: the torch.save / DCP comparison was skipped"
    return ""


def sizes(nbytes: int) -> tuple[int, int]:
    """The bytes of a repeat's two saves: half the shard (whole KiB), then the shard."""
    return max(1, nbytes // 2 >> 10 << 10), nbytes


def _state_dict(nbytes: int, first: int = 0) -> dict[str, Any]:
    import torch

    # random bytes, so a compressing file system cannot make the figure look better; one
    # random block copied (not shared: torch.save would store a shared storage once)
    block = torch.randint(0, 256, (max(1, min(nbytes, _TENSOR_BYTES)),), dtype=torch.uint8)
    out: dict[str, Any] = {}
    left, i = nbytes, first
    while left > 0:
        n = min(left, _TENSOR_BYTES)
        out[f"layer{i}.weight"] = block[:n].clone()
        left -= n
        i += 1
    return out


def _state_dicts(nbytes: int) -> dict[str, dict[str, Any]]:
    """The small and the large state dict of `sizes(nbytes)`; the large holds the small's
    tensors (the same objects) and the rest, so the two take `nbytes` of memory."""
    small_bytes, _ = sizes(nbytes)
    small = _state_dict(small_bytes)
    return {"small": small, "large": {**small, **_state_dict(nbytes - small_bytes, first=len(small))}}


def _nbytes(state: dict[str, Any]) -> int:
    return sum(int(t.numel() * t.element_size()) for t in state.values())


def _fsync_tree(directory: Path) -> None:
    for p in sorted(directory.rglob("*")):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def repeat(
    repeats: int,
    steps: Sequence[Callable[[], T]],
    agree: Agree = alone,
    failure: Exception | None = None,
) -> list[tuple[T, ...]]:
    """Every step in turn (a repeat's saves), `repeats` times, each step after `agree` says
    every node is still fine: one tuple of results per whole repeat, or the first failure
    (`failure`: one before the first save) once every node has stopped (the others'
    agreement, at the next save, sees this node's False and stops them too; the saves left
    are not made, and no node waits for another)."""
    out: list[tuple[T, ...]] = []
    for _ in range(repeats):
        row: list[T] = []
        for once in steps:
            if not agree(failure is None) or failure is not None:
                break
            try:
                row.append(once())
            except Exception as exc:  # raised below, once every node has stopped
                failure = exc
        if len(row) < len(steps):
            break
        out.append(tuple(row))
    if failure is not None:
        raise failure
    return out


def _pairs(rows: list[tuple[HostResult, ...]]) -> list[Pair]:
    return [(small, large) for small, large in rows]


def save(
    backend: str, nbytes: int, directory: Path, host: str, repeats: int = 1, agree: Agree = alone
) -> list[Pair]:
    """Save the two sizes of `nbytes` (`sizes`) into `directory` with `backend` in this
    process, `repeats` times (the same state dicts each time; the previous save's files
    removed before the next, outside the timing), each save started with the other nodes'
    (`agree`): one (small, large) pair of results per repeat."""
    target = directory / backend.replace(".", "_")
    states: dict[str, dict[str, Any]] = {}
    built: Exception | None = None
    try:
        states = _state_dicts(nbytes)
    except Exception as exc:  # said at the first agreement, so no node waits for this one
        built = exc

    def once(size: str) -> HostResult:
        state = states[size]
        _clear(target)
        start, end = _timed_save(backend, state, target)
        return HostResult(
            host=host,
            direction="write",
            bytes=_nbytes(state),
            ios=len(state),
            start_s=start,
            end_s=end,
            procs=1,
        )

    return _pairs(repeat(repeats, [functools.partial(once, size) for size in SIZES], agree, built))


def _clear(target: Path) -> None:
    """The previous save's files (a file for torch.save, a directory for DCP), so that each
    save writes new files and the disk holds one shard at a time."""
    shutil.rmtree(target, ignore_errors=True)
    target.with_suffix(".pt").unlink(missing_ok=True)


def _timed_save(backend: str, state: dict[str, Any], target: Path) -> tuple[float, float]:
    import torch
    import torch.distributed.checkpoint as dcp  # imported before the clock starts

    start = time.time()
    if backend == "torch.save":
        with open(target.with_suffix(".pt"), "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
    else:
        # no_dist: each process writes its own shard, as each rank's FileSystemWriter does;
        # one thread, like torch.save; sync_files: DCP fsyncs what it wrote, as above
        writer = dcp.FileSystemWriter(str(target), thread_count=1, sync_files=True)
        with warnings.catch_warnings():  # "assuming the intent is to save in a single process": it is
            warnings.simplefilter("ignore", UserWarning)
            dcp.save(state, storage_writer=writer, no_dist=True)
        _fsync_tree(target)
    return start, time.time()


def save_many(
    backend: str,
    nbytes: int,
    directory: Path,
    host: str,
    writers: int,
    repeats: int = 1,
    agree: Agree = alone,
) -> list[Pair]:
    """`writers` processes each save the two sizes of `nbytes` into its own file under
    `directory`, each size at the same moment, `repeats` times (the processes and their state
    dicts kept between the saves), each save started with the other nodes' (`agree`): a save's
    figure is all their bytes over the first start to the last fsync; one (small, large) pair
    per repeat."""
    argv = [sys.executable, "-m", "iobench.torch_ckpt", backend, str(nbytes)]
    kids = [
        subprocess.Popen(
            [*argv, str(directory / f"w{i}")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(writers)
    ]

    def once(size: str) -> HostResult:
        for k in kids:
            assert k.stdin is not None
            k.stdin.write(f"{size}\n")
            k.stdin.flush()
        done = [json.loads(_expect(k, "{")) for k in kids]
        return HostResult(
            host=host,
            direction="write",
            bytes=sum(int(d["bytes"]) for d in done),
            ios=sum(int(d["ios"]) for d in done),
            start_s=min(float(d["start"]) for d in done),
            end_s=max(float(d["end"]) for d in done),
            procs=writers,
        )

    try:
        ready: Exception | None = None
        try:
            for k in kids:  # every state dict is built before any save starts
                _expect(k, "ready")
        except OSError as exc:  # said at the first agreement, so no node waits for this one
            ready = exc

        return _pairs(repeat(repeats, [functools.partial(once, size) for size in SIZES], agree, ready))
    finally:
        for k in kids:
            if k.stdin is not None and k.poll() is None:
                k.stdin.close()  # end of input: the child exits
            try:
                k.wait(timeout=30)
            except subprocess.TimeoutExpired:
                k.kill()
                k.wait()


def _expect(kid: subprocess.Popen[str], head: str) -> str:
    """The child's next line, which starts with `head`; else its error as an OSError (a full
    disk's message included, which the session names)."""
    assert kid.stdout is not None
    line = kid.stdout.readline()
    if line.startswith(head):
        return line
    kid.kill()
    err = kid.stderr.read() if kid.stderr else ""
    last = (err.strip().splitlines() or [line.strip() or "no output"])[-1]
    raise OSError(f"a saving process failed: {last}")


def main(argv: list[str]) -> int:
    """One child of save_many: BACKEND BYTES DIR; prints ready, then for every line it reads
    (a name of SIZES) saves that state dict (the previous save's files removed first) and
    prints its bytes and times as JSON; ends at the end of its input."""
    backend, nbytes, target = argv[0], int(argv[1]), Path(argv[2])
    states = _state_dicts(nbytes)
    print("ready", flush=True)
    while line := sys.stdin.readline():
        state = states[line.strip()]
        _clear(target)
        start, end = _timed_save(backend, state, target)
        print(
            json.dumps({"bytes": _nbytes(state), "ios": len(state), "start": start, "end": end}), flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
