"""examples/trials: three clusters' public nccl-tests results compare as the README says, and
each trial names its source (examples/trials/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launchers.cli import main as stoker
from tests.conftest import REPO

TRIALS = REPO / "examples" / "trials"
DIRS = sorted(p for p in TRIALS.iterdir() if p.is_dir())


def test_each_trial_says_its_source() -> None:
    assert [d.name for d in DIRS] == ["baremetal-h200-roce", "gcp-a3mega-h100", "nebius-h200-ib"]
    readme = (TRIALS / "README.md").read_text()
    for d in DIRS:
        spec = (d / "spec.yaml").read_text()
        field = next(line for line in spec.splitlines() if "tests/data/field/" in line)
        log = field.split("tests/data/field/")[1].split(",")[0].split()[0]
        assert (REPO / "tests" / "data" / "field" / log).is_file() and "https://" in spec
        assert f"`{d.name}`" in readme


def test_the_trials_compare_and_rank_on_the_ddp_workload(tmp_path: Path) -> None:
    out = tmp_path / "o"
    wl = REPO / "examples" / "workload-llama8b-ddp.yaml"
    assert stoker(["compare", *map(str, DIRS), "--workload", str(wl), "--out", str(out)]) == 0
    got = json.loads((out / "compare.json").read_text())
    assert all(c["passed"] for c in got["clusters"])
    # by hand: step compute = 6 x 8.03e9 x 4e6 / (64 x 989e12 x 0.40) = 7.6115 s; the GPUs barely wait
    # (idle under 0.1%), so $ per billion tokens ~ price x 64 x 7.6115 / 3600 x 1e9 / 4e6
    by_hand = {
        "gcp-a3mega-h100": 2.90 * 64 * 7.6115 / 3600 * 250,  # 98.10
        "baremetal-h200-roce": 3.20 * 64 * 7.6115 / 3600 * 250,  # 108.25
        "nebius-h200-ib": 3.50 * 64 * 7.6115 / 3600 * 250,  # 118.40
    }
    assert [r["name"] for r in got["ranking"]] == list(by_hand)
    for r in got["ranking"]:
        assert r["value"] == pytest.approx(by_hand[r["name"]], rel=1e-3)
    assert {a["assumption"] for a in got["assumptions"]} >= {"MFU", "parallelism", "peak used", "idle budget"}
    md = (out / "compare.md").read_text()
    assert "## What the cost assumes" in md and "| parallelism | data DDP, tensor 1" in md


def test_the_trials_side_by_side_without_a_workload(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert stoker(["compare", *map(str, DIRS), "--out", str(out)]) == 0
    got = json.loads((out / "compare.json").read_text())
    row = next(r for r in got["rows"] if r["figure"].startswith("inter-node all_reduce busbw"))
    assert row["comparable"] and set(row["values"]) == {d.name for d in DIRS}
