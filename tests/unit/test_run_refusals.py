"""Bad input to `stoker run` / `stoker submit` is refused in one line, exit 2, before anything
runs (`--ops allreduce` would otherwise run the storage phase for 47 s, then exit 3)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iobench.workloads import FAMILIES
from launchers.commands.run_cmd import SKIPPABLE, plan, skipped_phases
from launchers.profiles import get_profile
from reports.shared.errors import UsageError
from reports.shared.records import IO_FAMILIES
from tests.conftest import STOKER


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--ops", "allreduce"], "--ops: unknown name 'allreduce' (did you mean all_reduce?)"),
        (["--ops", ""], "--ops is empty"),
        (
            ["--workloads", ""],
            "--workloads is empty: give one or more of checkpoint,dataloader,metadata, or --skip storage",
        ),
        (["--workloads", "checkpoint,dataloder"], "(did you mean dataloader?)"),
        (
            ["--skip", "pairs"],
            "--skip pairs: not a phase of stoker run; give one of inventory, network, storage",
        ),
    ],
)
def test_run_refuses_before_anything_runs(tmp_path: Path, args: list[str], says: str) -> None:
    out = tmp_path / "results"
    p = subprocess.run(
        [*STOKER, "run", "--out", str(out), *args], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and says in p.stderr, p.stderr
    assert not out.exists() and p.stdout == ""  # nothing ran, no results dir was made


def test_submit_refuses_the_same_ops(tmp_path: Path) -> None:
    p = subprocess.run(
        [*STOKER, "submit", "--nodes", "2", "--dry-run", "--ops", "allreduce"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "did you mean all_reduce?" in p.stderr and p.stdout == "", p.stderr


def test_io_families_match_iobench() -> None:
    assert IO_FAMILIES == FAMILIES


def test_skip_leaves_the_phase_out_of_the_plan() -> None:
    assert skipped_phases(["storage", "inventory,network"]) == set(SKIPPABLE)
    with pytest.raises(UsageError):
        skipped_phases([""])
    phases = plan(
        profile=get_profile("quick"),
        out="/r",
        io_path="/r/.io",
        nproc=2,
        backend="auto",
        spec=None,
        workload=None,
        stoker=("stoker",),
        skip=frozenset({"storage"}),
        scope="node",
    )
    assert [p.name for p in phases] == ["inventory", "compute", "network", "report"]
    assert phases[-1].argv == ("stoker", "report", "/r", "--scope", "node")


def test_the_specs_storage_paths_are_measured_where_they_exist_here() -> None:
    from launchers.spec_paths import here
    from reports.shared.spec import StorageSpec

    entries = [
        StorageSpec(path="/data", kind="shared", read_GBps=40, write_GBps=20),
        StorageSpec(path="/scratch", kind="local", read_GBps=12, write_GBps=6),
        StorageSpec(path="rel/dir", kind="local", read_GBps=1, write_GBps=1),
        StorageSpec(path="/scratch", kind="local", read_GBps=1, write_GBps=1),
    ]
    measured, lines = here(entries, lambda p: "" if p == "/scratch" else "no such directory")
    assert measured == ("/scratch",)
    assert lines == (
        "the spec's shared storage /data is not measured: no such directory",
        "the spec's local storage rel/dir is not measured: not an absolute path: give it as the nodes mount it",
    )
    phases = plan(
        profile=get_profile("quick"),
        out="/r",
        io_path="/r/.io-scratch-x",
        more_io=measured,
        nproc=2,
        backend="gloo",
        spec=None,
        workload=None,
        stoker=("stoker",),
    )
    storage = next(p for p in phases if p.name == "storage")
    argv = list(storage.argv)
    assert [argv[i + 1] for i, t in enumerate(argv) if t == "--path"] == ["/r/.io-scratch-x", "/scratch"]
    assert storage.limit_s == 2 * get_profile("quick").io_timeout_s + 60  # the profile's limit per path
