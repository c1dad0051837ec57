"""Benchmark: `stoker import` of a large nccl-tests log.

    .venv/bin/python benchmarks/import_bench.py [--mb 250] [--shape rows|noise] [--keep DIR]

Builds a log of about --mb megabytes from the real mpirun log in tests/data/nccl_tests
(v2.13_mpirun_all_reduce.log: Open MPI prefixes, NCCL INFO lines, one table per run):
`rows` repeats the whole run (header, noise, table) — the densest case, one record per
~280 bytes; `noise` follows each run with ~1 MB of NCCL INFO lines, as NCCL_DEBUG=INFO on
many ranks prints. Then runs `stoker import LOG --out DIR` as a child process and prints
MB/s, records/s, wall and CPU time and peak memory (os.wait4 of the child: its CPU time
includes the worker processes a log over 32 MB is parsed in, one per core
(reports/ingest/stream_chunks.py); ru_maxrss is the largest one process reached, not their sum).
Target: well under a minute for 250 MB (aim: 30 s on 2 cores), bounded memory.
A 250 MB `rows` log on the 2-core bed (2026-11-24, its cores shared with other work, load ~2):
60-105 s wall, 58-66 s CPU, 500 MiB before the fast row path and the parts; after, 14.5-16.3 s
wall, 18-25 s CPU, 139 MiB (on one core, `taskset -c 0`: 17.7-20.9 s wall, 17-20 s CPU).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "nccl_tests" / "v2.13_mpirun_all_reduce.log"


def build_log(path: Path, mb: float, shape: str) -> None:
    run = FIXTURE.read_text()
    noise = [ln for ln in run.splitlines(keepends=True) if "NCCL INFO" in ln]
    want = int(mb * 1e6)
    with open(path, "w") as fh:
        written = 0
        while written < want:
            if shape == "rows":
                block = run
            else:  # one whole run, then ~1 MB of INFO lines
                block = run + "".join(noise) * max(1, int(1e6 / sum(map(len, noise))))
            fh.write(block)
            written += len(block)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=250.0)
    ap.add_argument("--shape", choices=("rows", "noise"), default="rows")
    ap.add_argument("--keep", type=Path, help="build the log and results here (kept)")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="stoker-import-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    log, out = work / f"all_reduce_{a.shape}.log", work / "results"
    shutil.rmtree(out, ignore_errors=True)
    build_log(log, a.mb, a.shape)
    size = log.stat().st_size
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "launchers.cli", "import", str(log), "--out", str(out)], cwd=REPO
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    rc = os.waitstatus_to_exitcode(status)
    records = sum(1 for _ in open(out / "net.jsonl", "rb")) if (out / "net.jsonl").exists() else 0
    print(
        f"import {size / 1e6:.0f} MB ({a.shape}): rc {rc}, {wall:.1f} s wall, "
        f"{usage.ru_utime + usage.ru_stime:.1f} s CPU, {size / 1e6 / wall:.1f} MB/s, "
        f"{records} records, {records / wall:.0f} records/s, peak RSS {usage.ru_maxrss / 1024:.0f} MiB"
    )
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
