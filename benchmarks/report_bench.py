"""Benchmark: `stoker report` on synthetic results of a 1,000-node cluster.

    .venv/bin/python benchmarks/report_bench.py [--nodes 1000] [--keep DIR]

Writes records as a real acceptance run would (8 GPUs per node; world, intra-node and
inter-node sweeps of four ops from 1K to 8G; a pair pass of 16 rounds; storage; one
manifest line per host), then runs `stoker report DIR --spec ... --workload llama-70b` as a
child process and prints its wall time and peak memory (ru_maxrss of the child, from
os.wait4). Targets (issue 4): under 20 s and under 2 GiB.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OPS = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
       "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}
SIZES = [1 << k for k in range(10, 34)]          # 1K .. 8G: 24 sizes
GPUS = 8
SPEC = """name: bench-1000
accelerator: H100-SXM
gpus_per_node: 8
network: {intra_node: nvlink4, inter_node: {link: ib-ndr, count: 8}}
storage:
  - {path: /lustre, kind: shared, read_GBps: 400, write_GBps: 200}
  - {path: /local, kind: local, read_GBps: 12, write_GBps: 6}
price_per_gpu_hour: 2.49
"""


def _rec(op: str, scope: str, hosts: list[str], ranks: int, group: int, size: int, plateau: float) -> str:
    busbw = plateau * size / (size + (8 << 20))
    algbw = busbw / OPS[op](ranks) if OPS[op](ranks) else busbw
    return json.dumps({"schema": 1, "kind": "net", "run_id": "bench", "ts": "2026-01-01T00:00:00Z", "hosts": hosts,
                       "nodes": len(hosts), "op": op, "scope": scope, "ranks": ranks, "backend": "nccl",
                       "dtype": "bfloat16", "bytes": size, "time_s": size / (algbw * 1e9), "algbw_GBps": algbw,
                       "busbw_GBps": busbw, "wrong": 0, "group": group}, separators=(",", ":"))


def write_results(d: Path, nodes: int) -> int:
    hosts = [f"node{i:04d}" for i in range(nodes)]
    n = 0
    with open(d / "net.jsonl", "w") as fh:
        for op in OPS:
            for size in SIZES:
                fh.write(_rec(op, "world", hosts, nodes * GPUS, 0, size, 46.0) + "\n")
                fh.write(_rec(op, "inter-node", hosts, nodes, 0, size, 47.0) + "\n")
                n += 2
            for g, h in enumerate(hosts):
                slow = 0.6 if g == 517 else 1.0
                for size in SIZES:
                    fh.write(_rec(op, "intra-node", [h], GPUS, g, size, 370.0 * slow) + "\n")
                    n += 1
        for r in range(16):  # round-robin rounds of disjoint pairs
            for i in range(nodes // 2):
                a, b = hosts[(i + r) % nodes], hosts[(nodes - 1 - i + r) % nodes]
                for size in SIZES[-3:]:
                    bw = 20.0 if {a, b} == {"node0003", "node0004"} else 45.0
                    fh.write(_rec("all_reduce", "pair", sorted([a, b]), 2, r * nodes + i, size, bw) + "\n")
                    n += 1
    with open(d / "io.jsonl", "w") as fh:
        for wl, direction, path, scope, bw in (("checkpoint_write", "write", "/lustre", "shared", 150.0),
                                               ("checkpoint_read", "read", "/lustre", "shared", 380.0),
                                               ("dataloader_read", "read", "/lustre", "shared", 300.0),
                                               ("dataloader_read", "read", "/local", "local", 11.5)):
            per = {h: bw / nodes for h in hosts} if scope == "shared" else {h: bw for h in hosts}
            fh.write(json.dumps({"schema": 1, "kind": "io", "run_id": "bench", "ts": "2026-01-01T00:00:00Z",
                                 "hosts": hosts, "nodes": nodes, "workload": wl, "direction": direction, "path": path,
                                 "scope": scope, "procs": nodes * 8, "bytes": int(bw * 6e10), "bw_GBps": bw,
                                 "per_host_bw_GBps": per, "iops": bw * 1000, "lat_ms": {"p50": 1.0, "p99": 9.0}}) + "\n")
    with open(d / "manifest.jsonl", "w") as fh:
        for h in hosts:
            fh.write(json.dumps({"schema": 1, "kind": "manifest", "tool": "net", "run_id": "bench", "host": h,
                                 "python": "3.11.2", "versions": {"torch": "2.13.0", "nccl": "2.27.3"},
                                 "env": {"NCCL_IB_HCA": "mlx5"}}) + "\n")
    (d / "spec.yaml").write_text(SPEC)
    return n


def run_child(cmd: list[str]) -> tuple[int, float, float, float]:
    """(exit code, wall seconds, CPU seconds, peak RSS in MiB) of one child process. CPU time
    is shown beside wall time because on a shared machine the wall time includes waiting."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return proc.returncode, time.perf_counter() - t0, cpu, usage.ru_maxrss / 1024  # Linux: KiB


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--keep", metavar="DIR", help="write the results here and keep them")
    args = ap.parse_args()
    d = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rp_bench_"))
    d.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        n = write_results(d, args.nodes)
        size_mb = (d / "net.jsonl").stat().st_size / 1e6
        print(f"{args.nodes} nodes: {n} net records ({size_mb:.0f} MB) written in {time.perf_counter() - t0:.1f} s")
        load = os.getloadavg()[0]
        rc, secs, cpu, rss = run_child([sys.executable, "-m", "launchers.cli", "report", str(d), "--workload",
                                        "llama-70b"])
        html_mb = (d / "report.html").stat().st_size / 1e6 if (d / "report.html").exists() else 0.0
        print(f"stoker report: exit {rc}, wall {secs:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:.0f} MiB, "
              f"report.html {html_mb:.1f} MB; load average before {load:.1f} on {os.cpu_count()} CPUs "
              f"(targets: < 20 s, < 2048 MiB)")
        return 0 if rc in (0, 1) and secs < 20 and rss < 2048 else 1
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
