"""Hostile scratch paths: `stoker io` never follows a symlink planted where its work dir
goes (`PATH/.stoker-<run id>`: it wrote into, and measured, another file system under PATH's
name), and `stoker inventory --out` claims its dir like net and io do."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from iobench.safety import WorkDir
from reports.shared.errors import UsageError
from tests.conftest import STOKER


def test_case3_symlinked_work_dir_is_refused(tmp_path: Path) -> None:
    path, other = tmp_path / "scratch", tmp_path / "other-fs"
    path.mkdir()
    other.mkdir()
    (path / ".stoker-r1").symlink_to(other)
    with pytest.raises(UsageError, match="symlink"):
        with WorkDir(path, "r1", "h1"):
            pass
    assert list(other.iterdir()) == []
    with WorkDir(path / "..", "r2", "h1") as wd:  # an ordinary first use still works
        assert wd.dir.is_dir() and not wd.dir.is_symlink()
    assert not (tmp_path / ".stoker-r2").exists()


def test_case3_stoker_io_refuses_in_one_line(tmp_path: Path) -> None:
    path, other = tmp_path / "scratch", tmp_path / "other-fs"
    path.mkdir()
    other.mkdir()
    (path / ".stoker-r1").symlink_to(other)
    p = subprocess.run(
        [*STOKER, "io", "--path", str(path), "--workloads", "metadata", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "STOKER_RUN_ID": "r1"},
    )
    assert p.returncode == 2 and "symlink" in p.stderr, p.stdout[-2000:] + p.stderr
    assert list(other.iterdir()) == []


def test_case2_inventory_claims_its_out_dir(tmp_path: Path) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "notes.txt").write_text("mine\n")
    p = subprocess.run([*STOKER, "inventory", "--out", str(d)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "not made by stoker" in p.stderr, p.stderr
    assert sorted(x.name for x in d.iterdir()) == ["notes.txt"]
