"""The beds of the false-alarm benchmark (benchmarks/false_alarm_bench.py), each healthy or with
one planted fault, each judged against a spec that states the bed's real limits
(benchmarks/false_alarm/*.yaml, whose figures `spec_figures_agree` checks against the settings
below). Root only: network namespaces, tc, loop devices, blkio cgroups.

netns  3 namespaced nodes (tests/harness/netns.py, prefix "fab"), every link shaped to 400 Mbit/s,
       one rank per node: `stoker net --scopes inter-node,pairs` at 4M, then `stoker report`.
       Fault: node fabn2's link shaped to 100 Mbit/s (1/4 of the spec).
disk   a loop device throttled to 50 MiB/s (tests/harness/blockdev.py): `stoker io --workloads
       checkpoint` (16M per writer, 2 writers, 2 s), then `stoker report`. Fault: throttled to 1/4.
local  `stoker run --profile quick --scope node` on this machine with its storage on the throttled
       device (checkpoint workloads only: the quick dataloader files fill the 1 GiB device), 2 s
       of compute sweep and storage tests. Fault: the device throttled to 1/4.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.harness.blockdev import start_in_cgroup, throttled_disk  # noqa: E402
from tests.harness.netns import NetnsCluster, net_argv  # noqa: E402

DATA = REPO / "benchmarks" / "false_alarm"
NETNS_PREFIX, NETNS_NODES, NETNS_PORT = "fab", 3, 17391
NETNS_RATE_MBIT = 400.0  # every node's link, each direction
SLOW_NODE, SLOW_FACTOR = 2, 4  # the fault: this node's link at 1/SLOW_FACTOR of the rate
DISK_RATE = 50 << 20  # bytes/s, reads and writes
SIZE_ARGS = ["--ckpt-bytes", "16M"]
LOCAL_ARGS = ["--profile", "quick", "--scope", "node", "--compute-budget", "2", "--io-runtime", "2"]
LOCAL_ARGS += ["--workloads", "checkpoint", *SIZE_ARGS]
TIMEOUT_S = 300.0


@dataclass(frozen=True, kw_only=True, slots=True)
class Bed:
    name: str
    fault: str  # the planted fault, in words
    expect: tuple[tuple[str, str | None], ...]  # (finding kind, host it must name or None) per fault
    run: Callable[[bool, Path], dict[str, Any]]  # (faulty, out dir) -> verdict.json


def netns_gbps() -> float:
    return NETNS_RATE_MBIT * 1e6 / 8 / 1e9


def disk_gbps() -> float:
    return DISK_RATE / 1e9


def spec_figures_agree() -> list[str]:
    """The spec files' figures that differ from the beds' settings (empty: all agree)."""
    net = yaml.safe_load((DATA / "spec-netns.yaml").read_text())
    disk = yaml.safe_load(Template((DATA / "spec-disk.yaml").read_text()).substitute(mount="/m"))
    pairs = [
        ("spec-netns.yaml network.inter_node.GBps", net["network"]["inter_node"]["GBps"], netns_gbps()),
        ("spec-netns.yaml gpus_per_node", net["gpus_per_node"], 1),
        ("spec-disk.yaml storage[0].read_GBps", disk["storage"][0]["read_GBps"], disk_gbps()),
        ("spec-disk.yaml storage[0].write_GBps", disk["storage"][0]["write_GBps"], disk_gbps()),
    ]
    return [f"{what}: {got} in the file, {want:.7g} from the bed" for what, got, want in pairs if got != want]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _report(out: Path, spec: Path) -> dict[str, Any]:
    """`stoker report OUT --spec SPEC` (exit 0, 1 or 3 all leave a verdict.json); its verdict."""
    argv = [sys.executable, "-m", "launchers.cli", "report", str(out), "--spec", str(spec)]
    p = subprocess.run(argv, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    if p.returncode not in (0, 1, 3):
        raise RuntimeError(f"stoker report exited {p.returncode}: {p.stderr.strip()[-500:]}")
    doc: dict[str, Any] = json.loads((out / "verdict.json").read_text())
    return doc


def _disk_spec(out: Path, mount: Path) -> Path:
    spec = out.parent / f"{out.name}-spec.yaml"
    spec.write_text(Template((DATA / "spec-disk.yaml").read_text()).substitute(mount=mount))
    return spec


def run_netns(faulty: bool, out: Path) -> dict[str, Any]:
    with NetnsCluster(prefix=NETNS_PREFIX, nodes=NETNS_NODES, rate_mbit=NETNS_RATE_MBIT) as c:
        if faulty:
            c.shape_node(SLOW_NODE, NETNS_RATE_MBIT / SLOW_FACTOR)
        argv = [*net_argv("inter-node,pairs"), "--out", str(out)]
        ranks = c.launch(1, NETNS_PORT, argv, timeout=TIMEOUT_S, env={"PYTHONPATH": str(REPO)})
    bad = [(rc, err[-500:]) for rc, _, err in ranks if rc != 0]
    if bad:
        raise RuntimeError(f"stoker net: {bad}")
    return _report(out, DATA / "spec-netns.yaml")


def run_disk(faulty: bool, out: Path) -> dict[str, Any]:
    with throttled_disk(DISK_RATE // SLOW_FACTOR if faulty else DISK_RATE) as disk:
        spec = _disk_spec(out, disk.mount)
        argv = [sys.executable, "-m", "launchers.cli", "io", "--path", str(disk.mount), "--out", str(out)]
        argv += ["--workloads", "checkpoint", *SIZE_ARGS, "--writers", "2", "--runtime", "2"]
        argv += ["--no-torch", "--spec", str(spec)]
        p = subprocess.run(
            argv,
            cwd=REPO,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            preexec_fn=lambda: start_in_cgroup(disk.cgroup_procs),
        )
        if p.returncode != 0:
            raise RuntimeError(f"stoker io exited {p.returncode}: {p.stderr.strip()[-500:]}")
    return _report(out, spec)


def run_local(faulty: bool, out: Path) -> dict[str, Any]:
    with throttled_disk(DISK_RATE // SLOW_FACTOR if faulty else DISK_RATE) as disk:
        spec = _disk_spec(out, disk.mount)
        argv = [sys.executable, "-m", "launchers.cli", "run", *LOCAL_ARGS]
        argv += ["--path", str(disk.mount), "--out", str(out), "--spec", str(spec)]
        p = subprocess.run(
            argv,
            cwd=REPO,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S * 2,
            preexec_fn=lambda: start_in_cgroup(disk.cgroup_procs),
        )
    if not (out / "verdict.json").is_file():
        raise RuntimeError(f"stoker run exited {p.returncode} without a verdict: {p.stderr.strip()[-500:]}")
    doc: dict[str, Any] = json.loads((out / "verdict.json").read_text())
    return doc


_STORAGE = (
    ("local storage: checkpoint_write write bandwidth", None),
    ("local storage: checkpoint_read read bandwidth", None),
)
BEDS: dict[str, Bed] = {
    "netns": Bed(
        name="netns",
        fault=f"node {NETNS_PREFIX}n{SLOW_NODE}'s link at {NETNS_RATE_MBIT / SLOW_FACTOR:g} Mbit/s",
        expect=(
            ("inter-node network: all_reduce busbw plateau", None),
            ("node: pair busbw", f"{NETNS_PREFIX}n{SLOW_NODE}"),
        ),
        run=run_netns,
    ),
    "disk": Bed(
        name="disk",
        fault=f"the device throttled to {DISK_RATE // SLOW_FACTOR / 1e9:.4f} GB/s",
        expect=_STORAGE,
        run=run_disk,
    ),
    "local": Bed(
        name="local",
        fault=f"the storage path's device throttled to {DISK_RATE // SLOW_FACTOR / 1e9:.4f} GB/s",
        expect=_STORAGE,
        run=run_local,
    ),
}
