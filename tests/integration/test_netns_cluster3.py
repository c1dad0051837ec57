"""launchers/torchrun.sh on a namespaced cluster (REAL-TEST-BEDS §2): 3 nodes x 2 ranks,
every node's link shaped to a known rate. The run is measured once; the judgement is
offline, so the same records are judged three times:
- a spec that advertises the shaped rate: the inter-node finding is `ok`;
- a spec that advertises 10x that rate: `below_spec`, and the verdict fails;
- a workload whose gradient traffic the shaped link cannot carry: `starving`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import REPO, STOKER, bed_missing, needs_root
from tests.harness import netns

pytestmark = [needs_root, pytest.mark.slow]

NODES, RANKS = 3, 2
RATE_MBIT = 400
# per node, unidirectional, in GB/s: 400 Mbit/s = 0.05 GB/s. The inter-node sweep runs one
# rail per local rank at once, so each rail has half of it: the judge's per-GPU figure is
# this over gpus_per_node (2).
NODE_GBPS = RATE_MBIT * 1e6 / 8 / 1e9
PORT = 17951  # the launchers area's port range (phase i uses PORT + i)
# 4M and up: at 1M, 4 iterations ride on the shaper's token-bucket burst and measured 0.027
# GB/s per rail against the 0.025 the rate allows (the plateau would then be "suspect")
SMALL = [
    "--profile",
    "quick",
    "--ops",
    "all_reduce",
    "--min-bytes",
    "4M",
    "--max-bytes",
    "8M",
    "--iters",
    "4",
    "--warmup",
    "1",
    "--workloads",
    "checkpoint",
    "--ckpt-bytes",
    "8M",
    "--io-runtime",
    "2",
    "--compute-budget",  # the compute phase: 2 s of matmul sweep, not the profile's 20
    "2",
    # fio alone: torch.save and DCP under torchrun.sh are test_cloud_netns's k8s job (2 nodes)
    "--save-repeats",
    "0",
]
# 6 ranks on 2 shared cores: gloo's own CPU cost may take some of the rate under load, so the
# spec passes at half of it (a threshold in the spec, as an operator would set it); measured
# here: rails 0.0245-0.0254 GB/s of the 0.025 available, pairs 0.047 of 0.05.
SPEC = (
    "name: la-shaped\ngpus_per_node: 2\naccelerator: H100-SXM\nnetwork:\n  inter_node: {{GBps: {gbps}}}\n"
    "thresholds: {{network: 0.5, storage: 0.5}}\n"
)
# DDP of 7e9 parameters over 64 GPUs: ~14 GB of gradients per step, seconds of compute;
# the shaped link moves 0.05 GB/s, so the accelerators would wait far beyond a 5% budget.
WORKLOAD = (
    "name: la-ddp\nparams: 7.0e9\ngpus: 64\nparallelism: {data: ddp, tensor: 1}\n"
    "global_batch_tokens: 4.0e6\nmfu: 0.40\nidle_budget: 0.05\n"
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reason = netns.unavailable_reason()
    if reason:
        bed_missing(reason)
    out = tmp_path_factory.mktemp("la3") / "results"
    with netns.NetnsCluster(prefix="la3", nodes=NODES, rate_mbit=RATE_MBIT) as c:
        procs = []
        for i in range(NODES):
            env = c.env(
                i,
                {
                    "NNODES": str(NODES),
                    "NODE_RANK": str(i),
                    "MASTER_ADDR": c.addr(0),
                    "MASTER_PORT": str(PORT),
                    "NPROC_PER_NODE": str(RANKS),
                    "OUT": str(out),
                    "BACKEND": "gloo",
                    "STOKER_PY": STOKER[0],
                },
            )
            procs.append(
                c.popen(
                    i,
                    ["bash", str(REPO / "launchers" / "torchrun.sh"), *SMALL],
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        logs = [p.communicate(timeout=540)[0] for p in procs]
    codes = [p.returncode for p in procs]
    assert codes[1:] == [0] * (NODES - 1) and codes[0] in (0, 1), "\n".join(x[-2000:] for x in logs)
    return out


def report(out: Path, tmp_path: Path, spec_gbps: float, workload: bool = False) -> tuple[int, dict]:
    (tmp_path / "spec.yaml").write_text(SPEC.format(gbps=spec_gbps), encoding="utf-8")
    (tmp_path / "workload.yaml").write_text(WORKLOAD, encoding="utf-8")
    judged = tmp_path / "judged"
    judged.mkdir()
    for name in ("net.jsonl", "io.jsonl", "manifest.jsonl"):
        if (out / name).exists():
            (judged / name).write_bytes((out / name).read_bytes())
    args = ["--spec", str(tmp_path / "spec.yaml")] + (
        ["--workload", str(tmp_path / "workload.yaml")] if workload else []
    )
    p = subprocess.run([*STOKER, "report", str(judged), *args], capture_output=True, text=True, timeout=120)
    return p.returncode, json.loads((judged / "verdict.json").read_text())


def inter(verdict: dict) -> list[dict]:
    return [f for f in verdict["findings"] if f["component"] == "inter-node network"]


def test_every_phase_ran_on_all_three_nodes(results: Path) -> None:
    recs = read_records(results)
    assert {h for r in recs.net.records() for h in r.hosts} == {"la3n0", "la3n1", "la3n2"}
    assert {r.scope for r in recs.net.records()} >= {"intra-node", "inter-node", "pair"}
    assert {h for r in recs.io for h in r.per_host_bw_GBps} == {"la3n0", "la3n1", "la3n2"}
    assert len({r.run_id for r in [*recs.net.records(), *recs.io]} | {r["run_id"] for r in recs.host}) == 1
    assert {r["host"] for r in recs.compute} == {"la3n0", "la3n1", "la3n2"}  # each node its own sweep
    assert {r["host"] for r in recs.host} == {"la3n0", "la3n1", "la3n2"}  # and its own inventory
    # node 0 wrote the phase list (reports/shared/phases.py) and kept each phase's output beside it;
    # the inventory runs first (on these veth-only nodes: each node's own node record)
    ran = [json.loads(x) for x in (results / "phases.jsonl").read_text().splitlines()]
    assert [p["phase"] for p in ran] == "inventory compute intra-node inter-node pairs storage".split(), ran
    assert all(p["rc"] == 0 and (results / p["log"]).is_file() for p in ran), ran
    for name in ("report.md", "report.html", "verdict.json"):
        assert (results / name).is_file()


def test_measured_rail_is_under_the_shaped_rate(results: Path) -> None:
    by_size: dict[tuple[int, bool], list[float]] = {}
    for r in read_records(results).net.records():
        if r.scope == "inter-node" and r.op == "all_reduce":
            by_size.setdefault((r.bytes, r.in_place), []).append(r.busbw_GBps)
    assert by_size
    for rails in by_size.values():
        # the rails share the node's link: no rail beats the whole link, and the node's
        # aggregate (every rail at the slowest one's pace, as the judge counts it) fits in it.
        # One rail alone may beat half: when the other finishes first it gets the whole link.
        assert max(rails) <= NODE_GBPS * 1.10, rails
        assert min(rails) * len(rails) <= NODE_GBPS * 1.10, rails


def test_spec_at_the_shaped_rate_is_ok(results: Path, tmp_path: Path) -> None:
    rc, verdict = report(results, tmp_path, NODE_GBPS)
    assert [f["status"] for f in inter(verdict)] == ["ok"], inter(verdict)


def test_spec_at_ten_times_the_rate_is_below_spec_and_fails(results: Path, tmp_path: Path) -> None:
    rc, verdict = report(results, tmp_path, 10 * NODE_GBPS)
    assert [f["status"] for f in inter(verdict)] == ["below_spec"], inter(verdict)
    assert verdict["verdict"] == "fail" and rc == 1


def test_workload_the_link_cannot_carry_is_starving(results: Path, tmp_path: Path) -> None:
    rc, verdict = report(results, tmp_path, NODE_GBPS, workload=True)
    assert "starving" in [f["status"] for f in inter(verdict)], inter(verdict)
    assert verdict["verdict"] == "fail" and rc == 1
