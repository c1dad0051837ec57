"""Runs the fio binary: an argument list, never a shell; JSON on stdout, parsed by
reports.fio_json. The only place iobench starts processes."""
from __future__ import annotations

import errno
import shutil
import subprocess
from dataclasses import dataclass

from iobench.workloads import FioJob
from reports.errors import MeasurementAborted, UsageError
from reports.fio_json import FioDoc, parse_fio

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
    cmd = job.command(fio)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise MeasurementAborted(f"fio {job.name} ran past {timeout_s:.0f} s and was stopped") from None
    last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")[:300]
    try:
        doc = parse_fio(proc.stdout, host)
    except UsageError:
        if _disk_full(0, proc.stderr):
            raise DiskFull(f"disk full during {job.name}: {last}") from None
        raise MeasurementAborted(f"fio {job.name} failed (exit {proc.returncode}): {last or 'no output'}") from None
    if _disk_full(doc.error, proc.stderr):
        raise DiskFull(f"disk full during {job.name}: {last or 'ENOSPC'}")
    if doc.error or proc.returncode != 0:
        raise MeasurementAborted(f"fio {job.name} failed (exit {proc.returncode}, error {doc.error}): {last}")
    return FioRun(job=job, doc=doc, returncode=proc.returncode, stderr=proc.stderr)
