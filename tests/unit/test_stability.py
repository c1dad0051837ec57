"""Stability over a soak (reports/judging/fleet/stability.py) on hand-built series: a dip is named
with its passes and the counters beside it, jitter is not, an error counter alone is."""

from __future__ import annotations

import itertools
import random
from typing import Any

from reports.evidence import soak as soak_evidence
from reports.judging.fleet import stability as st
from reports.shared.findings import FAILING, verdict_of
from reports.shared.records import IoRecord, NetRecord

HOSTS = ("n0", "n1", "n2", "n3")


def _net(k: int, scope: str, hosts: tuple[str, ...], bw: float, p99: float = 0.01) -> NetRecord:
    return NetRecord(
        run_id="r",
        ts=f"2026-11-24T00:{k:02d}:00Z",
        hosts=hosts,
        nodes=len(set(hosts)),
        op="all_reduce",
        scope=scope,
        ranks=len(hosts),
        backend="gloo",
        dtype="float32",
        bytes=4 << 20,
        time_s=0.1,
        algbw_GBps=bw,
        busbw_GBps=bw,
        wrong=0,
        time_p99_s=p99,
        extra={"soak_pass": k},
    )


def soak(passes: int = 10, slow: dict[int, str] | None = None, seed: int = 1) -> list[NetRecord]:
    """Pairs of 4 hosts and a world record per pass, ±8% jitter; `slow`: pass -> host at 1/4."""
    rnd = random.Random(seed)
    out = []
    for k in range(1, passes + 1):
        bad = (slow or {}).get(k)
        for a, b in itertools.combinations(HOSTS, 2):
            cap = 0.25 if bad in (a, b) else 1.0
            out.append(_net(k, "pair", (a, b), 0.05 * cap * rnd.uniform(0.92, 1.0)))
        out.append(_net(k, "world", HOSTS, 0.04 * (0.25 if bad else 1.0) * rnd.uniform(0.92, 1.0)))
    return out


def counter(
    k: int, host: str, device: str, name: str, delta: float, severity: str = "error"
) -> dict[str, Any]:
    return {
        "kind": "counter",
        "soak_pass": k,
        "host": host,
        "device": device,
        "counter": name,
        "value": delta,
        "delta": delta,
        "severity": severity,
    }


def test_healthy_soak_names_nothing() -> None:
    for seed in range(20):
        assert st.stability(soak(seed=seed), [], []) == [], seed


def test_not_a_soak_is_not_judged() -> None:
    plain = [NetRecord(**{**st_fields(r), "extra": {}}) for r in soak(3)]
    assert st.stability(plain, [], []) == []


def st_fields(r: NetRecord) -> dict[str, Any]:
    return {f: getattr(r, f) for f in NetRecord.__dataclass_fields__}


def test_slow_node_dip_is_named_with_its_window_and_counters() -> None:
    found = st.stability(
        soak(slow={4: "n2", 5: "n2"}),
        [],
        [
            counter(5, "n2", "mlx5_0:1", "symbol_error", 412),
            counter(5, "n2", "mlx5_0:1", "port_xmit_wait", 9, "info"),
            counter(5, "n0", "eth0", "rx_dropped", 1, "info"),
        ],
    )
    assert [(f.component, f.hosts, f.status) for f in found] == [("node", ("n2",), "unstable")]
    f = found[0]
    assert f.extra["window"] == {
        "passes": [4, 5],
        "from": "2026-11-24T00:04:00Z",
        "to": "2026-11-24T00:05:00Z",
    }
    assert f.extra["devices"] == ["mlx5_0:1"]
    assert "mlx5_0:1 symbol_error +412" in f.message and "passes 4-5" in f.message
    assert 0.2 < f.measured / f.expected < 0.3
    assert "unstable" in FAILING and verdict_of(found) == "fail"


def test_error_counter_alone_is_its_own_finding() -> None:
    found = st.stability(soak(), [], [counter(7, "n1", "eth0", "carrier_changes", 2)])
    assert [(f.component, f.hosts, f.extra["device"]) for f in found] == [("network port", ("n1",), "eth0")]
    assert found[0].extra["window"]["passes"] == [7, 7] and "carrier_changes +2" in found[0].message


def test_slow_link_is_a_link() -> None:
    recs = soak()
    recs = [
        NetRecord(**{**st_fields(r), "busbw_GBps": r.busbw_GBps / 4})
        if r.scope == "pair" and set(r.hosts) == {"n0", "n3"} and r.extra["soak_pass"] in (6, 7, 8)
        else r
        for r in recs
    ]
    found = st.stability(recs, [], [])
    assert [(f.component, f.hosts, f.extra["window"]["passes"]) for f in found] == [
        ("link", ("n0", "n3"), [6, 8])
    ]


def test_drift_and_spikes() -> None:
    assert st.drift({k: 1.0 - 0.05 * k for k in range(1, 11)}) < -0.4
    assert abs(st.drift({k: 1.0 for k in range(1, 11)})) < 1e-9
    assert soak_evidence.spikes({1: 0.01, 2: 0.011, 3: 0.05, 4: 0.01}) == [3]
    sagging = [_net(k, "world", HOSTS, 0.04 * (1.0 - 0.05 * k)) for k in range(1, 11)]
    found = st.stability(sagging, [], [])
    assert [f.component for f in found] == ["inter-node network"] and found[0].extra["drift"] < -0.4


def test_storage_dip() -> None:
    io = [
        IoRecord(
            run_id="r",
            ts=f"2026-11-24T00:{k:02d}:30Z",
            hosts=("n0",),
            nodes=1,
            workload="checkpoint_write",
            direction="write",
            path="/ckpt",
            scope="shared",
            procs=1,
            bytes=1,
            bw_GBps=0.3 if k == 6 else 1.0,
            per_host_bw_GBps={},
            iops=1,
            lat_ms={},
            extra={"soak_pass": k},
        )
        for k in range(2, 11, 2)
    ]
    found = st.stability([], io, [])
    assert [(f.component, f.extra["window"]["passes"]) for f in found] == [("shared storage", [6, 6])]


def test_a_scope_dip_with_a_counter_names_the_port() -> None:
    recs = [
        NetRecord(**{**st_fields(r), "busbw_GBps": r.busbw_GBps / 4})
        if r.scope == "world" and r.extra["soak_pass"] == 7 else r
        for r in soak()
    ]  # fmt: skip
    found = st.stability(recs, [], [counter(7, "n1", "eth0", "carrier_changes", 2)])
    assert [(f.component, f.hosts) for f in found] == [("network port", ("n1",))]
    assert "world busbw fell to" in found[0].message


def test_soak_section_draws_the_time_series() -> None:
    from reports.render.soak import section

    recs = soak(slow={4: "n2", 5: "n2"})
    found = st.stability(recs, [], [counter(5, "n2", "mlx5_0:1", "symbol_error", 412)])
    html = "".join(section(recs, [], [counter(5, "n2", "mlx5_0:1", "symbol_error", 412) | {"ts": "2026-11-24T00:05:30Z"}],
                           found, {"inter-node network": 0.05}, 0.8))  # fmt: skip
    assert "<h2>Soak</h2>" in html and "10 passes" in html
    assert html.count("data:image/png;base64,") == 3  # world busbw, the node x time map, counters
    assert section([r for r in recs if False], [], [], [], {}, None) == []


def test_one_slow_pass_without_a_counter_is_jitter_and_local_world_is_intra_node() -> None:
    recs = [
        NetRecord(**{**st_fields(r), "busbw_GBps": r.busbw_GBps / 4})
        if r.scope == "world" and r.extra["soak_pass"] == 7 else r
        for r in soak()
    ]  # fmt: skip
    assert st.stability(recs, [], []) == []
    one_host = [_net(k, "world", ("vm", "vm"), 0.4 if k in (3, 4) else 1.0) for k in range(1, 9)]
    assert [f.component for f in st.stability(one_host, [], [])] == ["intra-node network"]


def test_two_nodes_dip_as_a_link_and_drift_is_bounded() -> None:
    two = [_net(k, "pair", ("n1", "n2"), 0.02 if k in (5, 6) else 0.3) for k in range(1, 12)]
    assert [(f.component, f.hosts) for f in st.stability(two, [], [])] == [("link", ("n1", "n2"))]
    assert st.drift({k: 0.3 if k < 5 else 0.02 for k in range(1, 20)}) == -1.0


def test_several_dips_of_one_link_are_one_finding() -> None:
    two = [
        _net(k, "pair", ("n1", "n2"), {4: 0.1, 5: 0.1, 9: 0.05, 10: 0.05}.get(k, 0.3)) for k in range(1, 14)
    ]
    found = st.stability(two, [], [])
    assert len(found) == 1 and found[0].extra["window"]["passes"] == [9, 10]
    assert [w["passes"] for w in found[0].extra["dips"]] == [
        [4, 5],
        [9, 10],
    ] and "1 more dips: passes 4-5" in found[0].message


def test_a_pair_dip_with_counters_on_one_side_names_that_side() -> None:
    """Two nodes: n2's port flapped (carrier changes) while the n1-n2 pair dipped: n2 is named,
    not the pair; counters on both ends leave it the link's."""
    two = [_net(k, "pair", ("n1", "n2"), 0.02 if k in (5, 6) else 0.3) for k in range(1, 12)]
    flap = [counter(5, "n2", "eth0", "carrier_changes", 2), counter(6, "n1", "eth0", "rx_dropped", 3, "info")]
    (f,) = st.stability(two, [], flap)
    assert (f.component, f.hosts, f.extra["pair"], f.extra["devices"]) == (
        "node",
        ("n2",),
        ["n1", "n2"],
        ["eth0"],
    )
    assert f.message.startswith("n2 (its error counters moved, n1's did not): the n1-n2 pair's busbw fell to")
    assert (
        "counters that moved there: eth0 carrier_changes +2." in f.message and "rx_dropped" not in f.message
    )
    both = [*flap, counter(6, "n1", "eth0", "carrier_changes", 1)]
    assert [(f.component, f.hosts) for f in st.stability(two, [], both)] == [("link", ("n1", "n2"))]
    # four nodes: a one-pass dip of the n0-n3 link with n3's counter is n3's
    recs = [
        NetRecord(**{**st_fields(r), "busbw_GBps": r.busbw_GBps / 4})
        if r.scope == "pair" and set(r.hosts) == {"n0", "n3"} and r.extra["soak_pass"] == 6
        else r
        for r in soak()
    ]
    found = st.stability(recs, [], [counter(6, "n3", "mlx5_1:1", "link_downed", 1)])
    assert [(f.component, f.hosts, f.extra.get("pair")) for f in found] == [("node", ("n3",), ["n0", "n3"])]
