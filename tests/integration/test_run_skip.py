"""`stoker run --skip storage` for real: the storage phase does not run, phases.jsonl marks it
left out, and the report's coverage names the storage promise as not measured;
with `--scope node` a one-node run names the inter-node link as not covered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.test_run_cmd import phases, run

pytestmark = [pytest.mark.slow]


def test_a_skipped_phase_is_named_as_not_measured(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text(
        "name: skip\nnetwork:\n  inter_node: {GBps: 50}\n"
        "storage:\n  - {path: /scratch, kind: local, write_GBps: 2}\n"
    )
    p, out = run(tmp_path, "--skip", "storage", "--scope", "node", "--spec", "spec.yaml")
    assert "storage: left out (--skip storage)" in p.stdout, p.stdout[-2000:]
    lines = [json.loads(x) for x in (out / "phases.jsonl").read_text().splitlines()]
    assert {"phase": "storage", "rc": 0, "elapsed_s": 0.0, "skipped": True} in lines
    assert phases(out)["report"] == 3 and not (out / "io.jsonl").exists()
    v = json.loads((out / "verdict.json").read_text())
    assert v["verdict"] == "incomplete" and p.returncode == 3, v["headline"]
    assert v["missing_phases"] == []  # left out on purpose is not a phase that failed
    assert v["unmeasured"] == [
        {
            "what": "local storage /scratch",
            "why": "the storage phase was left out (--skip storage)",
            "how": "stoker run --path /scratch --spec SPEC (or stoker io --path /scratch)",
        }
    ]
    assert [n["what"] for n in v["not_covered"]] == ["inter-node network: 50 GB/s per node"]
    md = (out / "report.md").read_text().splitlines()
    assert "local storage /scratch not measured: the storage phase was left out (--skip storage)" in md[0]
