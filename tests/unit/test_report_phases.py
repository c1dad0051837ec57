"""An aborted phase (DIR/phases.jsonl, written by stoker run and the sbatch job) is named
at the top of the report and in verdict.json, so a reader knows what is missing."""

import json
import shutil
from pathlib import Path

from reports.report_cmd import build
from tests.conftest import DATA


def test_aborted_phase_is_reported(tmp_path: Path) -> None:
    for name in ("net.jsonl", "io.jsonl", "manifest.jsonl"):
        shutil.copy(DATA / "reports" / "basic" / name, tmp_path / name)
    (tmp_path / "phases.jsonl").write_text(
        json.dumps({"phase": "net-inter", "rc": 124, "elapsed_s": 31})
        + "\n"
        + json.dumps({"phase": "io", "rc": 0, "elapsed_s": 3})
        + "\n"
    )
    out = build(tmp_path)
    assert out.verdict["aborted_phases"] == ["net-inter"]
    head = out.markdown.split("## Findings")[0]
    assert "## Missing measurements" in head and "net-inter ran past its time limit after 31 s" in head
    assert "Missing measurements" in out.html and "phase io" not in out.markdown
