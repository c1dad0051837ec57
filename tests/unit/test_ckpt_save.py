"""The checkpoint as training writes it: every writing rank saves its shard at once, a node's
writers share its disk, shared storage bounds all nodes together (reports/judging/storage/ckpt_save.py).
Every expected value is worked out by hand in the comment above it."""

from __future__ import annotations

import dataclasses

import pytest

from reports.judging.storage.ckpt_save import layout, save_time
from reports.judging.storage.savepath import SaveRates, pick
from reports.judging.workload.workload import load_workload, parse_workload
from reports.shared.findings import Finding, ModelRow
from reports.shared.records import IoRecord
from reports.shared.spec import parse_spec
from reports.table.read import RecordSet
from tests.unit.recordgen import io, judge_records

SPEC = parse_spec(
    {
        "accelerator": "h100-sxm",
        "storage": [{"path": "/data", "kind": "shared", "write_GBps": 1000}],
        "price_per_gpu_hour": 2.49,
    },
    "spec.yaml",
)
SIZE = 70.6e9 * 14  # llama-70b's checkpoint: 988.4e9 B


def rates(
    node: float, per_writer: float | None = None, agg: float = 1e9, nodes: int = 64, ser: float | None = None
) -> SaveRates:
    rec = io("checkpoint_write", "write", "/data/ck", agg)
    return SaveRates(
        record=rec,
        backend="torch.save",
        per_writer_GBps=per_writer,
        node_GBps=node,
        node_writers=8,
        aggregate_GBps=agg,
        nodes_measured=nodes,
        serialise_GBps=ser,
        note="",
    )


def test_who_writes_by_parallelism_and_format() -> None:
    # DDP + torch.save: rank 0 alone (T = 1) holds all 988.4e9 B
    ddp = layout(SIZE, "ddp", "torch.save", 512, 8)
    assert (ddp.node_writers, ddp.rank_bytes, ddp.rule) == ((1,), SIZE, "replica")
    # DDP + torch.save with T = 16 over 8-GPU nodes: replica 0's 16 ranks on 2 nodes, SIZE / 16 each
    assert layout(SIZE, "ddp", "torch.save", 512, 8, tensor=16).node_writers == (8, 8)
    # DDP + DCP: DCP spreads the replicated state over all 512 ranks: 988.4e9 / 512 = 1.9305e9 B
    d = layout(SIZE, "ddp", "dcp", 512, 8)
    assert d.node_writers == (8,) * 64 and d.rank_bytes == pytest.approx(1.9305e9, rel=1e-4)
    # FSDP on 20 GPUs, 8 per node: nodes of 8, 8 and 4 ranks, each rank SIZE / 20
    f = layout(SIZE, "fsdp", "torch.save", 20, 8)
    assert f.node_writers == (8, 8, 4) and f.rank_bytes == SIZE / 20


def test_save_time_takes_the_slowest_term() -> None:
    lay = layout(SIZE, "fsdp", "torch.save", 512, 8)  # 1.930469e9 B per rank, 15.44375e9 per node
    # 8 writers x 0.48 GB/s = 3.84 > the node's 3.5: the node caps; 15.44375e9 / 3.5e9 = 4.4125 s
    t = save_time(SIZE, lay, rates(3.5, 0.48), local=False)
    assert t.seconds == pytest.approx(15.44375 / 3.5, rel=1e-5) and "the node's 3.5 GB/s" in t.limit
    # per-writer 0.3: 8 x 0.3 = 2.4 < 3.5; 15.44375e9 / 2.4e9 = 6.4349 s
    t = save_time(SIZE, lay, rates(3.5, 0.3), local=False)
    assert t.seconds == pytest.approx(15.44375 / 2.4, rel=1e-5) and "8 processes per node" in t.limit
    # shared aggregate 100 GB/s: 988.4e9 / 100e9 = 9.884 s > 4.4125 s per node
    t = save_time(SIZE, lay, rates(3.5, 0.48, agg=100.0), local=False)
    assert t.seconds == pytest.approx(9.884, rel=1e-5) and "aggregate 100 GB/s" in t.limit
    # a local path has no shared bound: the same aggregate is ignored
    assert save_time(SIZE, lay, rates(3.5, 0.48, agg=100.0), local=True).seconds == pytest.approx(4.4125)
    # fio standing in: each rank serialises its own 1.930469e9 B at 0.5 GB/s, all at once
    # (3.860938 s), then the node writes 15.44375e9 B at 3.5 GB/s (4.4125 s): 8.2734 s
    t = save_time(SIZE, lay, rates(3.5, ser=0.5), local=False)
    assert t.serialise_s == pytest.approx(3.860938, rel=1e-5)
    assert t.seconds == pytest.approx(3.860938 + 4.4125, rel=1e-5)


def test_one_writer_is_held_to_one_process() -> None:
    # DDP + torch.save: rank 0 writes 988.4e9 B at its own 0.48 GB/s (the node's 3.5 is not
    # its to take): 988.4 / 0.48 = 2059.17 s
    lay = layout(SIZE, "ddp", "torch.save", 512, 8)
    assert save_time(SIZE, lay, rates(3.5, 0.48), local=False).seconds == pytest.approx(2059.1667, rel=1e-6)


def test_infinitely_fast_storage_no_longer_starves_llama70b() -> None:
    """The old model serialised all 988.4 GB as one stream at 0.5 GB/s: 1976.8 s an hour,
    1976.8 / 5576.8 = 35% idle with any storage. Each of 512 ranks serialises 1.9305 GB."""
    lay = layout(SIZE, "fsdp", "torch.save", 512, 8)
    t = save_time(SIZE, lay, rates(1e6, agg=1e9, ser=0.5), local=False)
    # 1.930469e9 / 0.5e9 = 3.860938 s (+ 15.44e9 / 1e15 s, nothing): 3.86 / 3603.86 = 0.107%
    assert t.seconds == pytest.approx(3.860938, rel=1e-4)
    assert t.seconds / (3600 + t.seconds) < 0.0011


def _hosts(n: int) -> dict[str, float]:
    return {f"n{i:02d}": 0.0 for i in range(n)}


def _records(nodes: int) -> RecordSet:
    """fio at 10 GB/s per node (8 writers), torch.save at 0.48 GB/s alone and 3.5 GB/s per
    node with 8 processes, measured on `nodes` nodes of shared /data/ck at once."""

    def rec(per_node: float, procs: int, backend: str) -> IoRecord:
        hosts = {h: per_node for h in _hosts(nodes)}
        r = io("checkpoint_write", "write", "/data/ck", per_node * nodes, per_host=hosts)
        return dataclasses.replace(r, procs=procs * nodes, backend=backend)

    rs = RecordSet()
    rs.io = [rec(10.0, 8, "fio"), rec(0.48, 1, "torch.save"), rec(3.5, 8, "torch.save")]
    return rs


def _checkpoint(rs: RecordSet) -> tuple[ModelRow, Finding]:
    j = judge_records(rs, SPEC, load_workload("llama-70b"))
    (row,) = [r for r in j.model if r.part == "checkpoint"]
    (finding,) = [f for f in j.findings if "checkpoint write" in f.check]
    return row, finding


def test_llama70b_on_64_nodes_with_fast_shared_storage_measured_from_all() -> None:
    row, finding = _checkpoint(_records(64))
    # 512 ranks (FSDP, every rank), 8 per node: 1.930469e9 B each, 15.44375e9 B per node;
    # a node: min(8 x 0.48, 3.5) = 3.5 GB/s -> 4.4125 s; the aggregate of all 64 nodes
    # (fio's 640 GB/s) 988.4e9 / 640e9 = 1.544 s; stall 4.4125 s every 3600 s:
    # 4.4125 / 3604.4125 = 0.1224% idle
    assert row.extra["write_s"] == pytest.approx(4.4125, rel=1e-5)
    assert row.idle_share == pytest.approx(4.4125 / 3604.4125, rel=1e-5)
    assert row.idle_share < 0.01 and row.status == "ok"
    assert row.extra["floor"] == "" and "floor" not in finding.message


def test_the_same_storage_measured_from_one_node_is_a_floor() -> None:
    row, finding = _checkpoint(_records(1))
    # one node's 10 GB/s is all the aggregate measured: 988.4e9 / 10e9 = 98.84 s > 4.4125 s
    # per node; 98.84 / 3698.84 = 2.672% idle, and named a floor (64 nodes write, 1 measured)
    assert row.extra["write_s"] == pytest.approx(98.84, rel=1e-5)
    assert row.idle_share == pytest.approx(98.84 / 3698.84, rel=1e-5)
    floor = "shared storage measured from 1 node; the job writes from 64 (64x)"
    assert floor in row.extra["floor"] and floor in finding.message and "is a floor" in finding.message


def test_pick_keeps_the_per_process_and_the_node_figures() -> None:
    rs = _records(2)
    r = pick(rs.io, "torch.save")
    assert r is not None
    assert (r.per_writer_GBps, r.node_GBps, r.node_writers) == (0.48, 3.5, 8)
    # the aggregate: the widest measurement, fio's 2 x 10 GB/s
    assert (r.aggregate_GBps, r.nodes_measured, r.serialise_GBps) == (20.0, 2, None)
    # a straggler sets the node figure: a synchronous save waits for it
    slow = dataclasses.replace(rs.io[2], per_host_bw_GBps={"n00": 3.5, "n01": 2.0})
    r2 = pick([rs.io[0], rs.io[1], slow], "torch.save")
    assert r2 is not None and r2.node_GBps == 2.0
    # only one process per node and no fio: that one process's figure is the node's, a floor
    only = pick([rs.io[1]], "torch.save")
    assert only is not None and only.node_GBps == 0.48 and "(a floor)" in only.note
    dcp = parse_workload({"preset": "llama-70b", "checkpoint": {"format": "dcp"}}, "w.yaml")
    assert dcp.checkpoint is not None and pick(rs.io[1:], dcp.checkpoint.format) is None


def test_llama70b_from_fio_alone_is_not_held_to_one_serialising_stream() -> None:
    """Only fio measured (64 nodes at 10 GB/s each): the old model added 988.4e9 / 0.5e9 =
    1976.8 s of serialisation to fio's 1.544 s, 35% idle. Each rank serialises its own 1.930469e9 B
    at 0.5 GB/s, all at once: 3.860938 s, then a node's 15.44375e9 B at 10 GB/s = 1.544375 s
    (the 640 GB/s aggregate: 1.544375 s too): 5.405313 s, 5.405313 / 3605.405313 = 0.1499%."""
    rs = _records(64)
    rs.io = [r for r in rs.io if r.backend == "fio"]
    row, _ = _checkpoint(rs)
    assert row.extra["write_s"] == pytest.approx(3.860938 + 1.544375, rel=1e-5)
    assert row.idle_share == pytest.approx(5.405313 / 3605.405313, rel=1e-5)


def test_a_record_that_moved_nothing_sets_no_rate() -> None:
    rs = _records(2)
    zero = dataclasses.replace(rs.io[2], bw_GBps=0.0, per_host_bw_GBps={"n00": 0.0, "n01": 0.0})
    r = pick([rs.io[1], zero], "torch.save")
    # the zero record is left out: the one process's 0.48 GB/s is all there is (a floor)
    assert r is not None and r.node_GBps == 0.48 and r.node_writers == 1
    assert pick([zero], "torch.save") is None
