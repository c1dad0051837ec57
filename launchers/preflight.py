"""`stoker preflight PATH...`: one node's fast check before an acceptance job's sweeps.

Each storage path must be writable (created if missing, a small file written and removed),
then `stoker check` runs its inventory (the GPUs and NICs) and its short local collective;
the disk's speed is the storage phase's to measure, on the nodes kept. Its output passes through; the last line is the verdict the
batch host reads back (reports/setaside.py): `stoker preflight: NODE passed`, or the reason
this node is set aside. Exit 0 passed, 1 not.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from reports.setaside import last_line, passed_line

HELP = "one node's check before the acceptance sweeps: the storage paths writable, then stoker check"
CHECK_LIMIT_S = 50  # stoker check's own default: well under the step's minute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="the storage paths each node must be able to write")


def writable(path: str) -> str:
    """'' when a file can be written in `path` (made if missing), else why not."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".stoker-preflight-", dir=path)
        try:
            os.write(fd, b"stoker preflight\n")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as exc:
        return f"storage path {path} is not writable: {exc.strerror or exc}"
    return ""


def main(args: argparse.Namespace) -> int:
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    why = next((w for w in map(writable, args.paths) if w), "")
    if not why:
        argv = [sys.executable, "-m", "launchers.cli", "check", "--checks", "inventory,net", "--node", node]
        argv += ["--path", args.paths[0], "--limit", str(CHECK_LIMIT_S), "-v"]
        proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False)
        text = proc.stdout + proc.stderr
        sys.stdout.write(text)
        if proc.returncode != 0:
            why = f"stoker check exit {proc.returncode}: {last_line(text) or 'no output'}"
    print(f"stoker preflight: {node} {why}" if why else passed_line(node), flush=True)
    return 1 if why else 0
