"""One rank of a real sharded checkpoint across nodes, for tests/validation/sharded_nodes.py:
RANK of WORLD_SIZE in a gloo process group (MASTER_ADDR / MASTER_PORT from the environment,
over the namespaced link), holding its own shard (an MLP's weights and Adam state, keys
unique to the rank, so DCP writes each rank's part from that rank) and saving it `--repeats`
times with each backend, one process group for all the saves:

    python -m tests.validation.sharded_nodes_worker --dir D [--dir E] --repeats 3 --width 1024 --depth 3

`torch.save`: every rank saves its shard to its own file and fsyncs it; `torch.dcp`: one
`torch.distributed.checkpoint.save` of the whole job (its planning collectives included),
`sync_files`; `torch.dcp tiny`: the same with 4 KB per rank, its coordination alone. Each save
writes new files under D (its node's disk, or the one shared by all nodes; with several --dir,
each in turn), is timed on every rank from a barrier to the next, and its files are removed
after. Every rank prints one JSON line: {"rank": r, "saves": [{"dir", "backend", "repeat",
"seconds", "bytes"}, ...]}, bytes being what this rank wrote (rank 0's DCP metadata included).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import time
import warnings
from pathlib import Path

import torch
import torch.distributed as dist

from tests.validation.io_worker import checkpoint_state

BACKENDS = ("torch.save", "torch.dcp")
# a DCP save of almost nothing, timed like the others: what its coordination costs (planning
# collectives, rank 0's metadata file after every rank's data, the final collective)
TINY = "torch.dcp tiny"


def _save(backend: str, state: dict, target: Path, rank: int) -> list[Path]:
    """Save; the files this rank wrote."""
    if backend == "torch.save":
        f = target / f"shard-rank{rank}.pt"
        with open(f, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
        return [f]
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dcp.save(state, storage_writer=dcp.FileSystemWriter(str(target), sync_files=True))
    mine = [p for p in target.iterdir() if p.name.startswith(f"__{rank}_")]
    return mine + [p for p in target.iterdir() if p.name == ".metadata" and rank == 0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", action="append", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=3)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    state = {f"rank{rank}": checkpoint_state(a.width, a.depth)}
    tiny = {f"rank{rank}": torch.zeros(1024)}
    saves = []
    for repeat, d, backend in itertools.product(range(a.repeats), a.dir, (*BACKENDS, TINY)):
        target = Path(d) / f"{backend.replace('.', '_')}-{repeat}"
        target.mkdir(parents=True, exist_ok=True)
        dist.barrier()
        t0 = time.perf_counter()
        kind, what = (backend, state) if backend != TINY else ("torch.dcp", tiny)
        files = _save(kind, what, target, rank)
        dist.barrier()
        seconds = time.perf_counter() - t0
        nbytes = sum(p.stat().st_size for p in files)
        for p in files:  # the disk holds one save at a time
            p.unlink()
        saves.append({"dir": d, "backend": backend, "repeat": repeat, "seconds": seconds, "bytes": nbytes})
    print(json.dumps({"rank": rank, "saves": saves}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
