"""`stoker fingerprint`: one line saying which stoker this interpreter runs —
the host, a digest of stoker's own source files and the interpreter's path. The Slurm job
runs it on every node before any sweep and stops in one line when the nodes disagree (a
node with another checkout, an older install, or none at the path the job runs)."""

from __future__ import annotations

import argparse
import hashlib
import socket
import sys
from pathlib import Path

HELP = "print this node's host, a digest of stoker's source files and the interpreter (the Slurm job's check)"
PACKAGES = ("launchers", "netbench", "iobench", "reports")


def digest(root: Path) -> str:
    """sha256 over every .py and .sh file of stoker's packages under `root`: names and bytes."""
    h = hashlib.sha256()
    for pkg in PACKAGES:
        for f in sorted((root / pkg).rglob("*")):
            if f.suffix in (".py", ".sh", ".sbatch") and f.is_file():
                h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def line() -> str:
    root = Path(__file__).resolve().parents[2]
    return f"{socket.gethostname()} {digest(root)} {sys.executable}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def main(args: argparse.Namespace) -> int:
    del args
    print(line())
    return 0
