"""`python -m launchers.local.preflight_relay OUT --nnodes N --port P --wait S`: torchrun.sh's
node 0, when each node has its own results dir (`SHARED_OUT=0`), receives the other nodes'
preflight through the launcher's network instead of a shared disk.

The preflight and set-aside of a shared OUT read small files every node writes there:
`.stoker-seen-R` (node R's host name, the start barrier), `OUT/preflight/HOST.log` (its
preflight output), `.stoker-pf-R` (its preflight ended), and every node reads node 0's
`.stoker-go` (the hosts that go on, or STOP). This relay writes the first three into node 0's
own OUT for each node that reports over TCP, and sends `.stoker-go` back to it, so node 0's
side of torchrun.sh, `stoker set-aside` and the report read the same files either way.

The other nodes speak to it from bash (`/dev/tcp`), not python: a node whose stoker is broken
still says why. One connection per node, text lines, each bounded:

    node -> relay   hello RUN_ID RANK HOST        relay -> node   ok  |  stop REASON
    node -> relay   log LEN  then LEN bytes       (its preflight output, at most MAX_LOG)
                                                  relay -> node   go KEPT_HOSTS  |  go STOP

A connection closed before a word is a node's probe that the port is open, and is let go.
A hello of another run, a rank outside 1..N-1 or already heard, or a host name that is not
plain is refused with its reason. The relay writes OUT/.stoker-relay-up once it listens, and
ends when node 0 has written `.stoker-go` and every node still connected has it, when node
0's script is gone, or after `--wait` seconds; a node that never reports is left to `stoker
set-aside` (no output: set aside). Pure but for `Relay`, the file writers and `main`.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.shared.hostnames import is_plain_host, why_not_plain
from reports.shared.setaside import PREFLIGHT_DIR

MAX_LOG = 64 << 10  # the tail of a preflight's output a node sends: its verdict is the last line
MAX_LINE = 512  # a hello or a log header
SEEN = ".stoker-seen-"  # torchrun.sh's start barrier: node R's host name
ENDED = ".stoker-pf-"  # torchrun.sh's: node R's preflight ended
GO = ".stoker-go"  # node 0's answer: the hosts that go on, comma-separated, or STOP
READY = ".stoker-relay-up"  # the relay listens
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True, slots=True)
class Hello:
    rank: int
    host: str


def parse_hello(line: str, run_id: str, nnodes: int) -> Hello | str:
    """A node's `hello RUN_ID RANK HOST`, or why it is refused."""
    parts = line.strip().split(" ")
    if len(parts) != 4 or parts[0] != "hello":
        return "not a preflight hello (expected: hello RUN_ID RANK HOST)"
    _, rid, rank, host = parts
    if rid != run_id:
        return f"run id {rid[:80]!a} is not this run's ({run_id}): set the same STOKER_RUN_ID on every node"
    if not (rank.isascii() and rank.isdigit()) or not 1 <= int(rank) < nnodes:
        return f"node rank {rank[:12]!a} is outside 1..{nnodes - 1}: check NODE_RANK on that node"
    if not is_plain_host(host):
        return f"host name {host[:40]!a} {why_not_plain(host)}: give every node a plain host name"
    return Hello(int(rank), host)


def parse_log_header(line: str) -> int | str:
    """The byte count of a node's `log LEN`, or why it is refused."""
    parts = line.split()  # `wc -c` pads its count with blanks on some systems
    if len(parts) != 2 or parts[0] != "log" or not (parts[1].isascii() and parts[1].isdigit()):
        return "not a preflight log header (expected: log LEN)"
    n = int(parts[1])
    return n if n <= MAX_LOG else f"a log of {n} bytes, more than {MAX_LOG}"


def go_line(text: str) -> str | None:
    """Node 0's answer from the text of `.stoker-go`: its first line once written whole
    (ended by a newline), else None (not yet)."""
    first, nl, _ = text.partition("\n")
    return first.strip() if nl and first.strip() else None


def _write_new(path: Path, data: bytes) -> bool:
    """Write a file that does not exist yet (never through a link); False when one does."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return True


def note_seen(out: Path, hello: Hello) -> None:
    """OUT/.stoker-seen-R with R's host name, as a node with a shared OUT writes it."""
    tmp = out / f".{SEEN}{hello.rank}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    _write_new(tmp, f"{hello.host}\n".encode())
    os.replace(tmp, out / f"{SEEN}{hello.rank}")


def keep_log(out: Path, hello: Hello, data: bytes) -> bool:
    """OUT/preflight/HOST.log with the node's output (never over one already there: two nodes
    of one name stop the run at node 0's name check), then OUT/.stoker-pf-R."""
    (out / PREFLIGHT_DIR).mkdir(exist_ok=True)
    kept = _write_new(out / PREFLIGHT_DIR / f"{hello.host}.log", data)
    _write_new(out / f"{ENDED}{hello.rank}", b"")
    return kept


class Relay:
    """The listening socket and what it has heard; one thread per node's connection."""

    def __init__(self, out: Path, nnodes: int, run_id: str, port: int, deadline: float) -> None:
        self.out, self.nnodes, self.run_id, self.deadline = out, nnodes, run_id, deadline
        self.lock = threading.Lock()
        self.ranks: dict[int, str] = {}
        self.go = threading.Event()
        self.answer = ""
        self.sock = socket.create_server(("", port), family=socket.AF_INET, backlog=max(nnodes, 8))
        self.sock.settimeout(0.2)

    def _left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.1)

    def serve_one(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as rf:
            conn.settimeout(self._left())
            first = rf.readline(MAX_LINE)
            if not first:  # a node's probe that the port is open (torchrun.sh's relay_open)
                return
            hello = parse_hello(first.decode("utf-8", "replace"), self.run_id, self.nnodes)
            with self.lock:
                if isinstance(hello, Hello) and hello.rank in self.ranks:
                    hello = f"node rank {hello.rank} already answered from {self.ranks[hello.rank]}"
                if isinstance(hello, Hello):
                    self.ranks[hello.rank] = hello.host
            if not isinstance(hello, Hello):
                conn.sendall(f"stop {hello}\n".encode())
                print(f"stoker: preflight relay refused a node: {hello}", file=sys.stderr, flush=True)
                return
            note_seen(self.out, hello)
            conn.sendall(b"ok\n")
            size = parse_log_header(rf.readline(MAX_LINE).decode("utf-8", "replace"))
            data = rf.read(size) if isinstance(size, int) else b""
            if isinstance(size, int) and len(data) == size:
                keep_log(self.out, hello, data)
            self.go.wait(self._left())
            if self.answer:
                conn.sendall(f"go {self.answer}\n".encode())

    def handle(self, conn: socket.socket) -> None:
        try:
            self.serve_one(conn)
        except (OSError, ValueError) as exc:  # a node gone or too slow: set-aside decides from what is here
            print(f"stoker: preflight relay: a node's connection ended: {exc}", file=sys.stderr, flush=True)

    def run(self, parent: int) -> int:
        """Serve until node 0's answer is out (0), its script is gone or the deadline passed (3)."""
        threads: list[threading.Thread] = []
        with self.sock:
            while True:  # node 0's answer is read once more after its script has gone
                try:
                    text = (self.out / GO).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = ""
                if (answer := go_line(text)) is not None:
                    self.answer = answer
                    break
                if time.monotonic() >= self.deadline or os.getppid() != parent:
                    break
                try:
                    conn, _ = self.sock.accept()
                except TimeoutError:
                    continue
                t = threading.Thread(target=self.handle, args=(conn,), daemon=True)
                t.start()
                threads.append(t)
        self.go.set()  # no answer by now: the nodes still waiting hear the connection close
        end = time.monotonic() + 10
        for t in threads:
            t.join(timeout=max(end - time.monotonic(), 0))
        return 0 if self.answer else 3


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m launchers.local.preflight_relay")
    p.add_argument("out", type=Path)
    p.add_argument("--nnodes", type=int, required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wait", type=float, required=True, help="seconds to serve at most")
    args = p.parse_args(argv)
    run_id = os.environ.get("STOKER_RUN_ID", "")
    if not run_id or args.nnodes < 2 or not 0 < args.port < 65536:
        print(
            "stoker: the preflight relay needs STOKER_RUN_ID, --nnodes 2 or more and a port", file=sys.stderr
        )
        return 2
    try:
        relay = Relay(args.out, args.nnodes, run_id, args.port, time.monotonic() + args.wait)
    except OSError as exc:
        print(
            f"stoker: node 0 cannot listen on PREFLIGHT_PORT={args.port} for the other nodes' preflight: "
            f"{exc.strerror or exc}; set PREFLIGHT_PORT to a free port, the same on every node",
            file=sys.stderr,
        )
        return 2
    _write_new(args.out / READY, b"")  # node 0's script waits for it before the start barrier
    return relay.run(os.getppid())


if __name__ == "__main__":
    sys.exit(main())
