"""judge(): records + spec + workload -> findings, verdict, expected figures, model rows."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from reports.judging.workload.workload import Workload, load_workload, parse_workload
from reports.shared.findings import ModelRow, Thresholds
from reports.shared.records import IoRecord, RecordWriter
from reports.shared.spec import parse_spec
from reports.table.read import RecordSet, read_records
from tests.unit.recordgen import flat, io, judge_records, net

SPEC = parse_spec(
    {
        "name": "h100",
        "accelerator": "h100-sxm",
        "network": {"inter_node": {"link": "ib-ndr", "count": 8}},
        "storage": [{"path": "/data", "kind": "shared", "read_GBps": 40, "write_GBps": 20}],
        "price_per_gpu_hour": 2.49,
    },
    "spec.yaml",
)
B = ("n1", "n2")


def records() -> RecordSet:
    rs = RecordSet()
    for op in ("all_reduce", "all_gather", "reduce_scatter"):
        rs.net.extend(flat("intra-node", op, 380.0) + flat("inter-node", op, 34.0, B))
    rs.io += [
        io("checkpoint_write", "write", "/data/ckpt", 18.0),
        io("dataloader_read", "read", "/data/ds", 38.0),
    ]
    return rs


def test_spec_and_workload() -> None:
    j = judge_records(records(), SPEC, load_workload("llama-70b"))
    by = {(f.component, f.check): f for f in j.findings}
    assert by[("intra-node network", "all_reduce busbw plateau")].status == "ok"  # 380 / 450 = 84%
    inter = by[("inter-node network", "all_reduce busbw plateau")]
    assert (inter.status, inter.measured, inter.expected) == ("below_spec", 34.0, 50.0)  # 68%
    assert by[("shared storage", "checkpoint_write write bandwidth")].status == "ok"  # 18 / 20 = 90%
    assert j.verdict == "fail"
    assert j.expected["intra-node network"] == 450.0 and j.expected["inter-node network"] == 50.0
    assert j.thresholds == Thresholds(network=0.80, storage=0.80)
    assert (j.spec_name, j.workload_name, j.run_id) == ("h100", "llama-70b", "r1")
    model = [f for f in j.findings if f.check.startswith("workload llama-70b")]
    assert len(model) == len(j.model) == 4  # TP, FSDP, dataloader, checkpoint
    assert {r.status for r in j.model} <= {"ok", "starving"}
    assert set(j.model_summary) >= {"compute_s", "step_s", "idle_share", "usd_per_day_lost"}
    for f in j.findings:
        assert f.message.endswith(".") and f.message.count(". ") == 0, f.message  # one sentence each


def test_model_finding_says_what_to_do_and_what_it_costs() -> None:
    rs = records()
    rs.io = [
        io("checkpoint_write", "write", "/data/ckpt", 0.2)
    ]  # 988 GB at 0.2 GB/s = 82 min per hourly checkpoint
    j = judge_records(rs, SPEC, load_workload("llama-70b"))
    (ck,) = [f for f in j.findings if "checkpoint write" in f.check]
    assert ck.status == "starving" and ck.component == "shared storage"
    assert "a day at $2.49/GPU-hour" in ck.message and "checkpoint asynchronously" in ck.message
    assert ck.extra["usd_per_day"] > 0


def test_detection_from_manifests_stands_in_for_a_spec() -> None:
    rs = records()
    hw = {
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "gpu_count": 8,
        "nic_total_GBps": 400.0,
        "nic_desc": "8 x 400 Gb/s RDMA ports (detected)",
    }
    rs.manifests = [{"kind": "manifest", "host": h, "hardware": hw} for h in B]
    j = judge_records(rs, None, None)
    assert j.expected["intra-node network"] == 450.0  # H100 -> NVLink4
    assert j.expected["inter-node network"] == 50.0  # 400 GB/s over 8 GPUs
    assert any("from hardware detection: accelerator=h100-sxm" in n for n in j.notes)
    assert j.hardware["hosts"] == 2


def test_nothing_to_compare_with_is_no_reference_and_unjudged() -> None:
    j = judge_records(records(), None, None)
    net_findings = [f for f in j.findings if f.component.endswith("network")]
    assert [f.status for f in net_findings] == ["no_reference", "no_reference"]
    assert j.verdict == "unjudged" and j.expected == {}


def test_workload_without_accelerator_is_noted() -> None:
    j = judge_records(records(), None, load_workload("llama-8b"))
    assert any("give accelerator in --spec" in n for n in j.notes)


def test_foreign_records_are_judged_the_same() -> None:
    rs = RecordSet(
        net=[net("inter-node", "all_reduce", 1 << 30, 34.0, B, backend="nccl-tests")],
        io=[io("seqwrite", "write", "/data/x", 10.0)],
    )
    j = judge_records(rs, SPEC, None)
    statuses = {(f.component, f.status) for f in j.findings}
    assert ("inter-node network", "below_spec") in statuses
    assert ("shared storage", "below_spec") in statuses  # imported fio job keeps its name; 10 / 20 = 50%


def test_skipped_lines_and_wrong_results_are_noted(tmp_path: Path) -> None:
    with RecordWriter(tmp_path / "net.jsonl") as w:
        for r in flat("intra-node", "all_reduce", 380.0) + [
            net("intra-node", "all_reduce", 1 << 31, 999.0, wrong=5)
        ]:
            w.write(r)
    with open(tmp_path / "net.jsonl", "a") as fh:
        fh.write('{"schema": 1, "kind": "net", "op": "all_red\n')
    j = judge_records(read_records(tmp_path), SPEC, None)
    assert any(n.startswith("1 unreadable line(s) skipped: net.jsonl:13 not JSON") for n in j.notes)
    assert any("1 net record(s) failed the correctness check" in n for n in j.notes)
    (intra,) = [f for f in j.findings if f.check == "all_reduce busbw plateau"]
    assert intra.measured == 380.0  # the wrong 999 GB/s is left out
    # and wrong data fails the run, naming the op and the size (never a quiet note)
    (wrong,) = [f for f in j.findings if f.status == "incorrect"]
    assert (wrong.component, wrong.check, wrong.extra["sizes_wrong"]) == (
        "intra-node network",
        "all_reduce correctness",
        [1 << 31],
    )
    assert "2,147,483,648 bytes" in wrong.message and j.verdict == "fail"


def test_a_thousand_nodes() -> None:
    hosts = tuple(f"node{i:04d}" for i in range(1000))
    rs = RecordSet()
    for g, h in enumerate(hosts):
        rs.net.extend([net("intra-node", "all_reduce", 2**k, 360.0 + (g % 7), (h,)) for k in range(26, 31)])
    rs.net.extend([net("inter-node", "all_reduce", 2**k, 45.0, hosts, ranks=8000) for k in range(26, 31)])
    j = judge_records(rs, SPEC, load_workload("llama-405b"))
    intra = next(f for f in j.findings if f.component == "intra-node network")
    assert intra.measured == 363.0  # the median of 360..366 over the groups
    assert json.dumps([f.to_dict() for f in j.findings])  # serialisable for verdict.json


def test_checkpoint_stall_takes_the_save_the_workload_makes() -> None:
    """The model takes the save of the workload's kind (never dcp's figure for a plain
    torch.save), each rank writing its shard: per process, per node and all nodes together."""
    from reports.judging.storage.savepath import SERIALISE_GBps

    def wl(fmt: str | None) -> Workload:
        ck = {"interval_minutes": 60} | ({"format": fmt} if fmt else {})
        return parse_workload({"preset": "llama-70b", "gpus": 16, "checkpoint": ck}, "w.yaml")

    def ck_row(recs: list[IoRecord], w: Workload) -> ModelRow:
        rs = records()
        rs.io = recs
        (ck,) = [r for r in judge_records(rs, SPEC, w).model if r.check.startswith("checkpoint")]
        return ck

    def rec(bw: float, per_node: float, procs: int, backend: str) -> IoRecord:
        r = io("checkpoint_write", "write", "/data/ckpt", bw, per_host={"n1": per_node, "n2": per_node})
        return dataclasses.replace(r, procs=procs, backend=backend)

    fio = rec(3.72, 1.86, 16, "fio")  # 8 writers per node on 2 nodes
    solo = rec(0.96, 0.48, 2, "torch.save")  # one process per node
    save = rec(3.0, 1.5, 16, "torch.save")  # 8 processes per node at once
    dcp = rec(2.66, 1.33, 16, "torch.dcp")
    # llama-70b: 70.6e9 x 14 B = 988.4e9 B; FSDP on 16 GPUs = 2 nodes of 8 ranks, every rank
    # its shard: 988.4e9 / 16 = 61.775e9 B each, 494.2e9 B per node
    ck = ck_row([fio, solo, save, dcp], wl(None))  # default: the plain synchronous torch.save
    # a node: min(8 x 0.48, 1.5) = 1.5 GB/s -> 494.2e9 / 1.5e9 = 329.47 s; shared storage's
    # aggregate (fio's, 2 nodes: the job's all) 988.4e9 / 3.72e9 = 265.70 s; the node sets it
    assert ck.extra["write_s"] == pytest.approx(494.2 / 1.5, rel=1e-4)
    assert ck.achieved == pytest.approx(988.4 / (494.2 / 1.5), rel=1e-4)  # 3.0 GB/s
    assert "from the torch.save records: 0.48 GB/s per torch.save process" in ck.extra["note"]
    assert ck.extra["floor"] == ""  # measured from both of the job's nodes
    # dcp and async (DCP's async_save writes as dcp does): 494.2e9 / 1.33e9 = 371.58 s
    assert ck_row([fio, solo, save, dcp], wl("dcp")).extra["write_s"] == pytest.approx(494.2 / 1.33, rel=1e-4)
    assert ck_row([fio, solo, save, dcp], wl("async")).achieved == pytest.approx(2.66, rel=1e-4)
    only_fio = ck_row([fio], wl("torch.save"))
    # each rank serialises its own shard at SERIALISE_GBps, in parallel: 61.775e9 / 0.5e9 = 123.55 s;
    # then the node's 494.2e9 B at fio's 1.86 GB/s = 265.70 s: 389.25 s in all
    assert SERIALISE_GBps["torch.save"] == 0.5
    assert only_fio.extra["write_s"] == pytest.approx(123.55 + 494.2 / 1.86, rel=1e-4)
    assert "no torch.save record: fio's 1.86 GB/s per node plus the stated overhead" in only_fio.extra["note"]
    # a save of another kind never stands in for this one
    assert ck_row([dcp], wl("torch.save")).status == "no_reference"


def test_local_checkpoint_bandwidth_scales_with_the_nodes_writing() -> None:
    """One node's local-disk figure (0.92 GB/s) stands for each of the job's 64 nodes: every
    node writes its own shards to its own disk."""
    rs = records()
    local = dataclasses.replace(
        io("checkpoint_write", "write", "/scratch/ck", 0.92, scope="local", per_host={"n1": 0.92}),
        backend="torch.save",
    )
    rs.io = [local]
    w = parse_workload({"preset": "llama-70b", "gpus": 512, "checkpoint": {"path": "/scratch/ck"}}, "w.yaml")
    (ck,) = [r for r in judge_records(rs, SPEC, w).model if r.check.startswith("checkpoint")]
    # 512 GPUs / 8 per node = 64 nodes, each writing 988.4e9 / 64 B at 0.92 GB/s to its own disk
    assert ck.extra["write_s"] == pytest.approx(988.4 / 64 / 0.92, rel=1e-4)
    assert ck.achieved == pytest.approx(0.92 * 64)
    assert "512 ranks on 64 nodes write 1.93 GB each (every rank)" in ck.extra["note"]
    assert ck.extra["floor"] == ""  # a local disk is per node: no shared aggregate to extrapolate
