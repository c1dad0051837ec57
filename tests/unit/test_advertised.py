"""Measured vs advertised: plateau, interpolation and statuses, with hand-computed numbers."""

from __future__ import annotations

import pytest

from reports.evidence.sweeps import Sweep
from reports.judging import advertised as compare
from reports.shared.findings import Finding
from reports.shared.spec import Spec, StorageSpec, match_storage, parse_spec
from tests.unit.recordgen import curves as build_curves
from tests.unit.recordgen import flat, io, net

SPEC = parse_spec(
    {
        "accelerator": "h100-sxm",
        "network": {"inter_node": {"link": "ib-ndr", "count": 8}},
        "storage": [
            {"path": "/data", "kind": "shared", "read_GBps": 40, "write_GBps": 20},
            {"path": "/scratch", "kind": "local", "read_GBps": 12, "write_GBps": 6},
        ],
    },
    "spec.yaml",
)


def test_plateau_is_the_best_median_among_the_three_largest_sizes() -> None:
    recs = []
    # per size, three groups; medians: 1M -> 100, 2M -> 300, 4M -> 350, 8M -> 340, 16M -> 345
    for size, values in [
        (1 << 20, (90, 100, 110)),
        (2 << 20, (300, 290, 310)),
        (4 << 20, (350, 10, 360)),
        (8 << 20, (340, 340, 341)),
        (16 << 20, (345, 500, 100)),
    ]:
        recs += [net("intra-node", "all_reduce", size, v, group=g) for g, v in enumerate(values)]
    curves, wrong = build_curves(recs)
    c = curves[("intra-node", "all_reduce")]
    assert c.sizes == (1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20)
    assert c.busbw == (100, 300, 350, 340, 345)
    assert c.plateau() == (4 << 20, 350)
    assert wrong == 0


def test_interpolation_is_linear_in_log_size() -> None:
    c = Sweep(
        scope="intra-node",
        op="all_reduce",
        backend="nccl",
        ranks=8,
        nodes=1,
        groups=1,
        sizes=(1 << 20, 4 << 20),
        busbw=(10.0, 30.0),
    )
    assert c.at(2 << 20) == (20.0, "")  # log2: halfway between 1M and 4M -> halfway between 10 and 30
    assert c.at(1 << 20) == (10.0, "")
    bw, note = c.at(1 << 10)
    assert bw == 10.0 and "below the smallest size measured (1M)" in note
    bw, note = c.at(1 << 30)
    assert bw == 30.0 and "above the largest size measured (4M)" in note


def test_wrong_results_are_left_out_and_world_maps_to_a_scope() -> None:
    recs = [
        net("world", "all_reduce", 1 << 20, 5.0, ("a", "b")),
        net("world", "all_gather", 1 << 20, 7.0, ("a",)),
        net("inter-node", "all_reduce", 1 << 20, 9.0, ("a", "b")),
        net("inter-node", "all_reduce", 2 << 20, 99.0, ("a", "b"), wrong=3),
    ]
    curves, wrong = build_curves(recs)
    assert wrong == 1
    assert curves[("inter-node", "all_reduce")].busbw == (9.0,)  # the explicit sweep wins over the world one
    assert curves[("intra-node", "all_gather")].busbw == (7.0,)  # a one-node world sweep is intra-node


def test_a_one_rank_sweep_crosses_no_link_and_is_left_out() -> None:
    # nccl-tests on one GPU: all_reduce busbw = algbw x 2(n-1)/n = 0, a local copy, not a link
    curves, wrong = build_curves(
        [net("world", "all_reduce", 1 << 20, 0.0, ranks=1), net("world", "all_gather", 1 << 20, 0.0, ranks=1)]
    )
    assert curves == {} and wrong == 0


@pytest.mark.parametrize(
    ("busbw", "status"),
    [
        (400.0, "ok"),  # 400 / 450 = 89% >= 80%
        (360.0, "ok"),  # exactly 80%
        (359.0, "below_spec"),  # 79.8%
        (480.0, "ok"),  # NVLS: 107% of NVLink4 is physical for all_reduce (in-switch reduction)
        (946.0, "suspect"),  # > 2.1 x 450 = 945
    ],
)
def test_intra_node_status(busbw: float, status: str) -> None:
    curves, _ = build_curves(flat("intra-node", "all_reduce", busbw))
    (f,), expected = compare.compare_network(curves, SPEC)
    assert (f.component, f.status, f.expected, f.measured) == ("intra-node network", status, 450.0, busbw)
    assert expected == {"intra-node network": 450.0}
    assert "at 1G" in f.message  # the plateau size is named


def test_all_gather_above_the_link_is_suspect() -> None:
    # no in-network reduction for all_gather: the limit is 1.05 x 450 = 472.5
    curves, _ = build_curves(flat("intra-node", "all_gather", 480.0))
    (f,), _ = compare.compare_network(curves, SPEC)
    assert f.status == "suspect" and f.check == "all_gather busbw plateau"


def test_inter_node_compares_with_the_nic_share_per_gpu() -> None:
    curves, _ = build_curves(flat("inter-node", "all_reduce", 34.0, ("n1", "n2")))
    (f,), _ = compare.compare_network(curves, SPEC)
    # 8 x ib-ndr (50 GB/s) over 8 GPUs = 50 GB/s per GPU; 34 / 50 = 68% < 80%
    assert (f.status, f.expected, f.hosts) == ("below_spec", 50.0, ("n1", "n2"))
    assert "68% of the advertised 50 GB/s (8 x ib-ndr over 8 GPUs)" in f.message
    assert f.extra["share"] == 0.68


def test_no_spec_is_no_reference() -> None:
    curves, _ = build_curves(
        flat("intra-node", "all_reduce", 3.0) + flat("inter-node", "all_reduce", 1.0, ("a", "b"))
    )
    findings, expected = compare.compare_network(curves, None)
    assert [f.status for f in findings] == ["no_reference", "no_reference"]
    assert [f.expected for f in findings] == [None, None] and expected == {}
    assert "give network.intra_node in --spec" in findings[0].message


def test_storage_shared_local_and_unmatched() -> None:
    recs = [
        io("checkpoint_write", "write", "/data/ckpt", 15.0),  # 15 / 20 = 75%: below
        io("checkpoint_write", "write", "/data/ckpt", 12.0),  # a slower repeat: the best run counts
        io("dataloader_read", "read", "/data/ds", 39.0),  # 97.5%: ok
        io(
            "dataloader_read",
            "read",
            "/scratch",
            20.0,
            scope="local",
            per_host={"n1": 11.0, "n2": 10.0, "n3": 9.0},
        ),  # median node 10 / 12 = 83%: ok; n3 9 < 9.6 named
        io("checkpoint_write", "write", "/elsewhere", 3.0),  # no spec entry
        io("dataloader_read", "read", "/data/cached", 50.0, cache_suspect=True),
        io("metadata", "read", "/data", 0.0),  # no bandwidth figure to judge
        io("checkpoint_write", "write", "/data/full", 0.1, failed="disk full"),
    ]
    findings, expected = compare.compare_storage(recs, SPEC)
    by_path = {f.extra["path"]: f for f in findings}
    assert set(by_path) == {"/data/ckpt", "/data/ds", "/scratch", "/elsewhere", "/data/cached"}
    assert (by_path["/data/ckpt"].status, by_path["/data/ckpt"].measured, by_path["/data/ckpt"].expected) == (
        "below_spec",
        15.0,
        20.0,
    )
    assert by_path["/data/ds"].status == "ok"
    local = by_path["/scratch"]
    assert (local.component, local.status, local.measured, local.expected, local.hosts) == (
        "local storage",
        "ok",
        10.0,
        12.0,
        ("n3",),
    )
    assert by_path["/elsewhere"].status == "no_reference"
    assert by_path["/data/cached"].status == "suspect"
    assert expected["shared storage /data/ckpt write"] == 20.0


def test_scope_from_the_spec_overrides_the_record() -> None:
    spec = Spec(storage=(StorageSpec(path="/mnt/nvme", kind="local", read_GBps=7.0, write_GBps=5.0),))
    (f,), _ = compare.compare_storage(
        [io("dataloader_read", "read", "/mnt/nvme/x", 7.0, scope="shared")], spec
    )
    assert f.component == "local storage"


def test_match_storage_prefers_the_longest_prefix() -> None:
    a, b = (
        StorageSpec(path="/data", kind="shared", read_GBps=1, write_GBps=1),
        StorageSpec(path="/data/fast/", kind="shared", read_GBps=2, write_GBps=2),
    )
    assert match_storage("/data/fast/x", [a, b]) is b
    assert match_storage("/data/slow", [a, b]) is a
    assert match_storage("/database", [a, b]) is None


def test_concurrent_rails_count_at_the_slowest_rail() -> None:
    """Two rails sharing a link: 0.027 and 0.024 GB/s in one run. The node moves both rails'
    bytes in the slower rail's time, so per GPU it delivers 0.024, not the median 0.0255.
    A second run (0.030, 0.026) gives 0.026; the curve takes the median over runs: 0.025."""
    from reports.shared.records import NetRecord

    def rail(run: str, group: int, bw: float) -> NetRecord:
        return NetRecord(
            run_id=run,
            ts="t",
            hosts=("a", "b"),
            nodes=2,
            op="all_reduce",
            scope="inter-node",
            ranks=2,
            backend="gloo",
            dtype="float32",
            bytes=1 << 26,
            time_s=1.0,
            algbw_GBps=bw,
            busbw_GBps=bw,
            wrong=0,
            group=group,
        )

    curves, _ = build_curves([rail("r1", 0, 0.027), rail("r1", 1, 0.024)])
    assert curves[("inter-node", "all_reduce")].busbw == (0.024,)
    curves, _ = build_curves(
        [rail("r1", 0, 0.027), rail("r1", 1, 0.024), rail("r2", 0, 0.030), rail("r2", 1, 0.026)]
    )
    assert curves[("inter-node", "all_reduce")].busbw == (0.025,)


def _one(recs: list, write: float = 0.5):  # type: ignore[no-untyped-def]
    spec = Spec(storage=(StorageSpec(path="/ckpt", kind="shared", read_GBps=1.0, write_GBps=write),))
    (f,), _ = compare.compare_storage(recs, spec)
    return f


def test_page_cache_assisted_dcp_never_stands_for_the_disk() -> None:
    # as seen on CI: torch.dcp (buffered) 0.46 GB/s, fio O_DIRECT 0.33 GB/s; advertised 0.5
    f = _one(
        [
            io("checkpoint_write", "write", "/ckpt", 0.33, runtime_s=3.0),
            io("checkpoint_write", "write", "/ckpt", 0.46, direct=False, runtime_s=2.1, backend="torch.dcp"),
        ]
    )
    assert (f.status, f.measured) == ("below_spec", 0.33)  # 0.33 / 0.5 = 66% < 80%, by hand
    assert "Beside it, not compared: torch.dcp 0.46 GB/s (the framework's save path" in f.message
    # without the fio figure there is nothing that may stand for the disk: not judged
    g = _one(
        [io("checkpoint_write", "write", "/ckpt", 0.46, direct=False, runtime_s=2.1, backend="torch.dcp")]
    )
    assert g.status == "no_reference" and "torch.dcp 0.46 GB/s" in g.message


def test_buffered_io_counts_only_over_data_larger_than_memory() -> None:
    small = io("checkpoint_write", "write", "/ckpt", 0.9, direct=False, runtime_s=3.0)
    small.extra.update(data_bytes=8 << 30, ram_bytes=64 << 30)
    big = io("checkpoint_write", "write", "/ckpt", 0.45, direct=False, runtime_s=3.0)
    big.extra.update(data_bytes=128 << 30, ram_bytes=64 << 30)
    assert _one([small]).status == "no_reference"
    f = _one([small, big])
    assert (f.status, f.measured) == ("ok", 0.45)  # 0.45 / 0.5 = 90%; the 0.9 from cache is beside
    assert "fio buffered 0.90 GB/s (buffered IO that the page cache can hold)" in f.message


def test_a_record_too_short_to_be_steady_is_not_judged() -> None:
    # the quick profile's old checkpoint test: 64 MiB per writer in 0.4 s
    short = io("checkpoint_write", "write", "/ckpt", 0.1, runtime_s=0.4)
    f = _one([short])
    assert f.status == "no_reference" and "ran 0.4 s, too short to be a steady bandwidth" in f.message
    assert _one([short, io("checkpoint_write", "write", "/ckpt", 0.45, runtime_s=2.0)]).measured == 0.45


def test_no_spec_advice_never_names_the_throwaway_scratch_dir() -> None:
    # the advice never points at stoker run's .io-scratch-XXXX, removed after the run
    from reports.shared.storage_rule import spec_advice

    assert spec_advice("/r/run1/.io-scratch-k2j3", "local") == (
        "this is stoker run's throwaway scratch dir on the file system of /r/run1: add {path: /r/run1, kind: "
        "local, read_GBps: X, write_GBps: Y} to storage in --spec, or measure the storage you mean with stoker "
        "run --path DIR."
    )
    assert spec_advice("/data", "shared").startswith("add {path: /data, kind: shared,")


def _world(busbw: float, nodes: int, env: dict[str, str] | None = None) -> Finding:
    hosts = tuple(f"n{i}" for i in range(1, nodes + 1))
    recs = [net("world", "all_reduce", 2**k, busbw, hosts, ranks=8 * nodes) for k in range(20, 31)]
    (f,), _ = compare.compare_network(build_curves(recs)[0], SPEC, env=env)
    return f


def test_world_sweep_across_nodes_is_judged_as_each_nics_wire_rate() -> None:
    """A world all_reduce over N nodes x 8 GPUs (n = 8N ranks, one ib-ndr NIC per GPU: 8 rails
    of 50 GB/s) is judged per NIC as the algorithm NCCL may have run (reports/judging/network/wire.py):

    algbw = busbw / (2(n−1)/n); a node sends T x S across the network, spread over its 8 NICs,
    so each NIC carries wire = algbw x T / 8 with
      ring:               T = 2(n−1)/n  ->  wire = busbw / 8, whatever N
      tree, nvls_tree:    T = 1 on 2 nodes (root of one tree, leaf of the other), 2 on more
    and the promise is the floor over them: the largest reading judges.

    2 nodes, n = 16, busbw 384 (8 NICs x 48 GB/s, a healthy flat ring):
      ring 384 / 8 = 48.0; tree 384 / 1.875 = 204.8 algbw x 1 / 8 = 25.6  ->  48.0, 96% of 50: ok
      (the old hierarchical reading, 384 x (k−1)/(n−1) = 384 / 15 = 25.6, was 51%: failed)
    4 nodes, n = 32, busbw 384:
      ring 48.0; tree 384 / (62/32) = 198.19 algbw x 2 / 8 = 49.548  ->  49.548, 99%: ok
      (hierarchical: 384 x 3/31 = 37.16, 74%: failed)
    """
    f = _world(384.0, 2)
    assert (f.component, f.status, f.expected, f.measured) == ("inter-node network", "ok", 50.0, 48.0)
    assert f.extra["judged"] == "world busbw as NIC wire rate" and f.extra["share"] == 0.96
    assert f.extra["wire"] == {
        "algo": "ring",
        "algos": ["ring", "tree", "nvls_tree"],
        "from": "algorithm not recorded: the floor over ring, tree, nvls_tree",
    }
    assert "is 48.00 GB/s on each NIC's wire read as ring" in f.message
    f = _world(384.0, 4)
    assert (f.status, f.measured, f.extra["share"]) == ("ok", 49.548, 0.991)
    assert f.extra["wire"]["algo"] == "tree" and "as a ring 48.00" in f.message
    # NCCL_ALGO=Ring recorded: the ring's reading alone, 384 / 8 = 48.0
    f = _world(384.0, 4, {"NCCL_ALGO": "Ring"})
    assert (f.status, f.measured, f.extra["wire"]["from"]) == ("ok", 48.0, "NCCL_ALGO=Ring")


def test_a_sick_multi_node_ring_still_fails() -> None:
    # half the healthy figure, busbw 192: 2 nodes ring 192 / 8 = 24.0 (48%); 4 nodes tree
    # 192 x 32/31 / 8 = 24.774 (50%): both under the 80% threshold
    assert (_world(192.0, 2).status, _world(192.0, 2).measured) == ("below_spec", 24.0)
    assert (_world(192.0, 4).status, _world(192.0, 4).measured) == ("below_spec", 24.774)
    # the ring's 300 GB/s on 2 nodes: 300 / 8 = 37.5 per NIC, 75%: below 80%
    assert (_world(300.0, 2).status, _world(300.0, 2).measured) == ("below_spec", 37.5)


def test_a_two_node_tree_above_the_nics_is_not_suspect() -> None:
    # NCCL's 2-node tree sends S per node (T = 1): busbw 720 -> algbw 384 -> 48 GB/s per NIC at
    # least (the ring's reading, 720 / 8 = 90, judges: ok). Suspect only when even the least
    # reading is above the link: ib-ndr reduces in the switch, limit 2.1 x 50 = 105 GB/s;
    # busbw 1800 -> tree 1800 / 1.875 / 8 = 120 > 105: suspect
    f = _world(720.0, 2)
    assert (f.status, f.measured) == ("ok", 90.0)
    assert _world(1800.0, 2).status == "suspect"


def test_inter_node_rails_are_judged_as_measured_per_rail() -> None:
    recs = [net("inter-node", "all_reduce", 2**k, 45.0, ("n1", "n2"), ranks=2) for k in range(20, 31)]
    (f,), _ = compare.compare_network(build_curves(recs)[0], SPEC)
    assert (f.status, f.measured, "judged" in f.extra) == ("ok", 45.0, False)  # 45 / 50 = 90%


def test_a_finding_says_what_it_was_judged_against() -> None:
    # verdict.json's `promise` and `threshold` (docs/contract.md): the spec's share, or 0.90 of
    # what healthy systems reach, and nothing where no figure judged it
    from reports.judging.advertised import judged_against

    assert judged_against(450.0, "advertised", 0.7) == {
        "promise": {"GBps": 450.0, "basis": "advertised"},
        "threshold": 0.7,
    }
    assert judged_against(360.0, "reference", 0.8) == {
        "promise": {"GBps": 360.0, "basis": "reference"},
        "threshold": 0.9,
    }
    assert judged_against(None, "advertised", 0.8) == {}
    assert judged_against(50.0, None, 0.8) == {}
