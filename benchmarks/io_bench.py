"""iobench's overhead and speed, side by side in one run on one path.

1. stoker's checkpoint_write against the same fio job run bare (the exact arguments
   `stoker io --dry-run` prints), interleaved for ROUNDS rounds; the ratio of the medians
   must be >= 0.98 (stoker adds nothing to the measured window). On a shared machine the
   disk's own noise swamps that; `--throttle MIB` (root) runs both on a loop device
   throttled to MIB MiB/s, where the device is steady and only overhead could differ.
2. The wall time of the default local `stoker io --path DIR` (target: under 2 minutes).

    .venv/bin/python benchmarks/io_bench.py [--path /tmp] [--rounds 5] [--skip-default] [--throttle 50]

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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from iobench.workloads import IoSettings, checkpoint_jobs  # noqa: E402
from reports.shared.units import parse_size  # noqa: E402
from tests.harness.blockdev import start_in_cgroup, throttled_disk  # noqa: E402

STOKER = [sys.executable, "-m", "launchers.cli"]


def _in_cgroup(procs: Path | None) -> Callable[[], None] | None:
    return None if procs is None else (lambda: start_in_cgroup(procs))


def bare_fio(settings: IoSettings, base: Path, cgroup: Path | None = None) -> float:
    """GB/s of fio's own checkpoint_write, run as a user would run the dry-run line."""
    d = Path(tempfile.mkdtemp(prefix="io-bench-fio-", dir=base))
    try:
        job = checkpoint_jobs(settings, str(d))[0]
        out = subprocess.run(
            job.command(shutil.which("fio") or "fio"),
            capture_output=True,
            text=True,
            check=True,
            preexec_fn=_in_cgroup(cgroup),
        )
        doc = json.loads(out.stdout)
        return sum(j["write"]["bw_bytes"] for j in doc["jobs"]) / 1e9
    finally:
        shutil.rmtree(d, ignore_errors=True)


def stoker_ckpt(settings: IoSettings, base: Path, ckpt: str, cgroup: Path | None = None) -> float:
    out = Path(tempfile.mkdtemp(prefix="io-bench-out-"))
    try:
        subprocess.run(
            [
                *STOKER,
                "io",
                "--path",
                str(base),
                "--out",
                str(out),
                "--workloads",
                "checkpoint",
                "--ckpt-bytes",
                ckpt,
                "--writers",
                str(settings.writers),
                "--no-torch",
            ],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
            preexec_fn=_in_cgroup(cgroup),
        )
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
        subprocess.run(
            [*STOKER, "io", "--path", str(base), "--out", str(out)],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        )
        return time.monotonic() - t0
    finally:
        shutil.rmtree(out, ignore_errors=True)


def compare(s: IoSettings, base: Path, rounds: int, ckpt: str, cgroup: Path | None, where: str) -> None:
    pairs = []
    for i in range(rounds):
        # alternate who goes first so a warming disk favours neither
        if i % 2:
            f = bare_fio(s, base, cgroup)
            st = stoker_ckpt(s, base, ckpt, cgroup)
        else:
            st = stoker_ckpt(s, base, ckpt, cgroup)
            f = bare_fio(s, base, cgroup)
        pairs.append((st, f))
        print(f"round {i + 1}: stoker {st:.4f} GB/s, bare fio {f:.4f} GB/s, ratio {st / f:.3f}", flush=True)
    ms = statistics.median(p[0] for p in pairs)
    mf = statistics.median(p[1] for p in pairs)
    mr = statistics.median(p[0] / p[1] for p in pairs)
    print(
        f"checkpoint_write on {where} ({s.writers} writers x {ckpt}, {os.cpu_count()} cores): "
        f"median stoker {ms:.4f} GB/s, median bare fio {mf:.4f} GB/s, ratio of medians {ms / mf:.3f}, "
        f"median ratio {mr:.3f} (target >= 0.98)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default=tempfile.gettempdir())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ckpt-bytes", default="256M")
    ap.add_argument("--skip-default", action="store_true")
    ap.add_argument(
        "--throttle", type=int, default=0, help="MiB/s: compare on a throttled loop device (root)"
    )
    a = ap.parse_args()
    s = IoSettings(ckpt_bytes=parse_size(a.ckpt_bytes))
    if a.throttle:
        with throttled_disk(a.throttle << 20) as disk:
            compare(
                s, disk.mount, a.rounds, a.ckpt_bytes, disk.cgroup_procs, f"loop device at {a.throttle} MiB/s"
            )
        return 0
    base = Path(tempfile.mkdtemp(prefix="io-bench-", dir=a.path))
    try:
        compare(s, base, a.rounds, a.ckpt_bytes, None, a.path)
        if not a.skip_default:
            wall = default_run(base)
            print(f"default `stoker io --path {base}`: {wall:.1f} s wall (target < 120 s)")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
