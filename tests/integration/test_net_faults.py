"""Bad input (one line, exit 2) and faults (a hung rank, a killed rank, a crashed rank,
Ctrl-C: exit 3, records kept) on real `stoker net --nproc 2` runs."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PYTHON, STOKER, ctrl_c_default

LAUNCHER_VARS = (
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "SLURM_STEP_ID",
)


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}


BAD = [
    (["-b", "64M", "-e", "8"], "larger than --max-bytes"),
    (["-b", "8X"], "bad --min-bytes '8X'"),
    (["--ops", "all_reduce,frobnicate"], "unknown op frobnicate: choose from all_reduce, all_gather"),
    (["--backend", "tcp"], "unknown backend 'tcp'"),
    (["--scopes", "galaxy"], "unknown scope galaxy"),
    (["--dtype", "float128"], "unknown dtype 'float128'"),
    (["--ops", "sendrecv"], "need at least 2 ranks and this is a world of 1: add --nproc 2"),
    ([], "need at least 2 ranks"),  # default ops include sendrecv
    (["--backend", "mpi", "--nproc", "2"], "not --nproc: run e.g. mpirun -np 2"),
    (["--pairs", "a:b:c"], "bad --pairs entry"),
]


@pytest.mark.parametrize(("argv", "says"), BAD, ids=[b[1][:30] for b in BAD])
def test_bad_input_one_line_exit_2(argv: list[str], says: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [*STOKER, "net", *argv, "--out", str(tmp_path / "nb")],
        capture_output=True,
        text=True,
        timeout=60,
        env=_clean_env(),
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert not (tmp_path / "nb").exists()


def test_nccl_without_gpu_says_use_gloo(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    # decided before the run, by torch itself: on a CPU-only machine an exit 0 from nccl is
    # exactly the regression this guards (a network phase "passing" on no GPU), never a skip
    probe = subprocess.run(
        [PYTHON, "-c", "import torch; print(torch.cuda.is_available())"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_clean_env(),
    )
    if probe.stdout.strip() == "True":
        pytest.skip("a CUDA GPU is visible here: nccl may run")
    proc = subprocess.run(
        [*STOKER, "net", "--backend", "nccl", "--ops", "all_reduce"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_clean_env(),
    )
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1].endswith(
        "use --backend gloo on CPUs"
    )


def _start(out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    # many iterations at small sizes: the run is still going when the test acts on it
    cmd = [
        *STOKER,
        "net",
        "--nproc",
        "2",
        "--ops",
        "all_reduce",
        "-b",
        "8",
        "-e",
        "1M",
        "-n",
        "400",
        "--out",
        str(out),
        *extra,
    ]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**_clean_env(), **(env or {})},
        start_new_session=True,
        preexec_fn=ctrl_c_default,
    )


def _first_record(out: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        f = out / "net.jsonl"
        if f.exists() and f.read_text().count("\n") >= 1:
            return
        time.sleep(0.05)
    raise AssertionError(f"no record appeared (exit {proc.poll()})")


def _rank_pid(parent: int, rank: int) -> int:
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    for pid in children:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        if f"RANK={rank}".encode() in env:
            return int(pid)
    raise AssertionError(f"rank {rank} not among {children}")


def _kill_group(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


TIMEOUT_S = 5
# a loaded 2-core machine: interpreters ending, torch tearing down its process group
TEARDOWN_S = 11


def test_hung_rank_times_out_exit_3_records_kept(tmp_path: Path) -> None:
    from netbench.spawn import PEER_WAIT_S, STOP_GRACE_S

    out = tmp_path / "nb-hang"
    proc = _start(out, "--timeout", str(TIMEOUT_S))
    try:
        _first_record(out, proc)
        stopped = _rank_pid(proc.pid, 1)
        os.kill(stopped, signal.SIGSTOP)
        t0 = time.monotonic()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, err
        # rank 0's collective times out, then the launcher's waits: nothing else may take time
        assert time.monotonic() - t0 < TIMEOUT_S + PEER_WAIT_S + STOP_GRACE_S + TEARDOWN_S
        line = [ln for ln in err.splitlines() if "timeout" in ln]
        assert (
            line
            and "all_reduce at" in line[0]
            and "scope intra-node" in line[0]
            and f"within {TIMEOUT_S} s" in line[0]
        ), err
        assert (out / "net.jsonl").read_text().count("\n") >= 1
        assert (
            not Path(f"/proc/{stopped}").exists() or "zombie" in Path(f"/proc/{stopped}/status").read_text()
        )
    finally:
        _kill_group(proc)


def test_killed_rank_exit_3_records_kept(tmp_path: Path) -> None:
    out = tmp_path / "nb-kill"
    proc = _start(out, "--timeout", "60")
    try:
        _first_record(out, proc)
        os.kill(_rank_pid(proc.pid, 1), signal.SIGKILL)
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 3, err
        assert (out / "net.jsonl").read_text().count("\n") >= 1
    finally:
        _kill_group(proc)


def test_ctrl_c_exit_3_table_and_records_kept(tmp_path: Path) -> None:
    out = tmp_path / "nb-int"
    proc = _start(out)
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:  # wait for the first row of the table
            seen.append(line)
            if not line.startswith("#"):
                break
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        rest, err = proc.communicate(timeout=60)
        assert proc.returncode == 3, err
        assert "interrupted" in err
        rows = [
            ln
            for ln in "".join(seen).splitlines() + rest.splitlines()
            if ln.strip() and not ln.startswith("#")
        ]
        assert rows[0].split()[:3] == ["8", "2", "float32"]
        assert (out / "net.jsonl").read_text().count("\n") >= 1
    finally:
        _kill_group(proc)


# Loaded into every interpreter of the run through PYTHONPATH (a test's own fault, hand-written):
# SIGUSR1 ends a rank at once with stoker's crash code (launchers.cli.CRASHED, 70: what its
# entry point returns for an exception it has no handler for). An exception raised inside a
# collective would not do: each step turns those into a measured abort (exit 3) by design.
CRASH_HOOK = """
import os, signal

def _crash(signum, frame):
    os.write(2, b"injected by the test: rank crashed\\n")
    os._exit(70)  # at once: an interpreter teardown beside live gloo threads may abort instead

signal.signal(signal.SIGUSR1, _crash)
"""


def test_crashed_rank_exit_70_makes_the_run_exit_3_records_kept(tmp_path: Path) -> None:
    from launchers.cli import CRASHED

    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(CRASH_HOOK, encoding="utf-8")
    out = tmp_path / "nb-crash"
    proc = _start(out, "--timeout", "60", env={"PYTHONPATH": str(hook)})
    try:
        _first_record(out, proc)
        os.kill(_rank_pid(proc.pid, 1), signal.SIGUSR1)
        _, err = proc.communicate(timeout=90)
        # the launcher names the crashed rank, not only rank 0's echo of it, and ends incomplete
        assert proc.returncode == 3, err
        assert f"rank 1 exited with code {CRASHED}; the other ranks were stopped" in err, err
        assert err.rstrip().endswith("injected by the test: rank crashed"), err  # the rank's own last line
        assert (out / "net.jsonl").read_text().count("\n") >= 1
    finally:
        _kill_group(proc)
