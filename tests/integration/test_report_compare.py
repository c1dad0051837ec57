"""`stoker compare` on three results directories (three trials of neoclouds)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reports.report_cmd import collect
from tests.conftest import DATA, STOKER


def _trial(root: Path, name: str, price: float, inter_scale: float) -> Path:
    d = root / name
    shutil.copytree(DATA / "reports" / "basic", d)
    spec = (d / "spec.yaml").read_text().replace("golden-h100", name).replace("2.49", str(price))
    (d / "spec.yaml").write_text(spec)
    out = []
    for line in (d / "net.jsonl").read_text().splitlines():
        try:
            o = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)
            continue
        if o["scope"] in ("inter-node", "world"):
            o["busbw_GBps"] *= inter_scale
            o["algbw_GBps"] *= inter_scale
            o["time_s"] /= inter_scale
        out.append(json.dumps(o))
    (d / "net.jsonl").write_text("\n".join(out) + "\n")
    (d / "all_reduce_perf.log").unlink()
    return d


def test_compare_three_clusters(tmp_path: Path) -> None:
    dirs = [_trial(tmp_path, "neo-a", 2.49, 1.0), _trial(tmp_path, "neo-b", 1.99, 1.0), _trial(tmp_path, "neo-c", 1.49, 0.05)]
    out = tmp_path / "cmp"
    p = subprocess.run([*STOKER, "compare", *map(str, dirs), "--out", str(out), "--workload", "llama-70b"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    md = (out / "compare.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| cost per useful GPU-hour"))
    costs = [float(x) for x in re.findall(r"\d+\.\d+", row)]
    for d, price, cost in zip(dirs, (2.49, 1.99, 1.49), costs):
        idle = collect(d, None, "llama-70b").report.judgement.model_summary["idle_share"]
        assert cost == pytest.approx(price / (1 - idle), abs=0.006)   # the rule, by hand
    inter = next(line for line in md.splitlines() if line.startswith("| inter-node busbw plateau"))
    assert "35.86 (all_reduce at 1G)" in inter and "1.79 (all_reduce at 1G)" in inter   # 35.86 x 0.05
    page = (out / "compare.html").read_text()
    assert page.count("data:image/png;base64,") == 2 and "neo-c" in page


def test_compare_needs_two_dirs_and_real_ones(tmp_path: Path) -> None:
    p = subprocess.run([*STOKER, "compare", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "at least two" in p.stderr
    p = subprocess.run([*STOKER, "compare", str(tmp_path / "x"), str(tmp_path / "y")], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "no such results directory" in p.stderr and p.stderr.count("\n") == 1
