"""`stoker preflight PATH...`: one node's fast check before an acceptance job's sweeps.

Each storage path must be writable (created if missing, a small file written and removed),
then `stoker check` runs its inventory (the GPUs and NICs) and its short local collective;
the node must have the GPUs the job runs on (`--gpus`: the spec's gpus_per_node where it
says, else the job's) and the NICs the spec promises (`--spec`: inter_node as a link x
count); the disk's speed is the storage phase's to measure, on the nodes kept. Its output
passes through, with one `stoker fingerprint:` line (which stoker this node runs: the batch
host sets aside a node with another); the last line is the verdict the batch host reads back
(reports/shared/setaside.py): `stoker preflight: NODE passed`, or the reason this node is set aside.
Exit 0 passed, 1 not.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from launchers.commands.fingerprint import line as fingerprint_line
from reports.shared.setaside import FINGERPRINT, last_line, passed_line

HELP = "one node's check before the acceptance sweeps: the storage paths writable, then stoker check"
CHECK_LIMIT_S = 50  # stoker check's own default: well under the step's minute


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="the storage paths each node must be able to write")
    parser.add_argument(
        "--node",
        help="this node's name as the job knows it (mpirun.sh: its hostfile name); default the host name",
    )
    parser.add_argument(
        "--gpus", type=int, default=0, help="the GPUs per node the job runs on (0: a CPU job)"
    )
    parser.add_argument("--spec", help="the cluster spec: its gpus_per_node and inter-node NIC count")


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


def promised(spec_path: str | None, job_gpus: int) -> tuple[int | None, int | None, str]:
    """(GPUs, NICs, what a NIC is) a node must have: GPUs only for a GPU job (the spec's
    gpus_per_node, else the job's), NICs where the spec's inter_node is a link x count."""
    if not spec_path:
        return (job_gpus or None), None, ""
    from reports.shared.spec import load_spec

    spec = load_spec(spec_path)
    gpus = (spec.gpus_per_node or job_gpus) if job_gpus > 0 else None
    link = spec.inter_node_link
    if link is None or spec.inter_node_count is None or link.per not in ("port", "interface"):
        return gpus, None, ""
    return gpus, spec.inter_node_count, link.per


def short_of(host: Iterable[Mapping[str, Any]], gpus: int | None, nics: int | None, per: str) -> str:
    """'' when the node's inventory records hold the GPUs and NICs promised, else what is
    missing. GPUs: its `host link` records; NICs: its RDMA ports (`port`), or every
    hardware network port where the link is counted per interface."""
    recs = list(host)
    have_gpus = sum(1 for r in recs if r.get("component") == "host link")
    ports = [r for r in recs if r.get("component") == "network port"]
    have_nics = len(ports) if per == "interface" else sum(1 for r in ports if r.get("port") is not None)
    why = []
    if gpus is not None and have_gpus < gpus:
        why.append(f"{have_gpus} of the {gpus} GPUs the job runs on")
    if nics is not None and have_nics < nics:
        what = "network interfaces" if per == "interface" else "RDMA ports"
        why.append(f"{have_nics} of the {nics} {what} the spec promises")
    return ("has " + " and ".join(why)) if why else ""


def main(args: argparse.Namespace) -> int:
    node = getattr(args, "node", None) or os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    print(f"{FINGERPRINT}{fingerprint_line()}", flush=True)
    why = next((w for w in map(writable, args.paths) if w), "")
    gpus, nics, per = promised(getattr(args, "spec", None), getattr(args, "gpus", 0) or 0)
    if not why:
        with tempfile.TemporaryDirectory(prefix="stoker-preflight-") as kept:
            argv = [
                sys.executable,
                "-m",
                "launchers.cli",
                "check",
                "--checks",
                "inventory,net",
                "--node",
                node,
            ]
            argv += ["--path", args.paths[0], "--limit", str(CHECK_LIMIT_S), "--out", kept, "-v"]
            proc = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=False)
            text = proc.stdout + proc.stderr
            sys.stdout.write(text)
            if proc.returncode != 0:
                why = f"stoker check exit {proc.returncode}: {last_line(text) or 'no output'}"
            elif gpus is not None or nics is not None:
                from reports.shared.records import iter_jsonl

                host = Path(kept) / "host.jsonl"
                recs = [o for _, o, _ in iter_jsonl(host) if isinstance(o, dict)] if host.is_file() else []
                why = short_of(recs, gpus, nics, per)
    print(f"stoker preflight: {node} {why}" if why else passed_line(node), flush=True)
    return 1 if why else 0
