"""gather, scatter and alltoallv as table entries, against nccl-tests' byte counts worked out by
hand from src/gather.cu, scatter.cu and alltoallv.cu (2.19.6), and their expected buffers
against a routing of every rank's send buffer done here in numpy (not through the table)."""

from __future__ import annotations

import numpy as np
import pytest

from netbench import alltoallv
from netbench.collectives import TABLE, fill
from reports.ingest.nccl_records import op_from_name


def test_alltoallv_pattern_by_hand() -> None:
    # 8 ranks, 1024 B of float32: paramcount (256 / 8) & ~3 = 32, total 32 x 8 x 4 = 1024 B;
    # rank 0 -> rank j: j x 1024 / 28 aligned down to 16 B: 32, 64, 96, 144, 176, 208, 256 B
    m = alltoallv.matrix(256, 8, 4)
    assert [b * 4 for b in m[0]] == [0, 32, 64, 96, 144, 176, 208, 256]
    assert m[0][0] == 0 and m[1][0] == 256 // 4  # nothing to itself; most to the rank before
    lay = TABLE["alltoallv"].layout(1024, 8, 4)
    assert TABLE["alltoallv"].size_bytes(lay, 4) == 976  # the sum: every rank sends (and receives) it
    assert all(sum(row) == 244 for row in m) and all(sum(col) == 244 for col in zip(*m))
    # float64 aligns per-peer counts to 2 elements (16 B); one rank sends itself everything
    assert alltoallv.param_count(255, 8, 8) == 30 and alltoallv.matrix(64, 1, 4) == ((64,),)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_alltoallv_expected_is_what_the_routing_delivers(n: int) -> None:
    coll = TABLE["alltoallv"]
    lay = coll.layout(4096, n, 4)
    m = lay.splits
    assert m is not None
    sends = [coll.values(lay, n, r, 0) for r in range(n)]
    for me in range(n):
        # route by hand: rank src's stream is cut into consecutive pieces, piece j to rank j
        got = []
        for src in range(n):
            start = sum(m[src][:me])
            got.append(sends[src][start : start + m[src][me]])
        np.testing.assert_array_equal(np.concatenate(got), coll.want(lay, n, me, 0))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_gather_and_scatter_by_hand(n: int) -> None:
    g, s = TABLE["gather"], TABLE["scatter"]
    lay = g.layout(1000, n, 4)  # 250 floats rounded down to n chunks, as all_gather
    c = lay.count // n
    assert (lay.send, lay.recv) == (c, lay.count) and g.size_bytes(lay, 4) == 4 * c * n
    root = 0
    want = np.concatenate([g.values(lay, n, r, root) for r in range(n)])
    np.testing.assert_array_equal(g.want(lay, n, root, root), want)
    assert g.want(lay, n, 1, root) is None  # nothing defined off the root
    sl = s.layout(1000, n, 4)
    assert (sl.send, sl.recv) == (sl.count, sl.count // n)
    buf = s.values(sl, n, root, root)
    for r in range(n):
        np.testing.assert_array_equal(s.want(sl, n, r, root), buf[r * c : (r + 1) * c])
    np.testing.assert_array_equal(buf, fill(root, 0, sl.count))


def test_importer_names_the_new_tests() -> None:
    assert op_from_name("/opt/nccl-tests/build/gather_perf") == "gather"
    assert op_from_name("scatter_perf_mpi") == "scatter"
    assert op_from_name("alltoallv_perf") == "alltoallv"
    assert op_from_name("alltoall_perf") == "alltoall"
    assert op_from_name("reduce_scatter_perf") == "reduce_scatter"
    assert op_from_name("all_gather_perf") == "all_gather"
    assert op_from_name("AlltoAllv") == "alltoallv" and op_from_name("Gather") == "gather"
