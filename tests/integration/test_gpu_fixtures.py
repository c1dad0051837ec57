"""Records that stoker wrote on a real H100 (tests/data/gpu/README.md), read back and judged
the way `stoker report` does for any run: the NCCL path's output, checked without a GPU."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.conftest import DATA, STOKER

GPU = DATA / "gpu"
# nccl-tests PERFORMANCE.md at n = 1, by hand: (n-1)/n and 2(n-1)/n are 0; broadcast and reduce 1
FACTOR_N1 = {
    "all_reduce": 0.0,
    "all_gather": 0.0,
    "reduce_scatter": 0.0,
    "alltoall": 0.0,
    "broadcast": 1.0,
    "reduce": 1.0,
}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_nccl_records_follow_the_nccl_tests_formulas() -> None:
    recs = _lines(GPU / "h100-nccl-1rank" / "net.jsonl")
    assert {r["op"] for r in recs} == set(FACTOR_N1)
    for r in recs:
        assert (r["backend"], r["ranks"], r["device"], r["wrong"]) == ("nccl", 1, "NVIDIA H100 80GB HBM3", 0)
        assert abs(r["algbw_GBps"] - r["bytes"] / r["time_s"] / 1e9) <= 1e-9 * r["algbw_GBps"] + 1e-12
        assert abs(r["busbw_GBps"] - r["algbw_GBps"] * FACTOR_N1[r["op"]]) <= 1e-9 * r["algbw_GBps"] + 1e-12
        assert r["time_min_s"] <= r["time_p50_s"] <= r["time_p99_s"]
    manifest = _lines(GPU / "h100-nccl-1rank" / "manifest.jsonl")[0]
    assert (
        manifest["versions"]["nccl"] == "2.28.9"
        and manifest["hardware"]["gpu_model"] == "NVIDIA H100 80GB HBM3"
    )


def test_one_rank_sweeps_are_shown_but_not_judged(tmp_path: Path) -> None:
    d = tmp_path / "gpu"
    shutil.copytree(GPU / "h100-nccl-1rank", d)
    p = subprocess.run([*STOKER, "report", str(d)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    v = json.loads((d / "verdict.json").read_text())
    # nothing was judged, so nothing passed (exit 0: an exploratory report is not an error)
    assert v["verdict"] == "unjudged" and v["findings"] == []
    md = (d / "report.md").read_text()
    assert "all_reduce · 1 rank on 1 node · nccl" in md and "One rank crosses no link" in md


def test_a_gpu_machines_stoker_run_reports_its_storage(tmp_path: Path) -> None:
    d = tmp_path / "run"
    shutil.copytree(GPU / "h100-run", d)
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"storage:\n  - {{path: {_lines(d / 'io.jsonl')[0]['path']}, kind: local, read_GBps: 7, write_GBps: 5}}\n"
    )
    p = subprocess.run(
        [*STOKER, "report", str(d), "--spec", str(spec)], capture_output=True, text=True, timeout=120
    )
    # measured ~1.9 GB/s against an advertised 5-7 GB/s (a Gen4 NVMe): below spec, a fail
    assert p.returncode == 1, p.stderr
    v = json.loads((d / "verdict.json").read_text())
    writes = [f for f in v["findings"] if f["check"] == "checkpoint_write write bandwidth"]
    assert writes and writes[0]["status"] == "below_spec" and 1.8 < writes[0]["measured"] < 2.1
