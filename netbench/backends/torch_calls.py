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
}
assert set(CALLS) == set(TABLE), "every op of the collective table has one torch call"
