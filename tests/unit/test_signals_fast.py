"""`stoker run` and `stoker io` stopped by SIGTERM (scancel, timeout, Kubernetes) or Ctrl-C, in seconds and
without a bed: the storage phase's fio is a fake on PATH (hand-written: it answers --version
and then sleeps), so the phase is busy when the signal comes. docs/contract.md: the running
phase is stopped and its line kept (rc 130), the report is written on what was measured, the
scratch directory is removed, and the run exits 3 (incomplete); a command without a phase loop
(`stoker io`) ends with one line and exit 3."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import STOKER, ctrl_c_default

FAKE_FIO = '#!/bin/sh\ncase "$1" in --version) echo fio-3.33; exit 0;; esac\nexec /bin/sleep 120\n'
# the least a run does before storage: the inventory and network left out, the compute phase
# (never skipped) cut to 1 s of matmuls
ARGS = [
    "run",
    "--skip",
    "inventory,network",
    "--profile",
    "quick",
    "--workloads",
    "checkpoint",
    "--ckpt-bytes",
    "8M",
    "--io-runtime",
    "2",
    "--compute-budget",
    "1",
]


def _interrupted(
    tmp_path: Path, sig: signal.Signals, group: bool, argv: list[str] = ARGS, when: str = "storage: started"
) -> tuple[int, str, Path]:
    """Start stoker with `argv`, wait for the line `when`, send `sig` (to the whole process
    group, as a terminal's Ctrl-C does, when `group`), and return its exit code, output and
    results dir."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fio").write_text(FAKE_FIO)
    (bin_dir / "fio").chmod(0o755)
    out = tmp_path / "results"
    proc = subprocess.Popen(
        [*STOKER, *argv, "--out", str(out)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PATH": str(bin_dir)},
        start_new_session=True,  # its own group: a Ctrl-C here reaches it and its phases only
        preexec_fn=ctrl_c_default,  # Ctrl-C stops it also when the suite runs in the background
    )
    assert proc.stdout is not None
    seen: list[str] = []
    try:
        for line in proc.stdout:
            seen.append(line)
            if when in line:
                time.sleep(1.5)  # into the phase: stoker io has started the fake fio
                if group:
                    os.killpg(proc.pid, sig)
                else:
                    proc.send_signal(sig)
                break
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, "".join(seen) + rest, out


@pytest.mark.parametrize(
    ("sig", "group"), [(signal.SIGTERM, False), (signal.SIGINT, True)], ids=["sigterm", "ctrl-c"]
)
def test_a_stopped_run_reports_what_it_measured_and_exits_3(
    tmp_path: Path, sig: signal.Signals, group: bool
) -> None:
    rc, output, out = _interrupted(tmp_path, sig, group)
    assert rc == 3, output[-4000:]
    phases = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    ran = {p["phase"]: p["rc"] for p in phases}
    assert ran["compute"] == 0 and ran["storage"] == 130 and "report" in ran, ran
    assert "storage: interrupted; writing the report on what was measured" in output
    assert not list(out.glob(".io-scratch-*")), sorted(p.name for p in out.iterdir())


def test_ctrl_c_in_stoker_io_is_one_line_and_exit_3(tmp_path: Path) -> None:
    path = tmp_path / "data"
    path.mkdir()
    argv = [
        "io",
        "--path",
        str(path),
        "--workloads",
        "checkpoint",
        "--ckpt-bytes",
        "8M",
        "--runtime",
        "2",
        "--no-torch",
    ]
    rc, output, _ = _interrupted(tmp_path, signal.SIGINT, True, argv, when="checkpoint_write on")
    assert rc == 3, output[-4000:]
    assert output.splitlines()[-1] == "stoker io: interrupted", output[-2000:]
    assert list(path.iterdir()) == []  # its work files (DIR/.stoker-<run_id>/) are gone
