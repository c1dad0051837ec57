"""`stoker run` stopped while its report is written: the report finishes (the verdict the
contract promises after a stop), exit 3. The network and storage phases are left out (--skip),
so the run reaches its report after the inventory and the matmul appetite (~15-30 s here); the
report itself is short (~0.4 s), so the signal goes as soon as its process exists: the test
watches /proc for `stoker run`'s child running `report` (its log line can reach the file after a
0.6 s report is done)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import STOKER


def report_child(pid: int) -> bool:
    """Whether `pid` has a child process running `stoker report` (read from /proc)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if ppid == pid and b"report" in (stat.parent / "cmdline").read_bytes().split(b"\0"):
                return True
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_signal_during_the_report_lets_it_finish_exit_3(sig: signal.Signals, tmp_path: Path) -> None:
    out, log = tmp_path / "r", tmp_path / "log"
    argv = [*STOKER, "run", "--out", str(out), "--profile", "quick", "--skip", "network,storage"]
    with open(log, "w") as fh:
        p = subprocess.Popen(argv, cwd=tmp_path, stdout=fh, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 200
        while not report_child(p.pid) and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.005)
        # at once: `stoker run` holds its stop handlers from its start, and a report of the
        # inventory and compute records alone takes ~0.4 s here (its interpreter's start most of it)
        p.send_signal(sig)
        rc = p.wait(timeout=200)
    text = log.read_text()
    lines = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    verdict = json.loads((out / "verdict.json").read_text())["verdict"]
    assert lines[-1]["phase"] == "report" and (out / "report.md").is_file(), lines
    # the signal lands while the report runs, or as it ends (the /proc entry can outlive it by a
    # moment): either way the run says it heard it
    said = (f"report: {sig.name} asked; it finishes first", f"report: {sig.name} asked; it had finished")
    assert any(s in text for s in said), text[-2000:]
    assert rc == (1 if verdict == "fail" else 3), (rc, verdict, text[-2000:])
