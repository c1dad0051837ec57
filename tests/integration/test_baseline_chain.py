"""The first run to a check on this machine, for real: `stoker run --out R` (the default: the
quick profile on a CPU machine, storage in R's own scratch dir, removed at the end), `stoker
baseline R --out b.yaml` (unjudged: taken, with the warning), `stoker check --baseline b.yaml` on
the unchanged machine: exit 0, silent, its disk test in a scratch dir of its own that met the
run's by role (no figure `not comparable`). About 3 minutes on a 2-core VM."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, STOKER, needs_tool

# alone: the check's disk figures are held to the run's within the baseline's tolerance; another
# bed test's fio or ranks on the same 2 cores meanwhile moved them 31-37% in CI (a loaded
# machine, not a regression)
pytestmark = [needs_tool("fio"), pytest.mark.alone]


def stoker(*argv: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STOKER, *argv], capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "STOKER_HOSTNAME": "node-a"})  # fmt: skip


def test_run_baseline_check_on_the_unchanged_machine(tmp_path: Path) -> None:
    r = stoker("run", "--out", "R", cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "no GPU here" in r.stdout  # the headline says what the CPU path's figures are for
    assert not list((tmp_path / "R").glob(".io-scratch-*"))  # the run's scratch is gone
    # --tolerance 0.5 (the most it takes): this VM's virtio disk moves by a third or more between
    # minutes with nothing changed (direct writes 4.79 GB/s in the run, 2.79 and 3.21 in the
    # check's measure and its confirmation a minute later, alone, after the validation beds'
    # writes; 31-37% under another bed's load): the chain is under test here, not this disk. A
    # real regression is test_check_like_for_like.py's (a throttled disk, 1/4 of its rate)
    b = stoker("baseline", "R", "--out", "b.yaml", "--tolerance", "0.5", cwd=tmp_path, timeout=300)
    assert b.returncode == 0, b.stderr
    assert "warning: run " in b.stderr and "never judged" in b.stderr
    doc = yaml.safe_load((tmp_path / "b.yaml").read_text())
    assert "never judged" in doc["warning"]
    disk = [e for e in doc["figures"] if e["kind"] == "node-storage" and e["backend"] == "fio"]
    assert disk and {(e["role"], e["scope"]) for e in disk} == {("scratch", "local")}
    # --limit 120: the check's steps on a loaded shared 2-core VM (load 10 and more from other beds)
    # take past the default 50 s meant for an idle node; the chain, not the time, is under test here
    c = stoker("check", "--baseline", "b.yaml", "--out", "C", "--limit", "120", cwd=tmp_path, timeout=200)
    assert (c.returncode, c.stdout) == (0, ""), c.stdout + c.stderr
    measured = {e["path"] for e in map(__import__("json").loads, (tmp_path / "C" / "io.jsonl").open())}
    assert all("/.io-scratch-" in p for p in measured), measured  # its own scratch, removed after
    assert not any(Path(p).exists() for p in measured)
