"""`stoker baseline` and `stoker report --baseline` at their edges: the file written only where
stoker may write, a failing run refused, a baseline that matches nothing said (records are
synthetic, from tests/unit/recordgen.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launchers.cli import main
from reports.judging.fleet.baseline_file import load
from reports.pipeline import collect
from reports.shared.records import IO_FILE, write_all
from tests.unit.recordgen import io


def results(tmp_path: Path, host: str = "n1", name: str = "acc") -> Path:
    d = tmp_path / name
    d.mkdir()
    write_all(
        d / IO_FILE,
        [
            io("checkpoint_write", "write", "/var/tmp", 3.0, scope="local", per_host={host: 3.0}),
            io("dataloader_read", "read", "/var/tmp", 1.4, scope="local", per_host={host: 1.4}),
        ],
    )
    return d


def test_baseline_writes_identity_and_rewrites_only_its_own_file(tmp_path: Path) -> None:
    d, out = results(tmp_path), tmp_path / "b.yaml"
    assert main(["baseline", str(d), "--out", str(out)]) == 0
    assert {(a.figure.procs, a.figure.backend) for a in load(out).figures} == {(8, "fio")}
    assert main(["baseline", str(d), "--out", str(out)]) == 0  # its own, unchanged: rewritten


def test_baseline_never_overwrites_a_file_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d, out = results(tmp_path), tmp_path / "b.yaml"
    out.write_text("# my hand-tuned baseline\n")
    assert main(["baseline", str(d), "--out", str(out)]) == 2
    assert out.read_text() == "# my hand-tuned baseline\n"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "was not written by stoker" in err
    # stoker's own file, edited by hand since: not overwritten either
    out.unlink()
    assert main(["baseline", str(d), "--out", str(out)]) == 0
    out.write_text(out.read_text().replace("tolerance: 0.25", "tolerance: 0.4", 1))
    edited = out.read_text()
    assert main(["baseline", str(d), "--out", str(out)]) == 2 and out.read_text() == edited


def test_a_directory_as_out_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", str(results(tmp_path)), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err


def test_a_run_whose_report_failed_needs_allow_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's own verdict.json says fail (judged with a spec not kept in DIR)."""
    d, out = results(tmp_path), tmp_path / "b.yaml"
    (d / "verdict.json").write_text(json.dumps({"verdict": "fail", "findings": []}))
    assert main(["baseline", str(d), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "verdict.json says fail" in err and "--allow-failed" in err
    assert not out.exists()
    assert main(["baseline", str(d), "--out", str(out), "--allow-failed"]) == 0


def test_report_says_when_the_baseline_matches_nothing(tmp_path: Path) -> None:
    out = tmp_path / "b.yaml"
    assert main(["baseline", str(results(tmp_path, host="n7")), "--out", str(out)]) == 0
    c = collect(results(tmp_path, host="n1", name="later"), baseline_arg=str(out))
    said = [f for f in c.verdict["findings"] if f["check"] == "baseline: matches no figure"]
    assert len(said) == 1 and "host n1 is not in the baseline (its figure is of n7)" in said[0]["message"]
    assert c.verdict["verdict"] != "fail"


def test_check_help_says_a_dry_run_still_measures(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--dry-run still measures (every step runs); only the actions" in text


def test_an_unjudged_run_is_taken_with_a_warning_in_the_file_and_on_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No spec and no reference judged its storage: written (exit 0), and said twice."""
    d, out = results(tmp_path), tmp_path / "b.yaml"
    assert main(["baseline", str(d), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("stoker baseline: warning: run ") and "was never judged" in err
    assert "# WARNING: run " in out.read_text() and "never judged" in load(out).warning
