"""Hostile outputs (import, output dirs): `stoker report`, `compare` and `import`
never change a byte of a file they did not create — not the user's report.md, not the file
behind a report.html symlink, not a look-alike name — and a read-only or odd output is one
line, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reports.shared.records import to_dict
from tests.conftest import DATA, STOKER
from tests.unit.recordgen import net


def _stoker(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STOKER, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def _results(d: Path, busbw: float = 200.0, name: str = "h100") -> Path:
    d.mkdir(parents=True)
    (d / "net.jsonl").write_text(
        "".join(
            json.dumps(to_dict(net("intra-node", "all_reduce", 2**k, busbw))) + "\n" for k in range(20, 31)
        )
    )
    (d / "spec.yaml").write_text(f"name: {name}\naccelerator: h100-sxm\n")
    return d


def _snapshot(*paths: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in paths}


@pytest.mark.parametrize(
    "command,names",
    [
        ("report", ("report.md", "report.html", "verdict.json")),
        ("compare", ("compare.md", "compare.json", "compare.html")),
    ],
)
def test_case1_user_files_and_symlinks_are_never_written(
    tmp_path: Path, command: str, names: tuple[str, ...]
) -> None:
    d = _results(tmp_path / "r1")
    out = d if command == "report" else tmp_path / "cwd"
    out.mkdir(exist_ok=True)
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("the user's other file\n")
    (out / names[0]).write_text("my own notes\n")
    (out / names[1]).symlink_to(elsewhere)
    keep = _snapshot(out / names[0], elsewhere)
    args = [str(d)] if command == "report" else [str(d), str(_results(tmp_path / "r2", 300.0, "b"))]
    p = _stoker(command, *args, cwd=out)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stdout + p.stderr
    assert names[0] in p.stderr
    assert _snapshot(out / names[0], elsewhere) == keep
    assert (out / names[1]).is_symlink() and not (out / names[2]).exists()  # nothing half written
    # once the user's files are moved away, stoker writes its own, and may replace them later
    (out / names[0]).unlink()
    (out / names[1]).unlink()
    assert _stoker(command, *args, cwd=out).returncode in (0, 1)
    assert _stoker(command, *args, cwd=out).returncode in (0, 1)
    # a file of stoker's the user changed is theirs now
    (out / names[2]).write_text("edited\n")
    p = _stoker(command, *args, cwd=out)
    assert p.returncode == 2 and (out / names[2]).read_text() == "edited\n", p.stderr


def test_case8_report_md_that_is_a_directory(tmp_path: Path) -> None:
    d = _results(tmp_path / "r")
    (d / "report.md").mkdir()
    p = _stoker("report", str(d))
    assert p.returncode == 2 and "not a regular file" in p.stderr, p.stderr
    assert not (d / "report.html").exists()


@pytest.fixture
def readonly(tmp_path: Path):
    ro = tmp_path / "ro"
    src = _results(tmp_path / "src")
    shutil.copytree(src, ro)
    subprocess.run(["mount", "--bind", "-o", "ro", str(ro), str(ro)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(ro)], check=True)
    yield ro
    subprocess.run(["umount", str(ro)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="the read-only bind mount needs root")
def test_case8_read_only_output_dirs(tmp_path: Path, readonly: Path) -> None:
    p = _stoker("report", str(readonly))
    assert p.returncode == 2 and "Read-only" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    # compare's --out on a read-only mount (a dir of its own: a run's results dir is refused first)
    p = _stoker(
        "compare", str(readonly), str(_results(tmp_path / "b", 300.0, "b")), "--out", str(readonly / "cmp")
    )
    assert p.returncode == 2 and "Read-only" in p.stderr, p.stderr
    log = DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log"
    p = _stoker("import", str(log), "--out", str(readonly / "sub"))
    assert p.returncode == 2 and "Read-only" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = _stoker("inventory", "--out", str(readonly / "inv"))
    assert p.returncode == 2 and "Read-only" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    empty = tmp_path / "ro-empty"
    empty.mkdir()
    subprocess.run(["mount", "--bind", "-o", "ro", str(empty), str(empty)], check=True)
    try:
        p = _stoker("inventory", "--out", str(empty))
        assert p.returncode == 2 and "Read-only" in p.stderr and len(p.stderr.strip().splitlines()) == 1, (
            p.stderr
        )
    finally:
        subprocess.run(["umount", str(empty)], check=True)


def test_case2_import_refuses_a_dir_of_look_alike_names(tmp_path: Path) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    (d / "phases.jsonl").write_text("my phases\n")
    (d / "net.jsonl").symlink_to(tmp_path / "target")
    log = DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log"
    p = _stoker("import", str(log), "--out", str(d))
    assert p.returncode == 2 and "not made by stoker" in p.stderr, p.stderr
    assert (d / "phases.jsonl").read_text() == "my phases\n" and not (tmp_path / "target").exists()
    fresh = tmp_path / "fresh"
    assert _stoker("import", str(log), "--out", str(fresh)).returncode == 0
    assert _stoker("import", str(log), "--out", str(fresh)).returncode == 0  # its own dir: appends
