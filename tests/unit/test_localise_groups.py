"""The pair tournament, the grouping search (simulated on a synthetic cluster) and the estimate."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
from collections.abc import Mapping

import pytest

from netbench.topology import round_robin
from reports.evidence import groups as ev_groups
from reports.judging.network import groups as judging
from reports.shared.group_search import (
    Group,
    SearchResult,
    Sizes,
    estimate,
    group_search,
    round_robin_rounds,
    round_seconds,
)
from reports.shared.records import NetRecord
from reports.table.read import NetTable


def replay(recs: list[NetRecord]) -> SearchResult | None:
    return ev_groups.replay(NetTable.of(recs))


def group_findings(recs: list[NetRecord]) -> list:
    """The judgement's findings of the search replayed on these records, as the report gets them."""
    return judging.group_findings(replay(recs))


F = 10.0


@pytest.mark.parametrize("n", range(2, 10))
def test_round_robin_rounds_match_the_netbench_schedule(n: int) -> None:
    sched = round_robin(n)
    assert round_robin_rounds(n) == len(sched) == (n - 1 if n % 2 == 0 else n)
    met = sorted(p for rnd in sched for p in rnd)
    assert met == list(itertools.combinations(range(n), 2))


class Cluster:
    """Synthetic cluster: a ring all-reduce over a group runs at its slowest hop, a hop at the
    slower of its two NICs (± noise). Records how many nodes each round used."""

    def __init__(self, n: int, rates: Mapping[int, float], noise: float = 0.05, seed: int = 0) -> None:
        self.rate = {f"h{i}": rates.get(i, F) for i in range(n)}
        self.hosts = list(self.rate)
        self.rng = random.Random(seed)
        self.noise = noise

    def measure(self, groups: list[Group]) -> list[float]:
        seen = [h for g in groups for h in g]
        assert len(seen) == len(set(seen)), "a node in two groups of one round"
        assert all(len(g) >= 2 for g in groups)
        return [
            min(self.rate[h] for h in g) * (1 + self.rng.uniform(-self.noise, self.noise)) for g in groups
        ]


@pytest.mark.parametrize("n", [4, 8, 9, 64, 100, 1024])
def test_grouping_finds_one_bad_node_in_log_rounds(n: int) -> None:
    for bad in sorted({0, n // 3, n - 1}):
        c = Cluster(n, {bad: F / 4}, seed=bad)
        res = group_search(c.hosts, c.measure)
        assert res.culprits == [f"h{bad}"], (n, bad)
        assert res.rounds <= math.ceil(math.log2(n)) + 1 < n - 1 or n <= 4
        assert len(res.cleared) == n - 1


def test_grouping_two_bad_nodes_and_healthy_fleets() -> None:
    c = Cluster(64, {5: F / 3, 40: F / 2}, seed=1)
    assert group_search(c.hosts, c.measure).culprits == ["h40", "h5"]
    for seed in range(20):
        healthy = Cluster(64, {}, noise=0.1, seed=seed)
        res = group_search(healthy.hosts, healthy.measure)
        assert res.culprits == [] and res.rounds == 1
    slow_everywhere = Cluster(16, {i: F / 4 for i in range(16)})
    assert group_search(slow_everywhere.hosts, slow_everywhere.measure).culprits == []
    # ... which the expected figure turns into "every group is slow, and nothing is cleared".
    assert group_search(slow_everywhere.hosts, slow_everywhere.measure, expected=F).culprits == []
    assert group_search(["a", "b", "c"], Cluster(3, {}).measure).rounds == 0


def test_round_seconds_and_estimate_by_hand() -> None:
    s = Sizes(bytes=1_000_000_000, iters=8, warmup=2, busbw_GBps=10.0, round_setup_s=1.0)
    assert round_seconds(2, s) == pytest.approx(1 + 10 * 0.1)  # factor 1 for a pair
    assert round_seconds(4, s) == pytest.approx(1 + 10 * 0.1 * 1.5)  # 2(4−1)/4
    e = estimate(1024, s)
    assert e["round_robin_rounds"] == 1023 and e["round_robin_min"] == pytest.approx(1023 * 2 / 60)
    # 4 groups of 256, halvings to 2 (7 rounds), one pairing round = 9 rounds.
    assert e["group_rounds"] == 9
    sizes = [256, 128, 64, 32, 16, 8, 4, 2, 2]
    assert e["group_min"] == pytest.approx(sum(1 + 2 * (g - 1) / g for g in sizes) / 60)
    assert [estimate(n)["group_rounds"] for n in (8, 64, 512)] == [2, 5, 8]


class LinkCluster(Cluster):
    """Cluster plus slow paths: a group runs at its slowest member or slowest path inside it."""

    def __init__(self, n: int, rates: Mapping[int, float], links: Mapping[tuple[int, int], float]) -> None:
        super().__init__(n, rates, noise=0.0)
        self.links = {frozenset((f"h{a}", f"h{b}")): v for (a, b), v in links.items()}

    def measure(self, groups: list[Group]) -> list[float]:
        base = super().measure(groups)
        return [min([v, *(x for k, x in self.links.items() if k <= set(g))]) for g, v in zip(groups, base)]


def test_a_slow_link_in_a_pair_group_is_a_link_not_a_node() -> None:
    # 8 nodes: round 1 is 4 groups of 2; (h2, h3) slow, both fast with cleared partners
    c = LinkCluster(8, {}, {(2, 3): F / 4})
    res = group_search(c.hosts, c.measure)
    assert res.culprits == [] and res.links == [("h2", "h3")] and res.rounds == 2
    assert res.value(("h3", "h2")) == F / 4 and res.reference == F


def test_a_slow_link_in_a_trio_is_found_among_its_three_pairs() -> None:
    # 12 nodes: 4 groups of 3 (h0-2, h3-5, h6-8, h9-11); the path h6-h8 is slow. Rounds: the
    # groups, one pairing of the trio's members with cleared nodes, then its 3 pairs one by one.
    c = LinkCluster(12, {}, {(6, 8): F / 4})
    res = group_search(c.hosts, c.measure)
    assert res.culprits == [] and res.links == [("h6", "h8")] and res.rounds == 1 + 1 + 3


def localise_records(res_history: list[list[tuple[Group, float]]]) -> list[NetRecord]:
    return [
        NetRecord(
            run_id="r",
            ts="t",
            hosts=g,
            nodes=len(g),
            op="all_reduce",
            scope="groups",
            ranks=len(g),
            backend="gloo",
            dtype="float32",
            bytes=1 << 22,
            time_s=1.0,
            algbw_GBps=v,
            busbw_GBps=v,
            wrong=0,
            group=i,
            extra={"round": k},
        )
        for k, rnd in enumerate(res_history)
        for i, (g, v) in enumerate(rnd)
    ]


def test_group_findings_replay_the_recorded_search() -> None:
    c = Cluster(8, {5: F / 4}, noise=0.0)
    run = group_search(c.hosts, c.measure)
    found = group_findings(localise_records(run.history))
    assert [(f.component, f.hosts) for f in found] == [("node", ("h5",))]
    # its pairing round put h5 with a cleared node: measured at h5's speed, against the best group
    assert found[0].measured == F / 4 and found[0].expected == F and found[0].extra["rounds"] == 2
    lc = LinkCluster(8, {}, {(2, 3): F / 4})
    found = group_findings(localise_records(group_search(lc.hosts, lc.measure).history))
    assert [(f.component, f.hosts, f.measured) for f in found] == [("link", ("h2", "h3"), F / 4)]
    # two runs in one directory: the last one's search is judged (here, the slow-link run)
    again = [
        dataclasses.replace(r, run_id="r2")
        for r in localise_records(group_search(lc.hosts, lc.measure).history)
    ]
    assert [f.hosts for f in group_findings(localise_records(run.history) + again)] == [("h2", "h3")]
    # a run cut short (the pairing round missing) is not judged on half a search
    assert replay(localise_records(run.history[:1])) is None and group_findings([]) == []
