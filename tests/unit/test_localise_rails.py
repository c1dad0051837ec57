"""Localisation rail by rail: pair rounds run every rail of a pair at once, pair records carry
`rail`, and the judgement names a slow NIC by host and rail, a slow node by host alone
(pure logic; synthetic records, expected values by hand)."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from netbench.topology import Topology, pair_rounds, round_robin, schedule_rounds, scope_groups
from reports.evidence.groups import recorded_rounds, replay
from reports.evidence.rails import pair_evidence, untested_note
from reports.judging.network import localise as judging
from reports.judging.network.groups import group_findings
from reports.shared.group_search import group_search
from reports.shared.outliers import rail_confirmation_pairs
from reports.shared.records import NetRecord, RecordWriter, from_dict, rail_of, to_dict
from reports.table.read import NetTable
from tests.conftest import STOKER

F = 10.0  # a healthy pair's busbw on one rail, GB/s
SLOW = F / 4
NODES = ("n0", "n1", "n2")


def rec(a: str, b: str, busbw: float, rail: int | None, scope: str = "pair", rnd: int = 0) -> NetRecord:
    extra: dict[str, object] = {"pass": 1} if scope == "pair" else {"round": rnd}
    if rail is not None:
        extra["rail"] = rail
    return NetRecord(
        run_id="r", ts="t", hosts=(a, b), nodes=2, op="all_reduce", scope=scope, ranks=2,
        backend="gloo", dtype="float32", time_s=1.0, algbw_GBps=busbw, busbw_GBps=busbw,
        bytes=64 << 20, wrong=0, extra=extra,
    )  # fmt: skip


def bed(slow: dict[tuple[str, int], float], rails: int = 2) -> list[NetRecord]:
    """3 nodes × `rails`: each pair on each rail runs at the slower of its two NICs."""
    out = []
    for i, a in enumerate(NODES):
        for b in NODES[i + 1 :]:
            for j in range(rails):
                out.append(rec(a, b, min(slow.get((a, j), F), slow.get((b, j), F)), j))
    return out


def findings(recs: list[NetRecord]) -> list[tuple[str, tuple[str, ...], int | None]]:
    pe = pair_evidence(NetTable.of(recs).frame)
    return [(f.component, f.hosts, f.extra.get("rail")) for f in judging.pair_findings(pe)]


# -- the schedule -------------------------------------------------------------------
def test_pair_round_runs_local_rank_j_with_local_rank_j_on_every_rail_at_once() -> None:
    # 3 nodes × 2 ranks: ranks 0,1 on n0; 2,3 on n1; 4,5 on n2. round_robin(3) by hand:
    # round 0 (n1, n2), round 1 (n0, n2), round 2 (n0, n1): 3 rounds, as with one rail
    t = Topology(hosts=("n0", "n0", "n1", "n1", "n2", "n2"))
    rounds = scope_groups(t, "pairs")[0]
    got = [[(g.ranks, g.rail, g.round) for g in r] for r in rounds]
    assert got == [
        [((2, 4), 0, 0), ((3, 5), 1, 0)],
        [((0, 4), 0, 1), ((1, 5), 1, 1)],
        [((0, 2), 0, 2), ((1, 3), 1, 2)],
    ]
    assert [g.index for r in rounds for g in r] == [0, 1, 2, 3, 4, 5]  # one record group each


def test_rounds_do_not_grow_with_rails() -> None:
    # the circle method: n - 1 rounds for even n, whatever the rails (8: 7, 64: 63)
    assert schedule_rounds(8, 8) == 7
    assert schedule_rounds(64, 8) == 63
    assert schedule_rounds(5, 8) == 5


def test_ranks_per_node_differ_untested_rails_are_said() -> None:
    # a: 2 ranks, b: 2 ranks, c: 1 rank -> c has no rail 1
    t = Topology(hosts=("a", "a", "b", "b", "c"))
    assert t.untested_rails() == {"c": (1,)}
    rails = [[g.rail for g in r] for r in pair_rounds(t, round_robin(3))]
    assert rails == [[0], [0], [0, 1]]  # (b, c), (a, c): rail 0 only; (a, b): both rails
    # one node with a rail 2 nobody else has: untested there too
    assert Topology(hosts=("a", "a", "a", "b", "b")).untested_rails() == {"a": (2,), "b": (2,)}


# -- records --------------------------------------------------------------------------
def test_rail_is_a_record_field_and_old_records_read_as_rail_0() -> None:
    line = to_dict(rec("n0", "n1", F, 1))
    assert line["rail"] == 1
    old = json.loads(json.dumps(to_dict(rec("n0", "n1", F, None))))
    assert "rail" not in old
    assert [rail_of(from_dict(NetRecord, old)), rail_of(from_dict(NetRecord, line))] == [0, 1]
    frame = NetTable.of([from_dict(NetRecord, old), from_dict(NetRecord, line)]).frame
    assert frame["rail"].fillna(0).tolist() == [0, 1]


# -- the judgement ------------------------------------------------------------------
def test_one_slow_nic_is_named_by_host_and_rail() -> None:
    # rail 1: (n0,n1) 2.5, (n0,n2) 10, (n1,n2) 2.5 -> scores n0 10, n1 2.5, n2 10; median 10,
    # MAD 0, threshold 10 - max(0, 0.25 × 10) = 7.5: n1 alone is low. Rail 0: all 10, nothing.
    found = findings(bed({("n1", 1): SLOW}))
    assert found == [("node", ("n1",), 1)]
    f = judging.pair_findings(pair_evidence(NetTable.of(bed({("n1", 1): SLOW})).frame))[0]
    assert f.measured == SLOW and f.expected == F and "Rail 1 only" in f.message


def test_all_rails_of_one_node_slow_names_the_node_alone() -> None:
    found = judging.pair_findings(pair_evidence(NetTable.of(bed({("n1", 0): SLOW, ("n1", 1): SLOW})).frame))
    assert [(f.component, f.hosts, f.extra.get("rail"), f.extra.get("rails")) for f in found] == [
        ("node", ("n1",), None, [0, 1])
    ]
    assert "Rail" not in found[0].message


def test_healthy_rails_name_nothing() -> None:
    assert findings(bed({})) == []


def test_records_without_rail_are_judged_as_before() -> None:
    # one rank per node, no `rail` in the records: the slow node is named without a rail
    recs = [r for r in bed({("n2", 0): SLOW}, rails=1)]
    recs = [from_dict(NetRecord, {k: v for k, v in to_dict(r).items() if k != "rail"}) for r in recs]
    assert findings(recs) == [("node", ("n2",), None)]


def test_matrix_shows_each_pairs_slowest_rail() -> None:
    pe = pair_evidence(NetTable.of(bed({("n1", 1): SLOW})).frame)
    assert dict(pe.values) == {("n0", "n1"): SLOW, ("n0", "n2"): F, ("n1", "n2"): SLOW}
    assert sorted(pe.rails) == [0, 1] and dict(pe.rails[0]) == {k: F for k in pe.values}


def test_untested_rail_in_the_evidence() -> None:
    recs = [r for r in bed({}) if not (r.extra["rail"] == 1 and "n2" in r.hosts)]
    assert pair_evidence(NetTable.of(recs).frame).untested == {"n2": (1,)}


def test_confirmation_pairs_of_every_rail_together() -> None:
    # rail 1's suspect n1 meets the fastest good nodes of rail 1 (n0, n2: ties by name)
    by_rail = {0: {("n0", "n1"): F, ("n0", "n2"): F, ("n1", "n2"): F},
               1: {("n0", "n1"): SLOW, ("n0", "n2"): F, ("n1", "n2"): SLOW}}  # fmt: skip
    assert rail_confirmation_pairs(by_rail) == [("n0", "n1"), ("n1", "n2")]


@pytest.mark.parametrize("rails", [1, 2])
def test_groups_replay_takes_a_groups_slowest_rail(rails: int) -> None:
    recs = [rec("a", "b", SLOW, 0, scope="groups")]  # rail 0 slow, then healthy rails
    recs += [rec("a", "b", F, j, scope="groups") for j in range(1, rails + 1)]
    assert recorded_rounds(recs) == [{frozenset(("a", "b")): SLOW}]


# -- the groups search on rails -------------------------------------------------------
def search_records(slow: dict[tuple[str, int], float], rails: int = 2) -> list[NetRecord]:
    """The groups search on 8 hosts × `rails`, each group measured on every rail at once (a
    group runs at its slowest member's NIC on that rail), as `stoker net --scopes groups`
    records it; the run's measure takes a group's slowest rail."""
    out: list[NetRecord] = []

    def measure(groups: list[tuple[str, ...]]) -> list[float]:
        rnd = 1 + max((r.extra["round"] for r in out), default=-1)
        values = []
        for k, g in enumerate(groups):
            per = [min(slow.get((h, j), F) for h in g) for j in range(rails)]
            for j, v in enumerate(per):
                r = rec(g[0], g[1], v, j, scope="groups", rnd=rnd)
                out.append(replace(r, hosts=g, nodes=len(g), group=k * rails + j))
            values.append(min(per))
        return values

    group_search([f"h{i}" for i in range(8)], measure)
    return out


def group_named(recs: list[NetRecord]) -> list[tuple[str, tuple[str, ...], int | None, float | None]]:
    res = replay(NetTable.of(recs))
    assert res is not None
    return [(f.component, f.hosts, f.extra.get("rail"), f.measured) for f in group_findings(res)]


def test_groups_search_names_the_slow_nic_by_rail() -> None:
    # h5's rail 1 at a quarter: the groups holding h5 are slow on rail 1 only; its final pair
    # with a cleared node measures 2.5 on rail 1 and 10 on rail 0
    assert group_named(search_records({("h5", 1): SLOW})) == [("node", ("h5",), 1, SLOW)]


def test_groups_search_every_rail_slow_names_the_node() -> None:
    recs = search_records({("h5", 0): SLOW, ("h5", 1): SLOW})
    assert group_named(recs) == [("node", ("h5",), None, SLOW)]
    res = replay(NetTable.of(recs))
    assert res is not None and group_findings(res)[0].extra["rails"] == [0, 1]


def test_untested_rails_are_a_note_of_report_md(tmp_path: Path) -> None:
    # n2 ran one rank (no rail 1): its rail-1 pairs are missing
    recs = [r for r in bed({}) if not (r.extra["rail"] == 1 and "n2" in r.hosts)]
    assert untested_note({}) is None
    with RecordWriter(tmp_path / "net.jsonl") as w:
        for r in recs:
            w.write(r)
    p = subprocess.run([*STOKER, "report", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    line = (
        "rails not tested by the pair tests (ranks per node differ; rail j is local rank j, measured "
        "only between nodes that both run a rank j): n2: rail 1; a slow NIC there cannot be named"
    )
    assert line in (tmp_path / "report.md").read_text()
