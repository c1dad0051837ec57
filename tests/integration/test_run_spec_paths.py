"""`stoker run --spec` measures the spec's storage paths that exist on this machine, with the
same fio tests as its scratch dir, for real: each path's records carry their role, a path that
does not exist is named as not measured and is never created, and nothing of the user's in a
measured path is touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.table.read import read_records
from tests.conftest import needs_tool
from tests.integration.test_run_cmd import phases, run

pytestmark = [needs_tool("fio"), pytest.mark.slow]


def test_the_specs_paths_that_exist_here_are_measured(tmp_path: Path) -> None:
    disk, absent = tmp_path / "disk", tmp_path / "absent"
    disk.mkdir()
    (disk / "theirs.txt").write_text("not stoker's\n")
    (tmp_path / "spec.yaml").write_text(
        "name: spec-paths\nstorage:\n"
        f"  - {{path: {disk}, kind: local, write_GBps: 1000}}\n"
        f"  - {{path: {absent}, kind: shared, write_GBps: 1000}}\n"
    )
    p, out = run(tmp_path, "--skip", "network,inventory", "--spec", "spec.yaml")
    assert phases(out)["storage"] == 0, p.stdout[-3000:]
    assert (
        f"storage: the spec's shared storage {absent} is not measured: no such directory on this "
        "machine (stoker creates none)" in p.stdout
    )
    io = [r for r in read_records(out).io if r.backend == "fio"]
    by_role = {(r.extra.get("role"), r.workload, r.direction) for r in io}
    for role in ("spec", "scratch"):  # the same tests on both
        assert {(role, "checkpoint_write", "write"), (role, "checkpoint_read", "read")} <= by_role, by_role
    assert {r.path for r in io if r.extra.get("role") == "spec"} == {str(disk)}
    assert {r.scope for r in io if r.path == str(disk)} == {"local"}
    assert not absent.exists()  # never created
    assert sorted(x.name for x in disk.iterdir()) == ["theirs.txt"]  # its own dir removed, theirs kept
    v = json.loads((out / "verdict.json").read_text())
    assert [u["what"] for u in v["unmeasured"]] == [f"shared storage {absent}"], v["unmeasured"]
    assert any(f.get("path") == str(disk) for f in v["findings"]), v["findings"]
