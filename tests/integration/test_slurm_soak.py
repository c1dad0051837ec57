"""`stoker submit --soak` on a real two-node Slurm: the job runs passes of every
scope from both nodes and ends in a report; scancel mid-soak (SIGTERM to every task) keeps
every finished pass. Slow (~1.5 min): a 15 s soak (a pass takes ~0.5 s here: 20 or more) and a
cancelled one."""

from __future__ import annotations

import collections
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import STOKER
from tests.harness.slurm import SlurmCluster
from tests.integration.test_slurm_acceptance import FIO_ALONE, finish, job_env, pytestmark, submit  # noqa: F401

SOAK = ["--ops", "all_reduce", "--soak"]


@pytest.fixture(scope="module")
def slurm() -> Iterator[SlurmCluster]:
    with SlurmCluster(prefix="lk", nodes=2, mpi_default="none") as cluster:
        yield cluster


def passes(out: Path) -> dict[int, set[str]]:
    """soak pass -> the hosts its records came from."""
    seen: dict[int, set[str]] = collections.defaultdict(set)
    for r in read_records(out).net.records():
        if "soak_pass" in r.extra:
            seen[int(r.extra["soak_pass"])].update(r.hosts)
    return seen


def test_soak_job_ends_in_a_report_with_passes_from_both_nodes(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    t0 = time.monotonic()
    job = submit(slurm, out, tmp_path, *SOAK, "15s", "--allow-unjudged", *FIO_ALONE)
    state, rc, log = finish(slurm, job, tmp_path, timeout_s=900)
    wall = time.monotonic() - t0
    phases = [json.loads(line)["phase"] for line in (out / "phases.jsonl").read_text().splitlines()]
    assert phases == ["inventory", "compute", "soak", "storage"], log[-3000:]  # compute: the appetite
    seen = passes(out)
    scopes = {r.scope for r in read_records(out).net.records()}
    print(f"job {job} {state} exit {rc} in {wall:.0f} s: {len(seen)} passes, scopes {sorted(scopes)}")
    assert len(seen) >= 3 and all(hosts == {"n1", "n2"} for hosts in seen.values()), seen
    assert scopes >= {"intra-node", "inter-node", "pair"}
    assert "soak pass 1:" in log and (out / "report.html").is_file() and (out / "verdict.json").is_file()
    assert "<h2>Soak</h2>" in (out / "report.html").read_text()
    assert rc in (0, 1), log[-3000:]  # 1: a dip on this shared machine is a finding, not an error


def test_scancel_mid_soak_keeps_every_finished_pass(slurm: SlurmCluster, tmp_path: Path) -> None:
    out = tmp_path / "results"
    job = submit(slurm, out, tmp_path, *SOAK, "10m", "--allow-unjudged", *FIO_ALONE)
    deadline = time.monotonic() + 400
    while len(passes(out)) < 3 and time.monotonic() < deadline:
        time.sleep(2)
    assert len(passes(out)) >= 3, "no 3 passes within 400 s"
    subprocess.run(["scancel", job], env=slurm.env, check=True, timeout=30)
    state, _rc, log = finish(slurm, job, tmp_path, timeout_s=180)
    assert state == "CANCELLED", state
    seen = passes(out)
    progress = [ln for ln in log.splitlines() if "soak pass " in ln]
    # every pass the job said it finished is on disk, from both nodes, with all its records
    done = {int(ln.split("soak pass ")[1].split(":")[0]) for ln in progress}
    assert done and done <= set(seen) and all(seen[k] == {"n1", "n2"} for k in done), (done, seen)
    scopes: dict[int, set[str]] = collections.defaultdict(set)
    for r in read_records(out).net.records():
        scopes[int(r.extra["soak_pass"])].add(r.scope)
    # finished passes are whole: each reached the pair tests, the last scope of a pass
    assert all(scopes[k] >= {"intra-node", "world", "inter-node", "pair"} for k in done), scopes
    # and `stoker report` on what was kept judges them: a cancelled soak (and the storage phase it
    # never reached) is incomplete (exit 3) unless a dip already failed it (exit 1)
    p = subprocess.run([*STOKER, "report", str(out)], capture_output=True, text=True, timeout=300)
    verdict = json.loads((out / "verdict.json").read_text())
    assert p.returncode in (1, 3) and verdict["verdict"] in ("fail", "incomplete"), (p.stdout, p.stderr)
    assert any("soak" in m for m in verdict["missing_phases"]), verdict["missing_phases"]
    print(f"cancelled after {len(done)} finished passes; kept {sorted(seen)}")
