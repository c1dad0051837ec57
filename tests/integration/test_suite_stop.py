"""A suite stopped by SIGTERM (CI's cancel, `timeout`) or SIGINT (Ctrl-C) leaves nothing
behind: a pytest running a bed (stop_child_bed.py: a namespaced cluster, a throttled loop
device, processes in a namespace, in a cgroup and under mpirun, a Slurm daemon running a job)
is signalled once the bed is up, and afterwards no namespace of its prefix, no loop device,
mount or cgroup of its disk, no Slurm dir and no process it started is left (tests/harness/stop.py and tests/conftest.py do the cleanup)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO, ctrl_c_default, needs_root, needs_tool
from tests.harness.netns import NETNS_ETC, run_ip
from tests.harness.stop import run_processes

CHILD = REPO / "tests" / "integration" / "stop_child_bed.py"
PREFIX = "kst"  # stop_child_bed.PREFIX
# stop_child_bed's `sleep 3607`s: in the cgroup, in a namespace, two ranks, the Slurm job, the test's own
SLEEPS = 6


def _sleeps(procs: dict[int, int]) -> int:
    n = 0
    for pid in procs:
        try:
            n += Path(f"/proc/{pid}/cmdline").read_bytes() == b"sleep\x003607\x00"
        except OSError:
            pass
    return n


def _environ_has(entry: bytes) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and entry in (proc / "environ").read_bytes().split(b"\0"):
                pids.append(int(proc.name))
        except OSError:
            pass
    return pids


def _alive(pid: int, start: int) -> bool:
    try:
        rest = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return int(rest[19]) == start and rest[0] not in "ZX"


@needs_root
@needs_tool("mpirun")
@pytest.mark.parametrize(
    ("sig", "workers"),
    [(signal.SIGTERM, []), (signal.SIGINT, []), (signal.SIGTERM, ["-n", "2", "--dist", "loadfile"])],
    ids=["sigterm", "sigint", "sigterm-xdist"],  # the last as .ci/run runs the bed tier
)
def test_a_stopped_suite_leaves_no_namespace_loop_device_or_process(
    tmp_path: Path, sig: int, workers: list[str]
) -> None:
    log = (tmp_path / "pytest.log").open("w+")
    child = subprocess.Popen(
        [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *workers, str(CHILD)],
        cwd=REPO,
        env={**os.environ, "STOKER_STOP_BED": str(tmp_path)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own group: the test's last resort kills all of it
        preexec_fn=ctrl_c_default,
    )
    try:
        deadline = time.monotonic() + 120
        procs: dict[int, int] = {}
        while time.monotonic() < deadline and child.poll() is None:
            procs = run_processes(child.pid)
            if (tmp_path / "up.json").exists() and _sleeps(procs) == SLEEPS:
                break
            time.sleep(0.2)
        log.seek(0)
        assert child.poll() is None and _sleeps(procs) == SLEEPS, f"the bed did not come up:\n{log.read()}"
        up = json.loads((tmp_path / "up.json").read_text())
        assert set(up["pids"]) <= set(procs)

        child.send_signal(sig)
        rc = child.wait(timeout=90)
        log.seek(0)
        said = log.read()
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()

    # pytest ends as after Ctrl-C (exit 2, "interrupted"), having torn the bed down
    assert rc == 2 and f"stopped by {signal.Signals(sig).name}" in said, said
    left = [pid for pid, start in procs.items() if _alive(pid, start)]
    assert not left, f"processes left: {left}\n{said}"
    namespaces = [n.split()[0] for n in run_ip("netns", "list").stdout.splitlines() if n.strip()]
    assert not [n for n in namespaces if n.startswith(f"{PREFIX}-")], namespaces
    assert not list(NETNS_ETC.glob(f"{PREFIX}-*"))
    # the device's name may be taken by someone else's loop at once: ask for its image instead
    loops = subprocess.run(["losetup", "-j", up["image"]], capture_output=True, text=True)
    assert loops.stdout.strip() == "" and not Path(up["image"]).exists(), loops.stdout
    assert up["mount"] not in Path("/proc/self/mounts").read_text()
    assert not Path(up["cgroup"]).exists()
    assert not Path(up["slurm"]).exists()
    # nor a slurmstepd orphaned by its killed slurmd (it carries the cluster's SLURM_CONF)
    conf = f"SLURM_CONF={up['slurm']}/slurm.conf".encode()
    assert not _environ_has(conf), "a process of the bed's Slurm is left"
