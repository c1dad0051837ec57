"""benchmarks/false_alarm_bench.py at K = 1 on one bed (the throttled loop device), so that the
benchmark behind docs/reports.md's false-alarm table keeps running: the healthy run (the device at
the spec's 50 MiB/s) judges both storage kinds, the faulty one (throttled to 1/4) names both."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO, needs_root, needs_tool

pytestmark = [needs_root, needs_tool("fio"), pytest.mark.slow]
KINDS = {"local storage: checkpoint_write write bandwidth", "local storage: checkpoint_read read bandwidth"}


def test_the_disk_bed_once_healthy_and_once_faulty(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    argv = [PYTHON, str(REPO / "benchmarks" / "false_alarm_bench.py"), "--beds", "disk", "--runs", "1"]
    p = subprocess.run([*argv, "--json", str(out)], cwd=REPO, capture_output=True, text=True, timeout=400)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    healthy, faulty = doc["runs"]
    assert (healthy["faulty"], faulty["faulty"]) == (False, True)
    assert healthy["error"] == faulty["error"] == "", doc["runs"]
    rows = {r["kind"]: r for r in doc["rows"]}
    assert KINDS <= set(rows)
    for kind in KINDS:
        r = rows[kind]
        assert (r["healthy"], r["judged"], r["faulty"]) == (1, 1, 1), r  # judged, whatever its status
        assert r["misses"] == 0, r  # 0.013 GB/s against a floor of 0.8 x 0.0524 = 0.042
    assert "| disk | local storage: checkpoint_write write bandwidth | 1/1 |" in p.stdout
