"""Benchmark: `stoker report` on synthetic results of a 1,000-node cluster.

    .venv/bin/python benchmarks/report_bench.py [--nodes 1000] [--keep DIR] [--baseline REV] [--repeat 3]

Writes records as a real acceptance run would (8 GPUs per node; world, inter-node (one rail
per GPU) and intra-node sweeps of seven ops from 1K to 16G; the groups search; the whole
pair round-robin and its confirmation pass; storage from every node; one manifest line per
host; one slow node, one slow link), then
runs `stoker report DIR --workload llama-70b` (the spec is DIR/spec.yaml) as a child process
and prints its wall time, CPU time and peak memory (ru_maxrss of the child, from os.wait4),
beside those of a bare `json.loads` pass over the same net.jsonl lines (a child process that
does nothing else) and the ratio of the two (the report's wall and CPU time over the bare
parse's): the report must cost less than merely parsing its input with the standard library.
Up to ROUND_ROBIN_MAX nodes the run's whole pair round-robin is written; above, the run finds a
slow node with the groups search alone (n - 1 rounds of n/2 pairs is 50M records at 10,000
nodes), so only the search's rounds and the confirmation pass are written: --nodes 10000 is
~1.76M records, ~770 MB.
With --keep DIR the results stay there, and a later run with the same --nodes reuses them (a
stamp file in DIR records what was written; writing takes ~20 s).
With --baseline, the same report is also run on the code of git revision REV (e.g. the
commit before the columnar reader), side by side, and the two verdict.json are compared:
the findings must be the same; the line also names which of report.md, report.html and
verdict.json are byte-identical to the baseline's. --repeat N (default 3) runs each N times,
alternating (a busy spell of a shared machine then hits both), and prints the medians; the
last lines say which figures its exit status is taken from: the median wall time of the
report over the median of the bare parse, and the largest peak memory of the report's runs,
with the load average of the machine (the ratio of CPU times beside them: on a shared machine
the wall times include waiting).
Targets: under 5 s (the median) and under 1 GiB for ~680k records; at any size, at most
TARGET_RATIO of the bare parse's time and under 2 GiB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S, TARGET_MIB = 5.0, 1024.0
TARGET_RATIO, TARGET_BIG_MIB = 0.75, 2048.0  # of the bare json.loads pass; at 10,000 nodes
SLOW_NODE = 517  # the index of the node written slow
ROUND_ROBIN_MAX = 1000  # nodes up to which the whole pair round-robin is written
BARE = (
    "import json, sys\nwith open(sys.argv[1], 'rb') as fh:\n    for line in fh:\n        json.loads(line)\n"
)
STAMP = ".report-bench"  # in --keep DIR: the node count and net.jsonl size of the results written there
REPO = Path(__file__).resolve().parent.parent
# nccl-tests bus factors (doc/PERFORMANCE.md), written out here so that the generator does not
# depend on the code it measures
OPS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
}
SIZES = [1 << k for k in range(10, 35)]  # 1K .. 16G: 25 sizes
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


def _rec(
    op: str,
    scope: str,
    hosts: list[str],
    ranks: int,
    group: int,
    size: int,
    plateau: float,
    in_place: bool = False,
    **more: object,
) -> str:
    busbw = plateau * size / (size + (8 << 20))
    algbw = busbw / OPS[op](ranks) if OPS[op](ranks) else busbw
    t = size / (algbw * 1e9)
    return json.dumps(
        {
            "schema": 1,
            "kind": "net",
            "run_id": "bench",
            "ts": "2026-01-01T00:00:00Z",
            "hosts": hosts,
            "nodes": len(hosts),
            "op": op,
            "scope": scope,
            "ranks": ranks,
            "backend": "nccl",
            "dtype": "bfloat16",
            "bytes": size,
            "time_s": t,
            "algbw_GBps": algbw,
            "busbw_GBps": busbw,
            "wrong": 0,
            "count": size // 2,
            "in_place": in_place,
            "iters": 20,
            "group": group,
            "time_p99_s": t * 1.1,
            **more,
        },
        separators=(",", ":"),
    )


def write_results(d: Path, nodes: int) -> int:
    """The full acceptance run of a `nodes`-node cluster with 8 GPUs each: world, inter-node
    (one rail per local rank) and intra-node sweeps of seven ops over 25 sizes, the groups
    search (its rounds as the run records them), the whole pair round-robin (nodes - 1 rounds
    of disjoint pairs at the largest pair size) and its confirmation pass, storage from every
    node and one manifest line per host. One node (SLOW) has a slow NIC and slow GPU links;
    one path (SLOW_LINK) is slow between two healthy nodes."""
    hosts = [f"node{i:04d}" for i in range(nodes)]
    slow, slow_link = hosts[min(SLOW_NODE, nodes - 1)], {hosts[3 % nodes], hosts[4 % nodes]}
    n = 0
    with open(d / "net.jsonl", "w") as fh:
        for op in OPS:
            for size in SIZES:
                fh.write(_rec(op, "world", hosts, nodes * GPUS, 0, size, 46.0) + "\n")
                n += 1
                for rail in range(GPUS):
                    fh.write(_rec(op, "inter-node", hosts, nodes, rail, size, 47.0) + "\n")
                    n += 1
            for g, h in enumerate(hosts):
                bw = 370.0 * (0.6 if h == slow else 1.0)
                for size in SIZES:
                    fh.write(_rec(op, "intra-node", [h], GPUS, g, size, bw) + "\n")
                    n += 1
        n += _groups(fh, hosts, slow, slow_link)
        # circle method: in each of nodes - 1 rounds every node meets one partner
        ring = hosts[1:]
        pair_size = SIZES[-1]
        for r in range(nodes - 1 if nodes <= ROUND_ROBIN_MAX else 0):
            order = [hosts[0], *ring[r:], *ring[:r]]
            for i in range(nodes // 2):
                a, b = order[i], order[nodes - 1 - i]
                bw = 20.0 if slow in (a, b) or {a, b} == slow_link else 45.0
                fh.write(
                    _rec("all_reduce", "pair", sorted([a, b]), 2, r * nodes + i, pair_size, bw, **{"pass": 1})
                    + "\n"
                )
                n += 1
        for k, partner in enumerate(hosts[10:12]):  # the confirmation pass re-pairs the suspects
            for suspect in sorted(slow_link) + [slow]:
                bw = 20.0 if suspect == slow else 45.0
                fh.write(
                    _rec("all_reduce", "pair", sorted([suspect, partner]), 2, k, pair_size, bw, **{"pass": 2})
                    + "\n"
                )
                n += 1
        for a, b in [sorted(slow_link)]:
            fh.write(_rec("all_reduce", "pair", [a, b], 2, 99, pair_size, 20.0, **{"pass": 2}) + "\n")
            n += 1
    with open(d / "io.jsonl", "w") as fh:
        for wl, direction, path, scope, bw in (
            ("checkpoint_write", "write", "/lustre", "shared", 150.0),
            ("checkpoint_write", "write", "/local", "local", 5.5),
            ("checkpoint_read", "read", "/lustre", "shared", 380.0),
            ("dataloader_read", "read", "/lustre", "shared", 300.0),
            ("dataloader_read", "read", "/local", "local", 11.5),
        ):
            per = {h: bw / nodes for h in hosts} if scope == "shared" else {h: bw for h in hosts}
            fh.write(
                json.dumps(
                    {
                        "schema": 1,
                        "kind": "io",
                        "run_id": "bench",
                        "ts": "2026-01-01T00:00:00Z",
                        "hosts": hosts,
                        "nodes": nodes,
                        "workload": wl,
                        "direction": direction,
                        "path": path,
                        "scope": scope,
                        "procs": nodes * 8,
                        "bytes": int(bw * 6e10),
                        "bw_GBps": bw,
                        "per_host_bw_GBps": per,
                        "iops": bw * 1000,
                        "lat_ms": {"p50": 1.0, "p99": 9.0},
                    }
                )
                + "\n"
            )
            n += 1
    with open(d / "manifest.jsonl", "w") as fh:
        for h in hosts:
            fh.write(
                json.dumps(
                    {
                        "schema": 1,
                        "kind": "manifest",
                        "tool": "net",
                        "run_id": "bench",
                        "host": h,
                        "python": "3.11.2",
                        "versions": {"torch": "2.13.0", "nccl": "2.27.3"},
                        "env": {"NCCL_IB_HCA": "mlx5"},
                    }
                )
                + "\n"
            )
    (d / "spec.yaml").write_text(SPEC)
    return n


def _groups(fh: Any, hosts: list[str], slow: str, slow_link: set[str]) -> int:
    """The groups search's rounds as `stoker net --scopes groups` records them: the search's
    own schedule (reports.shared.group_search.group_search, which the run drives with real
    collectives), each round one record per group with its `round`; a group holding the slow
    node (or both ends of the slow link) runs at the slow figure."""
    sys.path.insert(0, str(REPO))
    from reports.shared.group_search import group_search

    n, rnd = 0, 0

    def measure(groups: list[tuple[str, ...]]) -> list[float]:
        nonlocal n, rnd
        values = [20.0 if slow in g or slow_link <= set(g) else 45.0 for g in groups]
        for i, (g, v) in enumerate(zip(groups, values)):
            fh.write(_rec("all_reduce", "groups", list(g), len(g), i, SIZES[-1], v, round=rnd) + "\n")
            n += 1
        rnd += 1
        return [v * SIZES[-1] / (SIZES[-1] + (8 << 20)) for v in values]  # the busbw _rec writes

    group_search(hosts, measure)
    return n


def run_child(
    cmd: list[str], env: dict[str, str] | None = None, cwd: Path = REPO
) -> tuple[int, float, float, float]:
    """(exit code, wall seconds, CPU seconds, peak RSS in MiB) of one child process. CPU time
    is shown beside wall time because on a shared machine the wall time includes waiting."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return proc.returncode, time.perf_counter() - t0, cpu, usage.ru_maxrss / 1024  # Linux: KiB


def checkout(rev: str, into: Path) -> Path:
    """The tree of git revision `rev` (its reports/ and launchers/), unpacked under `into`."""
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return into


def report(d: Path, code: Path) -> dict[str, Any]:
    """Run `stoker report` from the code in `code`; the figures and the findings it wrote."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}
    env["PYTHONPATH"] = str(code)
    load = os.getloadavg()[0]
    rc, secs, cpu, rss = run_child(
        [sys.executable, "-m", "launchers.cli", "report", str(d), "--workload", "llama-70b"], env, cwd=code
    )  # -m puts the cwd first on sys.path
    verdict = json.loads((d / "verdict.json").read_text()) if (d / "verdict.json").exists() else {}
    digests = {}
    for name in ("verdict.json", "report.md", "report.html"):
        f = d / name
        digests[name] = hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else None
        f.unlink(missing_ok=True)  # files this benchmark's report wrote; the next run writes its own
    return {"rc": rc, "wall": secs, "cpu": cpu, "rss": rss, "load": load, "verdict": verdict, "sha": digests}


def bare_parse(d: Path) -> dict[str, Any]:
    """A bare `json.loads` of every line of DIR/net.jsonl, in a child process like the report's."""
    load = os.getloadavg()[0]
    rc, secs, cpu, rss = run_child([sys.executable, "-c", BARE, str(d / "net.jsonl")])
    return {"rc": rc, "wall": secs, "cpu": cpu, "rss": rss, "load": load}


def findings(v: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (f["component"], f["check"], f["status"], f.get("measured"), tuple(f.get("hosts", ())))
        for f in v.get("findings", [])
    ]


def results(d: Path, nodes: int) -> tuple[int, str]:
    """The results in `d`: written, or kept from an earlier run of this benchmark with the same
    node count (its stamp file says so; the generator is deterministic, so the bytes are the
    same). (records, how they came)."""
    stamp = d / STAMP
    names = ("net.jsonl", "io.jsonl", "manifest.jsonl", "spec.yaml")
    if stamp.is_file() and all((d / f).is_file() for f in names):
        kept = json.loads(stamp.read_text())
        if kept.get("nodes") == nodes and kept.get("net_bytes") == (d / "net.jsonl").stat().st_size:
            return int(kept["records"]), "kept from an earlier run"
    stamp.unlink(missing_ok=True)
    t0 = time.perf_counter()
    n = write_results(d, nodes)
    size = (d / "net.jsonl").stat().st_size
    stamp.write_text(json.dumps({"nodes": nodes, "records": n, "net_bytes": size}))
    return n, f"written in {time.perf_counter() - t0:.1f} s"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument(
        "--keep", metavar="DIR", help="write the results here and keep them (reused when present)"
    )
    ap.add_argument("--baseline", metavar="REV", help="also run the report of this git revision and compare")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        metavar="N",
        help="run each N times (default 3), alternating; medians",
    )
    args = ap.parse_args()
    d = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="rp_bench_"))
    d.mkdir(parents=True, exist_ok=True)
    old_code = Path(tempfile.mkdtemp(prefix="rp_bench_code_")) if args.baseline else None
    try:
        n, how = results(d, args.nodes)
        size_mb = (d / "net.jsonl").stat().st_size / 1e6
        print(f"{args.nodes} nodes x {GPUS} GPUs: {n} records ({size_mb:.0f} MB of net.jsonl) {how}")
        codes = {"this tree": REPO}
        if old_code is not None:
            codes[f"baseline {args.baseline}"] = checkout(args.baseline, old_code)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
        bare: list[dict[str, Any]] = []
        print(
            f"{'code':<24} {'exit':>4} {'wall s':>7} {'CPU s':>6} {'peak RSS MiB':>13} {'findings':>9} "
            f"{'load before':>11} {'wall/bare':>9} {'CPU/bare':>8}"
        )
        for _ in range(max(1, args.repeat)):
            b = bare_parse(d)  # alternating with the reports: a busy spell hits all of them
            bare.append(b)
            print(
                f"{'bare json.loads':<24} {b['rc']:>4} {b['wall']:>7.2f} {b['cpu']:>6.2f} {b['rss']:>13.0f} "
                f"{'':>9} {b['load']:>11.1f}"
            )
            for name, code in codes.items():
                r = report(d, code)
                runs[name].append(r)
                print(
                    f"{name:<24} {r['rc']:>4} {r['wall']:>7.2f} {r['cpu']:>6.2f} {r['rss']:>13.0f} "
                    f"{len(r['verdict'].get('findings', [])):>9} {r['load']:>11.1f} "
                    f"{r['wall'] / b['wall']:>9.2f} {r['cpu'] / b['cpu']:>8.2f}"
                )
        bare_wall = statistics.median(b["wall"] for b in bare)
        bare_cpu = statistics.median(b["cpu"] for b in bare)
        if args.repeat > 1:
            print(f"{'median bare json.loads':<24} {'':>4} {bare_wall:>7.2f} {bare_cpu:>6.2f}")
            for name, rs in runs.items():
                med = {k: statistics.median(r[k] for r in rs) for k in ("wall", "cpu", "rss", "load")}
                print(
                    f"{'median ' + name:<24} {'':>4} {med['wall']:>7.2f} {med['cpu']:>6.2f} {med['rss']:>13.0f} "
                    f"{'':>9} {med['load']:>11.1f} {med['wall'] / bare_wall:>9.2f} {med['cpu'] / bare_cpu:>8.2f}"
                )
        big = args.nodes > ROUND_ROBIN_MAX
        mib = TARGET_BIG_MIB if big else TARGET_MIB
        print(
            f"{'target':<24} {'':>4} {'' if big else f'{TARGET_S:.1f}':>7} {'':>6} {mib:>13.0f} {'':>9} "
            f"{'':>11} {TARGET_RATIO:>9.2f} {'':>8}  on {os.cpu_count()} CPUs"
        )
        new = runs["this tree"][-1]
        wall = statistics.median(r["wall"] for r in runs["this tree"])
        rss = max(r["rss"] for r in runs["this tree"])
        ratio = wall / bare_wall
        ok = all(r["rc"] in (0, 1) for r in runs["this tree"]) and rss < mib and ratio <= TARGET_RATIO
        ok = ok and (big or wall < TARGET_S)
        ok = ok and len({tuple(r["sha"].items()) for r in runs["this tree"]}) == 1  # deterministic
        new_cpu = statistics.median(r["cpu"] for r in runs["this tree"])
        count = len(runs["this tree"])
        print(
            f"median of {count} runs each: report {wall:.2f} s wall ({new_cpu:.2f} s CPU), bare json.loads "
            f"{bare_wall:.2f} s wall ({bare_cpu:.2f} s CPU): ratio {ratio:.2f} wall, {new_cpu / bare_cpu:.2f} CPU "
            f"(target <= {TARGET_RATIO:.2f}); peak memory {rss:.0f} MiB, the largest of the {count} "
            f"(target < {mib:.0f}); load average {os.getloadavg()[0]:.1f} after"
        )
        if old_code is not None:
            olds = runs[f"baseline {args.baseline}"]
            old = olds[-1]
            same = findings(old["verdict"]) == findings(new["verdict"]) and old["verdict"].get(
                "verdict"
            ) == new["verdict"].get("verdict")
            identical = [k for k, v in new["sha"].items() if v is not None and v == old["sha"][k]]
            old_wall = statistics.median(r["wall"] for r in olds)
            old_cpu = statistics.median(r["cpu"] for r in olds)
            print(
                f"findings the same as the baseline's: {'yes' if same else 'NO'} "
                f"(verdict {new['verdict'].get('verdict')}, {len(findings(new['verdict']))} findings); "
                f"byte-identical: {', '.join(identical) or 'none'}; "
                f"speed-up {old_wall / wall:.1f}x wall, {old_cpu / new_cpu:.1f}x CPU"
            )
            ok = ok and same
        bad = [
            f"{f['component']} {' '.join(f['hosts'])}: {f['status']}"
            for f in new["verdict"].get("findings", [])
            if f["component"] in ("node", "link")
        ]
        print("node/link findings:", "; ".join(bad) or "none")
        slow = f"node{min(SLOW_NODE, args.nodes - 1):04d}"
        named = any(
            f["component"] == "node" and slow in f["hosts"] for f in new["verdict"].get("findings", [])
        )
        print(f"the slow node {slow} named: {'yes' if named else 'NO'}")
        return 0 if ok and named else 1
    finally:
        if not args.keep:
            shutil.rmtree(d, ignore_errors=True)
        if old_code is not None:
            shutil.rmtree(old_code, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
