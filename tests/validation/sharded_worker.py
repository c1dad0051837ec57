"""One rank of a real sharded checkpoint, for tests/validation/sharded.py: RANK of WORLD_SIZE
in a gloo process group (MASTER_ADDR / MASTER_PORT from the environment), holding its own
part of a model (an MLP's weights and Adam state, 12 bytes per parameter, keys unique to the
rank so DCP writes each rank's part from that rank), saving it as training does:

    python -m tests.validation.sharded_worker --dir D --backend torch.save|torch.dcp --width 1024 --depth 8

`torch.save`: every rank saves its shard to its own file and fsyncs it (FSDP's sharded state
dict, ZeRO's per-rank files); `torch.dcp`: one `torch.distributed.checkpoint.save` of the
whole job through the process group (its planning collectives included), `sync_files`.
All ranks start at a barrier and the save ends at the next one: the time is the slowest
rank's. Rank 0 prints one JSON line: {"seconds": s, "bytes": all ranks' bytes on disk}.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import torch
import torch.distributed as dist

from tests.validation.io_worker import checkpoint_state


def _bytes_on_disk(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--backend", choices=("torch.save", "torch.dcp"), required=True)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--depth", type=int, default=8)
    a = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    state = {f"rank{rank}": checkpoint_state(a.width, a.depth)}
    root = Path(a.dir)
    dist.barrier()
    t0 = time.perf_counter()
    if a.backend == "torch.save":
        target = root / f"shard-rank{rank}.pt"
        with open(target, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())
    else:
        import torch.distributed.checkpoint as dcp

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            dcp.save(state, storage_writer=dcp.FileSystemWriter(str(root / "dcp"), sync_files=True))
    dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:  # every file was fsynced inside the timed save
        print(json.dumps({"seconds": seconds, "bytes": _bytes_on_disk(root)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
