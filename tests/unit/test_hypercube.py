"""hypercube, the op nccl-tests builds as hypercube_perf (src/hypercube.cu): its bus factor and
algbw as nccl-tests computes them, an imported hypercube_perf table read (tests/data/nccl_tests/
v2.19_hypercube.log, hand-written in the real format), the collective table's entry (an
all_gather by pairwise exchange, power-of-two groups only) and its rounds checked on buffers."""

from __future__ import annotations

import numpy as np
import pytest

from netbench.collectives import TABLE
from reports.ingest.nccl_records import op_from_name
from reports.ingest.nccl_tests import parse_text
from reports.shared.ops import algbw_share, bus_factor, is_power_of_two
from tests.conftest import DATA


def test_bus_factor_and_algbw_share_follow_hypercube_getbw() -> None:
    # HyperCubeGetBw: baseBw = count x typesize x (nranks-1) / sec (count: one rank's share of
    # the size column), busBw = baseBw x 1
    assert [bus_factor("hypercube", n) for n in (1, 2, 8)] == [1.0, 1.0, 1.0]
    assert algbw_share("hypercube", 8) == pytest.approx(7 / 8)
    assert algbw_share("hypercube", 1) == 0.0  # one rank receives nothing
    assert algbw_share("hypercube", 0) is None  # ranks not known: nothing to check against
    assert algbw_share("all_gather", 8) == 1.0
    assert [n for n in range(1, 17) if is_power_of_two(n)] == [1, 2, 4, 8, 16]


def test_an_imported_hypercube_perf_table_is_read() -> None:
    assert (
        op_from_name("hypercube_perf")
        == op_from_name("/opt/nccl-tests/build/hypercube_perf_mpi")
        == "hypercube"
    )
    text = (DATA / "nccl_tests" / "v2.19_hypercube.log").read_text()
    p = parse_text(text, run_id="r", ts="t", source_name="v2.19_hypercube.log")
    assert p is not None and not p.notes, p and p.notes
    assert len(p.records) == 6 and {r.op for r in p.records} == {"hypercube"}
    big = next(r for r in p.records if r.bytes == 536870912 and not r.in_place)
    # 512 MiB x 3/4 in 5893.40 us = 68.32 GB/s, busbw the same
    assert (big.ranks, big.nodes, big.algbw_GBps, big.busbw_GBps) == (4, 1, 68.32, 68.32)
    assert big.redop == "none" and big.root == -1 and big.wrong == 0


def test_a_hypercube_row_whose_algbw_is_size_over_time_is_refused() -> None:
    """An algbw of size / time (not (n-1)/n of it) is not what hypercube prints: a damaged row."""
    text = (DATA / "nccl_tests" / "v2.19_hypercube.log").read_text()
    text = text.replace("   61.30   61.30", "   81.74   81.74", 1)  # 33554432 B / 410.52 us
    p = parse_text(text, run_id="r", ts="t", source_name="bad.log")
    assert p is not None and len(p.records) == 4  # the row, both its modes
    assert any("is not 0.75 x size / time" in n for n in p.notes), p.notes


def test_the_collective_table_runs_it_on_power_of_two_groups() -> None:
    h = TABLE["hypercube"]
    assert [n for n in range(1, 9) if h.runs_on(n)] == [1, 2, 4, 8]
    assert TABLE["all_gather"].runs_on(3) and not TABLE["sendrecv"].runs_on(1)
    lay = h.layout(1024, 4, 4)  # as all_gather: 64 elements each, the whole output 256
    assert (lay.count, lay.send, lay.recv) == (256, 64, 256)
    assert h.algbw_share(4) == pytest.approx(0.75) and TABLE["all_gather"].algbw_share(4) == 1.0


def hypercube_rounds(sends: list[np.ndarray]) -> list[np.ndarray]:
    """The exchange netbench's hypercube calls make (netbench/backends/torch_calls.py, mpi.py),
    played on numpy buffers: own chunk into place, then round `mask` swaps mask chunks with r^mask."""
    n, c = len(sends), len(sends[0])
    recv = [np.zeros(n * c) for _ in range(n)]
    for r in range(n):
        recv[r][r * c : (r + 1) * c] = sends[r]
    mask = 1
    while mask < n:
        before = [b.copy() for b in recv]
        for r in range(n):
            peer, s = r ^ mask, (r ^ mask) & ~(mask - 1)  # what the peer sends: from its own s
            recv[r][s * c : (s + mask) * c] = before[peer][s * c : (s + mask) * c]
        mask <<= 1
    return recv


@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_the_rounds_gather_every_chunk(n: int) -> None:
    h = TABLE["hypercube"]
    lay = h.layout(64 * n * 4, n, 4)
    got = hypercube_rounds([h.values(lay, n, r, 0) for r in range(n)])
    for r in range(n):
        want = h.want(lay, n, r, 0)
        assert want is not None and np.array_equal(got[r], want)
