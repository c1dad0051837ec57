"""Confirm before fail on a real disk (root): a loop device throttled to 50 MiB/s, with a
spec whose write threshold lies 5% above the throttle. When the throttle is lifted after the
first checkpoint_write, the test measured again at the end of the phase recovers and the
report shows a transient, not a fail; when it stays, the finding fails with both figures."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.conftest import REPO, STOKER, needs_root, needs_tool
from tests.harness.blockdev import set_rate, start_in_cgroup, throttled_disk

pytestmark = [needs_root, needs_tool("fio")]
RATE = 50 << 20  # 52.4 MB/s
# the spec's 80% threshold at 1.05 x the throttle: the first figure is about 5% under it
ADVERTISED_GBPS = RATE * 1.05 / 0.8 / 1e9


def _measure(tmp: Path, lift: bool) -> dict[str, object]:
    with throttled_disk(RATE) as disk:
        spec = tmp / "spec.yaml"
        spec.write_text(
            f"name: t\nstorage:\n  - {{path: {disk.mount}, kind: local, write_GBps: {ADVERTISED_GBPS:.6f}}}\n"
        )
        out = tmp / "out"
        argv = [*STOKER, "io", "--path", str(disk.mount), "--out", str(out), "--workloads", "checkpoint"]
        argv += ["--ckpt-bytes", "32M", "--writers", "2", "--runtime", "3", "--no-torch", "--spec", str(spec)]
        p = subprocess.Popen(
            argv,
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: start_in_cgroup(disk.cgroup_procs),
        )
        try:
            if lift:  # once the first write is recorded, the disk is 1.25x faster (under the advertised)
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and '"checkpoint_write"' not in _text(out / "io.jsonl"):
                    time.sleep(0.1)
                set_rate(disk, RATE * 5 // 4)
            _, err = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, err
    r = subprocess.run(
        [*STOKER, "report", str(out), "--spec", str(spec)], cwd=REPO, capture_output=True, text=True
    )
    assert r.returncode in (0, 1), r.stderr
    verdict = json.loads((out / "verdict.json").read_text())
    (f,) = [f for f in verdict["findings"] if f["check"] == "checkpoint_write write bandwidth"]
    print(f["status"], f.get("first_GBps"), f.get("confirm_GBps"), verdict["verdict"])
    return {"verdict": verdict["verdict"], **f}


def _text(p: Path) -> str:
    try:
        return p.read_text()
    except OSError:
        return ""


def test_a_dip_that_recovers_is_a_transient(tmp_path: Path) -> None:
    f = _measure(tmp_path, lift=True)
    floor = 0.8 * ADVERTISED_GBPS  # 0.0551 GB/s
    assert f["status"] == "transient" and f["verdict"] != "fail"
    assert float(f["first_GBps"]) < floor <= float(f["confirm_GBps"])  # type: ignore[arg-type]


def test_a_figure_that_stays_under_fails_with_both(tmp_path: Path) -> None:
    f = _measure(tmp_path, lift=False)
    floor = 0.8 * ADVERTISED_GBPS
    assert f["status"] == "below_spec" and f["verdict"] == "fail"
    assert float(f["first_GBps"]) < floor and float(f["confirm_GBps"]) < floor  # type: ignore[arg-type]
