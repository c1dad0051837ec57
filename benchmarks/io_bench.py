"""iobench's overhead and speed, side by side in one run on one path.

1. stoker's checkpoint_write against the same fio job run bare (the exact arguments
   `stoker io --dry-run` prints), interleaved for ROUNDS rounds; the ratio of the medians
   must be >= 0.98 (stoker adds nothing to the measured window).
2. The wall time of the default local `stoker io --path DIR` (target: under 2 minutes).

    .venv/bin/python benchmarks/io_bench.py [--path /tmp] [--rounds 5] [--skip-default]

The bare fio figure is read straight from fio's JSON (`bw_bytes`), not through stoker's parser.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from iobench.workloads import IoSettings, checkpoint_jobs  # noqa: E402
from reports.units import parse_size  # noqa: E402

STOKER = [sys.executable, "-m", "launchers.cli"]


def bare_fio(settings: IoSettings, base: Path) -> float:
    """GB/s of fio's own checkpoint_write, run as a user would run the dry-run line."""
    d = Path(tempfile.mkdtemp(prefix="io-bench-fio-", dir=base))
    try:
        job = checkpoint_jobs(settings, str(d))[0]
        out = subprocess.run(job.command(shutil.which("fio") or "fio"), capture_output=True, text=True, check=True)
        doc = json.loads(out.stdout)
        return sum(j["write"]["bw_bytes"] for j in doc["jobs"]) / 1e9
    finally:
        shutil.rmtree(d, ignore_errors=True)


def stoker_ckpt(settings: IoSettings, base: Path, ckpt: str) -> float:
    out = Path(tempfile.mkdtemp(prefix="io-bench-out-"))
    try:
        subprocess.run([*STOKER, "io", "--path", str(base), "--out", str(out), "--workloads", "checkpoint",
                        "--ckpt-bytes", ckpt, "--writers", str(settings.writers), "--no-torch"],
                       cwd=REPO, check=True, capture_output=True, text=True)
        for line in (out / "io.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec["workload"] == "checkpoint_write" and rec["backend"] == "fio":
                return float(rec["bw_GBps"])
        raise RuntimeError("no checkpoint_write record")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def default_run(base: Path) -> float:
    out = Path(tempfile.mkdtemp(prefix="io-bench-default-"))
    try:
        t0 = time.monotonic()
        subprocess.run([*STOKER, "io", "--path", str(base), "--out", str(out)], cwd=REPO, check=True,
                       capture_output=True, text=True)
        return time.monotonic() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=tempfile.gettempdir())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ckpt-bytes", default="256M")
    ap.add_argument("--skip-default", action="store_true")
    a = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="io-bench-", dir=a.path))
    try:
        s = IoSettings(ckpt_bytes=parse_size(a.ckpt_bytes))
        pairs = []
        for i in range(a.rounds):
            # alternate who goes first so a warming disk favours neither
            if i % 2:
                f = bare_fio(s, base)
                st = stoker_ckpt(s, base, a.ckpt_bytes)
            else:
                st = stoker_ckpt(s, base, a.ckpt_bytes)
                f = bare_fio(s, base)
            pairs.append((st, f))
            print(f"round {i + 1}: stoker {st:.3f} GB/s, bare fio {f:.3f} GB/s, ratio {st / f:.3f}", flush=True)
        ms = statistics.median(p[0] for p in pairs)
        mf = statistics.median(p[1] for p in pairs)
        print(f"checkpoint_write ({s.writers} writers x {a.ckpt_bytes}, {os.cpu_count()} cores): "
              f"median stoker {ms:.3f} GB/s, median bare fio {mf:.3f} GB/s, ratio {ms / mf:.3f} (target >= 0.98)")
        if not a.skip_default:
            wall = default_run(base)
            print(f"default `stoker io --path {base}`: {wall:.1f} s wall (target < 120 s)")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
