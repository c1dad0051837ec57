"""A real sharded checkpoint of 2 nodes x 2 processes — 4 ranks in one gloo process group over
namespaced links, each saving its own shard of an MLP + Adam state at the same moment
(torch.save: a file per rank; DCP: one distributed save) — against the model's save time
(reports/judging/storage/ckpt_save.py) from `stoker io --writers 2` run across the same 2 nodes on the
same devices first (one process per node, then 2 per node at once), at another size (15 MiB
per process measured, 37.8 MB per rank predicted). Two places, loop devices throttled to
30 MiB/s:

- node-local: each node writes to its own device: the slowest node's term;
- shared: both nodes write to one device: the shared aggregate's term.

3 repeats of each save; per place and save kind the median error within ±15%, every repeat
printed (docs/model.md, "Held against real training")."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from tests.conftest import needs_root, needs_tool
from tests.harness.netns import NetnsCluster
from tests.validation import sharded_nodes
from tests.validation.sharded_nodes_worker import TINY

pytestmark = [needs_root, needs_tool("fio")]
PREFIX = "svx"
RATE = 30 << 20
CKPT_BYTES = 45 << 20  # stoker io's --ckpt-bytes: 15 MiB per saving process (its 3 saves share it)
NODES, NPROC = 2, 2
DEPTH = 3  # Linear(1024, 1024) x 3 + Adam: 37.8 MB per rank
REPEATS = 3
BOUND = 0.15


@pytest.mark.usefixtures("netns_ok")
def test_sharded_save_of_two_nodes_within_15_percent(tmp_path: Path) -> None:
    with NetnsCluster(prefix=PREFIX, nodes=NODES) as c, sharded_nodes.disks(RATE, NODES) as nodes:
        t0 = time.monotonic()
        records = sharded_nodes.stoker_io(c, nodes, tmp_path / "io", 29610, CKPT_BYTES, NPROC)
        t1 = time.monotonic()
        saves = sharded_nodes.real_saves(c, nodes, NPROC, 29611, REPEATS, DEPTH)
        print(f"stoker io {t1 - t0:.0f} s, the real saves {time.monotonic() - t1:.0f} s")
    place = {str(p): name for name, p in zip(sharded_nodes.STORAGE, nodes[0].paths)}
    for r in records.io:
        if r.workload == "checkpoint_write":
            per_host = ", ".join(f"{v:.4f}" for v in r.per_host_bw_GBps.values())
            print(
                f"stoker io: {place.get(r.path, r.path)} {r.backend} {r.procs} processes on {r.nodes} "
                f"nodes: per host {per_host} GB/s, over the window {r.bw_GBps:.4f} GB/s"
            )
    errs: dict[tuple[str, str], list[float]] = {}
    for s in [s for s in saves if s.backend == TINY]:
        print(f"{s.storage} repeat {s.repeat + 1}: {s.backend}, {s.nbytes / 1e3:.0f} kB: {s.seconds:.2f} s")
    for s in [s for s in saves if s.backend != TINY]:
        fmt = "torch.save" if s.backend == "torch.save" else "dcp"
        path = nodes[0].paths[sharded_nodes.STORAGE.index(s.storage)]
        predicted, row = sharded_nodes.predict(records, path, s.nbytes, fmt, NODES, NPROC)
        err = (predicted - s.seconds) / s.seconds
        errs.setdefault((s.storage, s.backend), []).append(err)
        print(
            f"{s.storage} repeat {s.repeat + 1}: {s.backend} {NODES} nodes x {NPROC} ranks, "
            f"{s.nbytes / 1e6:.1f} MB: real {s.seconds:.2f} s, predicted {predicted:.2f} s ({err:+.1%}; "
            f"node {row['node_s']:.2f} s, aggregate {row['aggregate_s']:.2f} s; {row['note']})"
        )
    assert set(errs) == {(p, b) for p in sharded_nodes.STORAGE for b in ("torch.save", "torch.dcp")}
    # judged: per place and save kind, the median of the 3 repeats' errors (the machine is
    # shared: one repeat can meet a neighbour's load on the loop devices' backing disk)
    off = {k: e for k, e in errs.items() if abs(statistics.median(e)) > BOUND}
    assert not off, off  # reported as measured; the bound is not loosened
