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
