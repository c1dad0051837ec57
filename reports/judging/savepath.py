"""The checkpoint write figure the model uses (pure; issue 21 §3, §4).

The save path is the one the workload names (`checkpoint.format`), never the faster of two:
`torch.save` (the plain synchronous save, the default) takes the `torch.save` record, `dcp`
and `async` (DCP's async_save writes through the same FileSystemWriter) the `torch.dcp` one.
Without a record of that kind, fio's figure stands in with a stated overhead: a real save is
buffered, single-stream and serialises the state dict, and ran at about half fio's O_DIRECT
figure on an H100 node's disk (issue 13) — FIO_SAVE_FACTOR, named in the row's note.

Local storage is per node: every node writes its own shard to its own disk, so the job's
checkpoint bandwidth is the measured figure per node times the nodes writing. Shared storage
is the aggregate the records measured (all nodes of the measurement together).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from reports.records import IoRecord

CHECKPOINT_FORMATS = ("torch.save", "dcp", "async")
BACKEND_OF = {"torch.save": "torch.save", "dcp": "torch.dcp", "async": "torch.dcp"}
REAL_SAVE_BACKENDS = ("torch.save", "torch.dcp")
# a real save over fio's O_DIRECT figure (issue 13: half, on an H100 node's disk); a stated
# overhead for when no save of the workload's kind was measured, checked by tests/validation
FIO_SAVE_FACTOR = 0.5


@dataclass(frozen=True, kw_only=True, slots=True)
class SaveFigure:
    record: IoRecord
    GBps: float  # the record's bandwidth, times FIO_SAVE_FACTOR when it is fio's
    backend: str  # the record's backend
    note: str


def pick(records: Sequence[IoRecord], fmt: str = "torch.save") -> SaveFigure | None:
    """The figure for a `fmt` save among checkpoint_write records at the workload's place."""
    want = BACKEND_OF[fmt]
    same = [r for r in records if r.backend == want]
    if same:
        r = max(same, key=lambda r: r.bw_GBps)
        return SaveFigure(
            record=r, GBps=r.bw_GBps, backend=r.backend, note=f"write bandwidth from the {r.backend} record"
        )
    fio = [r for r in records if r.backend not in REAL_SAVE_BACKENDS]
    if not fio:
        return None  # only a save of another kind: never stands in for this one
    r = max(fio, key=lambda r: r.bw_GBps)
    return SaveFigure(
        record=r,
        GBps=r.bw_GBps * FIO_SAVE_FACTOR,
        backend=r.backend,
        note=f"no {want} record: {r.backend}'s {r.bw_GBps:.3g} GB/s x {FIO_SAVE_FACTOR:g}, the stated overhead "
        "of a real save (serialisation, one buffered stream)",
    )


def job_write_GBps(measured: float, nodes_measured: int, local: bool, job_nodes: int) -> tuple[float, str]:
    """The job's checkpoint bandwidth: a local path's per-node figure times the nodes writing;
    shared storage's aggregate as measured."""
    if not local:
        return measured, ""
    per_node = measured / max(1, nodes_measured)
    return per_node * job_nodes, f"local path: {per_node:.3g} GB/s per node x {job_nodes} nodes writing"


def job_nodes(gpus: int, gpus_per_node: int) -> int:
    return max(1, math.ceil(gpus / max(1, gpus_per_node)))
