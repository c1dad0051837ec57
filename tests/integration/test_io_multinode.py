"""Two processes on one machine acting as two nodes: two torchrun invocations
(`--nnodes 2 --node-rank k`) on 127.0.0.1, each with its own STOKER_HOSTNAME, write to one
shared directory at once; the aggregate and per-host figures must add up."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import PYTHON, REPO, needs_tool

pytestmark = needs_tool("fio")
MIB = 1 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_nodes_share_one_directory(tmp_path: Path) -> None:
    shared, out = tmp_path / "shared", tmp_path / "out"
    shared.mkdir()
    port = free_port()
    procs = []
    for rank, host in enumerate(("io-node-a", "io-node-b")):
        env = {**os.environ, "STOKER_HOSTNAME": host, "STOKER_RUN_ID": "io-two-nodes"}
        cmd = [
            PYTHON,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            "2",
            "--node-rank",
            str(rank),
            "--nproc-per-node",
            "1",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(port),
            "--no-python",
            PYTHON,
            "-m",
            "launchers.cli",
            "io",
            "--path",
            str(shared),
            "--out",
            str(out if rank == 0 else tmp_path / "out-b"),
            "--workloads",
            "checkpoint,metadata",
            "--ckpt-bytes",
            "16M",
            "--ckpt-block",
            "1M",
            "--writers",
            "2",
            "--md-files",
            "100",
            "--storm-procs",
            "2",
            "--storm-files",
            "50",
        ]
        procs.append(
            subprocess.Popen(
                cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        )
    try:
        results = [p.communicate(timeout=240) for p in procs]
    finally:
        for p in procs:  # a hung "node" must not outlive the test
            if p.poll() is None:
                p.terminate()  # torchrun passes SIGTERM on to its worker
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    for p, (_, e) in zip(procs, results):
        assert p.returncode == 0, e[-3000:]
    recs = read_records(out)
    assert not (tmp_path / "out-b" / "io.jsonl").exists()  # rank 0 alone writes records
    assert len(recs.manifests) == 2  # one manifest line per host
    by = {(r.workload, r.backend, r.extra.get("op", "")): r for r in recs.io}
    w = by[("checkpoint_write", "fio", "")]
    for rec in (w, by[("checkpoint_read", "fio", "")]):
        assert rec.hosts == ("io-node-a", "io-node-b") and rec.nodes == 2 and rec.scope == "shared"
        assert rec.procs == 4
        per_bytes, per_s = rec.extra["per_host_bytes"], rec.extra["per_host_seconds"]
        # time_based: each host moves whole 1 MiB blocks over its steady window (not one pass)
        assert set(per_bytes) == {"io-node-a", "io-node-b"}
        assert all(b > 0 and b % MIB == 0 for b in per_bytes.values()), per_bytes
        assert rec.bytes == sum(per_bytes.values())
        for h in rec.hosts:
            assert rec.per_host_bw_GBps[h] == pytest.approx(per_bytes[h] / per_s[h] / 1e9, rel=1e-3)
        # the common window covers every host's own window, so the aggregate cannot beat their sum
        window = rec.extra["window_s"]
        assert window >= max(per_s.values()) - 1e-6
        assert rec.bw_GBps == pytest.approx(rec.bytes / window / 1e9, rel=1e-3)
        assert rec.bw_GBps <= sum(rec.per_host_bw_GBps.values()) * 1.001
        assert rec.extra["slowest_host"] == min(rec.per_host_bw_GBps, key=rec.per_host_bw_GBps.get)
    storm = by[("metadata", "fio", "import_storm")]
    assert storm.procs == 4 and storm.bytes == 2 * 2 * 50 * 4096
    assert by[("checkpoint_write", "torch.save", "")].hosts == ("io-node-a", "io-node-b")
    assert [x for x in shared.iterdir()] == []  # both nodes cleaned up
