"""A results dir is new, or stoker's own of the same run, or refused in one line; a refusal
changes nothing in the dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchers import cli
from reports.shared.errors import UsageError
from reports.shared.outdir import MARKER, SUBMITTED, claim, mark_submitted, owner


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_new_dir_is_created_and_marked(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    claim(out, "run-1")
    assert (out / MARKER).read_text() == "run-1\n" and owner(out) == "run-1"
    assert [p.name for p in out.iterdir()] == [MARKER]


def test_empty_dir_is_claimed(tmp_path: Path) -> None:
    claim(tmp_path, "run-1")
    assert owner(tmp_path) == "run-1"


def test_same_run_resumes(tmp_path: Path) -> None:
    claim(tmp_path, "run-1")
    (tmp_path / "net.jsonl").write_text("{}\n")
    claim(tmp_path, "run-1")  # the storage phase after the network phase
    assert owner(tmp_path) == "run-1"


def test_another_runs_dir_is_refused(tmp_path: Path) -> None:
    claim(tmp_path, "run-1")
    (tmp_path / "net.jsonl").write_text('{"run_id": "run-1"}\n')
    before = _snapshot(tmp_path)
    with pytest.raises(UsageError, match=r"holds the results of run run-1.*STOKER_RUN_ID=run-1"):
        claim(tmp_path, "run-2")
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("names", [["spec.yaml"], ["notes.txt", "spec.yaml"], ["net.jsonl"], ["sub/"]])
def test_foreign_dir_is_refused_untouched(tmp_path: Path, names: list[str]) -> None:
    for n in names:
        if n.endswith("/"):
            (tmp_path / n).mkdir()
        else:
            (tmp_path / n).write_text("someone's\n")
    before = _snapshot(tmp_path)
    with pytest.raises(UsageError, match="not made by stoker") as exc:
        claim(tmp_path, "run-1")
    assert "\n" not in str(exc.value)
    assert _snapshot(tmp_path) == before and not (tmp_path / MARKER).exists()


NAMES = (".stoker-run-id", ".stoker-seen-0", ".shared-check-12", "phases.jsonl", "phase-intra-node.log")


def test_look_alike_names_do_not_make_a_dir_stokers(tmp_path: Path) -> None:
    # ownership is the marker, never a name: none of these makes a dir stoker's own
    for n in (*NAMES, "phase-1-notes.md", ".stoker-config"):
        (tmp_path / n).write_text("the user's\n")
    (tmp_path / "io-scratch").mkdir()
    before = _snapshot(tmp_path)
    with pytest.raises(UsageError, match="not made by stoker"):
        claim(tmp_path, "run-1")
    assert _snapshot(tmp_path) == before


def test_launchers_files_in_their_marked_dir(tmp_path: Path) -> None:
    # torchrun.sh, mpirun.sh and the Slurm job mark OUT "(submitted)" before writing these
    (tmp_path / MARKER).write_text(SUBMITTED + "\n")
    for n in NAMES:
        (tmp_path / n).write_text("x\n")
    (tmp_path / "io-scratch").mkdir()
    claim(tmp_path, "torchrun-1")
    assert owner(tmp_path) == "torchrun-1"


def test_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(UsageError, match="is a file"):
        claim(f, "run-1")


def test_submitted_dir_is_claimed_by_the_job(tmp_path: Path) -> None:
    mark_submitted(tmp_path)
    (tmp_path / "acceptance.sbatch").write_text("#!/bin/bash\n")
    (tmp_path / "spec.yaml").write_text("name: x\n")
    assert owner(tmp_path) == SUBMITTED
    claim(tmp_path, "slurm-42")
    assert owner(tmp_path) == "slurm-42"
    with pytest.raises(UsageError, match="slurm-42"):
        mark_submitted(tmp_path)  # a second submit into a dir a job has used


def test_submit_refuses_a_foreign_dir(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text("theirs\n")
    with pytest.raises(UsageError, match="not made by stoker"):
        mark_submitted(tmp_path)


def test_bad_run_id_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="run id"):
        claim(tmp_path / "new", "../x")
    assert not (tmp_path / "new").exists()


def test_stoker_run_keeps_someones_spec_and_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the case: --out into a dir holding their spec.yaml and another run's net.jsonl
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "spec.yaml").write_text("name: their cluster\n")
    (theirs / "net.jsonl").write_text('{"run_id": "other"}\n')
    (tmp_path / "mine.yaml").write_text("name: mine\n")
    before = _snapshot(theirs)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STOKER_RUN_ID", raising=False)
    rc = cli.main(["run", "--out", str(theirs), "--spec", "mine.yaml"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "not made by stoker" in err
    assert _snapshot(theirs) == before


def test_a_tee_log_the_shell_made_is_named_and_a_path_beside_suggested(tmp_path: Path) -> None:
    # `mkdir R && stoker run --out R 2>&1 | tee R/run.log`: the shell opened R/run.log first
    r = tmp_path / "R"
    r.mkdir()
    (r / "run.log").write_text("")
    with pytest.raises(UsageError) as e:
        claim(r, "20261124T000000Z-abc")
    msg = str(e.value)
    assert "it holds run.log" in msg and f"| tee {r}.log" in msg and "\n" not in msg
    assert (r / "run.log").read_text() == "" and not (r / ".stoker-run").exists()  # untouched
    (r / "notes.md").write_text("mine")  # not only a log: no such hint
    with pytest.raises(UsageError) as e:
        claim(r, "20261124T000000Z-abc")
    assert "| tee" not in str(e.value)
