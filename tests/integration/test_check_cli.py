"""`stoker check` as a process on this machine: silent when healthy and well under a minute,
a hung tool killed at the time limit, bad input in one line, and the Kubernetes and Prometheus
actions against the fake kubectl (tests/harness/fake_scheduler.py) and the Prometheus client's own parser."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import STOKER
from tests.harness.fake_scheduler import FakeScheduler

# A recorder, hand-written: it imitates no tool's output, it only keeps the arguments it got.
# A hung tool, hand-written: nvidia-smi that never answers (a GPU in a bad state can do that).
HUNG = '#!/bin/sh\n# hand-written test double: a tool that hangs\necho $$ > "{pid}"\nexec sleep 300\n'


def tool(bin_dir: Path, name: str, text: str) -> Path:
    bin_dir.mkdir(exist_ok=True)
    p = bin_dir / name
    p.write_text(text)
    p.chmod(0o755)
    return p


def check(
    *argv: str, path_dirs: tuple[Path, ...] = (), timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": os.pathsep.join([*map(str, path_dirs), os.environ["PATH"]])}
    env.pop("SLURMD_NODENAME", None)
    return subprocess.run([*STOKER, "check", *argv], capture_output=True, text=True, timeout=timeout, env=env)


def test_healthy_check_is_silent_and_well_under_a_minute(tmp_path: Path) -> None:
    t = time.monotonic()
    p = check("--path", str(tmp_path))
    wall = time.monotonic() - t
    assert (p.returncode, p.stdout, p.stderr) == (0, "", ""), (p.stdout, p.stderr)
    assert wall < 60, wall
    assert list(tmp_path.iterdir()) == []  # its scratch files are gone


def test_a_hung_tool_is_killed_at_the_limit(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    tool(bin_dir, "nvidia-smi", HUNG.format(pid=tmp_path / "pid"))
    t = time.monotonic()
    p = check("--checks", "inventory", "--limit", "16", path_dirs=(bin_dir,))
    wall = time.monotonic() - t
    assert p.returncode == 3, (p.stdout, p.stderr)
    assert wall < 16 + 2, wall  # the limit, and the interpreter's own start
    assert "check inventory: stopped at its share of the time limit" in p.stdout
    pid = int((tmp_path / "pid").read_text())
    assert not alive(pid)  # the hung tool went with its step's process group


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie (ended, not yet reaped by its new parent) is not alive."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--checks", "inventory,vibes"], "--checks 'inventory,vibes': choose from inventory,net,io"),
        (["--baseline", "/nonexistent/b.yaml"], "cannot read baseline /nonexistent/b.yaml"),
        (["--path", "/nonexistent"], "--path /nonexistent: no such directory"),
        (["--limit", "3"], "--limit 3: give at least"),
    ],
)
def test_bad_input_one_line_exit_2(argv: list[str], says: str) -> None:
    p = check(*argv)
    assert p.returncode == 2 and p.stdout == "", p
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


def _baseline(tmp_path: Path, host: str, accepted: float, path: Path) -> Path:
    """A baseline of one local write figure: 10000 GB/s is above any disk (the check must
    regress), 1e-6 GB/s below any (it must pass)."""
    b = tmp_path / f"baseline-{accepted:g}.yaml"
    b.write_text(
        "stoker_baseline: 1\nrun_id: accepted-1\ncreated: '2026-11-24T00:00:00Z'\nfigures:\n"
        f"- {{kind: node-storage, component: node, what: checkpoint_write write on {path}, scope: local, host: {host},\n"
        f"   path: {path}, workload: checkpoint_write, direction: write, backend: fio, procs_per_node: 1,\n"
        f"   accepted: {accepted:g}, unit: GB/s, tolerance: 0.2}}\n"
    )
    return b


def test_kubernetes_taint_label_and_untaint_against_a_fake_kubectl(tmp_path: Path) -> None:
    host = "gpu-7"
    fake = FakeScheduler(tmp_path, k8s={host: {}})
    prom = tmp_path / "stoker.prom"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    io = ("--checks", "io", "--path", str(scratch), "--k8s-node", host)
    p = run_check(
        fake, *io, "--baseline", str(_baseline(tmp_path, host, 10000, scratch)), "--prometheus", str(prom)
    )
    assert p.returncode == 1, (p.stdout, p.stderr)
    (line,) = [ln for ln in p.stdout.splitlines() if "regression" in ln and not ln.startswith("stoker")]
    assert line.startswith("gpu-7 node regression: gpu-7 checkpoint_write write")
    assert fake.calls() == [
        ["kubectl", "get", "nodes", "gpu-7", "-o", "json"],
        [
            "kubectl",
            "taint",
            "nodes",
            "gpu-7",
            "stoker.dev/unhealthy=io.regression-node-storage:NoSchedule",
            "--overwrite",
        ],
        ["kubectl", "label", "nodes", "gpu-7", "stoker.dev/health=fail", "--overwrite"],
    ]
    fams = {f.name: f for f in text_string_to_metric_families(prom.read_text())}
    failing = [s for s in fams["stoker_check_failing"].samples if s.value == 1.0]
    assert [s.labels["host"] for s in failing] == ["gpu-7"]
    figs = fams["stoker_figure_gbps"].samples
    # the disk test's families its baseline judges: a checkpoint write figure alone, no dataloader
    assert {s.labels["op"] for s in figs} == {"checkpoint_write", "checkpoint_read"}
    assert all(s.labels["host"] == "gpu-7" and s.value > 0 for s in figs)
    # the disk test passes again against a figure it meets: the taint goes, the label says pass
    fake.log.unlink()
    p = run_check(fake, *io, "--baseline", str(_baseline(tmp_path, host, 1e-6, scratch)))
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert fake.calls()[1:] == [
        ["kubectl", "taint", "nodes", "gpu-7", "stoker.dev/unhealthy:NoSchedule-"],
        ["kubectl", "label", "nodes", "gpu-7", "stoker.dev/health=pass", "--overwrite"],
    ]
    assert fake.k8s_node(host) == {"taints": [], "labels": {"stoker.dev/health": "pass"}}
    # healthy and already labelled pass: only the query, nothing said
    fake.log.unlink()
    p = run_check(fake, "--checks", "inventory", "--k8s-node", host)
    assert (p.returncode, p.stdout) == (0, ""), (p.stdout, p.stderr)
    assert [c[1] for c in fake.calls()] == ["get"]


def run_check(fake: FakeScheduler, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STOKER, "check", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=fake.env(STOKER_HOSTNAME="gpu-7"),
    )
