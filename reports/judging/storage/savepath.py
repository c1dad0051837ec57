"""The checkpoint figures the model uses (pure): what the records say about saving at the
workload's place, per process, per node and for all measured nodes together.

The save path is the one the workload names (`checkpoint.format`), never the faster of two:
`torch.save` (the plain synchronous save, the default) takes the `torch.save` records, `dcp`
and `async` (DCP's async_save writes through the same FileSystemWriter) the `torch.dcp` ones.
`stoker io` saves twice per kind: one process per node (the per-writer figure) and as many
processes per node as it has GPUs, all at once (the node's figure, iobench/torch_ckpt.py).
A synchronous save waits for its slowest node, so a record's node figure is its slowest
host's; each record is already the median of its saves (`samples_GBps`, reports/shared/spread.py),
and of repeated records the best counts.

Without a record of that kind, fio's figure stands in with a stated overhead: a real save
also serialises the state dict before the bytes reach the disk, each rank its own shard, so
each rank adds rank bytes / SERIALISE_GBps[kind] (reports/judging/storage/ckpt_save.py). torch.save
serialised an MLP + Adam state into memory (tmpfs, no disk) at 0.46–0.60 GB/s per process on
the 2-core test bed; the H100 node's figures fit the same form (fio 3.72 GB/s, torch.save
0.48 measured: 1 / (1/3.72 + 1/0.5) = 0.44 predicted). DCP's 2.0 GB/s is that node's dcp
record solved for the term (1 / (1/1.33 − 1/3.72)): in-sample, one point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reports.evidence.storage import REAL_SAVE_BACKENDS
from reports.shared.records import IoRecord, procs_per_node

CHECKPOINT_FORMATS = ("torch.save", "dcp", "async")
BACKEND_OF = {"torch.save": "torch.save", "dcp": "torch.dcp", "async": "torch.dcp"}
# the serialisation rate of one process of a real save, GB/s (see the module docstring):
# the stated overhead added to fio's write time when no save of the workload's kind was measured
SERIALISE_GBps = {"torch.save": 0.5, "torch.dcp": 2.0}


@dataclass(frozen=True, kw_only=True, slots=True)
class SaveRates:
    """The measured save at the workload's place, GB/s (10^9 B/s)."""

    record: IoRecord | None  # the record that sets the node figure (its place names the component)
    backend: str  # the records' backend: the workload's save kind, or fio standing in
    per_writer_GBps: float | None  # one process saving alone on its node; None: the node figure caps
    node_GBps: float  # one node with node_writers processes at once, its slowest host
    node_writers: int  # processes per node in that measurement
    aggregate_GBps: float  # all measured nodes together
    nodes_measured: int
    serialise_GBps: float | None  # per process, added when fio stands in (a real save includes it)
    note: str


def slowest_node_GBps(r: IoRecord) -> float:
    """The slowest host's figure (a synchronous save waits for it); the mean per node when the
    record names no hosts."""
    per = [v for v in r.per_host_bw_GBps.values() if v > 0]
    return min(per) if per else r.bw_GBps / max(1, r.nodes)


def _best(recs: Sequence[IoRecord]) -> IoRecord:
    return max(recs, key=lambda r: (slowest_node_GBps(r), r.bw_GBps))


def _widest(recs: Sequence[IoRecord]) -> IoRecord:
    """The record measured from the most nodes, the fastest of those: the aggregate."""
    return max(recs, key=lambda r: (r.nodes, r.bw_GBps))


def pick(records: Sequence[IoRecord], fmt: str = "torch.save") -> SaveRates | None:
    """The figures for a `fmt` save among checkpoint_write records at the workload's place."""
    want = BACKEND_OF[fmt]
    records = [r for r in records if r.bw_GBps > 0]  # a record that moved nothing sets no rate
    same = [r for r in records if r.backend == want]
    fio = [r for r in records if r.backend not in REAL_SAVE_BACKENDS]
    if same:
        solo = [r for r in same if procs_per_node(r) == 1]
        many = [r for r in same if procs_per_node(r) > 1]
        per_writer = slowest_node_GBps(_best(solo)) if solo else None
        if many:
            node = _best(many)
            node_GBps, how = slowest_node_GBps(node), f"{procs_per_node(node)} {want} processes per node"
        elif fio:  # the disk's own figure caps the node's writers
            node = _best(fio)
            node_GBps, how = slowest_node_GBps(node), f"fio's {procs_per_node(node)} writers per node"
        else:  # one process per node is all that was measured: the node figure is a floor
            node = _best(solo)
            node_GBps, how = slowest_node_GBps(node), f"one {want} process per node (a floor)"
        agg = _widest([*same, *fio])
        one = f"{per_writer:.3g} GB/s per {want} process, " if per_writer is not None else ""
        return SaveRates(
            record=node,
            backend=want,
            per_writer_GBps=per_writer,
            node_GBps=node_GBps,
            node_writers=procs_per_node(node),
            aggregate_GBps=agg.bw_GBps,
            nodes_measured=agg.nodes,
            serialise_GBps=None,
            note=f"from the {want} records: {one}{node_GBps:.3g} GB/s per node with {how}",
        )
    if not fio:
        return None  # only a save of another kind: never stands in for this one
    node = _best(fio)
    agg = _widest(fio)
    ser = SERIALISE_GBps[want]
    node_GBps = slowest_node_GBps(node)
    return SaveRates(
        record=node,
        backend=node.backend,
        per_writer_GBps=None,
        node_GBps=node_GBps,
        node_writers=procs_per_node(node),
        aggregate_GBps=agg.bw_GBps,
        nodes_measured=agg.nodes,
        serialise_GBps=ser,
        note=f"no {want} record: {node.backend}'s {node_GBps:.3g} GB/s per node plus the stated overhead "
        f"of a real save, each rank serialising its shard at {ser:g} GB/s",
    )


def given(GBps: float, nodes: int = 1) -> SaveRates:
    """A job figure stated directly (all `nodes` together, a real save's): the aggregate,
    which any one node may take whole."""
    return SaveRates(
        record=None,
        backend="given",
        per_writer_GBps=None,
        node_GBps=GBps,
        node_writers=1,
        aggregate_GBps=GBps,
        nodes_measured=nodes,
        serialise_GBps=None,
        note="",
    )
