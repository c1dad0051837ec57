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
from typing import Any

import pytest

from launchers.plan import PHASE_GRACE_S
from reports.table.read import read_records
from tests.conftest import STOKER, needs_root, needs_tool
from tests.harness.slurm import SlurmCluster, free_ports


def free_port() -> int:
    return free_ports(1)


pytestmark = [
    needs_root,
    needs_tool("slurmctld"),
    needs_tool("slurmd"),
    needs_tool("sbatch"),
    pytest.mark.slow,
]

# small enough for 2 shared cores: the quick profile, cut further
SMALL = [
    "--profile",
    "quick",
    "--backend",
    "gloo",
    "--ops",
    "all_reduce,sendrecv",
    "--max-bytes",
    "1M",
    "--iters",
    "3",
    "--warmup",
    "1",
    "--workloads",
    "checkpoint",
    "--ckpt-bytes",
    "16M",
    "--io-runtime",
    "2",
    "--compute-budget",  # the compute phase: 2 s of matmul sweep, not the profile's 20
    "2",
]
# the storage phase with fio alone: the torch.save and DCP saves run under srun in the pmix job
# (the plugin most GPU clusters ship); the other jobs here prove what the launcher does, and
# the saves would add ~25 s to each on 2 cores
FIO_ALONE = ("--save-repeats", "0")
# the srun MPI plugins real clusters set as MpiDefault; Debian's slurm carries all three
# (pmix through libpmix-dev). Each sets its own PMI/PMIx variables in every rank: a variable
# each one sets and the others do not, seen in the ranks of a real step.
MPI_DEFAULTS = ("none", "pmi2", "pmix")
PLUGIN_MARKS = {"none": set(), "pmi2": {"PMI_FD"}, "pmix": {"PMIX_RANK"}}
NET_TIMEOUT_S = 15


def job_env() -> dict[str, str]:
    # a rendezvous port free now; gloo on loopback (n1 and n2 do not resolve)
    return {"MASTER_PORT": str(free_port()), "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    """ONE cluster for the whole module: MpiDefault=pmix, the setting most GPU clusters ship.
    The MPI plugin cases pick theirs per job instead of restarting the cluster: a job
    submitted with SLURM_MPI_TYPE=X in its environment (sbatch passes it on) runs every srun
    step with plugin X, exactly as MpiDefault=X would (srun reads the variable as --mpi)."""
    with SlurmCluster(prefix="la", nodes=2, mpi_default="pmix") as cluster:
        yield cluster


def plugin_marks(cluster: SlurmCluster, env: dict[str, str], tmp_path: Path) -> set[str]:
    """The plugin variables the ranks of a batch job's srun step see, submitted with `env`:
    proof that the job's steps run under the plugin the test names."""
    log = tmp_path / "probe.out"
    job = cluster.sbatch(
        ["--nodes=2", "--ntasks-per-node=1", f"--output={log}", "--wrap", "srun env"], env=env
    )
    assert cluster.wait(job, timeout_s=120) == "COMPLETED", log.read_text(errors="replace")
    names = {line.split("=", 1)[0] for line in log.read_text(errors="replace").splitlines()}
    return names & set().union(*PLUGIN_MARKS.values())


def spec(tmp_path: Path, advertised: float, threshold: float | None = None) -> Path:
    """A spec for this test's paths: `advertised` GB/s for every network scope and path.
    With a tiny threshold, anything that moved data is `ok` (and not `suspect`: under the
    advertised figure); with the default 0.8 and 10,000 GB/s nothing here can reach it."""
    th = f"thresholds: {{network: {threshold}, storage: {threshold}}}\n" if threshold else ""
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"name: la-{advertised:g}\n"
        f"network: {{intra_node: {{GBps: {advertised}}}, inter_node: {{GBps: {advertised}}}}}\n"
        f"storage:\n"
        f"  - {{path: {tmp_path / 'local'}, kind: local, read_GBps: {advertised}, write_GBps: {advertised}}}\n"
        f"  - {{path: {tmp_path / 'shared'}, kind: shared, read_GBps: {advertised}, write_GBps: {advertised}}}\n"
        + th
    )
    return path


def submit(
    cluster: SlurmCluster,
    out: Path,
    cwd: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    nodes: int = 2,
) -> str:
    p = subprocess.run(
        [
            *STOKER,
            "submit",
            "--nodes",
            str(nodes),
            "--out",
            str(out),
            *SMALL,
            "--local-path",
            str(cwd / "local"),
            "--shared-path",
            str(cwd / "shared"),
            *extra,
        ],
        env={**cluster.env, **job_env(), **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("submitted job "), p.stdout
    return p.stdout.split()[2].rstrip(":")


def finish(cluster: SlurmCluster, job: str, cwd: Path, timeout_s: float = 480) -> tuple[str, int, str]:
    """(final state, exit code, job log)"""
    state = cluster.wait(job, timeout_s=timeout_s)
    return state, cluster.exit_code(job), (cwd / f"stoker-acceptance-{job}.out").read_text(errors="replace")


def ran_every_phase_on_both_nodes(out: Path, job: str, log: str) -> None:
    """What every acceptance job that measured must show, whatever its verdict: every phase
    ran in the contract's order and none aborted; records from both nodes under the job's
    run id; one inventory task per node; the job read the spec's copy in the shared results
    dir (when it had one), the report written."""
    phases = [json.loads(line) for line in (out / "phases.jsonl").read_text().splitlines()]
    assert [p["phase"] for p in phases] == [
        "inventory",
        "compute",
        "intra-node",
        "inter-node",
        "pairs",
        "storage",
    ], log[-3000:]
    assert all(p["rc"] == 0 for p in phases), (phases, log[-3000:])
    if (out / "spec.yaml").exists():  # the shared copy, not the submit host's file
        assert f"--spec {out / 'spec.yaml'}" in (out / "acceptance.sbatch").read_text()
    recs = read_records(out)
    assert {r.run_id for r in [*recs.net.records(), *recs.io]} == {f"slurm-{job}"}
    assert {h for r in recs.net.records() for h in r.hosts} == {"n1", "n2"}
    assert {r.scope for r in recs.net.records()} >= {"intra-node", "inter-node", "pair"}
    assert max(r.nodes for r in recs.net.records()) == 2
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == {"n1", "n2"}
    assert {r["host"] for r in recs.host} == {"n1", "n2"}  # one inventory task per node
    for name in ("report.md", "report.html"):
        assert (out / name).is_file(), name
    assert json.loads((out / "verdict.json").read_text())["run_id"] == f"slurm-{job}"


def judged_below_spec(verdict: dict[str, Any]) -> None:
    """10,000 GB/s at the default 80%: every network and storage figure is below spec
    (inter-node has no reference here: a spec without gpus_per_node gives no per-GPU share)."""
    judged = [
        f
        for f in verdict["findings"]
        if f["expected"] is not None
        and f["component"] in ("intra-node network", "local storage", "shared storage")
    ]
    assert {f["component"] for f in judged} == {"intra-node network", "local storage", "shared storage"}, (
        verdict["findings"]
    )
    assert {f["status"] for f in judged} == {"below_spec"}, judged


# One acceptance job per srun MPI plugin, each with a different reference, so that three jobs
# cover both what the plugins must not change (every phase on both nodes) and the three ways a
# measured job ends: a spec it meets (pass, exit 0), a spec it cannot meet (fail, exit 1), and
# no reference at all (unjudged, exit 1: an acceptance needs one). Which plugin goes with
# which reference does not matter: the verdict is the report's, after the steps ended.
# (spec's advertised GB/s and threshold, or None; the verdict; the job's final state and exit)
CASES: dict[str, tuple[tuple[float, float | None] | None, str, tuple[str, int]]] = {
    "pmix": ((100.0, 0.0001), "pass", ("COMPLETED", 0)),
    "pmi2": ((10000.0, None), "fail", ("FAILED", 1)),
    "none": (None, "unjudged", ("FAILED", 1)),
}


@pytest.mark.parametrize("mpi", MPI_DEFAULTS)
def test_two_node_acceptance_job(mpi: str, slurm: SlurmCluster, tmp_path: Path) -> None:
    # the cluster's own MpiDefault (pmix) for pmix; the job's environment for the others
    plugin = {} if mpi == slurm.mpi_default else {"SLURM_MPI_TYPE": mpi}
    assert plugin_marks(slurm, plugin, tmp_path) == PLUGIN_MARKS[mpi]
    reference, want, want_end = CASES[mpi]
    out = tmp_path / "results"
    extra: tuple[str, ...] = ("--spec", str(spec(tmp_path, *reference))) if reference else ()
    extra += () if mpi == "pmix" else FIO_ALONE
    job = submit(slurm, out, tmp_path, *extra, env=plugin)
    state, rc, log = finish(slurm, job, tmp_path)
    ran_every_phase_on_both_nodes(out, job, log)
    verdict = json.loads((out / "verdict.json").read_text())
    recs = read_records(out)
    per_node = {
        n: (sum(n in r.hosts for r in recs.net.records()), sum(n in r.per_host_bw_GBps for r in recs.io))
        for n in ("n1", "n2")
    }
    print(
        f"MPI plugin {mpi}: job {job} {state} exit {rc}, verdict {verdict['verdict']}, "
        f"(net, io) records per node {per_node}"
    )
    # the job state is the verdict
    assert verdict["verdict"] == want, verdict["findings"]
    assert (state, rc) == want_end, log[-3000:]
    if want == "fail":
        judged_below_spec(verdict)
    if want == "unjudged":
        assert "PASS" not in (out / "report.md").read_text()
        assert "acceptance needs a reference" in log


def test_a_dead_network_is_incomplete_exit_3(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    # nccl on nodes without GPUs: every network phase dies; storage still runs
    job = submit(slurm, out, tmp_path, "--backend", "nccl", "--allow-unjudged", *FIO_ALONE)
    state, rc, log = finish(slurm, job, tmp_path)
    verdict = json.loads((out / "verdict.json").read_text())
    first = (out / "report.md").read_text().splitlines()[0]
    print(
        f"dead network: job {job} {state} exit {rc}, verdict {verdict['verdict']}; report.md line 1: {first}"
    )
    assert verdict["verdict"] == "incomplete" and verdict["aborted_phases"] == [
        "intra-node",
        "inter-node",
        "pairs",
    ]
    assert verdict["records"]["net"] == 0 and verdict["records"]["io"] > 0
    assert (state, rc) == ("FAILED", 3), log[-3000:]
    # the first line names the phase and the ranks' own reason, not only an exit code
    assert (
        "INCOMPLETE: phase intra-node ended with exit code" in first
        and "nccl" in first.split(":", 3)[-1].lower()
    ), first


def test_results_dir_not_shared_is_refused_before_the_sweeps(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = slurm.private / "results"  # each node has its own empty tmpfs here
    job = submit(slurm, out, tmp_path)
    slurm.wait(job, timeout_s=120)
    assert slurm.exit_code(job) == 2
    lines = (tmp_path / f"stoker-acceptance-{job}.out").read_text().splitlines()
    assert len(lines) == 1 and "not on a file system shared by all 2 nodes" in lines[0]
    # nothing was measured on the node that ran the script
    assert not slurm.node_path(0, out / "net.jsonl").exists()


def ranks_on(cluster: SlurmCluster, index: int, job: str, scopes: bytes) -> list[int]:
    """Pids of this job's `stoker net --scopes SCOPES` ranks on node `index` (0-based) of this
    bed (from /proc: in that node's mount namespace, its environment names the node and the
    job; another worker's Slurm bed has an n2 and a job of the same number too). Only that
    phase's ranks: the pairs phase also writes two-node records."""
    node = f"n{index + 1}"
    pids = []
    for pid in sorted(cluster.node_pids(index)):
        d = Path(f"/proc/{pid}")
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            env = set((d / "environ").read_bytes().split(b"\0"))
        except OSError:
            continue
        if (
            b"launchers.cli" in argv
            and b"net" in argv
            and scopes in argv
            and f"SLURMD_NODENAME={node}".encode() in env
            and f"SLURM_JOB_ID={job}".encode() in env
        ):
            pids.append(int(d.name))
    return pids


def test_a_hung_node_ends_the_phase_and_the_report_is_still_written(
    slurm: SlurmCluster, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    # larger sizes stretch the inter-node sweep, so it can be caught mid-way
    job = submit(
        slurm,
        out,
        tmp_path,
        "--max-bytes",
        "16M",
        "--iters",
        "5",
        "--net-timeout",
        str(NET_TIMEOUT_S),
        *FIO_ALONE,
    )
    deadline = time.monotonic() + 240
    stopped: list[int] = []
    while not stopped and time.monotonic() < deadline:
        net = out / "net.jsonl"
        if net.exists() and any(
            json.loads(x).get("nodes") == 2 for x in net.read_text().splitlines() if x.strip()
        ):
            stopped = ranks_on(
                slurm, 1, job, b"world,inter-node"
            )  # the inter-node sweep is under way: n2 hangs now
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
    # the hung phase ended within its limits: stoker's --timeout, then the phase's `timeout`
    # (the net timeout plus the job's grace), whose --kill-after=30 is the last resort
    assert (
        ran["inter-node"]["rc"] != 0 and ran["inter-node"]["elapsed_s"] <= NET_TIMEOUT_S + PHASE_GRACE_S + 30
    ), ran
    # the phases after it ran on both nodes, and the report was written from what was measured:
    # a hang names no node (n1's ranks exited on their watchdogs, srun then Terminated n2's), so
    # none is set aside (launchers/slurm/lost_step.py)
    assert ran["pairs"]["rc"] == 0 and ran["storage"]["rc"] == 0, ran
    assert (out / "setaside.jsonl").read_text() == ""
    verdict = json.loads((out / "verdict.json").read_text())
    assert (out / "report.md").is_file()
    # without a spec nothing can fail: the missing inter-node phase makes it incomplete
    assert verdict["verdict"] == "incomplete" and rc == 3 and slurm.state(job) == "FAILED"
    assert "INCOMPLETE: phase inter-node" in (out / "report.md").read_text().splitlines()[0]
