"""Runs the fio binary: an argument list, never a shell; JSON on stdout, parsed by
reports.shared.fio_json. The only place iobench starts processes."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass

from iobench.workloads import FioJob
from reports.shared.errors import MeasurementAborted, UsageError
from reports.shared.fio_json import FioDoc, parse_fio

INSTALL_HINT = "fio not found on PATH: install it (Debian/Ubuntu: apt-get install fio; RHEL: dnf install fio)"


class DiskFull(MeasurementAborted):
    """The file system filled up during a test (exit 3 after cleanup)."""


def find_fio() -> str:
    fio = shutil.which("fio")
    if fio is None:
        raise UsageError(INSTALL_HINT)
    return fio


def fio_version(fio: str) -> str:
    out = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=30, check=False)
    return out.stdout.strip() or "unknown"


@dataclass(frozen=True, kw_only=True, slots=True)
class FioRun:
    job: FioJob
    doc: FioDoc
    returncode: int
    stderr: str


def _disk_full(doc_error: int, stderr: str) -> bool:
    return doc_error == errno.ENOSPC or "No space left on device" in stderr


def run_job(fio: str, job: FioJob, host: str, timeout_s: float) -> FioRun:
    """Run one job to completion. A full disk raises DiskFull; any other failure without a
    result raises MeasurementAborted with fio's last error line."""
    # its own session: fio forks a process per job, and on Ctrl-C, SIGTERM or a timeout the
    # whole group must stop, not just the parent (orphaned jobs would keep doing IO)
    proc = subprocess.Popen(
        job.command(fio), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _stop(proc)
        raise MeasurementAborted(f"fio {job.name} ran past {timeout_s:.0f} s and was stopped") from None
    except BaseException:
        _stop(proc)
        raise
    last = next((ln for ln in reversed(stderr.splitlines()) if ln.strip()), "")[:300]
    try:
        doc = parse_fio(stdout, host)
    except UsageError:
        if _disk_full(0, stderr):
            raise DiskFull(f"disk full during {job.name}: {last}") from None
        raise MeasurementAborted(
            f"fio {job.name} failed (exit {proc.returncode}): {last or 'no output'}"
        ) from None
    if _disk_full(doc.error, stderr):
        raise DiskFull(f"disk full during {job.name}: {last or 'ENOSPC'}")
    if doc.error or proc.returncode != 0:
        raise MeasurementAborted(f"fio {job.name} failed (exit {proc.returncode}, error {doc.error}): {last}")
    return FioRun(job=job, doc=doc, returncode=proc.returncode, stderr=stderr)


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to fio's process group (fio then ends its jobs), SIGKILL if it lingers."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.communicate(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue
