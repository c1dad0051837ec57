"""A soak's pair series rail by rail (reports/evidence/soak.py, reports/judging/fleet/stability.py):
on nodes of two ranks each pair test runs on both rails at once, one record per rail, so a
NIC that sags on one rail is a dip of that (node, rail), not hidden behind the node's other
rail; a node that sags on every rail is the node's dip."""

from __future__ import annotations

import itertools
import random

from reports.evidence.soak import pair_series
from reports.judging.fleet import stability as st
from reports.shared.records import NetRecord

HOSTS = ("n0", "n1", "n2", "n3")
RAILS = 2


def record(k: int, hosts: tuple[str, str], rail: int, bw: float) -> NetRecord:
    return NetRecord(
        run_id="r", ts=f"2026-11-24T00:{k:02d}:00Z", hosts=hosts, nodes=2, op="all_reduce",
        scope="pair", ranks=2, backend="gloo", dtype="float32", bytes=4 << 20, time_s=0.1,
        algbw_GBps=bw, busbw_GBps=bw, wrong=0, time_p99_s=0.01, extra={"soak_pass": k, "rail": rail},
    )  # fmt: skip


def soak(slow: dict[tuple[int, str], tuple[int, ...]] | None = None, seed: int = 1) -> list[NetRecord]:
    """10 passes of the pairs of 4 hosts on 2 rails, ±8% jitter; `slow`: (pass, host) -> its
    rails at 1/4 in that pass."""
    rnd = random.Random(seed)
    out = []
    for k in range(1, 11):
        for (a, b), j in itertools.product(itertools.combinations(HOSTS, 2), range(RAILS)):
            bad = any(j in (slow or {}).get((k, h), ()) for h in (a, b))
            out.append(record(k, (a, b), j, 0.05 * (0.25 if bad else 1.0) * rnd.uniform(0.92, 1.0)))
    return out


def test_the_pair_series_keeps_each_rail_and_the_slowest_rail_by_default() -> None:
    recs = soak(slow={(4, "n2"): (1,)})
    # pass 4, pair n0-n2: rail 0 at full speed (≥ 0.046), rail 1 at a quarter (≤ 0.0125)
    assert pair_series(recs, 0)[("n0", "n2")][4] >= 0.05 * 0.92
    assert pair_series(recs, 1)[("n0", "n2")][4] <= 0.05 / 4
    assert pair_series(recs)[("n0", "n2")][4] == pair_series(recs, 1)[("n0", "n2")][4]


def test_a_nic_that_sags_on_one_rail_is_named_with_its_rail() -> None:
    found = st.stability(soak(slow={(4, "n2"): (1,), (5, "n2"): (1,)}), [], [])
    assert [(f.component, f.hosts, f.extra.get("rail"), f.extra["window"]["passes"]) for f in found] == [
        ("node", ("n2",), 1, [4, 5])
    ]
    assert "n2's best pair busbw on rail 1 fell to" in found[0].message


def test_a_node_that_sags_on_every_rail_is_the_node() -> None:
    found = st.stability(soak(slow={(4, "n2"): (0, 1), (5, "n2"): (0, 1)}), [], [])
    assert [(f.component, f.hosts, f.extra.get("rail"), f.extra.get("rails")) for f in found] == [
        ("node", ("n2",), None, [0, 1])
    ]


def test_a_healthy_two_rail_soak_names_nothing() -> None:
    for seed in range(10):
        assert st.stability(soak(seed=seed), [], []) == [], seed
