"""The checkpoint write figure the model uses (pure).

The save path is the one the workload names (`checkpoint.format`), never the faster of two:
`torch.save` (the plain synchronous save, the default) takes the `torch.save` record, `dcp`
and `async` (DCP's async_save writes through the same FileSystemWriter) the `torch.dcp` one.
Without a record of that kind, fio's figure stands in with a stated overhead: a real save also
serialises the state dict, one stream, before the bytes reach the disk, so its time is
bytes / fio + bytes / SERIALISE_GBps[kind] (the row's note names both). torch.save serialised
an MLP + Adam state into memory (tmpfs, no disk) at 0.46–0.60 GB/s on the 2-core test bed; the
figures of an H100 node fit the same form (fio 3.72 GB/s, torch.save 0.48 measured:
1 / (1/3.72 + 1/0.5) = 0.44 predicted). DCP's 2.0 GB/s is that node's dcp record solved for
the term (1 / (1/1.33 − 1/3.72)): in-sample, one point. tests/validation checks the form on a
throttled device (docs/model.md).

Local storage is per node: every node writes its own shard to its own disk, so the job's
checkpoint bandwidth is the measured figure per node times the nodes writing. Shared storage
is the aggregate the records measured (all nodes of the measurement together).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from reports.evidence.storage import REAL_SAVE_BACKENDS
from reports.records import IoRecord

CHECKPOINT_FORMATS = ("torch.save", "dcp", "async")
BACKEND_OF = {"torch.save": "torch.save", "dcp": "torch.dcp", "async": "torch.dcp"}
# the serialisation rate of a real save, GB/s (see the module docstring): the stated overhead
# added to fio's write time when no save of the workload's kind was measured
SERIALISE_GBps = {"torch.save": 0.5, "torch.dcp": 2.0}


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
    ser = SERIALISE_GBps[want]
    return SaveFigure(
        record=r,
        GBps=with_overhead(r.bw_GBps, want),
        backend=r.backend,
        note=f"no {want} record: {r.backend}'s {r.bw_GBps:.3g} GB/s plus the stated overhead of a real save, "
        f"serialising at {ser:g} GB/s (time = bytes / {r.bw_GBps:.3g} + bytes / {ser:g})",
    )


def with_overhead(fio_GBps: float, backend: str) -> float:
    """The save's bandwidth from fio's: 1 / (1/fio + 1/serialisation)."""
    return 1.0 / (1.0 / fio_GBps + 1.0 / SERIALISE_GBps[backend])


def job_write_GBps(measured: float, nodes_measured: int, local: bool, job_nodes: int) -> tuple[float, str]:
    """The job's checkpoint bandwidth: a local path's per-node figure times the nodes writing;
    shared storage's aggregate as measured."""
    if not local:
        return measured, ""
    per_node = measured / max(1, nodes_measured)
    return per_node * job_nodes, f"local path: {per_node:.3g} GB/s per node x {job_nodes} nodes writing"


def job_nodes(gpus: int, gpus_per_node: int) -> int:
    return max(1, math.ceil(gpus / max(1, gpus_per_node)))
