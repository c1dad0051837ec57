"""What a finding says beside its status, through reports.judging.judge.judge(): the fields and
words a user or a script reads in verdict.json and the report. Each test kills a mutant of
benchmarks/mutation.py's sample that the verdict-level tests left alive (docs/testing.md);
every expected value is written by hand here."""

from __future__ import annotations

from reports.judging.judge import judge
from reports.judging.spec import parse_spec
from tests.unit.recordgen import evidence, flat


def test_an_intra_node_finding_names_no_conversion() -> None:
    # only an inter-node sweep's figure is converted to a NIC's wire rate and says so in
    # `judged`; an intra-node plateau is judged as recorded (79 of 100 GB/s: below 80%)
    spec = parse_spec({"name": "s", "network": {"intra_node": {"GBps": 100}}}, "spec.yaml")
    (f,) = judge(evidence(flat("intra-node", "all_reduce", 79.0)), spec, scope="node").findings
    assert (f.component, f.status, f.measured, f.expected) == (
        "intra-node network",
        "below_spec",
        79.0,
        100.0,
    )
    assert "judged" not in f.extra, f.extra


def test_the_verdict_records_the_specs_own_thresholds() -> None:
    # the spec lowers the network share to 70%: 75 of 100 GB/s passes, and verdict.json's
    # thresholds say 0.7 (storage keeps the documented 0.8)
    spec = parse_spec(
        {"name": "s", "thresholds": {"network": 0.7}, "network": {"intra_node": {"GBps": 100}}}, "spec.yaml"
    )
    j = judge(evidence(flat("intra-node", "all_reduce", 75.0)), spec, scope="node")
    assert j.verdict == "pass", j.headline
    assert j.thresholds == {"network": 0.7, "storage": 0.8}
