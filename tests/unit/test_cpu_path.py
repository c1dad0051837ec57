"""A run on a machine without a GPU: the headline says what its figures are for, and a spec
promising GPUs and NVLink gives one hardware mismatch, not an NVLink bandwidth failure (records
synthetic: 2 gloo ranks on the CPU of host vm, whose inventory showed no GPU)."""

from __future__ import annotations

from dataclasses import replace

from reports import evidence
from reports.judging.judge import judge
from reports.shared.findings import FAILING, verdict_json
from reports.shared.spec import parse_spec
from reports.table.read import RecordSet
from tests.unit.recordgen import net

H100 = {
    "name": "h100",
    "accelerator": "H100-SXM",
    "gpus_per_node": 8,
    "network": {"intra_node": "nvlink4"},
}
NODE = {"kind": "host", "host": "vm", "component": "node", "cpus": 2}


def cpu_run(*, inventory: bool = True, device: str = "cpu") -> RecordSet:
    recs = [
        replace(net("world", "all_reduce", 2**k, 1.2, ("vm",), ranks=2, backend="gloo"), device=device)
        for k in (20, 22)
    ]
    return RecordSet(net=recs, host=[NODE] if inventory else [])


def test_a_cpu_run_with_no_spec_says_no_gpu_here_and_what_its_figures_are_for() -> None:
    j = judge(evidence.build(cpu_run()))
    assert j.verdict == "unjudged"
    assert j.headline.startswith("UNJUDGED — no GPU here: these are the CPU path's figures")
    assert "they test stoker and this machine, not a GPU cluster" in j.headline


def test_an_h100_spec_on_a_machine_without_a_gpu_is_one_mismatch_never_nvlink_advice() -> None:
    """8 x H100 with nvlink4 promised, no GPU found: one failing `gpu` finding (0 GPUs found,
    8 promised, naming both links), the 1.2 GB/s plateau shown but not compared with 450 GB/s."""
    j = judge(evidence.build(cpu_run()), parse_spec(H100, "h100.yaml"))
    failing = [f for f in j.findings if f.status in FAILING]
    assert [(f.component, f.check, f.measured, f.expected) for f in failing] == [
        ("gpu", "hardware: promised vs found", 0.0, 8.0)
    ]
    assert "8 x h100-sxm per node with nvlink4 links" in failing[0].message and failing[0].hosts == ("vm",)
    assert j.verdict == "fail" and verdict_json(j)["verdict"] != "pass"
    net_findings = [f for f in j.findings if f.component == "intra-node network"]
    assert net_findings and all(f.status == "no_reference" and f.expected is None for f in net_findings)
    assert not any("NVLink" in f.message or "nvidia-smi" in f.message for f in j.findings)
    assert "intra-node network" not in j.expected


def test_gpu_ranks_or_an_imported_log_are_not_the_cpu_path() -> None:
    """A GPU's records, or a log without stoker's inventory: judged as before (the spec's link)."""
    for rs in (cpu_run(device="cuda:0"), cpu_run(inventory=False)):
        j = judge(evidence.build(rs), parse_spec(H100, "h100.yaml"))
        assert not j.cpu_path
        assert not any(f.check == "hardware: promised vs found" for f in j.findings)
