"""The rendered sbatch job when a phase loses a node: run by bash with a fake srun (runs the
program once, here, and notes its options), a fake scontrol and a fake stoker whose first
inter-node phase ends as srun reports a node's tasks killed; `stoker set-aside --phase
--step-log` and `stoker phase-record` are the real ones. The Slurm bed shows the same with real
processes (tests/integration/test_slurm_lost_node.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from launchers.profiles import get_profile
from launchers.slurm.sbatch import SbatchConfig
from tests.conftest import REPO
from tests.unit.test_sbatch import fake_bin, run_rendered

# srun OPTIONS... PROGRAM ARGS...: notes its options (and SLURM_OVERLAP), then runs the program once, here
FAKE_SRUN = """#!/bin/sh
opts=
while [ $# -gt 0 ]; do case "$1" in -*) opts="$opts $1"; shift ;; *) break ;; esac; done
echo "$1 $2 $3:$opts${SLURM_OVERLAP:+ (SLURM_OVERLAP)}" >> "$MARKS/srun"
exec "$@"
"""
# the first inter-node phase: n2's tasks are killed mid-sweep (srun's line as on the Slurm bed,
# tests/unit/test_lost_step.py; task 2's own line hand-written in netbench's format)
FAKE_STOKER = """#!/bin/sh
case "$1" in
  net) case "$*" in *world,inter-node*)
      if [ ! -e "$MARKS/lost" ]; then
        : > "$MARKS/lost"
        echo "2: stoker net: rank 2 of 6 on n2: sweeping world"
        echo "srun: error: n2: tasks 2-3: Killed" >&2
        exit 137
      fi ;;
    esac
    exit 0 ;;
  io|inventory|compute|preflight) exit 0 ;;
  set-aside) case "$*" in *--phase*) shift; exec "$STOKER_PY" -m launchers.cli set-aside "$@" ;; esac
    echo n1,n2,n3; exit 0 ;;  # every node passed its preflight
  fingerprint) for n in n1 n2 n3; do echo "$n 0123456789abcdef /venv/bin/python"; done; exit 0 ;;
  report) exit 1 ;;  # the set-aside node fails the verdict
  phase-record) shift; exec "$STOKER_PY" -m launchers.commands.phase_record_cmd "$@" ;;
esac
exit 99
"""


def run_job(tmp_path: Path, min_nodes: int) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    bin_dir, marks, out = fake_bin(tmp_path, FAKE_SRUN, FAKE_STOKER), tmp_path / "marks", tmp_path / "out"
    marks.mkdir()
    cfg = SbatchConfig(
        nodes=3,
        ranks_per_node=2,
        gpus_per_node=0,
        profile=get_profile("quick"),
        out=str(out),
        backend="gloo",
        local_path=str(tmp_path / "local"),
        stoker=("stoker",),
        min_nodes=min_nodes,
    )
    p = run_rendered(cfg, bin_dir, tmp_path, timeout=120, PYTHONPATH=str(REPO), MARKS=str(marks))
    return p, out, marks


def steps(marks: Path, what: str) -> list[str]:
    return [x for x in (marks / "srun").read_text().splitlines() if x.startswith(what)]


def test_a_lost_node_is_set_aside_and_the_phase_runs_again_on_the_rest(tmp_path: Path) -> None:
    p, out, marks = run_job(tmp_path, min_nodes=2)
    assert p.returncode == 1, p.stdout + p.stderr  # the report's fail
    (line,) = [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()]
    assert (line["host"], line["stage"], line["phase"]) == ("n2", "phase", "inter-node")
    assert line["reason"].endswith("its last error: stoker net: rank 2 of 6 on n2: sweeping world")
    assert "2 nodes go on after phase inter-node: n1,n3; it runs again on them" in p.stdout
    ran = [
        (x["phase"], x["rc"], x["log"])
        for x in map(json.loads, (out / "phases.jsonl").read_text().splitlines())
    ]
    assert ran == [
        ("inventory", 0, "phase-inventory.log"),
        ("compute", 0, "phase-compute.log"),
        ("intra-node", 0, "phase-intra-node.log"),
        ("inter-node", 137, "phase-inter-node.log"),
        ("inter-node", 0, "phase-inter-node-again.log"),
        ("pairs", 0, "phase-pairs.log"),
        ("storage", 0, "phase-storage.log"),
    ]
    # the run again and every step after it: the two nodes left, new ranks (4 of them)
    inter = steps(marks, "stoker net --ops")
    assert ["--nodelist=n1,n2,n3" in x and "--ntasks=6" in x for x in inter] == [True, True, False, False]
    assert all("--nodes=2 " in x and "--ntasks=4 " in x and "--nodelist=n1,n3" in x for x in inter[2:]), inter
    # every step after the loss overlaps the step that lost the node (it may stay completing)
    assert ["(SLURM_OVERLAP)" in x for x in inter] == [False, False, True, True], inter
    (io,) = steps(marks, "stoker io ")
    assert "--nodelist=n1,n3" in io and "--nodes=2 " in io and "(SLURM_OVERLAP)" in io, io
    # the job's count of phases does not move for the run again
    assert "[4/7] inter-node started again on 2 nodes" in p.stdout and "[5/7] pairs started" in p.stdout


def test_fewer_than_min_nodes_left_skips_the_rest_and_still_reports(tmp_path: Path) -> None:
    p, out, _ = run_job(tmp_path, min_nodes=3)
    assert p.returncode == 3, p.stdout + p.stderr  # incomplete, whatever the report said
    assert "fewer than 3 nodes are left after phase inter-node" in p.stderr
    ran = [x["phase"] for x in map(json.loads, (out / "phases.jsonl").read_text().splitlines())]
    assert ran == ["inventory", "compute", "intra-node", "inter-node"]
    assert "pairs skipped: fewer than 3 nodes left" in p.stdout and "storage skipped" in p.stdout
    assert "[7/7] report" in p.stdout
    (line,) = [json.loads(x) for x in (out / "setaside.jsonl").read_text().splitlines()]
    assert line["host"] == "n2"
