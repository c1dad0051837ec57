"""The four verdicts (docs/contract.md verdict.json): which one, its words, its exit code, and
which phases make a run incomplete. Each case is built by hand, so a rule that drifts fails."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from reports.commands.report_cmd import main
from reports.pipeline import build, missing_phases
from reports.shared.findings import EXIT_CODES, Finding, headline, verdict_of
from tests.conftest import DATA


def f(status: str) -> Finding:
    return Finding(
        component="local storage",
        check="checkpoint_write",
        status=status,
        measured=1.0,
        expected=2.0,
        unit="GB/s",
        hosts=("n1",),
        message="-",
    )


@pytest.mark.parametrize(
    ("statuses", "missing", "want"),
    [
        (["ok"], [], "pass"),
        (["ok", "no_reference"], [], "pass"),
        (["ok", "below_spec"], [], "fail"),
        (["starving"], ["phase storage ended with exit code 1"], "fail"),  # fail outranks incomplete
        (["ok"], ["phase pairs ended with exit code 3"], "incomplete"),
        ([], ["phase network ended with exit code 1"], "incomplete"),
        (["no_reference"] * 4, [], "unjudged"),
        ([], [], "unjudged"),  # nothing measured, nothing judged
        (["ok", "suspect"], [], "unjudged"),  # never PASS
        (["suspect"], ["phase storage ran past its time limit after 9 s"], "incomplete"),
    ],
)
def test_verdict_of(statuses: list[str], missing: list[str], want: str) -> None:
    assert verdict_of([f(s) for s in statuses], missing) == want


def test_exit_codes_are_the_contracts() -> None:
    assert EXIT_CODES == {"pass": 0, "fail": 1, "incomplete": 3, "unjudged": 0}


def test_headlines_say_pass_only_for_pass() -> None:
    assert headline("pass", [f("ok")]) == "PASS — no finding is below spec or starving."
    assert headline("unjudged", [f("no_reference")] * 4) == (
        "UNJUDGED — nothing was judged: 4 checks had no reference — give --spec "
        "(or put spec.yaml in the results directory)."
    )
    assert headline("unjudged", [f("ok"), f("suspect")]).startswith("UNJUDGED — 1 finding is suspect")
    assert headline(
        "incomplete", [], ["phase pairs ended with exit code 3 after 5 s: x", "phase storage y"]
    ) == ("INCOMPLETE — phase pairs ended with exit code 3 after 5 s: x (and 1 more).")
    assert headline("fail", [f("below_spec"), f("starving"), f("below_spec"), f("ok")]) == (
        "FAIL — 3 findings to act on (2 below_spec, 1 starving)."
    )
    for v in ("fail", "incomplete", "unjudged"):
        assert "PASS" not in headline(v, [f("ok")], ["phase x"])


def test_missing_phases(tmp_path: Path) -> None:
    # the sbatch job keeps each phase's output in DIR; srun's labels and its own chatter are not the reason
    (tmp_path / "phase-inter-node.log").write_text(
        "0: stoker: loading\n1: stoker: the srun step environment does not say how many ranks there are\n"
        "srun: error: n1: task 0: Exited with exit code 2\n\n"
    )
    phases = [
        {"phase": "intra-node", "rc": 0, "elapsed_s": 4},  # wrote intra-node records
        {"phase": "inter-node", "rc": 2, "elapsed_s": 5, "log": "phase-inter-node.log"},
        {"phase": "pairs", "rc": 0, "elapsed_s": 3},  # clean, but no pair records
        {"phase": "storage", "rc": 124, "elapsed_s": 200, "error": "fio: io_u error on file x"},
        {"phase": "report", "rc": 1, "elapsed_s": 1},  # an earlier report's fail: not a measurement
    ]
    assert missing_phases(tmp_path, phases, {"intra-node"}, io_count=3) == [
        "phase inter-node ended with exit code 2 after 5 s: stoker: the srun step environment does not say how many ranks there are",
        "phase pairs ended cleanly but wrote no network records",
        "phase storage ran past its time limit after 200 s: fio: io_u error on file x",
    ]
    other = tmp_path / "other"  # a dir of no phase log: phase-inter-node.log with no line is unfinished
    other.mkdir()
    assert missing_phases(other, [{"phase": "storage", "rc": 0}], set(), io_count=0) == [
        "phase storage ended cleanly but wrote no storage records"
    ]
    # a log name is only ever a file in DIR
    assert missing_phases(
        other, [{"phase": "pairs", "rc": 1, "elapsed_s": 1, "log": "../etc/passwd"}], set(), 0
    ) == ["phase pairs ended with exit code 1 after 1 s"]


def _dir(tmp_path: Path, phases: list[dict[str, object]]) -> Path:
    # storage records only: with no spec nothing is below spec, so the abort decides
    shutil.copy(DATA / "reports" / "basic" / "io.jsonl", tmp_path / "io.jsonl")
    (tmp_path / "phases.jsonl").write_text("".join(json.dumps(p) + "\n" for p in phases))
    return tmp_path


def test_an_aborted_phase_is_the_reports_first_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _dir(
        tmp_path, [{"phase": "storage", "rc": 3, "elapsed_s": 7, "error": "fio: No space left on device"}]
    )
    out = build(d)
    assert out.verdict["verdict"] == "incomplete"
    assert out.markdown.splitlines()[0].endswith(
        "— INCOMPLETE: phase storage ended with exit code 3 after 7 s: fio: No space left on device"
    )
    assert out.verdict["missing_phases"] == [
        "phase storage ended with exit code 3 after 7 s: fio: No space left on device"
    ]
    rc = main(argparse.Namespace(dir=str(d), spec=None, workload=None, fail_unjudged=True))
    assert rc == 3 and "verdict: incomplete" in capsys.readouterr().out


def test_unjudged_exits_0_unless_the_acceptance_asks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _dir(tmp_path, [{"phase": "storage", "rc": 0, "elapsed_s": 7}])
    out = build(d)
    assert out.verdict["verdict"] == "unjudged", out.verdict["findings"]
    assert "PASS" not in out.markdown and "**Verdict: UNJUDGED** — nothing was judged" in out.markdown
    assert main(argparse.Namespace(dir=str(d), spec=None, workload=None, fail_unjudged=False)) == 0
    assert main(argparse.Namespace(dir=str(d), spec=None, workload=None, fail_unjudged=True)) == 1
    assert "give --spec" in capsys.readouterr().err
