"""MPI through mpi4py, with numpy buffers on the host. The MPI library does the
transport (Open MPI, MPICH, vendor MPIs); mpi4py's buffer calls add no copies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from mpi4py import MPI

from netbench.backends import Backend, Binding, CallArgs, PerfCounterTimer, Timer
from netbench.collectives import TABLE
from reports.shared.errors import UsageError

_DTYPES = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "int32": np.int32,
    "int64": np.int64,
    "int8": np.int8,
    "uint8": np.uint8,
}


def _src(a: CallArgs) -> Any:
    return MPI.IN_PLACE if a.in_place else a.send


def _gather(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Gather, a.send, a.recv, root=a.root)


def _scatter(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Scatter, a.send, a.recv, root=a.root)


def _alltoallv(a: CallArgs) -> Callable[[], object]:
    if a.splits is None:
        raise ValueError("alltoallv")
    sc, rc = list(a.splits[a.me]), [row[a.me] for row in a.splits]
    sd = [sum(sc[:j]) for j in range(len(sc))]
    rd = [sum(rc[:j]) for j in range(len(rc))]
    return partial(a.comm.Alltoallv, [a.send, (sc, sd)], [a.recv, (rc, rd)])


def _all_reduce(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Allreduce, _src(a), a.recv, op=MPI.SUM)


def _all_gather(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Allgather, _src(a), a.recv)


def _reduce_scatter(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Reduce_scatter_block, a.send, a.recv, op=MPI.SUM)


def _broadcast(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Bcast, a.recv, root=a.root)


def _reduce(a: CallArgs) -> Callable[[], object]:
    if a.in_place:  # MPI_IN_PLACE is given at the root only
        at_root = a.me == a.root
        return partial(
            a.comm.Reduce,
            MPI.IN_PLACE if at_root else a.recv,
            a.recv if at_root else None,
            op=MPI.SUM,
            root=a.root,
        )
    return partial(a.comm.Reduce, a.send, a.recv, op=MPI.SUM, root=a.root)


def _alltoall(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Alltoall, a.send, a.recv)


def _sendrecv(a: CallArgs) -> Callable[[], object]:
    return partial(a.comm.Sendrecv, a.send, dest=(a.me + 1) % a.n, recvbuf=a.recv, source=(a.me - 1) % a.n)


def _hypercube(a: CallArgs) -> Callable[[], object]:
    """nccl-tests hypercube.cu with MPI_Sendrecv: own chunk into place, then log2(n) rounds
    exchanging the mask chunks from r & ~(mask-1) with rank r^mask."""
    c = len(a.send)

    def hypercube() -> None:
        a.recv[a.me * c : (a.me + 1) * c] = a.send
        mask = 1
        while mask < a.n:
            s = a.me & ~(mask - 1)
            r, peer = s ^ mask, a.me ^ mask
            a.comm.Sendrecv(
                a.recv[s * c : (s + mask) * c], dest=peer, recvbuf=a.recv[r * c : (r + mask) * c], source=peer
            )
            mask <<= 1

    return hypercube


# The MPI call of each op of the collective table (netbench/collectives.py), one entry each
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
assert set(CALLS) == set(TABLE), "every op of the collective table has one MPI call"


class MpiBackend(Backend):
    name = "mpi"
    device = "cpu"
    only_in_place = frozenset({"broadcast"})
    in_place_ops = frozenset({"all_reduce", "broadcast", "reduce", "all_gather"})

    def __init__(self, dtype: str) -> None:
        if dtype not in _DTYPES:
            raise UsageError(f"--dtype {dtype} has no MPI/numpy type: choose from {', '.join(_DTYPES)}")
        if dtype == "float16":
            # MPI has no predefined half type for reductions; sum in float16 would fail
            raise UsageError("--dtype float16 cannot be reduced by MPI: use float32 with --backend mpi")
        self._dtype = _DTYPES[dtype]
        self._w = MPI.COMM_WORLD
        self.rank, self.world = self._w.Get_rank(), self._w.Get_size()
        self._made: list[Any] = []  # communicators of the last split(), freed by release()

    def split(self, groups: Sequence[Sequence[int]]) -> Any | None:
        color, key = MPI.UNDEFINED, 0
        for i, ranks in enumerate(groups):
            if self.rank in ranks:
                color, key = i, list(ranks).index(self.rank)
        comm = self._w.Split(color, key)
        if comm == MPI.COMM_NULL:
            return None
        self._made.append(comm)
        return comm

    def group_rank(self, comm: Any) -> int:
        return int(comm.Get_rank())

    def group_size(self, comm: Any) -> int:
        return int(comm.Get_size())

    def alloc(self, values: np.ndarray) -> np.ndarray:
        return values.astype(self._dtype)

    def fill(self, buf: np.ndarray, values: np.ndarray) -> None:
        np.copyto(buf, values.astype(buf.dtype))

    def agree(self, comm: Any, ok: bool) -> bool:
        return bool(comm.allreduce(bool(ok), op=MPI.LAND))

    def release(self) -> None:
        for comm in self._made:
            comm.Free()
        self._made = []

    def view(self, buf: np.ndarray, start: int, n: int) -> np.ndarray:
        return buf[start : start + n]

    def to_numpy(self, buf: np.ndarray) -> np.ndarray:
        return buf.astype(np.float64)

    def bind(
        self,
        op: str,
        send: np.ndarray,
        recv: np.ndarray,
        comm: Any,
        root: int,
        in_place: bool,
        splits: tuple[tuple[int, ...], ...] | None = None,
    ) -> Callable[[], object]:
        if op not in CALLS:
            raise ValueError(op)
        args = CallArgs(
            send=send,
            recv=recv,
            comm=comm,
            root=root,
            in_place=in_place,
            n=comm.Get_size(),
            me=comm.Get_rank(),
            splits=splits,
        )
        return CALLS[op](args)

    def barrier(self, comm: Any) -> None:
        comm.Barrier()

    def sync(self) -> None:
        pass  # host buffers: every call has completed when it returns

    def timer(self) -> Timer:
        return PerfCounterTimer()

    def gather(self, obj: Any) -> list[Any] | None:
        return self._w.gather(obj, root=0)

    def allgather(self, obj: Any) -> list[Any]:
        return self._w.allgather(obj)

    def bcast(self, obj: Any) -> Any:
        return self._w.bcast(obj, root=0)

    def versions(self) -> dict[str, str]:
        import mpi4py

        return {
            "mpi4py": mpi4py.__version__,
            "mpi": MPI.Get_library_version().strip().splitlines()[0],
            "mpi_standard": "{}.{}".format(*MPI.Get_version()),
            "backend": "mpi",
        }

    def close(self) -> None:
        pass  # mpi4py finalises MPI at interpreter exit
