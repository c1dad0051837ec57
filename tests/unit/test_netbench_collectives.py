"""The collective table against byte counts and bus factors worked out by hand from
nccl-tests doc/PERFORMANCE.md (busbw = algbw x factor) for n = 2, 3 and 8 ranks."""

from __future__ import annotations

import numpy as np
import pytest

from netbench.collectives import TABLE, count_wrong, fill

# op -> {n: factor}, written out by hand: 2(n-1)/n for all_reduce, (n-1)/n for the
# chunked ops, 1 for broadcast/reduce/sendrecv.
FACTORS = {
    "all_reduce": {2: 1.0, 3: 4 / 3, 8: 1.75},
    "all_gather": {2: 0.5, 3: 2 / 3, 8: 0.875},
    "reduce_scatter": {2: 0.5, 3: 2 / 3, 8: 0.875},
    "alltoall": {2: 0.5, 3: 2 / 3, 8: 0.875},
    "broadcast": {2: 1.0, 3: 1.0, 8: 1.0},
    "reduce": {2: 1.0, 3: 1.0, 8: 1.0},
    "sendrecv": {2: 1.0, 3: 1.0, 8: 1.0},
}


@pytest.mark.parametrize("op", sorted(FACTORS))
@pytest.mark.parametrize("n", [2, 3, 8])
def test_bus_factor(op: str, n: int) -> None:
    assert TABLE[op].bus_factor(n) == pytest.approx(FACTORS[op][n])


# 1000 requested bytes of float32 = 250 elements; chunked ops give each rank count/n rounded
# down to a multiple of 16 bytes (4 float32), as nccl-tests 2.19.6 does in its
# *GetCollByteCount (`base = (count/nranks) & ~(16/eltSize - 1)`, src/all_gather.cu etc.).
# (op, n) -> (size column bytes, count, send elements, recv elements)
LAYOUTS = {
    ("all_reduce", 3): (1000, 250, 250, 250),
    ("broadcast", 8): (1000, 250, 250, 250),
    ("reduce", 2): (1000, 250, 250, 250),
    ("sendrecv", 3): (1000, 250, 250, 250),
    ("all_gather", 2): (992, 248, 124, 248),  # 125 per rank -> 124
    ("all_gather", 3): (960, 240, 80, 240),  # 83 -> 80
    ("all_gather", 8): (896, 224, 28, 224),  # 31 -> 28
    ("reduce_scatter", 3): (960, 240, 240, 80),
    ("reduce_scatter", 8): (896, 224, 224, 28),
    ("alltoall", 3): (960, 240, 240, 240),
    ("alltoall", 8): (896, 224, 224, 224),
    ("gather", 3): (960, 240, 80, 240),
    ("scatter", 3): (960, 240, 240, 80),
}


@pytest.mark.parametrize(("op", "n"), sorted(LAYOUTS))
def test_layout_and_size_column(op: str, n: int) -> None:
    coll = TABLE[op]
    lay = coll.layout(1000, n, 4)
    assert (coll.size_bytes(lay, 4), lay.count, lay.send, lay.recv) == LAYOUTS[(op, n)]


def test_too_small_for_chunked_op_is_count_zero() -> None:
    assert TABLE["all_gather"].layout(8, 3, 4).count == 0  # 2 elements do not split 3 ways
    assert TABLE["all_reduce"].layout(8, 3, 4).count == 2


def test_all_eleven_ops_and_min_ranks() -> None:
    assert set(TABLE) == {
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "alltoall",
        "sendrecv",
        "gather",
        "scatter",
        "alltoallv",
        "hypercube",
    }
    assert TABLE["sendrecv"].min_ranks == 2
    assert all(c.min_ranks == 1 for name, c in TABLE.items() if name != "sendrecv")


def test_fills_are_small_integers_and_expected_values_by_hand() -> None:
    # rank r, element i: (i + 3r) % 7 + 1
    assert list(fill(0, 0, 4)) == [1, 2, 3, 4]
    assert list(fill(1, 0, 4)) == [4, 5, 6, 7]
    # all_reduce on 2 ranks, 4 elements: [1+4, 2+5, 3+6, 4+7]
    assert list(TABLE["all_reduce"].expected(4, 2, 0, 0)) == [5, 7, 9, 11]
    # reduce_scatter of 4 elements on 2 ranks: rank 1 gets elements 2..3 summed
    assert list(TABLE["reduce_scatter"].expected(4, 2, 1, 0)) == [9, 11]
    # all_gather of count 4 on 2 ranks: [rank0 chunk, rank1 chunk]
    assert list(TABLE["all_gather"].expected(4, 2, 0, 0)) == [1, 2, 4, 5]
    # sendrecv: rank 0 receives from rank n-1
    assert list(TABLE["sendrecv"].expected(2, 3, 0, 0)) == list(fill(2, 0, 2)) == [7, 1]
    # reduce: only the root's buffer is defined
    assert TABLE["reduce"].expected(4, 2, 1, 0) is None


def test_alltoall_routes_chunks() -> None:
    n, count = 3, 6
    sends = [TABLE["alltoall"].send_values(count, n, r, 0) for r in range(n)]
    for r in range(n):  # rank r receives chunk r of every sender, in sender order
        want = np.concatenate([sends[j][2 * r : 2 * r + 2] for j in range(n)])
        assert list(TABLE["alltoall"].expected(count, n, r, 0)) == list(want)


def test_count_wrong() -> None:
    want = np.array([1.0, 2.0, 3.0])
    assert count_wrong(np.array([1.0, 2.0, 3.0]), want) == 0
    assert count_wrong(np.array([1.0, 0.0, 0.0]), want) == 2
    assert count_wrong(np.array([1.0]), want) == 3
    assert count_wrong(np.array([9.0]), None) == 0
