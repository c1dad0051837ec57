"""Records are read from regular files in the results directory only: an io.jsonl or net.jsonl
that is a symlink (to another run's results, say) is refused in one line, exit 2, before
anything is judged or written, by `stoker report` and `stoker compare` alike."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from launchers.cli import main
from tests.conftest import DATA


@pytest.mark.parametrize("name", ["io.jsonl", "net.jsonl"])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_symlinked_records_file_is_refused(
    tmp_path: Path, name: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    shutil.copytree(DATA / "reports" / "basic", other)
    mine = tmp_path / "mine"
    shutil.copytree(DATA / "reports" / "basic", mine)
    (mine / name).unlink()
    (mine / name).symlink_to(other / name)
    argv = ["report", str(mine)] if command == "report" else ["compare", str(mine), str(other)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a symlink" in err[0], err
    assert not (mine / "report.md").exists()


def test_records_of_a_newer_schema_make_the_verdict_incomplete_not_pass(tmp_path: Path) -> None:
    """`schema: 2` lines are skipped (this stoker cannot read them); what they measured is not
    judged, so the verdict cannot pass on the rest: incomplete (exit 3), the line named."""
    import json

    from reports.pipeline import collect
    from tests.unit.test_setaside import passing_run

    d = passing_run(tmp_path)
    assert collect(d, scope="node").verdict["verdict"] == "pass"
    line = json.loads((d / "net.jsonl").read_text().splitlines()[0])
    with (d / "net.jsonl").open("a") as fh:
        fh.write(json.dumps({**line, "schema": 2}) + "\n")
    v = collect(d, scope="node").verdict
    assert v["verdict"] == "incomplete", v["headline"]
    assert "schema 2 not understood" in v["headline"]
