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

A save's rate depends on its size (a write-back cache or burst credits absorb a small one),
so a figure holds for the bytes it measured: each writer's `shard_bytes`, the record's
`bytes` for the aggregate. A save records the rate past a half-size save too
(`sustained_GBps`, `per_host_sustained_GBps`: iobench/sustained.py); the bytes a rank, a node
or the job writes past the measured ones go at that rate (ckpt_save.py `seconds`). A record
without it (one size) is taken at its figure for every byte, and the row says so. A save
faster than fio's sequential write on the path (`cache_absorbed`) is named in the note: its
figure is a cache's, not the device's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reports.evidence.storage import REAL_SAVE_BACKENDS
from reports.shared import plausible
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
    # the bytes each writer saved for the per-writer and node figures (0: not a save's, e.g.
    # fio's time-based stream), and the rates past them (None: not measured; the figure holds)
    shard_bytes: float = 0.0  # the node figure's
    per_writer_bytes: float = 0.0  # the per-writer figure's
    per_writer_sustained_GBps: float | None = None
    node_sustained_GBps: float | None = None
    aggregate_bytes: float = 0.0  # the aggregate's record's bytes (0: not a save's)
    aggregate_sustained_GBps: float | None = None


def slowest_node_GBps(r: IoRecord) -> float:
    """The slowest host's figure (a synchronous save waits for it); the mean per node when the
    record names no hosts."""
    per = [v for v in r.per_host_bw_GBps.values() if v > 0]
    return min(per) if per else r.bw_GBps / max(1, r.nodes)


def _rate(value: Any) -> float | None:
    """A GB/s a record gives, or None when it gives none a host could have written at."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and 0 < value <= plausible.max_GBps() and math.isfinite(value) else None


def sustained_of(r: IoRecord) -> float | None:
    """The slowest host's rate past the smaller save (the node figure's companion); None when
    the record measured one size, or a host gave no rate."""
    per = r.extra.get("per_host_sustained_GBps")
    got = [_rate(v) for v in per.values()] if isinstance(per, Mapping) and per else [None]
    return None if any(v is None for v in got) else min(v for v in got if v is not None)


def _aggregate_sustained(r: IoRecord) -> float | None:
    return _rate(r.extra.get("sustained_GBps")) if r.backend in REAL_SAVE_BACKENDS else None


def shard_of(r: IoRecord) -> float:
    """The bytes each writer of a save record saved (0 for fio's time-based stream)."""
    v = r.extra.get("shard_bytes")
    if r.backend not in REAL_SAVE_BACKENDS or not isinstance(v, int) or isinstance(v, bool):
        return 0.0
    return float(v) if 0 < v <= plausible.MAX_BYTES else 0.0


def _absorbed(recs: Sequence[IoRecord]) -> str:
    hit = [r for r in recs if r.extra.get("cache_absorbed") is True]
    if not hit:
        return ""
    r = hit[0]
    fio = r.extra.get("fio_per_host_GBps")
    device = min((v for v in fio.values() if _rate(v)), default=0.0) if isinstance(fio, Mapping) else 0.0
    at = f" ({device:.3g} GB/s)" if device else ""
    return (
        f"the {r.backend} save of {procs_per_node(r)} process{'es' if procs_per_node(r) != 1 else ''} "
        f"per node ran faster than fio's sequential write on this path{at}: a cache absorbed it, "
        "its figure is not the device's"
    )


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
        solo_rec = _best(solo) if solo else None
        shard = shard_of(node)
        saved = shard or (shard_of(solo_rec) if solo_rec else 0.0)
        size = f" (saves of {saved / 1e9:.3g} GB per process)" if saved else ""
        note = f"from the {want} records{size}: {one}{node_GBps:.3g} GB/s per node with {how}"
        return SaveRates(
            record=node,
            backend=want,
            per_writer_GBps=per_writer,
            node_GBps=node_GBps,
            node_writers=procs_per_node(node),
            aggregate_GBps=agg.bw_GBps,
            nodes_measured=agg.nodes,
            serialise_GBps=None,
            note="; ".join(x for x in (note, _absorbed(same)) if x),
            shard_bytes=shard,
            per_writer_bytes=shard_of(solo_rec) if solo_rec else 0.0,
            per_writer_sustained_GBps=sustained_of(solo_rec) if solo_rec else None,
            node_sustained_GBps=sustained_of(node) if node.backend in REAL_SAVE_BACKENDS else None,
            aggregate_bytes=float(agg.bytes) if agg.backend in REAL_SAVE_BACKENDS else 0.0,
            aggregate_sustained_GBps=_aggregate_sustained(agg),
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
