"""Golden report: fixed records (tests/data/reports/basic) -> report.md and verdict.json,
byte for byte. When the judgement's wording changes on purpose, regenerate with
STOKER_UPDATE_GOLDEN=1 and review the diff."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from reports.report_cmd import build
from tests.conftest import DATA

INPUTS = DATA / "reports" / "basic"
GOLDEN = DATA / "reports" / "golden"


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    d = tmp_path_factory.mktemp("rp_golden") / "basic"
    shutil.copytree(INPUTS, d)
    return build(d)


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("STOKER_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from the golden file (see the module docstring)"


def test_report_md_matches_golden(outcome) -> None:  # type: ignore[no-untyped-def]
    _check("report.md", outcome.markdown)


def test_verdict_json_matches_golden(outcome) -> None:  # type: ignore[no-untyped-def]
    _check("verdict.json", json.dumps(outcome.verdict, indent=2) + "\n")


def test_report_is_deterministic(outcome, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "basic"
    shutil.copytree(INPUTS, d)
    again = build(d)
    assert again.markdown == outcome.markdown and again.html == outcome.html


def test_golden_content_says_what_to_act_on_first(outcome) -> None:  # type: ignore[no-untyped-def]
    md = outcome.markdown
    assert md.index("**Verdict: FAIL**") < md.index("## Findings") < md.index("## Network sweeps")
    assert md.index("## Units and statistics") < md.index("## Environment")
    assert md.rstrip().endswith(md.splitlines()[-1])
    # the two garbled lines are counted and shown, never a crash
    assert "2 line(s) could not be read" in md and "| net.jsonl | 6 |" in md
    # a credential-looking variable never reaches the report, even from a manifest
    assert "hunter2" not in md and "hunter2" not in outcome.html and "HOME" not in md
    # the imported nccl-tests log is judged beside stoker's own records
    assert "all_reduce_perf.log" in md and "16 ranks on 2 nodes · nccl-tests" in md
    # by hand: plateau x 1G / (1G + 4M) (make_inputs.ramp) = x 0.996109
    assert "| 1G | 5,070.94 | 211.74 | 370.55 | 249.03 | 4 |" in md          # 372 (median host), 250 (gpu03)
    assert "Plateau: **35.86 GB/s** busbw at 1G = 72% of the advertised 50.00 GB/s" in md   # 36; 8 x NDR / 8
    assert "| gpu03 | gpu04 | 19.92 |" in md                                  # the slow link: 20
    v = outcome.verdict
    assert v["verdict"] == "fail" and v["skipped_lines"] == 2 and v["imported"] == ["all_reduce_perf.log"]
    assert {f["status"] for f in v["findings"]} <= {"ok", "below_spec", "starving", "no_reference", "suspect"}
