"""The torch.distributed call of each op of the collective table (netbench/collectives.py), one
entry per op as nccl-tests' runColl is one function per collective; TorchBackend.bind looks
an op up here. Imported by the torch backend only, so torch loads only where it runs."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import torch.distributed as dist

from netbench.backends import Binding, CallArgs
from netbench.collectives import TABLE

# torch 2.13 renamed the tensor forms (the old names warn); same call, same semantics
_ALL_GATHER = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_REDUCE_SCATTER = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _gather(a: CallArgs) -> Callable[[], object]:
    parts = list(a.recv.chunk(a.n)) if a.me == a.root else None  # the root's buffer as n chunk views
    return partial(dist.gather, a.send, parts, group=a.comm.pg, group_dst=a.root)


def _scatter(a: CallArgs) -> Callable[[], object]:
    parts = list(a.send.chunk(a.n)) if a.me == a.root else None
    return partial(dist.scatter, a.recv, parts, group=a.comm.pg, group_src=a.root)


def _alltoallv(a: CallArgs) -> Callable[[], object]:
    if a.splits is None:
        raise ValueError("alltoallv")
    return partial(
        dist.all_to_all_single,
        a.recv,
        a.send,
        output_split_sizes=[row[a.me] for row in a.splits],
        input_split_sizes=list(a.splits[a.me]),
        group=a.comm.pg,
    )


def _all_reduce(a: CallArgs) -> Callable[[], object]:
    return partial(dist.all_reduce, a.recv, group=a.comm.pg)


def _all_gather(a: CallArgs) -> Callable[[], object]:
    return partial(_ALL_GATHER, a.recv, a.send, group=a.comm.pg)


def _reduce_scatter(a: CallArgs) -> Callable[[], object]:
    return partial(_REDUCE_SCATTER, a.recv, a.send, group=a.comm.pg)


def _broadcast(a: CallArgs) -> Callable[[], object]:
    return partial(dist.broadcast, a.recv, group=a.comm.pg, group_src=a.root)


def _reduce(a: CallArgs) -> Callable[[], object]:
    return partial(dist.reduce, a.recv, group=a.comm.pg, group_dst=a.root)


def _alltoall(a: CallArgs) -> Callable[[], object]:
    return partial(dist.all_to_all_single, a.recv, a.send, group=a.comm.pg)


def _sendrecv(a: CallArgs) -> Callable[[], object]:
    ops = [
        dist.P2POp(dist.isend, a.send, group=a.comm.pg, group_peer=(a.me + 1) % a.n),
        dist.P2POp(dist.irecv, a.recv, group=a.comm.pg, group_peer=(a.me - 1) % a.n),
    ]

    def sendrecv() -> None:
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    return sendrecv


def _hypercube(a: CallArgs) -> Callable[[], object]:
    """nccl-tests hypercube.cu: this rank's chunk copied into its place in the output, then in
    round `mask` (1, 2, 4 ...) the mask chunks from r & ~(mask-1) sent to rank r^mask and as
    many received from it, into their places (a power-of-two group: collectives.runs_on)."""
    c = a.send.numel()
    rounds = []
    mask = 1
    while mask < a.n:
        s = a.me & ~(mask - 1)
        r, peer = s ^ mask, a.me ^ mask
        rounds.append(
            [
                dist.P2POp(dist.isend, a.recv[s * c : (s + mask) * c], group=a.comm.pg, group_peer=peer),
                dist.P2POp(dist.irecv, a.recv[r * c : (r + mask) * c], group=a.comm.pg, group_peer=peer),
            ]
        )
        mask <<= 1
    mine = a.recv[a.me * c : (a.me + 1) * c]

    def hypercube() -> None:
        mine.copy_(a.send)
        for ops in rounds:
            for work in dist.batch_isend_irecv(ops):
                work.wait()

    return hypercube


# The torch.distributed call of each op of the collective table (netbench/collectives.py)
CALLS: dict[str, Binding] = {
    "all_reduce": _all_reduce,
    "all_gather": _all_gather,
    "reduce_scatter": _reduce_scatter,
    "broadcast": _broadcast,
    "reduce": _reduce,
    "alltoall": _alltoall,
    "alltoallv": _alltoallv,
    "gather": _gather,
    "scatter": _scatter,
    "sendrecv": _sendrecv,
    "hypercube": _hypercube,
}
assert set(CALLS) == set(TABLE), "every op of the collective table has one torch call"
