"""Writes the fixed input records of the golden report (run once; the outputs are kept).

4 nodes x 8 H100 GPUs: intra-node fine except gpu03, inter-node at 72% of NDR, a slow
gpu03-gpu04 link in the pair tests, shared-storage writes under spec, one nccl-tests log
dropped in, two garbled lines.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).parent / "basic"
HOSTS = [f"gpu{i:02d}" for i in range(1, 5)]
RUN = "20261122T040000Z-golden"
SIZES = [1 << 20, 16 << 20, 256 << 20, 1 << 30]
FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "sendrecv": lambda n: 1.0}


def net(op: str, scope: str, hosts: list[str], ranks: int, group: int, size: int, busbw: float) -> dict:
    algbw = busbw / FACTOR[op](ranks)
    t = size / (algbw * 1e9)
    return {"schema": 1, "kind": "net", "run_id": RUN, "ts": "2026-11-22T04:00:00Z", "hosts": hosts,
            "nodes": len(set(hosts)), "op": op, "scope": scope, "ranks": ranks, "backend": "nccl",
            "dtype": "bfloat16", "bytes": size, "time_s": round(t, 9), "algbw_GBps": round(algbw, 4),
            "busbw_GBps": round(busbw, 4), "wrong": 0, "iters": 20, "warmup": 5, "group": group, "device": "cuda"}


def ramp(plateau: float, size: int) -> float:
    """busbw that rises with size to a plateau, like a real sweep."""
    return plateau * size / (size + (4 << 20))


def main() -> None:
    lines: list[str] = []
    for g, h in enumerate(HOSTS):
        plateau = 250.0 if h == "gpu03" else 372.0
        lines += [json.dumps(net("all_reduce", "intra-node", [h], 8, g, s, ramp(plateau, s))) for s in SIZES]
    lines += [json.dumps(net("all_reduce", "inter-node", HOSTS, 4, 0, s, ramp(36.0, s))) for s in SIZES]
    lines += [json.dumps(net("all_reduce", "world", HOSTS, 32, 0, s, ramp(38.5, s))) for s in SIZES]
    pairs = [(a, b) for i, a in enumerate(HOSTS) for b in HOSTS[i + 1:]]
    for g, (a, b) in enumerate(pairs):
        plateau = 20.0 if (a, b) == ("gpu03", "gpu04") else 45.0
        lines += [json.dumps(net("sendrecv", "pair", [a, b], 2, g, s, ramp(plateau, s))) for s in SIZES[2:]]
    lines.insert(5, '{"schema": 1, "kind": "net", "run_id": "' + RUN + '", "op": "all_red')   # truncated by a crash
    lines.append("\x00\x00garbage")
    (HERE / "net.jsonl").write_text("\n".join(lines) + "\n")

    def io(workload: str, direction: str, path: str, scope: str, bw: float, p50: float, p99: float) -> str:
        per = {h: round(bw / 4, 3) for h in HOSTS} if scope == "shared" else {"gpu01": bw}
        return json.dumps({"schema": 1, "kind": "io", "run_id": RUN, "ts": "2026-11-22T04:10:00Z",
                           "hosts": sorted(per), "nodes": len(per), "workload": workload, "direction": direction,
                           "path": path, "scope": scope, "procs": 8 * len(per), "bytes": int(bw * 60e9),
                           "bw_GBps": bw, "per_host_bw_GBps": per, "iops": round(bw * 1e9 / (1 << 20), 1),
                           "lat_ms": {"p50": p50, "p99": p99}, "runtime_s": 60.0, "backend": "fio",
                           "block_size": 1 << 20, "direct": True})
    (HERE / "io.jsonl").write_text("\n".join([
        io("checkpoint_write", "write", "/data", "shared", 12.0, 5.1, 40.2),
        io("checkpoint_read", "read", "/data", "shared", 35.0, 2.2, 9.8),
        io("dataloader_read", "read", "/data", "shared", 30.0, 1.1, 6.5),
        io("dataloader_read", "read", "/scratch", "local", 11.0, 0.4, 1.2),
    ]) + "\n")
    man = []
    for h in HOSTS:
        man.append(json.dumps({"schema": 1, "kind": "manifest", "tool": "net", "run_id": RUN, "host": h,
                               "python": "3.11.2", "platform": "Linux-6.1.0-x86_64",
                               "versions": {"torch": "2.13.0", "nccl": "2.27.3"},
                               "devices": [{"index": i, "name": "NVIDIA H100 80GB HBM3"} for i in range(8)],
                               "env": {"NCCL_IB_HCA": "mlx5", "NCCL_SECRET_TOKEN": "hunter2", "HOME": "/root"}}))
    (HERE / "manifest.jsonl").write_text("\n".join(man) + "\n")
    shutil.copy(Path(__file__).parent.parent / "nccl_tests" / "v2.13_mpirun_all_reduce.log", HERE / "all_reduce_perf.log")
    (HERE / "spec.yaml").write_text(
        "name: golden-h100\naccelerator: H100-SXM\ngpus_per_node: 8\nnetwork:\n  intra_node: nvlink4\n"
        "  inter_node: {link: ib-ndr, count: 8}\nstorage:\n"
        "  - {path: /data, kind: shared, read_GBps: 40, write_GBps: 20}\n"
        "  - {path: /scratch, kind: local, read_GBps: 12, write_GBps: 6}\nprice_per_gpu_hour: 2.49\n")
    (HERE / "workload.yaml").write_text("preset: llama-8b\ngpus: 32\n")


if __name__ == "__main__":
    main()
