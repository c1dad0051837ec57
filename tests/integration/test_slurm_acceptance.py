"""The acceptance job on a real two-node Slurm (REAL-TEST-BEDS §1): `stoker submit` renders
and submits it, Slurm runs every phase on n1 and n2, and the results agree with the job."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.records import read_records
from tests.conftest import STOKER, needs_root, needs_tool
from tests.harness.slurm import SlurmCluster

pytestmark = [needs_root, needs_tool("slurmctld"), needs_tool("slurmd"), needs_tool("sbatch"), pytest.mark.slow]

# small enough for 2 shared cores: the quick profile, cut further
SMALL = ["--profile", "quick", "--backend", "gloo", "--ops", "all_reduce,sendrecv", "--max-bytes", "1M",
         "--iters", "3", "--warmup", "1", "--workloads", "checkpoint", "--ckpt-bytes", "16M",
         "--io-runtime", "2"]
# the rendezvous port inside the launchers area's range; gloo on loopback (n1 and n2 do not resolve)
JOB_ENV = {"MASTER_PORT": "17901", "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    with SlurmCluster(prefix="la", nodes=2) as cluster:
        yield cluster


def submit(cluster: SlurmCluster, out: Path, cwd: Path, *extra: str) -> str:
    p = subprocess.run([*STOKER, "submit", "--nodes", "2", "--out", str(out), *SMALL, *extra],
                       env={**cluster.env, **JOB_ENV}, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("submitted job "), p.stdout
    return p.stdout.split()[2].rstrip(":")


def test_two_node_acceptance_job(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    job = submit(slurm, out, tmp_path)
    state = slurm.wait(job, timeout_s=480)
    rc = slurm.exit_code(job)
    log = (tmp_path / f"stoker-acceptance-{job}.out").read_text(errors="replace")
    assert state in ("COMPLETED", "FAILED"), log[-3000:]
    assert rc in (0, 1), log[-3000:]  # a verdict, not an aborted phase (3) or bad input (2)

    # every phase ran, in the contract's order, and none aborted
    phases = [json.loads(line) for line in (out / "phases.jsonl").read_text().splitlines()]
    assert [p["phase"] for p in phases] == ["intra-node", "inter-node", "pairs", "storage"]
    assert all(p["rc"] == 0 for p in phases), phases

    # records from both nodes, all under the job's run id
    recs = read_records(out)
    assert {r.run_id for r in [*recs.net, *recs.io]} == {f"slurm-{job}"}
    assert {h for r in recs.net for h in r.hosts} == {"n1", "n2"}
    assert {r.scope for r in recs.net} >= {"intra-node", "inter-node", "pair"}
    assert max(r.nodes for r in recs.net) == 2
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == {"n1", "n2"}

    # the report exists and agrees with the job: verdict.json's verdict is the exit code
    for name in ("report.md", "report.html", "verdict.json"):
        assert (out / name).is_file(), name
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["verdict"] == ("pass" if rc == 0 else "fail")
    assert verdict["run_id"] == f"slurm-{job}"


def test_results_dir_not_shared_is_refused_before_the_sweeps(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = slurm.private / "results"  # each node has its own empty tmpfs here
    job = submit(slurm, out, tmp_path)
    slurm.wait(job, timeout_s=120)
    assert slurm.exit_code(job) == 2
    lines = (tmp_path / f"stoker-acceptance-{job}.out").read_text().splitlines()
    assert len(lines) == 1 and "not on a file system shared by all 2 nodes" in lines[0]
    # nothing was measured on the node that ran the script
    assert not slurm.node_path(0, out / "net.jsonl").exists()


def _ranks_on(node: str, job: str) -> list[int]:
    """Pids of this job's `stoker net` ranks on one node (from /proc: its environment names
    the node and the job; these are processes the test started through Slurm)."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            env = set((d / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if b"launchers.cli" in argv and b"net" in argv and f"SLURMD_NODENAME={node}".encode() in env \
                and f"SLURM_JOB_ID={job}".encode() in env:
            pids.append(int(d.name))
    return pids


def test_a_hung_node_ends_the_phase_and_the_report_is_still_written(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    # larger sizes stretch the inter-node sweep, so it can be caught mid-way
    job = submit(slurm, out, tmp_path, "--max-bytes", "16M", "--iters", "5", "--net-timeout", "15")
    deadline = time.monotonic() + 240
    stopped: list[int] = []
    while not stopped and time.monotonic() < deadline:
        net = out / "net.jsonl"
        if net.exists() and any(json.loads(x).get("nodes") == 2 for x in net.read_text().splitlines() if x.strip()):
            stopped = _ranks_on("n2", job)  # the inter-node sweep is under way: n2 hangs now
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
        time.sleep(0.2)
    assert stopped, "never caught the inter-node phase running"
    try:
        slurm.wait(job, timeout_s=400)
    finally:
        for pid in stopped:  # SIGKILL from Slurm reaches stopped processes; CONT in case it did not
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
    rc = slurm.exit_code(job)
    ran = {p["phase"]: p for p in map(json.loads, (out / "phases.jsonl").read_text().splitlines())}
    # the hung phase ended within its limits (15 s stoker timeout, srun --time 2 min, timeout 135 s)
    assert ran["inter-node"]["rc"] != 0 and ran["inter-node"]["elapsed_s"] <= 135 + 30, ran
    # the phases after it ran, and the report was written from what was measured
    assert ran["pairs"]["rc"] == 0 and ran["storage"]["rc"] == 0, ran
    verdict = json.loads((out / "verdict.json").read_text())
    assert (out / "report.md").is_file()
    assert rc == (1 if verdict["verdict"] == "fail" else 3)
