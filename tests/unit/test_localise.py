"""Localisation from pair, intra-node and per-host storage results (pure logic, synthetic data)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace

import pytest

from reports.evidence import pairs as ev_pairs
from reports.evidence import rails as ev_rails
from reports.judging.network import localise as judging
from reports.shared.outliers import (
    PairValues,
    confirmation_pairs,
    low_threshold,
    node_scores,
    rounds,
    slow_links,
    slow_nodes,
)
from reports.shared.records import IoRecord, NetRecord
from reports.table.read import NetTable


def pair_values(recs: list[NetRecord]) -> PairValues:
    return ev_pairs.pair_values(NetTable.of(recs).frame)


def pair_matrix(recs: list[NetRecord]) -> tuple[list[str], list[list[float | None]]]:
    hosts, m = ev_pairs.pair_matrix(pair_values(recs))
    return hosts, [[None if x != x else x for x in row] for row in m.tolist()]  # NaN != NaN: unmeasured


def localise(recs: list[NetRecord], io: list[IoRecord], expected_pair_GBps: float | None = None) -> list:
    """The judgement's localisation of these records, through their evidence as the report builds it."""
    frame = NetTable.of(recs).frame
    return judging.localise(ev_rails.pair_evidence(frame), frame, io, expected_pair_GBps)


F = 10.0  # a healthy pair's busbw, GB/s


def rec(
    hosts: tuple[str, ...],
    busbw: float,
    scope: str = "pair",
    op: str = "all_reduce",
    size: int = 64 << 20,
    pass_: int = 1,
) -> NetRecord:
    return NetRecord(
        run_id="r",
        ts="t",
        hosts=hosts,
        nodes=len(set(hosts)),
        op=op,
        scope=scope,
        ranks=2,
        backend="gloo",
        dtype="float32",
        bytes=size,
        time_s=1.0,
        algbw_GBps=busbw,
        busbw_GBps=busbw,
        wrong=0,
        extra={"pass": pass_} if scope == "pair" else {},
    )


def model(
    n: int,
    node_rate: Mapping[int, float] | None = None,
    link_rate: Mapping[tuple[int, int], float] | None = None,
    noise: float = 0.0,
    seed: int = 0,
) -> list[NetRecord]:
    """A round-robin pass over a synthetic cluster: pair busbw = the slowest of both NICs and
    the path between them, times ±noise."""
    rng = random.Random(seed)
    rate = {i: F for i in range(n)} | dict(node_rate or {})
    out = []
    for a in range(n):
        for b in range(a + 1, n):
            v = min(rate[a], rate[b], (link_rate or {}).get((a, b), F))
            out.append(rec((f"n{a}", f"n{b}"), v * (1 + rng.uniform(-noise, noise))))
    return out


def kinds(findings: list) -> list[tuple[str, tuple[str, ...]]]:
    return [(f.component, f.hosts) for f in findings]


def test_low_threshold_by_hand() -> None:
    # MAD 0: the minimum gap decides, 10 × (1 − 0.25).
    assert low_threshold([10, 10, 10, 2]) == (10, 7.5)
    # deviations 0,1,1,0,2 → MAD 1 → 3 × 1.4826 = 4.4478 beats the 2.5 gap.
    med, thr = low_threshold([10, 11, 9, 10, 12])
    assert med == 10 and thr == pytest.approx(10 - 4.4478)


def test_one_slow_node_of_four_is_named_alone() -> None:
    found = localise(model(4, node_rate={2: F / 4}, noise=0.1), [])
    assert kinds(found) == [("node", ("n2",))]
    f = found[0]
    assert f.status == "below_spec" and f.measured == pytest.approx(F / 4, rel=0.11)
    assert "n2" in f.message and f.message.count(". ") == 0


@pytest.mark.parametrize("n", [3, 4, 8, 16])
def test_slow_node_named_at_every_size(n: int) -> None:
    assert kinds(localise(model(n, node_rate={n - 1: F / 2}, noise=0.05), [])) == [("node", (f"n{n - 1}",))]


def test_healthy_fleet_gives_nothing_over_many_noisy_runs() -> None:
    for seed in range(200):
        assert localise(model(4, noise=0.1, seed=seed), []) == [], seed


def test_one_slow_link_is_a_link_not_two_nodes() -> None:
    for n in (3, 4, 8):
        found = localise(model(n, link_rate={(0, 1): F / 4}, noise=0.05), [])
        assert kinds(found) == [("link", ("n0", "n1"))], n
        assert found[0].expected == pytest.approx(F, rel=0.06)


def test_slow_node_and_separate_slow_link() -> None:
    found = localise(model(6, node_rate={5: F / 3}, link_rate={(0, 1): F / 4}), [])
    assert kinds(found) == [("node", ("n5",)), ("link", ("n0", "n1"))]


def test_two_nodes_judged_only_against_the_expected_figure() -> None:
    slow = model(2, node_rate={1: F / 2})
    assert localise(slow, []) == []
    (f,) = localise(slow, [], expected_pair_GBps=F)
    assert (f.component, f.check, f.hosts, f.expected) == ("link", "pair busbw", ("n0", "n1"), F)
    assert localise(model(2), [], expected_pair_GBps=F) == []


def test_fewer_than_two_nodes_gives_nothing() -> None:
    assert localise([], []) == []
    assert localise([rec(("n0", "n0"), 1.0)], [], expected_pair_GBps=F) == []


def test_half_the_fleet_slow_needs_the_expected_figure() -> None:
    recs = model(4, node_rate={2: F / 4, 3: F / 4})
    assert localise(recs, []) == []  # two fast, two slow: which half is wrong?
    assert kinds(localise(recs, [], expected_pair_GBps=F)) == [("node", ("n2",)), ("node", ("n3",))]
    # Everything below the figure is a fleet-wide network problem, not a node.
    assert localise(model(4, node_rate={i: F / 4 for i in range(4)}), [], expected_pair_GBps=F) == []


def test_second_pass_clears_a_noisy_first_pass_and_confirms_a_real_one() -> None:
    noisy = model(4, node_rate={3: 0.6 * F}) + [rec(("n3", "n0"), F, pass_=2)]
    assert localise(noisy, []) == []
    real = model(4, node_rate={3: F / 4}) + [
        rec(("n3", "n0"), F / 4, pass_=2),
        rec(("n1", "n3"), F / 4, pass_=2),
    ]
    (f,) = localise(real, [])
    assert f.hosts == ("n3",) and f.extra["confirmed_with"] == ["n0", "n1"]
    assert "confirmed with n0, n1" in f.message


def test_pair_matrix_largest_size_preferred_op_best_pass() -> None:
    recs = [
        rec(("b", "a"), 4.0),
        rec(("a", "b"), 5.0, pass_=2),
        rec(("a", "c"), 1.0, size=1 << 20),
        rec(("a", "c"), 3.0),
        rec(("b", "c"), 9.0, op="alltoall"),
        rec(("a",), 7.0, scope="intra-node"),
    ]
    hosts, m = pair_matrix(recs)
    assert hosts == ["a", "b", "c"]
    assert m == [[None, 5.0, 3.0], [5.0, None, None], [3.0, None, None]]
    assert pair_values([rec(("b", "c"), 9.0, op="alltoall")]) == {("b", "c"): 9.0}


def test_intra_node_outlier() -> None:
    recs = [rec((f"n{i}",), v, scope="intra-node") for i, v in enumerate([100, 98, 45, 102])]
    recs.append(rec(("n2",), 300, scope="intra-node", size=1 << 20))  # a smaller size does not count
    found = localise(recs, [])
    assert kinds(found) == [("node", ("n2",))] and found[0].expected == 99
    assert localise(recs[:2], []) == []  # two hosts cannot be told apart


def test_intra_node_fleet_is_of_one_identity() -> None:
    # 4 nodes swept with nccl over 8 ranks (~360 GB/s), 3 with gloo over 2 ranks (~5 GB/s): two
    # fleets, medians 361 and 5.2 by hand, and no node of one is an outlier of the other. One
    # fleet of 7 (median 355) would name the 3 gloo nodes.
    nccl = [
        replace(rec((f"g{i}",), v, scope="intra-node"), backend="nccl", ranks=8)
        for i, v in enumerate([360, 355, 365, 362])
    ]
    gloo = [rec((f"c{i}",), v, scope="intra-node") for i, v in enumerate([5.0, 5.2, 6.0])]
    assert localise(nccl + gloo, []) == []
    # within its own fleet a slow node is still found: g1 at 150 against the median of 360, 362, 365
    slow = [replace(r, busbw_GBps=150.0, algbw_GBps=150.0) if r.hosts == ("g1",) else r for r in nccl]
    found = localise(slow + gloo, [])
    assert kinds(found) == [("node", ("g1",))] and found[0].expected == 361
    # the gloo fleet is judged alone too: c2 at 1.0 against the median of 5.0, 5.2, 1.0 -> 5.0
    found = localise(nccl + gloo[:2] + [rec(("c2",), 1.0, scope="intra-node")], [])
    assert kinds(found) == [("node", ("c2",))] and found[0].expected == 5.0


def io(per_host: dict[str, float], failed: str = "") -> IoRecord:
    return IoRecord(
        run_id="r",
        ts="t",
        hosts=tuple(per_host),
        nodes=len(per_host),
        workload="checkpoint_write",
        direction="write",
        path="/data",
        scope="shared",
        procs=len(per_host),
        bytes=1,
        bw_GBps=sum(per_host.values()),
        per_host_bw_GBps=per_host,
        iops=0.0,
        lat_ms={},
        failed=failed,
    )


def test_storage_outlier_per_host() -> None:
    (f,) = localise([], [io({"a": 3.0, "b": 3.1, "c": 1.0, "d": 2.9})])
    assert (f.component, f.hosts, f.measured, f.expected) == ("node", ("c",), 1.0, pytest.approx(2.95))
    assert "/data" in f.message
    assert localise([], [io({"a": 3.0, "b": 3.0, "c": 1.0}, failed="disk full")]) == []
    assert localise([], [io({"a": 3.0, "b": 1.0})]) == []


def values(recs: list[NetRecord]) -> dict[tuple[str, str], float]:
    return {tuple(r.hosts): r.busbw_GBps for r in recs}  # type: ignore[misc]


def test_confirmation_pairs_for_a_suspect_node() -> None:
    pairs = values(model(5, node_rate={4: F / 4, 0: 0.95 * F}))
    # Good nodes, fastest first: n1, n2, n3 (10) then n0 (9.5); the suspect meets the first two.
    assert confirmation_pairs(pairs) == [("n1", "n4"), ("n2", "n4")]


def test_confirmation_pairs_for_a_suspect_link_and_nothing_when_healthy() -> None:
    pairs = values(model(4, link_rate={(0, 1): F / 3}))
    assert confirmation_pairs(pairs) == [("n0", "n1"), ("n0", "n2"), ("n1", "n3")]
    assert confirmation_pairs(values(model(4, noise=0.05))) == []
    assert confirmation_pairs({("a", "b"): 1.0}) == []


def test_confirmation_catches_borderline_nodes_the_verdict_would_not() -> None:
    pairs = values(model(4, node_rate={3: 0.8 * F}))
    assert slow_nodes(pairs) == {} and confirmation_pairs(pairs) == [("n0", "n3"), ("n1", "n3")]


def test_rounds_never_put_a_host_in_two_pairs() -> None:
    rs = rounds([("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("d", "e")])
    assert rs == [[("a", "b"), ("c", "d")], [("a", "c"), ("d", "e")], [("b", "c")]]


def test_scores_and_links_helpers() -> None:
    pairs = {
        ("a", "b"): 2.0,
        ("a", "c"): 10.0,
        ("b", "c"): 10.0,
        ("a", "d"): 10.0,
        ("b", "d"): 10.0,
        ("c", "d"): 10.0,
    }
    assert node_scores(pairs) == {"a": 10.0, "b": 10.0, "c": 10.0, "d": 10.0}
    assert slow_links(pairs) == {("a", "b"): 10.0}


def test_second_pass_confirms_or_clears_a_slow_link() -> None:
    first = model(4, link_rate={(0, 1): F / 3})
    again = [rec(("n0", "n1"), F / 3, pass_=2), rec(("n0", "n2"), F, pass_=2), rec(("n1", "n3"), F, pass_=2)]
    assert kinds(localise(first + again, [])) == [("link", ("n0", "n1"))]
    cleared = [rec(("n0", "n1"), F, pass_=2), rec(("n0", "n2"), F, pass_=2), rec(("n1", "n3"), F, pass_=2)]
    assert localise(first + cleared, []) == []


def test_expected_figure_does_not_split_a_fleet_at_its_edge() -> None:
    # Nodes at 0.76 and 0.74 of the figure: jitter around the line, not a culprit.
    edge = model(4, node_rate={0: 7.6, 1: 7.6, 2: 7.4, 3: 7.4})
    assert slow_nodes(values(edge), expected=F) == {}
    assert slow_nodes(values(model(4, node_rate={2: 2.0, 3: 2.0})), expected=F) == {
        "n2": (F, "spec"),
        "n3": (F, "spec"),
    }
