"""reports/shared/ops.py against factors worked out by hand from nccl-tests doc/PERFORMANCE.md and the
`*GetBw` functions of src/<op>.cu, and the inverse against the forward function."""

from __future__ import annotations

import pytest

from netbench.collectives import OP_NAMES, TABLE
from reports.ingest import nccl_tests
from reports.judging.workload import model
from reports.shared import ops

# op -> {n: busbw / algbw}, by hand: all_reduce 2(n-1)/n; ring ops (n-1)/n; rooted and p2p 1
HAND = {
    "all_reduce": {1: 0.0, 2: 1.0, 4: 1.5, 8: 1.75, 16: 1.875},
    "all_gather": {1: 0.0, 2: 0.5, 4: 0.75, 8: 0.875, 16: 0.9375},
    "reduce_scatter": {1: 0.0, 2: 0.5, 4: 0.75, 8: 0.875, 16: 0.9375},
    "alltoall": {1: 0.0, 2: 0.5, 4: 0.75, 8: 0.875, 16: 0.9375},
    "broadcast": {1: 1.0, 2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0},
    "reduce": {1: 1.0, 2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0},
    "sendrecv": {1: 1.0, 2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0},
    "gather": {1: 0.0, 2: 0.5, 4: 0.75, 8: 0.875, 16: 0.9375},  # GatherGetBw: (n-1)/n
    "scatter": {1: 0.0, 2: 0.5, 4: 0.75, 8: 0.875, 16: 0.9375},  # ScatterGetBw
    "alltoallv": {1: 0.0, 2: 0.5, 4: 0.75, 8: 0.875, 16: 0.9375},  # AlltoAllvGetBw
    # HyperCubeGetBw: busbw = algbw x 1 (its algbw is (n-1)/n of size / time: ops.algbw_share)
    "hypercube": {1: 1.0, 2: 1.0, 4: 1.0, 8: 1.0, 16: 1.0},
}


def test_every_op_has_a_hand_factor_and_a_table_entry() -> None:
    assert set(HAND) == set(ops.OPS) == set(OP_NAMES)


@pytest.mark.parametrize("op", sorted(HAND))
def test_bus_factor_by_hand(op: str) -> None:
    for n, f in HAND[op].items():
        assert ops.bus_factor(op, n) == pytest.approx(f)
        assert TABLE[op].bus_factor(n) == pytest.approx(f)  # netbench reads the same module


@pytest.mark.parametrize(
    "op", ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "gather", "scatter", "alltoallv"]
)
@pytest.mark.parametrize("n", [2, 3, 4, 8, 16, 64, 1024])
def test_inverse_recovers_the_rank_count(op: str, n: int) -> None:
    algbw = 100.0
    assert ops.ranks_from_factor(op, algbw, algbw * ops.bus_factor(op, n)) == n


def test_inverse_cannot_tell_from_a_factor_of_one_or_a_degenerate_row() -> None:
    assert ops.ranks_from_factor("broadcast", 10.0, 10.0) == 0
    assert ops.ranks_from_factor("all_reduce", 0.01, 0.02) == 0  # f = 2: printed rounding
    assert ops.ranks_from_factor("all_gather", 0.0, 1.0) == 0
    assert ops.ranks_from_factor("not_an_op", 1.0, 0.5) == 0
    # the importer's inverse is this one (a printed log row: 23.14 / 43.39 -> 16 ranks)
    assert nccl_tests.ranks_from_factor("all_reduce", 23.14, 43.39) == 16


def test_model_times_a_collective_with_the_same_factor() -> None:
    # 8 ranks, all_reduce of 1 GB at 100 GB/s busbw: bus bytes 1e9 x 1.75, 17.5 ms by hand
    from reports.evidence.sweeps import Sweep

    curve = Sweep(
        scope="world",
        op="all_reduce",
        backend="nccl",
        ranks=8,
        nodes=1,
        groups=1,
        sizes=(10**9,),
        busbw=(100.0,),
    )
    bus, secs, _ = model._time(curve, "all_reduce", 8, 1e9, 1)
    assert bus == pytest.approx(1.75e9)
    assert secs == pytest.approx(0.0175)
