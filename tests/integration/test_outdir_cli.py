"""Real `stoker net --nproc 2` and `stoker io` into a results dir that is not theirs: one line,
exit 2, nothing in the dir changed; into their own dir of the same run: records added."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import REPO, STOKER, needs_tool

NET = [
    "net",
    "--nproc",
    "2",
    "--backend",
    "gloo",
    "--ops",
    "all_reduce",
    "-b",
    "1K",
    "-e",
    "4K",
    "--iters",
    "2",
    "--warmup",
    "1",
    "--scopes",
    "world",
]
IO = [
    "io",
    "--workloads",
    "metadata",
    "--md-files",
    "20",
    "--storm-procs",
    "1",
    "--storm-files",
    "10",
    "--no-torch",
]
LAUNCHER_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_STEP_ID",
)


def _stoker(argv: list[str], run_id: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS and k != "STOKER_RUN_ID"}
    if run_id:
        env["STOKER_RUN_ID"] = run_id
    return subprocess.run([*STOKER, *argv], capture_output=True, text=True, timeout=180, env=env, cwd=REPO)


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _refused(p: subprocess.CompletedProcess[str], says: str) -> None:
    assert p.returncode == 2, p.stderr[-2000:]
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


def test_net_refuses_a_foreign_dir_and_another_run(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "net.jsonl").write_text('{"run_id": "someone"}\n')
    before = _snapshot(theirs)
    _refused(_stoker([*NET, "--out", str(theirs)], None), "not made by stoker")
    assert _snapshot(theirs) == before

    mine = tmp_path / "mine"
    first = _stoker([*NET, "--out", str(mine)], "od-net-1")
    assert first.returncode == 0, first.stderr[-2000:]
    n = len(read_records(mine).net)
    assert n == 3  # 1K, 2K, 4K
    _refused(_stoker([*NET, "--out", str(mine)], "od-net-2"), "holds the results of run od-net-1")
    again = _stoker([*NET, "--out", str(mine)], "od-net-1")  # the same run, resumed
    assert again.returncode == 0, again.stderr[-2000:]
    assert read_records(mine).net.run_ids() == {"od-net-1"} and len(read_records(mine).net) == 2 * n


@needs_tool("fio")
def test_io_refuses_a_foreign_dir(tmp_path: Path) -> None:
    theirs, work = tmp_path / "theirs", tmp_path / "work"
    theirs.mkdir()
    work.mkdir()
    (theirs / "spec.yaml").write_text("name: their cluster\n")
    before = _snapshot(theirs)
    _refused(_stoker([*IO, "--path", str(work), "--out", str(theirs)], None), "not made by stoker")
    assert _snapshot(theirs) == before
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("bad", ["a/../../escape", ".."])
def test_io_and_net_refuse_an_escaping_run_id(tmp_path: Path, bad: str) -> None:
    for argv in ([*IO, "--path", str(tmp_path)], NET):
        _refused(_stoker(argv, bad), "STOKER_RUN_ID")
    assert list(tmp_path.iterdir()) == []
