"""The collective table: each op defined once, as nccl-tests' `struct testColl` is.

An entry says how many bytes the "size" column counts, the bus factor, the smallest
group it runs on, which backend method runs it, and how to fill and check its buffers.
Adding an op adds an entry here, never a loop elsewhere.

Sizes follow the `*GetCollByteCount` functions of nccl-tests src/<op>.cu:
  S (size column, bytes)      all_reduce, broadcast, reduce, sendrecv: count x type size
                              all_gather: the whole output; reduce_scatter: the whole input;
                              alltoall: the whole buffer of one rank (n chunks);
                              gather: the root's whole output; scatter: the root's whole input;
                              alltoallv: one rank's whole send (= receive) buffer, per-peer
                              counts from nccl-tests' generated pattern (netbench/alltoallv.py)
                              hypercube: the whole output, as all_gather (power-of-two groups
                              only; its printed algbw is (n-1)/n of size / time: ops.algbw_share)
Op names and bus factors (busbw = algbw x factor) are defined once, in reports/shared/ops.py.

Fills are small integers (1..7) so that float sums are exact and a correct result
compares equal element by element; `wrong` counts the elements that differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from netbench import alltoallv
from reports.shared.ops import OPS, Op, algbw_share, bus_factor, is_power_of_two

# A fill value of rank r at element i: 1..7, so a sum over n ranks stays below 8n and is
# exact in float32 for any realistic n (and in bfloat16/float16 up to ~32 ranks).
_FILL_MOD = 7


def fill(rank: int, start: int, n: int) -> np.ndarray:
    """Rank `rank`'s input values for elements start..start+n-1 (float64, exact integers)."""
    idx = np.arange(start, start + n, dtype=np.int64)
    return ((idx + 3 * rank) % _FILL_MOD + 1).astype(np.float64)


def _sum_over(ranks: int, start: int, n: int) -> np.ndarray:
    total = np.zeros(n, dtype=np.float64)
    for r in range(ranks):
        total += fill(r, start, n)
    return total


@dataclass(frozen=True, kw_only=True, slots=True)
class Layout:
    """Buffer sizes (elements) of one rank for one op at one size."""

    count: int  # elements of the size column
    send: int  # elements in this rank's send buffer
    recv: int  # elements in this rank's receive buffer
    # alltoallv: elements rank i sends rank j, [i][j]; None for every other op
    splits: tuple[tuple[int, ...], ...] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Collective:
    name: Op
    per_rank_chunks: bool  # count must divide into n equal chunks
    send_chunks: Callable[[int], int]  # n -> send buffer length in chunks of count/n
    recv_chunks: Callable[[int], int]  # n -> recv buffer length in chunks of count/n
    min_ranks: int = 1
    redop: str = "none"
    rooted: bool = False
    in_place_ok: bool = True  # nccl-tests runs it in place too
    send_values: Callable[[int, int, int, int], np.ndarray]  # (count, n, rank, root) -> send buffer
    expected: Callable[[int, int, int, int], np.ndarray | None]  # -> recv buffer; None: not checked
    varying: bool = False  # per-peer counts from nccl-tests' alltoallv pattern (Layout.splits)
    power_of_two: bool = False  # runs only on 1, 2, 4, 8 ... ranks (hypercube)

    def runs_on(self, n: int) -> bool:
        """Whether a group of n ranks runs this op: enough ranks, and a power of two where the
        op needs one (nccl-tests skips hypercube on any other count)."""
        return n >= self.min_ranks and (not self.power_of_two or is_power_of_two(n))

    def algbw_share(self, n: int) -> float:
        """The algbw nccl-tests prints, as a fraction of size / time (reports/shared/ops.py)."""
        return algbw_share(self.name, n) or 0.0

    def bus_factor(self, n: int) -> float:
        """busbw / algbw among n ranks (reports/shared/ops.py)."""
        return bus_factor(self.name, n)

    def layout(self, size_bytes: int, n: int, itemsize: int) -> Layout:
        """Element counts for a requested size, rounded down like nccl-tests so that
        chunked ops split evenly; count 0 means the size is too small for this op."""
        count = size_bytes // itemsize
        if self.varying:
            m = alltoallv.matrix(count, n, itemsize)
            total = sum(m[0])  # the pattern is balanced: every rank sends and receives this many
            return Layout(count=total, send=total, recv=total, splits=m)
        if self.per_rank_chunks:
            # nccl-tests 2.19.6 (src/all_gather.cu, reduce_scatter.cu, alltoall.cu, gather.cu,
            # scatter.cu): each rank's chunk is count/n rounded down to a multiple of 16 bytes
            count = alltoallv.param_count(count, n, itemsize) * n
        chunk = count // n if self.per_rank_chunks else count
        return Layout(count=count, send=chunk * self.send_chunks(n), recv=chunk * self.recv_chunks(n))

    def values(self, lay: Layout, n: int, rank: int, root: int) -> np.ndarray:
        """This rank's send buffer."""
        if lay.splits is not None:
            return fill(rank, 0, sum(lay.splits[rank]))
        return self.send_values(lay.count, n, rank, root)

    def want(self, lay: Layout, n: int, rank: int, root: int) -> np.ndarray | None:
        """This rank's receive buffer after the op; None where it is not defined."""
        if lay.splits is not None:
            return _varying_expected(lay.splits, rank)
        return self.expected(lay.count, n, rank, root)

    def size_bytes(self, layout: Layout, itemsize: int) -> int:
        """The nccl-tests size column: always count x type size with count defined per op."""
        return layout.count * itemsize


def _own(count: int, n: int, rank: int, root: int) -> np.ndarray:
    return fill(rank, 0, count)


def _own_chunk(count: int, n: int, rank: int, root: int) -> np.ndarray:
    return fill(rank, 0, count // n)


def _alltoall_send(count: int, n: int, rank: int, root: int) -> np.ndarray:
    # chunk j goes to rank j; its values encode (sender, destination) so misrouting shows
    c = count // n
    return np.concatenate([fill(rank, j * c, c) for j in range(n)]) if c else np.zeros(0)


def _alltoall_expected(count: int, n: int, rank: int, root: int) -> np.ndarray:
    c = count // n
    return np.concatenate([fill(j, rank * c, c) for j in range(n)]) if c else np.zeros(0)


def _all_gather_expected(count: int, n: int, rank: int, root: int) -> np.ndarray:
    c = count // n
    return np.concatenate([fill(j, 0, c) for j in range(n)]) if c else np.zeros(0)


def _reduce_scatter_expected(count: int, n: int, rank: int, root: int) -> np.ndarray:
    c = count // n
    return _sum_over(n, rank * c, c)


def _reduce_expected(count: int, n: int, rank: int, root: int) -> np.ndarray | None:
    return _sum_over(n, 0, count) if rank == root else None  # other ranks' buffers are undefined


def _gather_expected(count: int, n: int, rank: int, root: int) -> np.ndarray | None:
    return _all_gather_expected(count, n, rank, root) if rank == root else None  # others: no output


def _scatter_send(count: int, n: int, rank: int, root: int) -> np.ndarray:
    return fill(rank, 0, count)  # the root's n chunks; chunk j goes to rank j (others: unused)


def _scatter_expected(count: int, n: int, rank: int, root: int) -> np.ndarray:
    c = count // n
    return fill(root, rank * c, c)


def _varying_expected(m: tuple[tuple[int, ...], ...], rank: int) -> np.ndarray:
    """alltoallv: from each source in rank order, its segment for me, which starts in its
    send stream after what it sends the ranks before me (nccl-tests AlltoAllvInitData)."""
    parts = [fill(src, sum(m[src][:rank]), m[src][rank]) for src in range(len(m))]
    return np.concatenate(parts) if parts else np.zeros(0)


_ONE = lambda n: 1  # noqa: E731 - one chunk
_N = lambda n: n  # noqa: E731 - n chunks

TABLE: dict[str, Collective] = {
    c.name: c
    for c in (
        Collective(
            name="all_reduce",
            redop="sum",
            per_rank_chunks=False,
            send_chunks=_ONE,
            recv_chunks=_ONE,
            send_values=_own,
            expected=lambda c, n, r, root: _sum_over(n, 0, c),
        ),
        Collective(
            name="all_gather",
            per_rank_chunks=True,
            send_chunks=_ONE,
            recv_chunks=_N,
            send_values=_own_chunk,
            expected=_all_gather_expected,
        ),
        Collective(
            name="reduce_scatter",
            redop="sum",
            per_rank_chunks=True,
            send_chunks=_N,
            recv_chunks=_ONE,
            send_values=_own,
            expected=_reduce_scatter_expected,
        ),
        Collective(
            name="broadcast",
            rooted=True,
            per_rank_chunks=False,
            send_chunks=_ONE,
            recv_chunks=_ONE,
            send_values=_own,
            expected=lambda c, n, r, root: fill(root, 0, c),
        ),
        Collective(
            name="reduce",
            redop="sum",
            rooted=True,
            per_rank_chunks=False,
            send_chunks=_ONE,
            recv_chunks=_ONE,
            send_values=_own,
            expected=_reduce_expected,
        ),
        Collective(
            name="alltoall",
            per_rank_chunks=True,
            in_place_ok=False,
            send_chunks=_N,
            recv_chunks=_N,
            send_values=_alltoall_send,
            expected=_alltoall_expected,
        ),
        Collective(
            # send to rank r+1, receive from rank r-1 (nccl-tests sendrecv.cu)
            name="sendrecv",
            min_ranks=2,
            in_place_ok=False,
            per_rank_chunks=False,
            send_chunks=_ONE,
            recv_chunks=_ONE,
            send_values=_own,
            expected=lambda c, n, r, root: fill((r - 1) % n, 0, c),
        ),
        Collective(
            # the root receives every rank's chunk in rank order (nccl-tests gather.cu)
            name="gather",
            rooted=True,
            per_rank_chunks=True,
            in_place_ok=False,
            send_chunks=_ONE,
            recv_chunks=_N,
            send_values=_own_chunk,
            expected=_gather_expected,
        ),
        Collective(
            # the root sends chunk j of its buffer to rank j (nccl-tests scatter.cu)
            name="scatter",
            rooted=True,
            per_rank_chunks=True,
            in_place_ok=False,
            send_chunks=_N,
            recv_chunks=_ONE,
            send_values=_scatter_send,
            expected=_scatter_expected,
        ),
        Collective(
            # every rank sends each peer a different amount (nccl-tests alltoallv.cu)
            name="alltoallv",
            varying=True,
            per_rank_chunks=False,
            in_place_ok=False,
            send_chunks=_ONE,
            recv_chunks=_ONE,
            send_values=_own,
            expected=lambda c, n, r, root: None,  # from the layout's splits: Collective.want
        ),
        Collective(
            # all_gather by pairwise exchange: in round `mask` (1, 2, 4 ...) rank r sends rank
            # r^mask the mask chunks it holds, from chunk r & ~(mask-1) (nccl-tests hypercube.cu)
            name="hypercube",
            power_of_two=True,
            per_rank_chunks=True,
            in_place_ok=False,
            send_chunks=_ONE,
            recv_chunks=_N,
            send_values=_own_chunk,
            expected=_all_gather_expected,
        ),
    )
}
OP_NAMES: tuple[str, ...] = tuple(TABLE)
assert set(OP_NAMES) == set(OPS), "the table runs every op reports/shared/ops.py names"


def count_wrong(got: np.ndarray, expected: np.ndarray | None) -> int:
    """Elements of `got` that differ from `expected` (a length mismatch counts in full)."""
    if expected is None:
        return 0
    if got.shape != expected.shape:
        return max(got.size, expected.size)
    return int(np.count_nonzero(got.astype(np.float64) != expected))
