"""Confirm before a regression in `stoker check --baseline` on a real disk (root): a loop device
throttled to 50 MiB/s, and a baseline whose accepted checkpoint write lies 5% above the
throttle once its 20% tolerance is taken off. When the throttle is lifted after the first write
is recorded, the io step measured again (the same settings) passes: a `transient`, exit 0, no
action; kept, it is a regression with both figures on its line, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.conftest import REPO, STOKER, needs_root, needs_tool
from tests.harness.blockdev import set_rate, start_in_cgroup, throttled_disk

pytestmark = [needs_root, needs_tool("fio")]
RATE = 50 << 20  # 52.4 MB/s
HOST = "cfxhost"
# the floor (accepted x (1 - 0.2)) at 1.05 x the throttle: the first figure is about 5% under it
ACCEPTED_GBPS = RATE * 1.05 / 0.8 / 1e9
FLOOR_GBPS = 0.8 * ACCEPTED_GBPS


def _baseline(tmp: Path, path: Path) -> Path:
    b = tmp / "baseline.yaml"
    b.write_text(
        "stoker_baseline: 1\nrun_id: accepted-1\ncreated: '2026-11-24T00:00:00Z'\nfigures:\n"
        f"- {{kind: node-storage, component: node, what: checkpoint_write write on {path}, scope: local, host: {HOST},\n"
        f"   path: {path}, workload: checkpoint_write, direction: write, backend: fio, procs_per_node: 1,\n"
        f"   accepted: {ACCEPTED_GBPS:.6f}, unit: GB/s, tolerance: 0.2}}\n"
    )
    return b


def _text(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""


def _write_GBps(records: Path) -> float:
    (r,) = [
        json.loads(x)
        for x in records.read_text().splitlines()
        if '"checkpoint_write"' in x and '"write"' in x
    ]
    return float(r["per_host_bw_GBps"][HOST])


def _check(tmp: Path, lift: bool) -> tuple[subprocess.CompletedProcess[str], float, float]:
    out = tmp / "out"
    with throttled_disk(RATE) as disk:
        argv = [*STOKER, "check", "--checks", "io", "--path", str(disk.mount), "--out", str(out)]
        argv += ["--baseline", str(_baseline(tmp, disk.mount)), "--limit", "150", "--verbose"]
        p = subprocess.Popen(
            argv,
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "STOKER_HOSTNAME": HOST},
            preexec_fn=lambda: start_in_cgroup(disk.cgroup_procs),
        )
        try:
            if lift:  # once the first write is recorded, the disk is 1.25x faster (over the floor)
                deadline = time.monotonic() + 90
                while time.monotonic() < deadline and '"checkpoint_write"' not in _text(out / "io.jsonl"):
                    time.sleep(0.1)
                set_rate(disk, RATE * 5 // 4)
            so, se = p.communicate(timeout=200)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    done = subprocess.CompletedProcess(argv, p.returncode, so, se)
    first, again = _write_GBps(out / "io.jsonl"), _write_GBps(out / "confirmation" / "io.jsonl")
    print(f"first {first:.4g} GB/s, again {again:.4g}, floor {FLOOR_GBPS:.4g}: rc {p.returncode}")
    print(so)
    return done, first, again


def test_a_regression_that_recovers_when_measured_again_is_a_transient(tmp_path: Path) -> None:
    p, first, again = _check(tmp_path, lift=True)
    assert first < FLOOR_GBPS <= again
    assert p.returncode == 0, (p.stdout, p.stderr)
    (line,) = [ln for ln in p.stdout.splitlines() if " transient: " in ln]
    assert f"{first:.3g} GB/s at first" in line and f"{again:.3g} GB/s, which passes" in line
    assert "regression" not in p.stdout


def test_one_still_under_is_a_regression_with_both_figures(tmp_path: Path) -> None:
    p, first, again = _check(tmp_path, lift=False)
    assert first < FLOOR_GBPS and again < FLOOR_GBPS
    assert p.returncode == 1, (p.stdout, p.stderr)
    (line,) = [ln for ln in p.stdout.splitlines() if " regression: " in ln]
    assert f"{first:.3g} GB/s against" in line and f"{again:.3g} GB/s, still under" in line
