"""A real two-node Slurm on this one machine, for tests (REAL-TEST-BEDS §1).

Installs nothing (install.sh installs slurmctld, slurmd and the clients). Starts one
slurmctld and two slurmd "nodes" (Debian's slurmd is built with MULTIPLE_SLURMD), each
slurmd in its own UTS namespace so that `hostname` inside a job prints n1 or n2. All
config, state and logs live in one temp dir; clients find them through SLURM_CONF
(`cluster.env`). Daemons are our own children, stopped by pid on exit, also on failure.

    with SlurmCluster(prefix="la") as c:
        job = c.sbatch([script])
        state = c.wait(job, timeout_s=300)

Ports: picked free when the cluster starts (slurmctld, one per slurmd, and a block of 70
for srun), so two clusters, or other tests on this machine, never collide on a fixed one.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

SRUN_PORT_COUNT = 70
TERMINAL = (
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int, low: int = 20000, high: int = 40000) -> int:
    """The first of `count` consecutive ports that are free now (a block at a random base)."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(low, high - count)
        if all(_port_free(p) for p in range(base, base + count)):
            return base
    raise RuntimeError(f"no {count} consecutive free ports between {low} and {high}")


def _conf(
    d: Path, nodes: list[str], cpus: int, mpi_default: str, ports: int, extra: Sequence[str] = ()
) -> str:
    """`ports`: the first of len(nodes) + 1 + SRUN_PORT_COUNT free ports; `extra`: more
    slurm.conf lines (e.g. HealthCheckProgram)."""
    host = socket.gethostname()
    lines = [
        "ClusterName=stokerla",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ports}",
        "AuthType=auth/none",
        "CredType=cred/none",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/slurmctld.pid",
        f"SlurmdPidFile={d}/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/slurmctld.log",
        f"SlurmdLogFile={d}/slurmd-%n.log",
        # per-node TmpFS: else PMIx directories of the two "nodes" collide
        f"TmpFS={d}/tmp/%n",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "MailProg=/bin/true",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        f"SrunPortRange={ports + 1 + len(nodes)}-{ports + len(nodes) + SRUN_PORT_COUNT}",
        "ReturnToService=2",
        f"MpiDefault={mpi_default}",
        "SchedulerParameters=sched_interval=1",
        "KillWait=5",
        "InactiveLimit=0",
        "MinJobAge=600",
        *extra,
    ]
    for i, n in enumerate(nodes):
        lines.append(
            f"NodeName={n} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports + 1 + i} CPUs={cpus} State=UNKNOWN"
        )
    lines.append(f"PartitionName=la Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


class SlurmCluster:
    """slurmctld + `nodes` slurmd on this machine; a context manager."""

    def __init__(
        self,
        *,
        prefix: str = "la",
        nodes: int = 2,
        cpus: int | None = None,
        mpi_default: str = "none",
        extra_conf: Sequence[str] = (),
    ) -> None:
        """Every node also gets its own empty tmpfs at `self.private` (a mount namespace
        per slurmd): a results dir there is NOT shared between the nodes. `mpi_default`:
        slurm.conf MpiDefault (none, pmi2, pmix): what a plain srun step gets."""
        self.mpi_default = mpi_default
        self.extra_conf = tuple(extra_conf)
        self.names = [f"n{i + 1}" for i in range(nodes)]
        self.cpus = cpus or os.cpu_count() or 2
        self.dir = Path(tempfile.mkdtemp(prefix=f"{prefix}-slurm-"))
        self.conf = self.dir / "slurm.conf"
        self.private = self.dir / "private"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self._procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> SlurmCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        for sub in (
            "state",
            "spool",
            "private",
            *(f"tmp/{n}" for n in self.names),
            *(f"spool/{n}" for n in self.names),
        ):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        self.conf.write_text(
            _conf(
                self.dir,
                self.names,
                self.cpus,
                self.mpi_default,
                free_ports(1 + len(self.names) + SRUN_PORT_COUNT),
                self.extra_conf,
            ),
            encoding="utf-8",
        )
        self._spawn(["slurmctld", "-D", "-i"], "slurmctld.out")
        for n in self.names:
            # unshare execs sh, which execs slurmd: the pid we hold is the daemon's. The
            # script is fixed; the node name and private dir are its arguments.
            script = 'hostname "$1" && mount -t tmpfs -o size=16m la-private "$2" && exec slurmd -D -N "$1"'
            self._spawn(
                [
                    "unshare",
                    "--uts",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    script,
                    "sh",
                    n,
                    str(self.private),
                ],
                f"slurmd-{n}.out",
            )
        self._wait_idle(timeout_s=30)

    def _spawn(self, argv: list[str], log: str) -> None:
        with open(self.dir / log, "wb") as fh:
            self._procs.append(
                subprocess.Popen(
                    argv, env=self.env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
                )
            )

    def _wait_idle(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        states = ""
        while time.monotonic() < deadline:
            for p in self._procs:
                if p.poll() is not None:
                    raise RuntimeError(
                        f"a Slurm daemon exited ({p.args}); logs in {self.dir}: {self.logs()[-2000:]}"
                    )
            q = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False)
            states = q.stdout
            if q.returncode == 0 and sum(" idle" in line for line in states.splitlines()) == len(self.names):
                return
            time.sleep(0.5)
        raise RuntimeError(
            f"Slurm nodes not idle after {timeout_s} s: {states!r}; logs: {self.logs()[-2000:]}"
        )

    def run(
        self, argv: list[str], *, check: bool = True, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A Slurm client command against this cluster."""
        return subprocess.run(
            argv, env={**self.env, **(env or {})}, capture_output=True, text=True, check=check, timeout=60
        )

    def sbatch(self, argv: list[str], env: dict[str, str] | None = None) -> str:
        out = self.run(["sbatch", "--parsable", *argv], env=env).stdout.strip()
        return out.split(";")[0]

    def state(self, job: str) -> str:
        return self.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], check=False).stdout.strip()

    def wait(self, job: str, timeout_s: float) -> str:
        """Poll until the job ends; its final state (COMPLETED, FAILED, ...)."""
        deadline = time.monotonic() + timeout_s
        state = ""
        while time.monotonic() < deadline:
            state = self.state(job)
            if state in TERMINAL:
                return state
            time.sleep(1)
        self.run(["scancel", job], check=False)
        raise TimeoutError(f"job {job} still {state or 'unknown'} after {timeout_s} s")

    def exit_code(self, job: str) -> int:
        """The batch script's exit status, from `scontrol show job` (no slurmdbd here)."""
        out = self.run(["scontrol", "-o", "show", "job", job]).stdout
        for field in out.split():
            if field.startswith("ExitCode="):
                return int(field.split("=", 1)[1].split(":")[0])
        raise RuntimeError(f"no ExitCode for job {job}: {out!r}")

    def daemon_pid(self, node: int) -> int:
        """The pid of node `node`'s (0-based) slurmd: its mount namespace is the node's own."""
        return self._procs[1 + node].pid

    def node_pids(self, node: int) -> set[int]:
        """Every process of node `node` (0-based): those in its slurmd's mount namespace (its
        slurmd, the steps' slurmstepd, their tasks). Another bed's n2 is not this one's."""
        ns = os.readlink(f"/proc/{self.daemon_pid(node)}/ns/mnt")
        pids = set()
        for d in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if d.name.isdigit() and os.readlink(d / "ns" / "mnt") == ns:
                    pids.add(int(d.name))
        return pids

    def node_path(self, node: int, path: Path) -> Path:
        """`path` as node `node` (0-based) sees it, through its daemon's mount namespace."""
        return Path(f"/proc/{self._procs[1 + node].pid}/root") / path.relative_to("/")

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.dir.glob("*.log")) if p.is_file())

    def stop(self) -> None:
        if self._procs and self.conf.exists():
            # jobs first, so no slurmstepd outlives its daemon (this cluster only: SLURM_CONF)
            subprocess.run(
                ["scancel", "--partition", "la"], env=self.env, capture_output=True, timeout=30, check=False
            )
        for p in reversed(self._procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self._procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        self._procs.clear()
        # a slurmstepd whose slurmd was killed first (a stopped suite, tests/harness/stop.py) is
        # an orphan that no scancel reaches: it and the job's processes carry this cluster's
        # SLURM_CONF (slurmd's environment), and no other process does
        _kill_environ(f"SLURM_CONF={self.conf}".encode())
        shutil.rmtree(self.dir, ignore_errors=True)


def _kill_environ(entry: bytes) -> None:
    """SIGKILL every process whose environment holds `entry` ("NAME=value")."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if entry in (proc / "environ").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
