"""judge() is the list of its judges: one context, each judge a function of it and the findings
so far, the verdict over their union; a judge added as one row reaches the verdict."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reports.judging import judge as J
from reports.shared.findings import Finding
from tests.unit.test_render_golden import INPUTS


def test_the_judges_in_their_order() -> None:
    assert [name for name, _ in J.JUDGES] == [
        "network",
        "storage",
        "culprits",
        "stability",
        "baseline",
        "node",
        "NCCL's words",
        "compute",
        "workload",
        "coverage",
        "hardware found",
        "set aside",
    ]


def test_a_judge_added_as_a_row_reaches_the_verdict(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from reports.pipeline import collect

    d = tmp_path / "basic"
    shutil.copytree(INPUTS, d)  # the golden report's records, spec and workload

    def judge_a_new_check(c: J.Context, findings: list[Finding]) -> list[Finding]:
        return [
            *findings,
            Finding(
                component="node",
                check="a new check",
                status="below_spec",
                measured=1.0,
                expected=2.0,
                unit="GB/s",
                hosts=("node0",),
                message="node0: the new check found it slow.",
            ),
        ]

    monkeypatch.setattr(J, "JUDGES", ())
    assert collect(d).verdict["findings"] == []  # no judge, no finding
    monkeypatch.setattr(J, "JUDGES", (("new", judge_a_new_check),))
    alone = collect(d).verdict
    assert [f["check"] for f in alone["findings"]] == ["a new check"]
    assert alone["verdict"] == "fail"  # the one row's below_spec finding decides it
