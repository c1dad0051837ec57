"""Real storage work of a training job, for benchmarks/validate_model.py. Run as a child
process that the harness places in the throttled disk's cgroup; prints one JSON line.

    python -m tests.validation.io_worker ckpt --dir D --width 1024 --depth 8 --repeats 2
    python -m tests.validation.io_worker loader --dir D --batch 4 --compute-s 0.04 --steps 30

`ckpt`: an MLP's model and Adam optimizer state (after one step: weights + exp_avg +
exp_avg_sq, 12 bytes per parameter), saved as a training script saves it: `torch.save` to
an open file then fsync, and `torch.distributed.checkpoint.save` with `sync_files`. Each
save's files are removed before the next.

`loader`: a `torch.utils.data.DataLoader` (workers, prefetch) reading whole sample files
(made by `make_samples`) into a loop whose compute is a fixed sleep per step; the time
spent in `next()` is the wait.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn


def _fsync_tree(root: Path) -> int:
    total = 0
    for p in sorted(root.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    return total


def checkpoint_state(width: int, depth: int) -> dict[str, Any]:
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(2, width)).sum().backward()
    opt.step()  # creates exp_avg and exp_avg_sq
    return {"model": model.state_dict(), "optim": opt.state_dict()}


def ckpt(a: argparse.Namespace) -> dict[str, Any]:
    import torch.distributed.checkpoint as dcp

    state = checkpoint_state(a.width, a.depth)
    out: dict[str, Any] = {"torch.save": [], "torch.dcp": [], "bytes": {}}
    for _ in range(a.repeats):
        for backend in ("torch.save", "torch.dcp"):
            target = Path(a.dir) / f"validate-{backend.replace('.', '_')}"
            t0 = time.perf_counter()
            if backend == "torch.save":
                with open(target, "wb") as fh:
                    torch.save(state, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                size = target.stat().st_size
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    dcp.save(
                        state, storage_writer=dcp.FileSystemWriter(str(target), sync_files=True), no_dist=True
                    )
                size = _fsync_tree(target)
            out[backend].append(time.perf_counter() - t0)
            out["bytes"][backend] = size
            if target.is_dir():
                shutil.rmtree(target)
            else:
                target.unlink()
    return out


def make_samples(directory: Path, count: int, nbytes: int) -> list[Path]:
    """`count` files of random bytes, on disk and out of the page cache (so every read in
    the loop reaches the throttled device)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(count):
        p = directory / f"sample{i:05d}.bin"
        with open(p, "wb") as fh:
            fh.write(os.urandom(nbytes))
            fh.flush()
            os.fsync(fh.fileno())
            os.posix_fadvise(fh.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        files.append(p)
    return files


class Samples(torch.utils.data.Dataset):  # type: ignore[type-arg]
    def __init__(self, files: list[Path]) -> None:
        self.files = files

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> torch.Tensor:
        return torch.frombuffer(bytearray(self.files[i].read_bytes()), dtype=torch.uint8)


def loader(a: argparse.Namespace) -> dict[str, Any]:
    files = sorted(Path(a.dir).glob("sample*.bin"))
    dl = torch.utils.data.DataLoader(
        Samples(files), batch_size=a.batch, num_workers=a.workers, prefetch_factor=a.prefetch, shuffle=False
    )
    it = iter(dl)
    waits, computes = [], []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        next(it)
        t1 = time.perf_counter()
        time.sleep(a.compute_s)  # the accelerator's compute: it does not use these cores
        t2 = time.perf_counter()
        if i >= a.warmup:
            waits.append(t1 - t0)
            computes.append(t2 - t1)
    return {"wait_s": waits, "compute_s": computes, "sample_bytes": files[0].stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("ckpt")
    c.add_argument("--dir", required=True)
    c.add_argument("--width", type=int, default=1024)
    c.add_argument("--depth", type=int, default=8)
    c.add_argument("--repeats", type=int, default=1)
    ld = sub.add_parser("loader")
    ld.add_argument("--dir", required=True)
    ld.add_argument("--batch", type=int, default=4)
    ld.add_argument("--workers", type=int, default=2)
    ld.add_argument("--prefetch", type=int, default=2)
    ld.add_argument("--compute-s", type=float, default=0.05)
    ld.add_argument("--steps", type=int, default=30)
    ld.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(1)
    print(json.dumps(ckpt(a) if a.cmd == "ckpt" else loader(a)), flush=True)


if __name__ == "__main__":
    main()
