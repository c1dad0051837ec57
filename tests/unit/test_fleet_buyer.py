"""compare as a buyer signs it: who failed, $ lost per day, GPUs fed, what limits each cluster,
what stands for more nodes than were measured, the tool's own command — every expected value
worked out by hand (reports/fleet/facts.py, ranking.py, render.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from reports.fleet.clusters import ClusterSummary
from reports.fleet.facts import Fed, RunFacts, gpus_fed, tool_advice, why_not_pass
from reports.fleet.ranking import compare, to_json
from reports.fleet.render import render_md
from reports.judging.workload.workload import Dataloader, Workload
from reports.shared.findings import Finding
from reports.table.read import NetTable, RecordSet
from tests.unit.recordgen import evidence, io, judge_records, net

# a deciding finding whose message has colons in it: the cell shows all of it
IB = (
    "inter-node all_reduce busbw plateau 18.5 GB/s at 1G is only 37% of the advertised 50 GB/s (8 x ib-ndr "
    "over 8 GPUs), under the 80% threshold: check NIC link rates (ibstat), GPUDirect RDMA and NCCL_IB_HCA"
)


def _c(name: str, price: float, verdict: str, idle: float, **kw: Any) -> ClusterSummary:
    return ClusterSummary(
        name=name,
        run=name,
        verdict=verdict,
        failing=4 if verdict == "fail" else 0,
        findings=9,
        deciding=(IB,) if verdict == "fail" else (),
        accelerator="h100-sxm",
        price_per_gpu_hour=price,
        workload="llama-70b",
        gpus=512,
        tokens_per_step=4e6,
        compute_s=8.0,
        idle_share=idle,
        idle_by_component={"data parallel": idle * 0.25, "checkpoint": idle * 0.75},
        **kw,
    )


def _facts(run: str, why: str, fed: float) -> RunFacts:
    return RunFacts(
        run=run,
        verdict="fail" if why else "pass",
        why_not_pass=why,
        fed=Fed(gpus=fed, per_node=False, floor=True, note="shared storage /data, from 1 node"),
        extrapolated=("inter-node network measured on 2 of the job's 64 nodes",),
        advice=(),
    )


def test_a_cheaper_failing_cluster_is_named_failed_beside_the_dearer_one_that_passed() -> None:
    beta = _c("neo-beta", 1.50, "fail", 0.20)
    alpha = _c("neo-alpha", 2.50, "pass", 0.10)
    why = (
        "4 failing findings, first below_spec inter-node network: all_reduce busbw plateau at 37% of 50 GB/s"
    )
    cmp = compare(
        [beta, alpha], "llama-70b", [_facts("neo-beta", why, 120.0), _facts("neo-alpha", "", 480.0)]
    )
    # by hand: $ per billion tokens = price x 512 x 8 / (1 - idle) / 3600 x 1e9 / 4e6
    beta_cost = 1.50 * 512 * 8 / 0.8 / 3600 * 1e9 / 4e6  # 533.33
    alpha_cost = 2.50 * 512 * 8 / 0.9 / 3600 * 1e9 / 4e6  # 790.12
    # the cluster that passed ranks first; the headline still names the cheaper one that failed
    assert [(r.rank, r.name) for r in cmp.ranking] == [(1, "neo-alpha"), (2, "neo-beta")]
    assert cmp.ranking[1].value == pytest.approx(beta_cost)
    head = cmp.headline[0]
    assert head.startswith(f"Cheapest per billion tokens of llama-70b: neo-beta at ${beta_cost:,.2f}")
    assert (
        f"but neo-beta failed ({why}); the cheapest that passed is neo-alpha at ${alpha_cost:,.2f}." in head
    )
    assert "3 or more runs" in cmp.headline[-1]  # one run each: ± unknown
    got = to_json(cmp)
    assert got["cheapest_passed"] == "neo-alpha"
    c = {x["name"]: x for x in got["clusters"]}
    # $ lost per day to waiting = price x 512 GPUs x 24 h x idle share
    assert c["neo-beta"]["usd_lost_per_day"] == pytest.approx(1.50 * 512 * 24 * 0.20)  # 3,686.40
    assert c["neo-alpha"]["usd_lost_per_day"] == pytest.approx(2.50 * 512 * 24 * 0.10)  # 3,072.00
    assert (c["neo-beta"]["passed"], c["neo-alpha"]["passed"]) == (False, True)
    assert c["neo-beta"]["why_not_passed"] == why and c["neo-alpha"]["why_not_passed"] is None
    assert c["neo-beta"]["gpus_fed"]["value"] == 120.0 and c["neo-beta"]["gpus_fed"]["floor"]
    assert c["neo-beta"]["limited_by"] == "checkpoint"  # 0.15 of the 0.20
    assert c["neo-beta"]["extrapolated"] == ["inter-node network measured on 2 of the job's 64 nodes"]
    md = render_md(cmp)
    beta_row = next(line for line in md.splitlines() if line.startswith("| neo-beta | fail"))
    alpha_row = next(line for line in md.splitlines() if line.startswith("| neo-alpha | pass"))
    assert "| $3,686 |" in beta_row and "| $3,072 |" in alpha_row
    assert "≥ 120 (shared storage /data" in beta_row and "≥ 480 (shared storage /data" in alpha_row
    assert "| checkpoint |" in beta_row
    assert IB in beta_row  # the whole finding, past its colons
    lost = next(r for r in got["rows"] if r["figure"] == "$ lost per day to waiting")
    assert lost["values"]["neo-beta"]["value"] == pytest.approx(3686.4)


def test_nothing_passed_is_said_in_the_same_sentence() -> None:
    cmp = compare(
        [_c("a", 1.0, "fail", 0.2), _c("b", 2.0, "incomplete", 0.2)],
        "llama-70b",
        [
            _facts("a", "1 failing finding", 1.0),
            _facts("b", "incomplete: inter-node network not measured", 1.0),
        ],
    )
    assert cmp.headline[0].endswith("; but a failed (1 failing finding); no ranked cluster passed.")
    assert cmp.headline[1].endswith("; did not pass (incomplete: inter-node network not measured).")


def test_gpus_fed_by_hand() -> None:
    """Demand 100 samples/s x 1 MB per GPU = 0.1 GB/s; shared storage 9 GB/s from 2 nodes;
    idle budget 0.1: 9 / (0.9 x 0.1) = 100 GPUs, a floor for a job of 64 GPUs on 8 nodes."""
    w = Workload(
        name="dl",
        gpus=64,
        gpus_per_node=8,
        dataloader=Dataloader(name="x", bytes_per_sample=1e6, samples_per_s_per_gpu=100.0),
        idle_budget=0.1,
    )
    recs = RecordSet(io=[io("dataloader_read", "read", "/data", 9.0)])
    j = judge_records(recs, None, w)
    fed = gpus_fed(evidence(io=recs.io), j, None, w)
    assert fed is not None and fed.gpus == pytest.approx(100.0) and fed.floor and not fed.per_node
    assert (
        # 100 GPUs fed past the job's 64: all of them, 100 / 64 = 1.6 times their demand
        fed.text.startswith(
            "all 64 of the job's GPUs: the reads keep up with ≥ 1.6x their demand (shared storage /data, 9 GB/s "
            "from 2 nodes"
        )
        and "job has 8 nodes" in fed.text
    )
    local = RecordSet(io=[io("dataloader_read", "read", "/nvme", 9.0, scope="local")])
    fed = gpus_fed(evidence(io=local.io), judge_records(local, None, w), None, w)
    # local: each node feeds its own: 4.5 GB/s per node / 0.09 = 50 per node
    assert fed is not None and fed.gpus == pytest.approx(50.0) and fed.per_node and not fed.floor


def test_the_advice_names_the_tool_the_files_came_from() -> None:
    """An nccl-tests log of one node (its inter-node sweep missing): the advice is nccl-tests' own
    command, not only stoker's."""
    recs = [net("world", "all_reduce", 2**k, 300.0, ("n1",), backend="nccl-tests") for k in range(20, 31)]
    w = Workload(name="w", params=8e9, gpus=16, gpus_per_node=8, data="ddp", compute_s=1.0)
    j = judge_records(RecordSet(net=NetTable.of(recs)), None, w)
    advice = tool_advice(evidence(net=recs), j)
    assert advice == (
        "with nccl-tests, as this run's files were: `mpirun -np 16 -N 8 all_reduce_perf -b 8 -e 8G -f 2 -g 1` "
        "on two nodes",
    )
    ev = evidence(net=[replace(r, backend="nccl") for r in recs])
    assert tool_advice(ev, j) == ()  # stoker's own records: stoker's command says it


def test_why_not_pass_is_one_clause() -> None:
    f = Finding(
        component="inter-node network",
        check="all_reduce busbw plateau",
        status="below_spec",
        measured=18.5,
        expected=50.0,
        unit="GB/s",
        hosts=(),
        message=IB,
    )
    j = judge_records(RecordSet(), None, None)
    assert why_not_pass(replace(j, verdict="fail", findings=[f])) == (
        "1 failing finding, first below_spec inter-node network: all_reduce busbw plateau at 37% of 50 GB/s"
    )
    assert why_not_pass(replace(j, verdict="pass")) == ""


def test_gpus_fed_past_the_job_is_all_of_them_with_the_headroom() -> None:
    """A figure of millions of GPUs for a 512-GPU job is headroom, not GPUs: bounded by the job."""
    note = "shared storage /data, 30 GB/s from 4 nodes"
    fed = Fed(gpus=8_453_515.0, per_node=False, floor=True, note=note, job_gpus=512, per_node_gpus=8)
    # by hand: 8,453,515 / 512 = 16,510.8 times the job's read demand
    assert fed.all_fed and fed.text == (
        f"all 512 of the job's GPUs: the reads keep up with ≥ 16,511x their demand ({note})"
    )
    few = Fed(gpus=120.0, per_node=False, floor=False, note=note, job_gpus=512, per_node_gpus=8)
    assert not few.all_fed and few.text == f"120 of the job's 512 ({note})"
    local = Fed(gpus=20.0, per_node=True, floor=False, note="local", job_gpus=512, per_node_gpus=8)
    # per node: the bound is the node's 8 GPUs; 20 / 8 = 2.5
    assert local.text == "all 8 of each node's GPUs: the reads keep up with 2.5x their demand (local)"


def test_each_failing_promise_is_reconciled_with_the_idle_it_causes() -> None:
    from reports.fleet.facts import promises
    from reports.shared.findings import ModelRow

    def finding(component: Any, check: str, measured: float, expected: float) -> Finding:
        return Finding(
            component=component,
            check=check,
            status="below_spec",
            measured=measured,
            expected=expected,
            unit="GB/s",
            hosts=(),
            message="",
        )

    def row(part: Any, component: Any, idle: float, usd: float) -> ModelRow:
        return ModelRow(
            part=part,
            component=component,
            check="",
            required=1.0,
            achieved=1.0,
            unit="GB/s",
            idle_share=idle,
            usd_per_day=usd,
            status="ok" if idle == 0 else "starving",
        )

    j = judge_records(RecordSet(), None, None)
    j = replace(
        j,
        verdict="fail",
        findings=[
            finding("inter-node network", "all_reduce busbw plateau", 36.0, 50.0),
            finding("shared storage", "checkpoint_write write bandwidth", 12.0, 20.0),
            finding("local storage", "dataloader_read read bandwidth", 6.0, 12.0),
        ],
        model=[
            row("data parallel", "inter-node network", 0.0, 0.0),
            row("dataloader", "shared storage", 0.0, 0.0),
            row("checkpoint", "shared storage", 0.0234, 716.0),
        ],
    )
    got = [p.text for p in promises(j)]
    assert got == [
        # 36 / 50 = 72%
        "inter-node network: all_reduce busbw plateau at 72% of 50 GB/s: under the promise, but this "
        "workload does not wait on it: 0.0% idle",
        # 12 / 20 = 60%; the checkpoint's row, not the dataloader's, of the same storage
        "shared storage: checkpoint_write write bandwidth at 60% of 20 GB/s: under the promise, and this "
        "workload waits on it: 2.3% idle, $716 a day",
        # no model row reads local storage
        "local storage: dataloader_read read bandwidth at 50% of 12 GB/s: under the promise, but this "
        "workload does not use it: 0.0% idle",
    ]


def test_the_assumptions_of_the_cost_are_listed() -> None:
    from reports.fleet.assumptions import assumptions
    from reports.judging.workload.workload import load_workload
    from reports.shared.spec import load_spec
    from tests.conftest import REPO

    spec = load_spec(REPO / "examples" / "spec-h100.yaml")
    rows = {a: v for a, v, _ in assumptions(load_workload("llama-70b"), {"neo-a": spec})}
    assert list(rows) == [
        "model",
        "GPUs of the job",
        "parallelism",
        "tokens per step",
        "MFU",
        "peak used",
        "overlap",
        "dataloader",
        "checkpoint",
        "idle budget",
    ]
    assert rows["MFU"].startswith("0.40 ")
    assert rows["parallelism"].startswith("data FSDP, tensor 8")
    assert rows["peak used"] == "neo-a: 989 bf16 TFLOPS (h100-sxm, catalog dense peak)"
    # 70.6e9 parameters x 14 bytes = 988.4 GB
    assert rows["checkpoint"].startswith("every 60 min, 988.4 GB (14 bytes per parameter), synchronous")
    assert rows["idle budget"].startswith("5% ")
