"""An aborted phase (DIR/phases.jsonl, written by stoker run and the sbatch job) is named
at the top of the report and in verdict.json, so a reader knows what is missing."""

import json
import shutil
from pathlib import Path

import pytest

from reports.pipeline import build
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


def _cancelled_soak(d: Path, soak_log: bool, soak_line: bool = False) -> Path:
    """A Slurm soak's results dir, hand-written in the sbatch job's formats: the inventory's
    phase line and log, three passes of world records (recordgen, with `soak_pass`), the soak
    phase's log as tee creates it when the phase starts, and no phase line for the soak: the
    job was cancelled and killed before `stoker phase-record` ran."""
    from dataclasses import replace

    from reports.shared.records import NET_FILE, write_all
    from tests.unit.recordgen import net

    recs = [
        replace(net("world", "all_reduce", 2**26, 40.0, ("n1", "n2"), ranks=16), extra={"soak_pass": k})
        for k in (1, 2, 3)
    ]
    write_all(d / NET_FILE, recs)
    lines = ['{"phase":"inventory","rc":0,"elapsed_s":2,"log":"phase-inventory.log"}\n']
    if soak_line:
        lines.append('{"phase":"soak","rc":0,"elapsed_s":600,"log":"phase-soak.log"}\n')
    (d / "phases.jsonl").write_text("".join(lines))
    (d / "phase-inventory.log").write_text("stoker inventory: n1: 8 GPUs, 8 NICs\n")
    if soak_log:
        (d / "phase-soak.log").write_text(
            "soak pass 1: 2.8 s, lowest busbw GB/s: world 40.0; error counters: none\n"
            "soak pass 2: 2.8 s, lowest busbw GB/s: world 40.0; error counters: none\n"
            "soak pass 3: 2.8 s, lowest busbw GB/s: world 40.0; error counters: none\n"
        )
    return d


def test_a_phase_that_started_and_never_ended_makes_the_run_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from launchers.cli import main

    d = _cancelled_soak(tmp_path, soak_log=True)
    assert main(["report", str(d)]) == 3  # was 0, unjudged: a false pass
    verdict = json.loads((d / "verdict.json").read_text())
    assert verdict["verdict"] == "incomplete"
    assert verdict["aborted_phases"] == ["soak"]
    assert any(
        m.startswith("phase soak started (phase-soak.log is in the results dir) but never ended")
        for m in verdict["missing_phases"]
    )
    assert "phase soak started" in (d / "report.md").read_text().split("## Findings")[0]


def test_soak_records_without_the_soaks_end_are_incomplete(tmp_path: Path) -> None:
    """No log either (a launcher that keeps none): the soak's records and the phase lines
    without the soak's say it."""
    from launchers.cli import main

    d = _cancelled_soak(tmp_path, soak_log=False)
    assert main(["report", str(d)]) == 3
    verdict = json.loads((d / "verdict.json").read_text())
    assert verdict["aborted_phases"] == ["soak"]
    assert any("phase soak never ended: its records stop at pass 3" in m for m in verdict["missing_phases"])


def test_a_soak_that_ended_is_not_incomplete(tmp_path: Path) -> None:
    from launchers.cli import main

    d = _cancelled_soak(tmp_path, soak_log=True, soak_line=True)
    assert main(["report", str(d)]) == 0  # unjudged (no spec), as before
    verdict = json.loads((d / "verdict.json").read_text())
    assert verdict["verdict"] == "unjudged" and verdict["aborted_phases"] == []


def test_unfinished_phases_by_hand() -> None:
    from reports.shared.phases import unfinished

    ended = [{"phase": "inventory", "rc": 0, "log": "phase-inventory.log"}]
    files = ["net.jsonl", "phase-inventory.log", "phase-storage.log", "phase-.log", "phases.jsonl"]
    assert [n for n, _ in unfinished(ended, files, 0)] == ["storage"]
    # `stoker soak`'s own phases are `network K..`: a line of one is the soak's
    assert unfinished([{"phase": "network 1..", "rc": 0}], ["net.jsonl"], 5) == []
    assert [n for n, _ in unfinished(ended, ["net.jsonl"], 5)] == ["soak"]
    assert unfinished([], ["net.jsonl"], 5) == []  # no phase lines: records from stoker net itself
