"""Golden report: fixed records (tests/data/reports/basic) -> report.md and verdict.json,
byte for byte. When the judgement's wording changes on purpose, regenerate with
`python -m tests.unit.test_render_golden` and review the diff: the tests only compare, so a
test run can never bless its own output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reports.pipeline import build
from tests.conftest import DATA

INPUTS = DATA / "reports" / "basic"
GOLDEN = DATA / "reports" / "golden"


def _build(parent: Path):  # type: ignore[no-untyped-def]
    d = parent / "basic"
    shutil.copytree(INPUTS, d)
    return build(d)


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    return _build(tmp_path_factory.mktemp("rp_golden"))


def _check(name: str, text: str) -> None:
    assert text == (GOLDEN / name).read_text(encoding="utf-8"), (
        f"{name} differs from the golden file (see the module docstring)"
    )


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
    # the environment is the last section, and the file ends with exactly one newline
    assert (
        md.rindex("\n## ") == md.index("\n## Environment") and md.endswith(")\n") and not md.endswith("\n\n")
    )
    # the two garbled lines are counted and shown, never a crash
    assert "2 line(s) could not be read" in md and "| net.jsonl | 6 |" in md
    # a credential-looking variable never reaches the report, even from a manifest
    assert "hunter2" not in md and "hunter2" not in outcome.html and "HOME" not in md
    # the imported nccl-tests log is judged beside stoker's own records
    assert "all_reduce_perf.log" in md and "16 ranks on 2 nodes · nccl-tests" in md
    # by hand: plateau x 1G / (1G + 4M) (make_inputs.ramp) = x 0.996109
    assert "| 1G | 5,070.94 | 211.74 | 370.55 | 249.03 | 4 |" in md  # 372 (median host), 250 (gpu03)
    assert "Plateau: **35.86 GB/s** busbw at 1G = 72% of the advertised 50.00 GB/s" in md  # 36; 8 x NDR / 8
    assert "| gpu03 | gpu04 | 19.92 |" in md  # the slow link: 20
    v = outcome.verdict
    assert v["verdict"] == "fail" and v["skipped_lines"] == 2 and v["imported"] == ["all_reduce_perf.log"]
    assert {f["status"] for f in v["findings"]} <= {"ok", "below_spec", "starving", "no_reference", "suspect"}


if __name__ == "__main__":  # the only writer of the goldens: run by hand, review the diff
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rp-golden-") as tmp:
        o = _build(Path(tmp))
    (GOLDEN / "report.md").write_text(o.markdown, encoding="utf-8")
    (GOLDEN / "verdict.json").write_text(json.dumps(o.verdict, indent=2) + "\n", encoding="utf-8")
    print(f"rewrote {GOLDEN}/report.md and verdict.json: review `git diff` before committing")
