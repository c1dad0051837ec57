"""Coverage in the verdict: every promise of the spec measured, or named.

The scenario of the issue: a spec for 8 x H100 per node with an 8 x ib-ndr inter-node link and a
shared /data path, judged on a one-node CPU run whose intra-node figure met the spec. It passed
with exit 0; it must be `incomplete` (exit 3) naming the inter-node link, /data and the GPU count.
Records are synthetic (recordgen), the results directory and `stoker report` real.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reports.commands.report_cmd import main
from reports.judging import coverage
from reports.pipeline import build
from reports.shared.records import write_all
from reports.shared.spec import parse_spec
from tests.unit.recordgen import curves, io, net


def assess(spec, net_recs, io_recs, hardware, **kw):  # type: ignore[no-untyped-def]
    """Coverage as the judgement assesses it, from the evidence of these records."""
    judged, _ = curves(net_recs)
    nodes = max((r.nodes for r in net_recs), default=0)
    return coverage.assess(spec, {sc for sc, _ in judged}, nodes, io_recs, hardware, **kw)


SPEC = """\
name: h100-acceptance
accelerator: H100-SXM
gpus_per_node: 8
network:
  intra_node: {GBps: 1}
  inter_node: {link: ib-ndr, count: 8}
storage:
  - {path: /data, kind: shared, read_GBps: 40, write_GBps: 20}
price_per_gpu_hour: 2.49
"""
H100 = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8}


def _manifest(d: Path, hardware: dict[str, object]) -> None:
    """What detection found on host n1 (hand-written: the keys netbench/inventory/hardware.py writes)."""
    man = {"schema": 1, "kind": "manifest", "tool": "net", "run_id": "r1", "host": "n1", "hardware": hardware}
    (d / "manifest.jsonl").write_text(json.dumps(man) + "\n")


def _run_dir(tmp: Path, hardware: dict[str, object] | None = None) -> Path:
    """A one-node CPU run: a 2-rank gloo sweep at 0.9 GB/s (meets the spec's 1 GB/s at the 0.8
    threshold), storage in the run's throwaway scratch dir, not /data."""
    d = tmp / "run"
    d.mkdir()
    write_all(
        d / "net.jsonl",
        [net("world", "all_reduce", 2**k, 0.9, ("n1",), ranks=2, backend="gloo") for k in range(20, 27)],
    )
    scratch = str(d / ".io-scratch-abcd")
    write_all(
        d / "io.jsonl",
        [io("checkpoint_write", "write", scratch, 1.0, scope="local", per_host={"n1": 1.0}, runtime_s=3)],
    )
    if hardware is not None:
        _manifest(d, hardware)
    (d / "spec.yaml").write_text(SPEC)
    return d


def test_a_one_node_cpu_run_does_not_pass_a_cluster_spec(tmp_path: Path) -> None:
    d = _run_dir(tmp_path)
    out = build(d)
    v = out.verdict
    assert v["verdict"] == "incomplete", v["headline"]
    whats = [u["what"] for u in v["unmeasured"]]
    assert whats == [
        "inter-node network: 8 x ib-ndr per node",
        "shared storage /data",
        "GPUs per node: 8 x h100-sxm",
    ]
    assert all(u["why"] and u["how"] for u in v["unmeasured"])
    assert "stoker submit --nodes 2" in v["unmeasured"][0]["how"]
    assert "the run had 1 node" in v["unmeasured"][0]["why"]
    assert "0 seen" in v["unmeasured"][2]["why"]
    # the intra-node promise was measured and met: a line of coverage, not a missing one
    assert {"what": "intra-node network: 1 GB/s", "status": "measured", "why": "", "how": ""} in v["coverage"]
    assert v["missing_phases"] == []
    head = out.markdown.splitlines()[:12]
    assert head[0].endswith(
        "INCOMPLETE: inter-node network: 8 x ib-ndr per node not measured: the run had 1 node; "
        "crossing nodes needs 2 or more"
    )
    text = "\n".join(head)
    assert "shared storage /data not measured" in text and "GPUs per node: 8 x h100-sxm not measured" in text
    assert main(argparse.Namespace(dir=str(d), spec=None, workload=None, fail_unjudged=False)) == 3
    assert json.loads((d / "verdict.json").read_text())["verdict"] == "incomplete"


def test_node_scope_passes_honestly_and_names_what_it_did_not_cover(tmp_path: Path) -> None:
    d = _run_dir(tmp_path, H100)
    assert build(d).verdict["verdict"] == "incomplete"  # cluster scope: the default
    out = build(d, scope="node")
    v = out.verdict
    assert v["verdict"] == "pass", v["headline"]
    assert v["scope"] == "node" and v["unmeasured"] == []
    assert [n["what"] for n in v["not_covered"]] == [
        "inter-node network: 8 x ib-ndr per node",
        "shared storage /data",
    ]
    head = "\n".join(out.markdown.splitlines()[:14])
    assert "## Not covered (scope: node)" in head and "- shared storage /data: --scope node;" in head
    assert "<h2>Not covered (scope: node)</h2>" in out.html
    rc = main(argparse.Namespace(dir=str(d), spec=None, workload=None, fail_unjudged=False, scope="node"))
    assert rc == 0


def test_gpus_seen_against_the_promise() -> None:
    spec = parse_spec({"accelerator": "H100-SXM", "gpus_per_node": 8}, "spec.yaml")
    cov = assess(spec, [], [], {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 4})
    assert [ln.status for ln in cov.lines if ln.what.startswith("GPUs")] == ["not_met"]
    assert [(f.check, f.measured, f.expected, f.status) for f in cov.findings] == [
        ("GPU count", 4.0, 8.0, "below_spec")
    ]
    cov = assess(spec, [], [], {"gpu_model": "NVIDIA A100-SXM4-80GB", "gpu_count": 8})
    assert [f.check for f in cov.findings] == ["GPU model"]
    assert assess(spec, [], [], {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8}).findings == ()


def test_one_gpu_per_node_has_no_intra_node_link_to_measure() -> None:
    spec = parse_spec(
        {"gpus_per_node": 1, "network": {"intra_node": {"GBps": 450}, "inter_node": {"GBps": 50}}}, "s.yaml"
    )
    recs = [net("world", "all_reduce", 2**k, 40.0, ("n1", "n2"), ranks=2) for k in range(20, 27)]
    cov = assess(spec, recs, [], {})
    assert [(ln.what, ln.status) for ln in cov.lines if "network" in ln.what] == [
        ("intra-node network: 450 GB/s", "nothing_to_measure"),
        ("inter-node network: 50 GB/s per node", "measured"),
    ]
    assert [u.what for u in cov.unmeasured] == ["GPUs per node: 1 x GPU"]  # no host showed its GPU


def test_a_skipped_phase_is_named_as_not_measured() -> None:
    spec = parse_spec({"storage": [{"path": "/scratch", "kind": "local", "write_GBps": 2}]}, "s.yaml")
    cov = assess(spec, [], [], {}, skipped={"storage"})
    assert [(u.what, u.why) for u in cov.unmeasured] == [
        ("local storage /scratch", "the storage phase was left out (--skip storage)")
    ]
    cov = assess(None, [], [], {}, skipped={"storage"})
    assert [(ln.what, ln.status, ln.why) for ln in cov.lines] == [
        ("storage phase", "out_of_scope", "left out (--skip storage)")
    ]


def test_two_nodes_with_one_gpu_each_are_not_incomplete(tmp_path: Path) -> None:
    """The 2-node SkyPilot job with 1 GPU per node: its intra-node phase ends cleanly with no
    records, as it must; it ended INCOMPLETE ("phase intra-node ... wrote no network records")."""
    d = tmp_path / "sky"
    d.mkdir()
    write_all(
        d / "net.jsonl",
        [net("world", "all_reduce", 2**k, 40.0, ("n1", "n2"), ranks=2) for k in range(20, 27)],
    )
    phases = [
        {"phase": "intra-node", "rc": 0, "elapsed_s": 2},
        {"phase": "inter-node", "rc": 0, "elapsed_s": 9},
    ]
    (d / "phases.jsonl").write_text("".join(json.dumps(p) + "\n" for p in phases))
    (d / "spec.yaml").write_text("name: sky\ngpus_per_node: 1\nnetwork:\n  inter_node: {GBps: 50}\n")
    _manifest(d, {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 1})
    v = build(d).verdict
    assert v["missing_phases"] == [] and v["unmeasured"] == [], v
    assert v["verdict"] == "pass", v["headline"]
