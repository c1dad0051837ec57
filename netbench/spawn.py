"""`stoker net --nproc N`: start N local ranks of the same command with a torchrun-style
environment, stream rank 0's output, and supervise them: when one rank dies the others
are stopped and the run ends with exit 3 (records written so far stay). SIGTERM is taken as
Ctrl-C; a soak's ranks (`patient`) hear it and finish the pass in flight, a second signal
ends them at once."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

CHILD_ENV = "STOKER_NET_CHILD"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(procs: Sequence[subprocess.Popen[bytes]], sig: int, grace_s: float, kill: bool = True) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(sig)
    if not kill:
        return
    deadline = time.monotonic() + grace_s
    for p in procs:
        while p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if p.poll() is None:
            p.kill()  # SIGKILL also ends a stopped (SIGSTOPped) rank
            p.wait()


def _last_line(path: Path) -> str:
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else ""


def _describe(code: int) -> str:
    return f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"


def _term_as_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def supervise(nproc: int, argv: Sequence[str], patient: bool = False) -> int:
    """Run `python -m launchers.cli net <argv>` as ranks 0..nproc-1; returns the exit code."""
    port = free_port()
    cmd = [sys.executable, "-m", "launchers.cli", "net", *argv]
    with tempfile.TemporaryDirectory(prefix="nb-ranks-") as tmp:
        logs = [Path(tmp) / f"rank{r}.err" for r in range(nproc)]
        procs: list[subprocess.Popen[bytes]] = []
        for rank in range(nproc):
            env = {
                **os.environ,
                "RANK": str(rank),
                "WORLD_SIZE": str(nproc),
                "LOCAL_RANK": str(rank),
                "LOCAL_WORLD_SIZE": str(nproc),
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": str(port),
                CHILD_ENV: "1",
            }
            env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun does: N ranks share the cores
            if rank == 0:
                procs.append(subprocess.Popen(cmd, env=env))
            else:
                with open(logs[rank], "wb") as err:
                    procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err))
        old = signal.signal(signal.SIGTERM, _term_as_interrupt)
        try:
            return _wait(procs, logs)
        except KeyboardInterrupt:
            if patient:
                try:  # a soak: the ranks finish the pass in flight and stop by themselves
                    _stop(procs, signal.SIGTERM, 0.0, kill=False)
                    return _wait(procs, logs)
                except KeyboardInterrupt:
                    pass
            _stop(procs, signal.SIGINT, 5.0)
            sys.stderr.write("stoker net: interrupted; records measured so far are kept\n")
            return 3
        finally:
            signal.signal(signal.SIGTERM, old)


# after a rank fails: how long rank 0 may take to say which op failed, then how long the
# others get to end on SIGTERM before SIGKILL (tests derive their limits from these)
PEER_WAIT_S = 2.0
STOP_GRACE_S = 2.0


def _wait(procs: Sequence[subprocess.Popen[bytes]], logs: Sequence[Path]) -> int:
    while True:
        codes = [p.poll() for p in procs]
        failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            # rank 0 usually notices a dead peer at once and says which op failed: let it
            deadline = time.monotonic() + PEER_WAIT_S
            while procs[0].poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            _stop(procs, signal.SIGTERM, STOP_GRACE_S)
            # Another rank that ended before rank 0 noticed is the cause (a crash: 70, a signal,
            # or its own failed step), and rank 0's "connection reset" only its echo: name it,
            # with its own last line. Bad input (2) is rank 0's one line alone.
            origin = [(r, c) for r, c in failed if r]
            if procs[0].returncode == 2 or (procs[0].returncode == 3 and not origin):
                return int(procs[0].returncode)  # rank 0 already said why, in one line
            rank, code = origin[0] if origin else failed[0]
            why = _last_line(logs[rank]) if rank else ""
            sys.stderr.write(
                f"stoker net: rank {rank} {_describe(code)}; the other ranks were stopped; "
                f"records measured so far are kept{': ' + why if why else ''}\n"
            )
            return 2 if code == 2 else 3
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.1)
