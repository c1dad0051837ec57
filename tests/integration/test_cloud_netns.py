"""The commands inside the rendered Kubernetes, SkyPilot and dstack jobs, run for real on
the namespaced 2-node bed (tests/harness/netns.py) with the environment each platform gives
its nodes — no API server, cloud or dstack server is involved:

- k8s: the Indexed Job's container command and env; JOB_COMPLETION_INDEX per pod, and pod 0's
  name under the headless Service (`<job>-0.<job>`) resolving to node 0, as cluster DNS would;
  the ConfigMap's data written where it would be mounted;
- skypilot: the task's `run:` and `envs:` with SKYPILOT_NODE_RANK / _NODE_IPS / _NUM_NODES /
  _NUM_GPUS_PER_NODE; its file_mounts copied into place;
- dstack: the task's `commands:` and `env:` with DSTACK_NODE_RANK / _MASTER_NODE_IP /
  _NODES_NUM / _GPUS_PER_NODE.

- k8s mpijob: the MPIJob launcher's command and env (launchers/mpirun.sh) in node 0's
  namespace, beside worker 0 as the fixed anti-affinity allows; Open MPI reaches the
  "workers" through an rsh agent that does what `ssh` into a worker pod does: its namespace,
  its host name and none of the pod's environment (sshd hands a session none of it), so
  the fabric's settings reach the remote ranks only through `mpirun -x`.

Each must reach a report with network and storage records from both nodes, the inventory
phase run on every node (its nodes have no device to record: a veth is virtual); each
fabric's env must be in the manifest every rank host wrote from inside the rank; the
measured inter-node bandwidth must fit under the shaped link. One pod with wrong rank
variables ends in the one-line failure before any sweep, on node 0 too at once.
"""

from __future__ import annotations

import json
import shutil
import stat
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from launchers.cloud.cloudjob import CloudJob
from launchers.cloud.fabrics import FABRICS
from launchers.cloud.submit_cloud import render
from launchers.profiles import Profile, get_profile, with_overrides
from reports.table.read import read_records
from tests.conftest import REPO, STOKER, bed_missing, needs_root
from tests.harness import netns

pytestmark = [needs_root, pytest.mark.slow]

PREFIX = "ncl"  # the neocloud area's namespaces
RATE_MBIT = 400
NODE_GBPS = RATE_MBIT * 1e6 / 8 / 1e9  # 0.05 GB/s per node, one direction
# the shaped rate as the advertised inter-node figure (the known limit); loopback has none,
# so intra-node is left without a reference rather than given the figure it measured
SPEC = (
    "name: ncl-shaped\ngpus_per_node: 2\nnetwork:\n  inter_node: {GBps: 0.05}\n"
    "thresholds: {network: 0.5, storage: 0.5}\n"
)
PROFILE = with_overrides(
    get_profile("quick"),
    ops=("all_reduce",),
    min_bytes="8M",
    max_bytes="8M",
    iters=4,
    warmup=1,
    workloads=("checkpoint",),
    ckpt_bytes="8M",
    io_runtime_s=2,  # 2: iobench MIN_RUNTIME_S
    compute_budget_s=2.0,  # the compute phase: 2 s of matmul sweep per node, not the profile's 20
)
# the storage phase with fio alone (`--save-repeats 0` reaches the nodes' launcher): the torch.save
# and DCP saves run in the k8s job; the other platforms differ in how they start the nodes
FIO_ALONE = replace(PROFILE, save_repeats=0)


def job(
    tmp: Path, name: str, shared: bool = True, fabric: str = "tcp", profile: Profile = FIO_ALONE
) -> CloudJob:
    return CloudJob(
        name=name,
        nodes=2,
        gpus_per_node=0,
        profile=profile,
        image="unused",
        fabric=fabric,
        backend="gloo",
        out=str(tmp / "results"),
        results_volume="rwx" if shared else None,
        stoker_dir=str(REPO),
        inputs_dir=str(tmp / "inputs"),
        spec_text=SPEC,
        spec_path=str(tmp / "spec.yaml"),
    )


def _k8s(c: netns.NetnsCluster, j: CloudJob, tmp: Path) -> list[tuple[list[str], dict[str, str]]]:
    docs = list(yaml.safe_load_all(render(j, "k8s")))
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    (tmp / "inputs").mkdir(exist_ok=True)
    for fname, text in cm["data"].items():  # what the ConfigMap volume would show
        (tmp / "inputs" / fname).write_text(text, encoding="utf-8")
    pod = next(d for d in docs if d["kind"] == "Job")["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    env = {e["name"]: e["value"] for e in ctr["env"]}
    # cluster DNS for the headless Service: pod i is <job>-<i>.<subdomain>
    for ns in c.namespaces:
        with open(netns.NETNS_ETC / ns / "hosts", "a", encoding="utf-8") as fh:
            fh.writelines(f"{c.addr(i)}\t{j.name}-{i}.{pod['subdomain']}\n" for i in range(c.n))
    return [(ctr["command"], {**env, "JOB_COMPLETION_INDEX": str(i)}) for i in range(c.n)]


def _sky(c: netns.NetnsCluster, j: CloudJob, tmp: Path) -> list[tuple[list[str], dict[str, str]]]:
    task = yaml.safe_load(render(j, "skypilot"))
    for remote, local in task.get("file_mounts", {}).items():
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, remote)
    ips = "\n".join(c.addr(i) for i in range(c.n))
    return [
        (
            ["bash", "-c", task["run"]],
            {
                **task["envs"],
                "SKYPILOT_NODE_RANK": str(i),
                "SKYPILOT_NODE_IPS": ips,
                "SKYPILOT_NUM_NODES": str(c.n),
                "SKYPILOT_NUM_GPUS_PER_NODE": "0",
            },
        )
        for i in range(c.n)
    ]


def _dstack(c: netns.NetnsCluster, j: CloudJob, tmp: Path) -> list[tuple[list[str], dict[str, str]]]:
    task = yaml.safe_load(render(j, "dstack"))
    for item in task.get("files", []):
        local, remote = item.split(":")
        Path(remote).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, remote)
    env = dict(e.split("=", 1) for e in task["env"])
    return [
        (
            ["bash", "-c", "\n".join(task["commands"])],
            {
                **env,
                "DSTACK_NODE_RANK": str(i),
                "DSTACK_MASTER_NODE_IP": c.addr(0),
                "DSTACK_NODES_NUM": str(c.n),
                "DSTACK_GPUS_PER_NODE": "0",
            },
        )
        for i in range(c.n)
    ]


PLATFORMS = {"k8s": _k8s, "skypilot": _sky, "dstack": _dstack}


@pytest.fixture(scope="module")
def cluster() -> Any:
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    with netns.NetnsCluster(prefix=PREFIX, nodes=2, rate_mbit=RATE_MBIT) as c:
        yield c


def run_platform(
    c: netns.NetnsCluster,
    platform: str,
    j: CloudJob,
    tmp: Path,
    port: int,
    env_fix: dict[int, dict[str, str]] | None = None,
    timeout: float = 280,
) -> list[tuple[int, str, str]]:
    (tmp / "spec.yaml").write_text(SPEC, encoding="utf-8")
    nodes = PLATFORMS[platform](c, j, tmp)
    jobs = []
    for i, (argv, env) in enumerate(nodes):
        env = {
            **env,
            "MASTER_PORT": str(port),
            "STOKER_PY": STOKER[0],
            "SYNC_TIMEOUT": "20",
            # the node-local volume (LOCAL_IO under /stoker-local in a pod): a dir of this node's
            "LOCAL_IO": str(tmp / f"local{i}"),
            **(env_fix or {}).get(i, {}),
        }
        jobs.append((i, argv, c.env(i, env)))
    return c.run_all(jobs, timeout)


def summary_line(log: str) -> dict[str, Any]:
    lines = [ln for ln in log.splitlines() if ln.startswith("stoker-summary ")]
    assert len(lines) == 1, log[-3000:]
    return json.loads(lines[0].removeprefix("stoker-summary "))


def fabric_env_in_every_rank(out: Path, fabric: str, hosts: set[str]) -> None:
    """Each host's net manifest is written from inside its ranks (netbench gathers one per
    host, with the allowlisted NCCL_/FI_/STOKER_ env): the fabric's settings must be there."""
    manifests = [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]
    net = {m["host"]: m["env"] for m in manifests if m.get("tool") == "net"}
    assert set(net) == hosts, net.keys()
    for host, env in net.items():
        assert dict(FABRICS[fabric].env).items() <= env.items(), (host, fabric, env)


def host_records(out: Path) -> set[str]:
    path = out / "host.jsonl"
    return {json.loads(x)["host"] for x in path.read_text().splitlines()} if path.exists() else set()


def inventoried(log: str) -> set[str]:
    """The hosts whose inventory phase reported (`inventory HOST: ...`). A namespaced node
    has only a veth (virtual: no port record) and no GPU or RDMA device: its inventory is the
    node record alone (netbench/inventory/node.py); ports, links and GPUs are recorded where
    there is hardware (the Slurm and mpirun.sh tests)."""
    return {ln.split()[1].rstrip(":") for ln in log.splitlines() if ln.startswith("inventory ")}


@pytest.mark.parametrize(
    "platform,port,shared,fabric",
    [
        ("k8s", 17611, True, "efa"),
        ("skypilot", 17621, True, "ib"),
        ("dstack", 17631, False, "roce"),
    ],
)
def test_rendered_commands_reach_a_report_from_both_nodes(
    cluster: netns.NetnsCluster, tmp_path: Path, platform: str, port: int, shared: bool, fabric: str
) -> None:
    profile = PROFILE if platform == "k8s" else FIO_ALONE
    j = job(tmp_path, f"ncl-{platform}-{fabric}", shared=shared, fabric=fabric, profile=profile)
    # no shared volume: each pod's results dir is its own (an emptyDir), emulated per node
    fix = {} if shared else {i: {"OUT": str(tmp_path / f"pod{i}" / j.name)} for i in range(2)}
    res = run_platform(cluster, platform, j, tmp_path, port, fix)
    logs = "\n".join(
        f"--- node {i} rc={rc}\n{out[-2500:]}\n{err[-1500:]}" for i, (rc, out, err) in enumerate(res)
    )
    out = Path(fix[0]["OUT"]) if fix else Path(j.run_dir)
    verdict = json.loads((out / "verdict.json").read_text())
    summ = summary_line(res[0][1])
    assert (summ["verdict"], summ["exit"], summ["run_id"]) == (verdict["verdict"], res[0][0], j.name), logs
    # the verdict's exit code (docs/contract.md): a spec promising GPUs on these CPU ranks is incomplete
    assert (
        res[0][0] == {"pass": 0, "fail": 1, "incomplete": 3}.get(verdict["verdict"], 1) and res[1][0] == 0
    ), logs
    recs = read_records(out)
    hosts = set(cluster.hosts)
    assert {h for r in recs.net.records() for h in r.hosts} == hosts, logs
    assert {r.scope for r in recs.net.records()} >= {"intra-node", "inter-node", "pair"}, logs
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == hosts, logs
    assert {r.run_id for r in [*recs.net.records(), *recs.io]} == {j.name}
    # the profile's torch saves reached stoker io on the nodes: both kinds, or none (fio alone)
    saves = {"torch.save", "torch.dcp"} if profile.save_repeats else set()
    assert {r.backend for r in recs.io} == {"fio", *saves}, logs
    inter = [r.busbw_GBps for r in recs.net.records() if r.scope == "inter-node"]
    pair = [r.busbw_GBps for r in recs.net.records() if r.scope == "pair"]
    # one rail per local rank shares the node's shaped link: none beats the whole link
    print(
        f"\n{platform}: verdict {verdict['verdict']}, node 0 exit {res[0][0]}, inter-node busbw "
        f"{min(inter):.4f}..{max(inter):.4f} GB/s per rail, pair {', '.join(f'{b:.4f}' for b in pair)} GB/s, shaped link {NODE_GBPS} GB/s per node"
    )
    assert inter and max(inter) <= NODE_GBPS * 1.10, inter
    rails: dict[tuple[int, bool], list[float]] = {}
    for r in recs.net.records():
        if r.scope == "inter-node":
            rails.setdefault((r.bytes, r.in_place), []).append(r.busbw_GBps)
    # per size, the rails at the slowest one's pace (the judge's node aggregate) fit in the link too
    assert all(min(v) * len(v) <= NODE_GBPS * 1.10 for v in rails.values()), rails
    # the pair test runs every rail of a pair at once (local rank j with local rank j); here the
    # node's two ranks share its one shaped link, so a pair's rails together come close to the
    # shaped rate, not over it (its token bucket was measured to give 0.94-0.957 of the rate to
    # iperf3); bounded above as the judge reads rails, at the slowest one's pace: on a loaded
    # machine the rails' timed loops need not overlap, and a rail alone on the link takes all of it
    pairs: dict[tuple[tuple[str, ...], int], list[float]] = {}
    for r in recs.net.records():
        if r.scope == "pair":
            pairs.setdefault((tuple(sorted(r.hosts)), r.bytes), []).append(r.busbw_GBps)
    assert pair and all(NODE_GBPS * 0.5 <= sum(v) for v in pairs.values()), (pair, pairs)
    assert all(min(v) * len(v) <= NODE_GBPS * 1.10 for v in pairs.values()), (pair, pairs)
    if not shared:  # node 1's own dir holds nothing: rank 0 wrote every record on node 0
        assert not (tmp_path / "pod1" / j.name / "net.jsonl").exists()
    fabric_env_in_every_rank(out, fabric, hosts)
    dirs = [out] if shared else [tmp_path / f"pod{i}" / j.name for i in range(2)]  # each node's OUT
    # the inventory phase ran on every node, each reading itself into host records (its node
    # record: a veth is no port record), into its own OUT without a shared volume
    assert [inventoried(o + e) for _, o, e in res] == [{h} for h in cluster.hosts], logs
    assert set().union(*(host_records(d) for d in dirs)) == hosts, logs
    phases = [json.loads(x)["phase"] for x in (out / "phases.jsonl").read_text().splitlines()]
    assert phases == ["inventory", "compute", "intra-node", "inter-node", "pairs", "storage"], phases
    # the compute phase ran on every node, each sweeping its own devices into its own OUT
    # (without a shared volume node 1's stay in its pod's dir, as its inventory does)
    assert {r["host"] for d in dirs for r in read_records(d).compute} == hosts, logs


def said(platform: str, i: int, rc: int, err: str) -> tuple[int, list[str]]:
    """A node's exit code and stderr lines as torchrun.sh left them: a Kubernetes worker's pod
    turns its non-zero exit into 10 with one line of its own after them (launchers/cloud/k8s.py:
    its index fails, the Job goes on to node 0's verdict)."""
    lines = err.strip().splitlines()
    if platform == "k8s" and i != 0 and rc == 10:
        assert lines and lines[-1].startswith("stoker: node "), lines  # its NODE_RANK, as the pod has it
        assert "this pod exits 10" in lines[-1], lines
        return 2, lines[:-1]  # torchrun.sh exited 2 with its own lines before the pod's
    return rc, lines


@pytest.mark.parametrize(
    "platform,fix,port",
    [
        ("k8s", {1: {"JOB_COMPLETION_INDEX": "2"}}, 17641),  # an index outside the Job's completions
        ("skypilot", {1: {"SKYPILOT_NUM_NODES": "1"}}, 17651),  # a pod that thinks it is alone
        ("dstack", {0: {"DSTACK_NODES_NUM": "1"}, 1: {"DSTACK_NODES_NUM": "1"}}, 17661),  # both do
    ],
)
def test_world_size_mismatch_is_one_line(
    cluster: netns.NetnsCluster, tmp_path: Path, platform: str, fix: dict[int, dict[str, str]], port: int
) -> None:
    j = job(tmp_path, f"ncl-{platform}-bad")
    t0 = time.monotonic()
    res = run_platform(cluster, platform, j, tmp_path, port, fix, timeout=90)
    elapsed = time.monotonic() - t0
    for i in fix:
        rc, out, err = res[i]
        code, lines = said(platform, i, rc, err)
        assert code == 2 and len(lines) == 1, (rc, out[-1500:], err[-1500:])
        assert "the job asked for 2" in err or "outside 0..1" in err, err
        assert "started" not in out  # no phase ran on the bad node
    for i in set(range(2)) - set(fix):  # the good node: stopped by the bad one's line, not SYNC_TIMEOUT
        rc, out, err = res[i]
        code, lines = said(platform, i, rc, err)
        assert code == 2 and len(lines) == 1, (rc, out[-1500:], err[-1500:])
        assert "another node stopped before any sweep" in err and "not on a file system shared" not in err, (
            err
        )
    print(f"\n{platform}: bad world stopped every node in {elapsed:.1f} s (SYNC_TIMEOUT 20 s)")
    assert elapsed < 20, elapsed
    assert not (Path(j.run_dir) / "net.jsonl").exists()  # never N one-node tests reported as one


# What `ssh` into a worker pod gives a command: the pod's network namespace and host name,
# and a session environment from sshd, not the pod's env (Open MPI joins the remote command
# into one string, as ssh does). Options Open MPI may put before the host are skipped; it
# passes the host name without its domain.
AGENT = """#!/bin/bash
while [ "${1#-}" != "$1" ]; do shift; done
host=$1; shift
case "${host%%.*}" in
%s
  *) echo "rsh agent: no worker $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
  HOME=/root sh -c 'hostname "$1"; shift; exec sh -c "$*"' sh "$name" "$@"
"""


# one fabric: what the test shows is that a fabric's settings reach the remote ranks only
# through `mpirun -x` (EFA's FI_ and NCCL_ names both); each fabric's env reaching the ranks
# of a platform is shown by the cases above (efa, ib, roce) and every fabric's rendering by
# the golden files (tests/unit/test_cloud_render.py)
@pytest.mark.parametrize("fabric,port", [("efa", 17681)])
def test_mpijob_launcher_beside_worker_0_reaches_every_rank(
    cluster: netns.NetnsCluster, tmp_path: Path, fabric: str, port: int
) -> None:
    j = replace(job(tmp_path, f"ncl-mpi-{fabric}", fabric=fabric), kind="mpijob")
    (tmp_path / "spec.yaml").write_text(SPEC, encoding="utf-8")
    docs = list(yaml.safe_load_all(render(j, "k8s")))
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    (tmp_path / "inputs").mkdir(exist_ok=True)
    for fname, text in cm["data"].items():
        (tmp_path / "inputs" / fname).write_text(text, encoding="utf-8")
    spec = next(d for d in docs if d["kind"] == "MPIJob")["spec"]
    launcher = spec["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    workers = [f"{j.name}-worker-{i}.{j.name}" for i in range(cluster.n)]
    # the operator's hostfile and the Service's DNS names for the workers
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("".join(f"{w} slots={spec['slotsPerWorker']}\n" for w in workers))
    for ns in cluster.namespaces:
        with open(netns.NETNS_ETC / ns / "hosts", "a", encoding="utf-8") as fh:
            fh.writelines(f"{cluster.addr(i)}\t{w}\n" for i, w in enumerate(workers))
    agent = tmp_path / "rsh-agent"
    cases = "\n".join(
        f"  {w.split('.')[0]}) ns={cluster.namespaces[i]} name={cluster.hosts[i]} ;;"
        for i, w in enumerate(workers)
    )
    agent.write_text(AGENT % cases)
    agent.chmod(agent.stat().st_mode | stat.S_IXUSR)
    env = {e["name"]: e["value"] for e in launcher["env"]}
    env.update(
        HOSTFILE=str(hostfile),
        MASTER_PORT=str(port),
        STOKER_PY=STOKER[0],
        LOCAL_IO=str(tmp_path / "local"),  # one path on every node, as the pods' volume mount
        OMPI_MCA_plm_rsh_agent=str(agent),
        OMPI_MCA_btl_tcp_if_include=netns.IFNAME,
        OMPI_MCA_oob_tcp_if_include=netns.IFNAME,
    )
    assert launcher["command"][:2] == ["bash", f"{REPO}/launchers/mpirun.sh"]
    ((rc, out, err),) = cluster.run_all([(0, launcher["command"], cluster.env(0, env))], 280)
    logs = f"rc={rc}\n{out[-4000:]}\n{err[-2000:]}"
    run = Path(j.run_dir)
    assert (run / "verdict.json").is_file(), logs
    hosts = set(cluster.hosts)
    recs = read_records(run)
    assert {h for r in recs.net.records() for h in r.hosts} == hosts, logs
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == hosts, logs
    fabric_env_in_every_rank(run, fabric, hosts)  # node 1's ranks had only sshd's env and -x
    # mpirun.sh's inventory phase: one task per node, each reading itself into host records
    assert inventoried((run / "phase-inventory.log").read_text()) == hosts, logs
    assert host_records(run) == hosts, logs
    phases = [json.loads(x) for x in (run / "phases.jsonl").read_text().splitlines()]
    assert [(x["phase"], x["rc"]) for x in phases] == [
        (n, 0) for n in ("inventory", "compute", "intra-node", "inter-node", "pairs", "storage")
    ], logs
    assert {r["host"] for r in recs.compute} == hosts, logs  # one stoker compute per node, under mpirun
    print(f"\nmpijob {fabric}: node 0 exit {rc}, fabric env {dict(FABRICS[fabric].env)} in both hosts' ranks")
