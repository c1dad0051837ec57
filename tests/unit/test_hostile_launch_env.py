"""Numeric environment values of the shell launchers are digits before
any bash arithmetic sees them. `$(( ))` evaluates a variable's value again as an expression,
so NNODES='PATH[$(touch F)]' ran `touch F`, and a non-number made the node-count check fail
open. Each value here must stop the script in one line, exit 2, with nothing run or created."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from launchers.profiles import get_profile
from launchers.slurm.sbatch import SbatchConfig, render
from tests.conftest import PYTHON, REPO

VARS = {
    "torchrun.sh": (
        "NNODES",
        "NODE_RANK",
        "MASTER_PORT",
        "NPROC_PER_NODE",
        "SYNC_TIMEOUT",
        "STOKER_EXPECT_NODES",
        "PREFLIGHT_PORT",
        "PREFLIGHT_LIMIT",
    ),
    "mpirun.sh": ("NNODES", "MASTER_PORT", "NPROC_PER_NODE", "STOKER_EXPECT_NODES"),
}


@pytest.mark.parametrize("script,var", [(s, v) for s, vs in VARS.items() for v in vs])
@pytest.mark.parametrize("shape", ["PATH[$(touch {f})]", "x[`touch {f}`]", "1+1", "-1", "2 "])
def test_numeric_env_refused_before_arithmetic(tmp_path: Path, script: str, var: str, shape: str) -> None:
    pwn = tmp_path / "PWN"
    env = {**os.environ, "STOKER_PY": PYTHON, "OUT": str(tmp_path / "out"), var: shape.format(f=pwn)}
    p = subprocess.run(
        ["bash", str(REPO / "launchers" / script), "--profile", "quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert not pwn.exists(), "the value was run as a command"
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and f"{var}=" in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()  # stopped before anything was created


def test_sbatch_job_checks_master_port_before_arithmetic(tmp_path: Path) -> None:
    script = render(
        SbatchConfig(
            nodes=1,
            ranks_per_node=1,
            gpus_per_node=0,
            profile=get_profile("quick"),
            out=str(tmp_path / "out"),
        )
    )
    # run only the job's preamble, up to the rendezvous port: no Slurm needed for this part
    head = script[: script.index("export MASTER_PORT=")]
    head = re.sub(r"^FIRST=.*$|^MASTER_ADDR=.*$|^export MASTER_ADDR=.*$", ":", head, flags=re.M)
    pwn = tmp_path / "PWN"
    p = subprocess.run(
        [
            "bash",
            "-c",
            head + 'export MASTER_PORT="${MASTER_PORT:-$((20000 + SLURM_JOB_ID % 20000))}"\necho ok',
        ],
        env={**os.environ, "SLURM_JOB_ID": "7", "MASTER_PORT": f"a[$(touch {pwn})]"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert not pwn.exists() and p.returncode == 2 and "MASTER_PORT=" in p.stderr, p.stderr


@pytest.mark.parametrize("script", ["torchrun.sh", "mpirun.sh"])
def test_case2_launchers_refuse_a_dir_of_look_alike_names(tmp_path: Path, script: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "phases.jsonl").write_text("the user's\n")
    (out / "io-scratch").mkdir()
    env = {**os.environ, "STOKER_PY": PYTHON, "OUT": str(out), "LOCAL_IO": str(tmp_path / "l")}
    p = subprocess.run(
        ["bash", str(REPO / "launchers" / script), "--profile", "quick"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "not made by stoker" in p.stderr, p.stderr
    assert sorted(x.name for x in out.iterdir()) == ["io-scratch", "phases.jsonl"]
    assert (out / "phases.jsonl").read_text() == "the user's\n"


def test_case2_run_refuses_a_dir_of_look_alike_names(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for n in ("phases.jsonl", "phase-1-notes.md", ".stoker-config"):
        (out / n).write_text("the user's\n")
    (out / "io-scratch").mkdir()
    p = subprocess.run(
        [PYTHON, "-m", "launchers.cli", "run", "--out", str(out)], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2 and "not made by stoker" in p.stderr, p.stderr
    assert sorted(x.name for x in out.iterdir()) == [
        ".stoker-config",
        "io-scratch",
        "phase-1-notes.md",
        "phases.jsonl",
    ]
