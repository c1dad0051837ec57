"""`stoker run` for real on this machine: 2 gloo ranks, fio on a temp dir, the report; its
exit code is the verdict, and a phase that aborts still leaves a report (exit 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import STOKER, needs_tool

pytestmark = [needs_tool("fio"), pytest.mark.slow]

# the quick profile, cut further: this checks the plumbing, not the hardware
SMALL = [
    "--profile",
    "quick",
    "--ops",
    "all_reduce",
    "--max-bytes",
    "1M",  # the least a figure is judged at: under 1 MiB latency sets it (reports.judging.advertised)
    "--iters",
    "3",
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
]


def run(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "results"
    p = subprocess.run(
        [*STOKER, "run", "--out", str(out), *SMALL, *extra],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=400,
    )
    return p, out


def phases(out: Path) -> dict[str, int]:
    return {p["phase"]: p["rc"] for p in map(json.loads, (out / "phases.jsonl").read_text().splitlines())}


def test_run_measures_judges_and_exits_with_the_verdict(tmp_path: Path) -> None:
    # a spec advertising 1000 GB/s between local ranks: gloo on 2 CPU cores cannot come close
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: la-run\nnetwork:\n  intra_node: {GBps: 1000}\n", encoding="utf-8")
    p, out = run(tmp_path, "--spec", "spec.yaml")
    assert phases(out) == {
        "inventory": 0,
        "compute": 0,
        "network": 0,
        "storage": 0,
        "report": 0 if p.returncode == 0 else 1,
    }, p.stdout[-3000:]

    recs = read_records(out)
    assert len(recs.net) and recs.io
    assert (
        len({r.run_id for r in [*recs.net.records(), *recs.io]} | {r["run_id"] for r in recs.host}) == 1
    )  # one STOKER_RUN_ID for every phase
    # the inventory read this machine's network interfaces and said in one line what it skipped
    assert recs.host and {r["component"] for r in recs.host} == {"network port", "node"}
    assert (
        "inventory | inventory " in p.stdout
        and "skipped: " in p.stdout
        and "GPUs: nvidia-smi absent" in p.stdout
    )
    assert {r.ranks for r in recs.net.records()} == {2}  # 2 gloo ranks without GPUs
    assert not list(out.glob(".io-scratch-*"))  # the storage scratch dir is gone

    verdict = json.loads((out / "verdict.json").read_text())
    intra = [f for f in verdict["findings"] if f["component"] == "intra-node network"]
    assert intra and all(f["status"] == "below_spec" for f in intra), intra
    assert verdict["verdict"] == "fail" and p.returncode == 1
    # progress while it works, a summary table and the verdict at the end
    assert "[1/5] inventory: started" in p.stdout and "[2/5] compute: started" in p.stdout
    assert "[3/5] network: started" in p.stdout and "[5/5] report: started" in p.stdout
    # the compute phase measured CPU matmul for real and the report shows it
    assert recs.compute and {r["device"] for r in recs.compute} == {"cpu"}
    assert all(r["median_tflops"] > 0 for r in recs.compute if r["dtype"] == "fp32")
    assert "phase      status" in p.stdout and "verdict: FAIL" in p.stdout  # "inventory" sets the width
    assert (out / "spec.yaml").read_text() == spec.read_text()  # the results keep what judged them
    for name in ("report.md", "report.html"):
        assert (out / name).is_file()


def test_an_aborted_phase_still_gets_a_report_and_exit_3(tmp_path: Path) -> None:
    # fio gone from PATH: the storage phase stops at once with its one-line reason (exit 2).
    # (A too-short --io-timeout no longer does: every fio job is time_based, and stoker io's
    # --timeout is on top of its runtime.) stoker itself runs by its absolute interpreter.
    bare = tmp_path / "bin"
    bare.mkdir()
    out = tmp_path / "results"
    p = subprocess.run(
        [*STOKER, "run", "--out", str(out), *SMALL],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=400,
        env={**os.environ, "PATH": str(bare)},
    )
    ran = phases(out)
    assert ran["network"] == 0 and ran["storage"] == 2 and ran["report"] == 3, p.stdout[-3000:]
    verdict = json.loads((out / "verdict.json").read_text())
    # no spec: nothing can fail, so the missing storage measurements decide
    assert verdict["verdict"] == "incomplete" and p.returncode == 3, verdict
    first = (out / "report.md").read_text().splitlines()[0]
    assert first.endswith(
        "INCOMPLETE: phase storage ended with exit code 2 after "
        f"{verdict['missing_phases'][0].split(' after ')[1]}"
    )
    assert "fio not found on PATH" in first, first
    assert "storage    exit" in p.stdout  # the phase column is as wide as "inventory"


def test_sigterm_is_ctrl_c(tmp_path: Path) -> None:
    # `timeout`, scancel and Kubernetes send SIGTERM: the run still leaves its report, a phase
    # line for the running phase and no scratch behind (not exit 124). The TERM is sent once
    # the storage phase has started (a fixed clock once missed every phase on a faster machine),
    # with --io-runtime 120 keeping that phase busy; the run stops it and reports: incomplete, 3.
    out = tmp_path / "results"
    args = [*STOKER, "run", "--out", str(out), *SMALL]
    args[args.index("--io-runtime") + 1] = "120"
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    seen: list[str] = []
    for line in proc.stdout:
        seen.append(line)
        if "storage: started" in line:
            time.sleep(3)  # into fio's timed run, past the scratch directory's creation
            proc.send_signal(signal.SIGTERM)
            break
    rest, _ = proc.communicate(timeout=400)
    output = "".join(seen) + rest
    assert proc.returncode == 3, output[-5000:]
    ran = phases(out)
    assert 130 in ran.values() and "report" in ran, ran  # the interrupted phase has its line
    assert json.loads((out / "verdict.json").read_text())["verdict"] == "incomplete"
    assert (out / "report.md").is_file()
    assert not list(out.glob(".io-scratch-*")), list(out.iterdir())
