"""Size list, statistics, topology grouping, the pairs schedule and launcher detection."""

from __future__ import annotations

import itertools
import math

import pytest

from netbench.launch_env import detect, require_rendezvous
from netbench.sweep import iter_stats, mean_across_ranks, percentile, sizes, slowest
from netbench.topology import (
    Topology,
    host_groups,
    host_pairs_rounds,
    my_host,
    parse_pairs,
    round_robin,
    scope_groups,
)
from reports.shared.errors import UsageError


def test_sizes_like_nccl_tests() -> None:
    assert sizes(8, 128, 2) == [8, 16, 32, 64, 128]
    assert sizes(8, 100, 2) == [8, 16, 32, 64]
    assert sizes(1024, 1024, 2) == [1024]
    assert sizes(1, 1000, 10) == [1, 10, 100, 1000]


@pytest.mark.parametrize(("lo", "hi", "f"), [(64, 8, 2), (0, 8, 2), (8, 64, 1)])
def test_sizes_bad(lo: int, hi: int, f: float) -> None:
    with pytest.raises(UsageError):
        sizes(lo, hi, f)


def test_stats_by_hand() -> None:
    s = iter_stats([1.0, 2.0, 3.0, 4.0])
    assert (s.mean, s.min, s.p50, s.p99) == (2.5, 1.0, 2.0, 4.0)
    assert s.cv == pytest.approx(math.sqrt(1.25) / 2.5)
    assert percentile(list(range(1, 101)), 99) == 99
    assert mean_across_ranks([1.0, 3.0]) == 2.0
    assert slowest([iter_stats([1.0]), iter_stats([5.0]), iter_stats([2.0])]).mean == 5.0


def _ranks(rounds: list) -> list:
    return [[g.ranks for g in groups] for groups in rounds]


def test_topology_two_nodes_of_two() -> None:
    t = Topology(hosts=("h0", "h0", "h1", "h1"))
    assert t.nodes == ("h0", "h1") and t.leaders() == [0, 2]
    assert _ranks(scope_groups(t, "world")[0]) == [[(0, 1, 2, 3)]]
    intra = scope_groups(t, "intra-node")[0][0]
    assert [(g.index, g.ranks, g.hosts) for g in intra] == [(0, (0, 1), ("h0",)), (1, (2, 3), ("h1",))]
    inter = scope_groups(t, "inter-node")[0][0]  # rails: local rank j of every node
    assert [(g.ranks, g.hosts) for g in inter] == [((0, 2), ("h0", "h1")), ((1, 3), ("h0", "h1"))]
    assert _ranks(scope_groups(t, "pairs")[0]) == [[(0, 2), (1, 3)]]  # both rails at once


def test_topology_interleaved_hosts_and_skips() -> None:
    t = Topology(hosts=("a", "b", "a", "b"))
    assert [g.ranks for g in scope_groups(t, "intra-node")[0][0]] == [(0, 2), (1, 3)]
    one = Topology(hosts=("a", "a"))
    assert scope_groups(one, "inter-node") == ([], "one node (a)")
    assert scope_groups(one, "pairs")[0] == []
    assert scope_groups(Topology(hosts=("a", "b")), "intra-node") == ([], "every node has one rank")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_round_robin_every_pair_once(n: int) -> None:
    rounds = round_robin(n)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    flat = [p for r in rounds for p in r]
    assert sorted(flat) == list(itertools.combinations(range(n), 2))
    for r in rounds:  # a node is in at most one pair of a round
        members = [x for p in r for x in p]
        assert len(members) == len(set(members)) == 2 * (n // 2)
    if n % 2:  # each node sits out exactly once
        out = [set(range(n)) - {x for p in r for x in p} for r in rounds]
        assert sorted(x for s in out for x in s) == list(range(n))


def test_pairs_run_every_rail_of_a_pair_in_its_round() -> None:
    # a: ranks 0,1; b: 2,3; c: 4,5; d: 6,7. Rounds (a,d)(b,c), (a,c)(b,d), (a,b)(c,d), each
    # pair on rail 0 (local rank 0 of both) and rail 1 (local rank 1 of both)
    t = Topology(hosts=("a", "a", "b", "b", "c", "c", "d", "d"))
    rounds = scope_groups(t, "pairs")[0]
    assert [[(g.ranks, g.round, g.rail) for g in r] for r in rounds] == [
        [((0, 6), 0, 0), ((1, 7), 0, 1), ((2, 4), 0, 0), ((3, 5), 0, 1)],
        [((0, 4), 1, 0), ((1, 5), 1, 1), ((2, 6), 1, 0), ((3, 7), 1, 1)],
        [((0, 2), 2, 0), ((1, 3), 2, 1), ((4, 6), 2, 0), ((5, 7), 2, 1)],
    ]


def test_explicit_pairs() -> None:
    t = Topology(hosts=("a", "b", "c", "d"))
    assert parse_pairs("a:b,c:d") == [("a", "b"), ("c", "d")]
    assert host_pairs_rounds(t, [("a", "b"), ("c", "d"), ("a", "c")]) == [[(0, 1), (2, 3)], [(0, 2)]]
    for bad in ("a", "a:b:c", ":b"):
        with pytest.raises(UsageError):
            parse_pairs(bad)
    with pytest.raises(UsageError, match="runs no rank"):
        host_pairs_rounds(t, [("a", "zz")])


def test_my_host() -> None:
    assert my_host(1, "h0,h1") == "h1"
    assert my_host(0, None, {"STOKER_HOSTS_MAP": "x,y"}) == "x"
    assert my_host(0, None, {"STOKER_HOSTNAME": "n7"}) == "n7"
    with pytest.raises(UsageError):
        my_host(2, "h0,h1")


def test_launch_env() -> None:
    t = detect(
        {"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "n0", "MASTER_PORT": "29500"}
    )
    assert (t.launcher, t.rank, t.world, t.local_rank, t.master_addr, t.master_port) == (
        "torchrun",
        1,
        4,
        1,
        "n0",
        29500,
    )
    s = detect({"SLURM_STEP_ID": "0", "SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"})
    assert (s.launcher, s.rank, s.world, s.local_rank) == ("srun", 5, 8, 1)
    assert detect({"SLURM_PROCID": "0", "SLURM_NTASKS": "8"}).launcher == "none"  # batch script, no step
    assert (
        detect({"SLURM_STEP_ID": str(0xFFFFFFFE), "SLURM_PROCID": "0", "SLURM_NTASKS": "8"}).launcher
        == "none"
    )
    o = detect({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
    assert (o.launcher, o.rank, o.world, o.local_rank) == ("mpirun", 3, 4, 1)
    p = detect({"PMI_RANK": "2", "PMI_SIZE": "3"})
    assert (p.launcher, p.rank, p.world) == ("mpirun", 2, 3)
    assert detect({}).launcher == "none"
    with pytest.raises(UsageError, match="export MASTER_ADDR"):
        require_rendezvous(s)


def test_backend_not_installed_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import netbench.backends as backends

    monkeypatch.setattr(backends, "_installed", lambda module: False)
    with pytest.raises(UsageError, match="pip install mpi4py"):
        backends.check_installed("mpi")
    with pytest.raises(UsageError, match="pip install torch"):
        backends.check_installed("gloo")
    with pytest.raises(UsageError, match="choose from auto, nccl, gloo, mpi"):
        backends.check_installed("tcp")


def test_groups_scope_maps_host_groups_to_each_rail() -> None:
    # 5 nodes of 2 ranks, hosts interleaved: a 0,2; b 1,4; d 3,7; e 5,9; c 6,8
    t = Topology(hosts=("a", "b", "a", "d", "b", "e", "c", "d", "c", "e"))
    assert scope_groups(t, "groups") == ([], "")  # rounds are chosen as the search runs
    gs = host_groups(t, [("a", "b"), ("d", "c", "e")], rnd=3)
    assert [(g.index, g.ranks, g.hosts, g.round, g.rail) for g in gs] == [
        (0, (0, 1), ("a", "b"), 3, 0),
        (1, (2, 4), ("a", "b"), 3, 1),
        (2, (3, 5, 6), ("d", "e", "c"), 3, 0),
        (3, (7, 8, 9), ("d", "c", "e"), 3, 1),
    ]
    assert scope_groups(Topology(hosts=("a", "b", "c")), "groups") == (
        [],
        "3 nodes: the search needs 4, use --scopes pairs",
    )
