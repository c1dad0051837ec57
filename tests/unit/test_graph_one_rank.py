"""A one-rank group is not captured as a CUDA graph: NCCL's collectives on one rank launch
nothing in place (one copy out of place), so the capture could hold no work ("The CUDA Graph is
empty" from torch) and there is no link to time. The group is timed eagerly, its result says
graph: false and no capture error (netbench/harness.py graph_wanted)."""

from __future__ import annotations

from typing import Any

from netbench.harness import graph_wanted
from tests.unit.test_graph_timing import GraphBackend, measure_graph


class OneRank(GraphBackend):
    def group_size(self, comm: Any) -> int:
        return 1


def test_graph_wanted_only_for_two_ranks_or_more() -> None:
    assert graph_wanted(True, True, 2) and graph_wanted(True, True, 8)
    assert not graph_wanted(True, True, 1)  # one rank: nothing to capture
    assert not graph_wanted(True, False, 8)  # gloo, MPI: no graphs
    assert not graph_wanted(False, True, 8)  # --no-graph


def test_a_one_rank_group_is_timed_eagerly_without_a_capture() -> None:
    b = OneRank()
    r = measure_graph(b, iters=10, op="all_reduce", in_place=True)
    assert b.captured == [] and b.replays == 0  # capture never asked
    assert r.graph is False and r.graph_error == ""  # not a failed capture: nothing to say
    assert b.eager_calls >= 10  # the iters were run eagerly


def test_two_ranks_still_capture() -> None:
    b = GraphBackend()
    r = measure_graph(b, iters=10)
    assert b.captured == [10] and r.graph is True
