"""launchers/mpirun.sh for real on this one node (Open MPI, 2 gloo ranks), and the scripts'
bad input: one line, exit 2."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from netbench.spawn import free_port
from reports.table.read import read_records
from tests.conftest import PYTHON, REPO, needs_tool

SCRIPTS = REPO / "launchers"
SMALL = [
    "--profile",
    "quick",
    "--ops",
    "all_reduce",
    "--max-bytes",
    "256K",
    "--iters",
    "3",
    "--warmup",
    "1",
    "--workloads",
    "checkpoint",
    "--ckpt-bytes",
    "8M",
    "--io-runtime",
    "2",
    "--compute-budget",  # the compute phase: 2 s of matmul sweep, not the profile's 20
    "2",
]


def script(name: str, env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPTS / name), *args],
        env={**os.environ, "STOKER_PY": PYTHON, **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@needs_tool("mpirun")
@needs_tool("fio")
@pytest.mark.slow
def test_mpirun_script_runs_every_phase_and_exits_with_the_verdict(tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = {
        "OUT": str(out),
        "NPROC_PER_NODE": "2",
        "BACKEND": "gloo",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "LOCAL_IO": str(tmp_path / "local"),
        "OMPI_MCA_btl_tcp_if_include": "lo",
        "OMPI_MCA_oob_tcp_if_include": "lo",
    }
    p = script("mpirun.sh", env, *SMALL, cwd=tmp_path)
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert [(x["phase"], x["rc"]) for x in phases] == [
        ("inventory", 0),
        ("compute", 0),
        ("intra-node", 0),
        ("storage", 0),
    ], p.stdout[-3000:]
    # each phase's output is kept for the report, as the sbatch job keeps it
    assert all(x["log"] == f"phase-{x['phase']}.log" and (out / x["log"]).is_file() for x in phases)
    assert (out / "host.jsonl").is_file()  # the inventory ran on the node
    recs = read_records(out)
    assert recs.compute  # and the compute phase, under mpirun
    assert {r.ranks for r in recs.net.records()} == {2} and recs.io
    assert len({r.run_id for r in [*recs.net.records(), *recs.io]}) == 1
    assert all(r.run_id.startswith("mpirun-") for r in recs.net.records())
    verdict = json.loads((out / "verdict.json").read_text())
    # no spec and no GPU to detect: nothing had a reference, and mpirun.sh's exit says unjudged (0)
    assert verdict["verdict"] == "unjudged" and p.returncode == 0, (verdict["findings"], p.stdout[-2000:])
    assert (tmp_path / "local").is_dir()  # a dir the operator named is never removed


@pytest.mark.parametrize(
    ("name", "env", "args", "words"),
    [
        ("torchrun.sh", {"OUT": ""}, [], "set OUT"),
        ("mpirun.sh", {"OUT": "x", "NNODES": "2", "HOSTFILE": ""}, [], "set HOSTFILE"),
        ("mpirun.sh", {"OUT": "x"}, ["--spec", "missing.yaml"], "--spec missing.yaml: no such file"),
        ("torchrun.sh", {"OUT": "x"}, ["--profile", "huge"], "invalid choice"),
        ("torchrun.sh", {"OUT": "x", "STOKER_PY": "/bin/false"}, [], "cannot import stoker"),
    ],
)
def test_script_bad_input_is_one_line_exit_2(
    name: str, env: dict[str, str], args: list[str], words: str, tmp_path: Path
) -> None:
    p = script(name, env, *args, cwd=tmp_path)
    assert p.returncode == 2 and words in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "x").exists()  # refused before anything was created


@needs_tool("mpirun")
@needs_tool("fio")
@pytest.mark.slow
def test_mpirun_script_takes_sigterm_as_ctrl_c(tmp_path: Path) -> None:
    # SIGTERM for the shell launchers: a real `timeout -s TERM` during a phase (storage
    # runs for minutes here). The phase is stopped and keeps its line (130), the report is written
    # on what was measured, the script exits 3 (incomplete).
    out = tmp_path / "results"
    env = {
        **os.environ,
        "STOKER_PY": PYTHON,
        "OUT": str(out),
        "NPROC_PER_NODE": "2",
        "BACKEND": "gloo",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "OMPI_MCA_btl_tcp_if_include": "lo",
        "OMPI_MCA_oob_tcp_if_include": "lo",
    }
    p = subprocess.run(
        ["timeout", "--preserve-status", "-s", "TERM", "-k", "120", "30", "bash", str(SCRIPTS / "mpirun.sh")]
        + [*SMALL[:-1], "300"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert 130 in [x["rc"] for x in phases], (phases, p.stdout[-3000:])
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "incomplete"
    assert p.returncode == 3, p.stdout[-3000:] + p.stderr[-2000:]
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("stoker-io-mpirun-*/.stoker-*"))
