"""A checkpoint as training writes it (pure): which ranks write how many bytes on which node,
and how long the job's save takes on the measured storage (docs/model.md, step 8).

Every writing rank serialises its own shard and writes it, all at the same time; a node's
writers share its disk and NICs, and shared storage bounds all nodes together:

    save = rank bytes / serialisation (fio standing in only; a real save's figure includes it)
         + max(max over nodes of node bytes / min(writers x per-writer, node figure),
               total bytes / shared aggregate)

A local path has no shared bound: each node writes to its own disk.

Each figure holds for the bytes it measured; the bytes past them go at the rate measured past
a half-size save, where the save measured one (`seconds`, savepath.py): a figure of a 1 GB
save is not the rate of a 20 GB one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from reports.judging.storage.savepath import SaveRates

# who writes, by (data parallelism, save format): "replica" = one data-parallel replica's T
# tensor-parallel ranks (rank 0 alone when T = 1: `if rank == 0: torch.save(model.state_dict())`,
# Megatron's mp_rank_XX files); "every rank" = all N ranks, each its shard (FSDP's sharded state
# dict, ZeRO's per-rank files, DCP, whose planner spreads even replicated DDP state over the ranks)
WRITERS = {
    ("ddp", "torch.save"): "replica",
    ("ddp", "dcp"): "every rank",
    ("ddp", "async"): "every rank",
    ("fsdp", "torch.save"): "every rank",
    ("fsdp", "dcp"): "every rank",
    ("fsdp", "async"): "every rank",
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Layout:
    """The writing ranks of one save: how many on each writing node, each with rank_bytes."""

    rule: str  # a WRITERS value
    node_writers: tuple[int, ...]
    rank_bytes: float

    @property
    def writers(self) -> int:
        return sum(self.node_writers)

    @property
    def nodes(self) -> int:
        return len(self.node_writers)


def layout(size: float, data: str, fmt: str, gpus: int, gpus_per_node: int, tensor: int = 1) -> Layout:
    """The ranks that write `size` bytes: ranks fill nodes in order, gpus_per_node each."""
    rule = WRITERS[(data, fmt)]
    ranks = max(1, tensor if rule == "replica" else gpus)
    g = max(1, gpus_per_node)
    full, rest = divmod(ranks, g)
    return Layout(rule=rule, node_writers=(g,) * full + ((rest,) if rest else ()), rank_bytes=size / ranks)


@dataclass(frozen=True, kw_only=True, slots=True)
class SaveTime:
    seconds: float  # the job's save, serialisation included
    serialise_s: float
    node_s: float  # the slowest writing node's write time
    aggregate_s: float  # total bytes over the shared aggregate (0 for local paths)
    node_GBps: float  # what one full node writes at
    limit: str  # which term sets the time
    floor: str  # the aggregate was measured from fewer nodes than write: it is a floor, or ''
    beyond: str = ""  # the ranks write past the bytes a process was measured saving (beyond_note), or ''


def seconds(nbytes: float, GBps: float, measured: float = 0.0, sustained: float | None = None) -> float:
    """Seconds to write `nbytes` with a figure of `GBps` measured over `measured` bytes: the
    bytes past those at the `sustained` rate (at GBps where none was measured, or the figure
    is not a save's: measured 0)."""
    if measured <= 0 or nbytes <= measured:
        return nbytes / (GBps * 1e9)
    return measured / (GBps * 1e9) + (nbytes - measured) / ((sustained or GBps) * 1e9)


def node_seconds(writers: int, rank_bytes: float, r: SaveRates) -> tuple[float, float]:
    """(seconds, of which the per-writer term's) for a node with `writers` processes each
    saving `rank_bytes` at once: each no faster than one process alone, together no faster
    than the node's figure."""
    node = seconds(writers * rank_bytes, r.node_GBps, r.node_writers * r.shard_bytes, r.node_sustained_GBps)
    if r.per_writer_GBps is None:
        return node, 0.0
    one = seconds(rank_bytes, r.per_writer_GBps, r.per_writer_bytes, r.per_writer_sustained_GBps)
    return max(node, one), one


def node_rate(writers: int, r: SaveRates, rank_bytes: float = 0.0) -> float:
    """GB/s of a node with `writers` processes saving `rank_bytes` each at once (the figures'
    own sizes when 0): each at most the per-writer figure, together at most the node's."""
    if rank_bytes <= 0:
        if r.per_writer_GBps is None:
            return r.node_GBps
        return min(writers * r.per_writer_GBps, r.node_GBps)
    return writers * rank_bytes / node_seconds(writers, rank_bytes, r)[0] / 1e9


def beyond_note(lay: Layout, r: SaveRates) -> str:
    """What the save's ranks write past the bytes a process was measured saving, and at what
    rate those bytes are taken; '' when none."""
    measured = max(r.shard_bytes, r.per_writer_bytes)
    if measured <= 0 or lay.rank_bytes <= measured * 1.001:
        return ""
    past = f"each rank's {lay.rank_bytes / 1e9:.3g} GB is past the {measured / 1e9:.3g} GB a process saved"
    rates = [x for x in (r.node_sustained_GBps, r.per_writer_sustained_GBps) if x]
    if not rates:
        return (
            f"{past}, and no rate past a smaller save was measured (saves of one size): the figure's "
            "rate is taken for every byte, and a cache that absorbed the measured save would make this stall short"
        )
    return f"{past}: the bytes past it at the rate past a half-size save ({min(rates):.3g} GB/s)"


def save_time(size: float, lay: Layout, r: SaveRates, local: bool) -> SaveTime:
    serialise = lay.rank_bytes / (r.serialise_GBps * 1e9) if r.serialise_GBps else 0.0
    node_s = max(node_seconds(w, lay.rank_bytes, r)[0] for w in lay.node_writers)
    agg_s = 0.0 if local else seconds(size, r.aggregate_GBps, r.aggregate_bytes, r.aggregate_sustained_GBps)
    write_s = max(node_s, agg_s)
    widest = max(lay.node_writers)
    writing = "one process" if lay.writers == 1 else f"{widest} processes"
    slowest, one = node_seconds(widest, lay.rank_bytes, r)
    if agg_s > node_s:
        limit = f"shared storage's aggregate {r.aggregate_GBps:.3g} GB/s"
    elif r.per_writer_GBps is not None and one >= slowest:
        limit = f"{writing} per node at {r.per_writer_GBps:.3g} GB/s each"
    else:
        limit = f"the node's {r.node_GBps:.3g} GB/s"
    if serialise > write_s:
        limit = f"serialising {lay.rank_bytes / 1e9:.3g} GB per rank at {r.serialise_GBps:g} GB/s"
    floor = ""
    if not local and r.nodes_measured < lay.nodes:
        floor = (
            f"shared storage measured from {r.nodes_measured} node{'s' if r.nodes_measured != 1 else ''}; "
            f"the job writes from {lay.nodes} ({lay.nodes / r.nodes_measured:.3g}x): its aggregate "
            f"{r.aggregate_GBps:.3g} GB/s is a floor, so this stall is a ceiling"
        )
    return SaveTime(
        seconds=serialise + write_s,
        serialise_s=serialise,
        node_s=node_s,
        aggregate_s=agg_s,
        node_GBps=node_rate(widest, r, lay.rank_bytes),
        limit=limit,
        floor=floor,
        beyond=beyond_note(lay, r),
    )


def job_nodes(gpus: int, gpus_per_node: int) -> int:
    return max(1, math.ceil(gpus / max(1, gpus_per_node)))
