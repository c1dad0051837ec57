"""`stoker inventory`: read this node's inventory into DIR/host.jsonl, read-only, in seconds.

Under a launcher with one task per node (the Slurm acceptance job) every node appends its
own records. The copy test runs where torch sees CUDA GPUs (`--no-copy` skips it).
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path

from reports.shared.outdir import claim
from reports.shared.records import HOST_FILE, SCHEMA, RecordWriter, new_run_id, utc_now
from reports.shared.units import parse_size

HELP = "node inventory: PCIe links of GPUs and NICs, network ports, NVLink, GPU errors, host-link copy"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", metavar="DIR", help="results directory (default ./stoker-results/<run_id>)")
    parser.add_argument(
        "--copy",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="measure the host link of each GPU with pinned/pageable copies (default on)",
    )
    parser.add_argument("--copy-bytes", default="1G", metavar="SIZE", help="size of each copy (default 1G)")
    parser.add_argument("--sys-root", default="/sys", help=argparse.SUPPRESS)  # tests: a fixture tree
    parser.add_argument("--proc-root", default="/proc", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    from netbench.inventory.copy import cuda_copier
    from netbench.inventory.node import read_node
    from netbench.inventory.read import read_inventory

    run_id = new_run_id()
    out = Path(args.out or f"stoker-results/{run_id}")
    copy_bytes = parse_size(args.copy_bytes)
    # as net and io: a new dir, or this run's own (the first phase of torchrun.sh/mpirun.sh
    # is this one), never someone else's; every node of one run may claim it at once
    claim(out, run_id)
    # as the net and io phases name their host, so findings on one node line up
    host = os.environ.get("STOKER_HOSTNAME", "").strip() or socket.gethostname()
    inv = read_inventory(
        sys_root=args.sys_root, make_copier=cuda_copier if args.copy else None, copy_bytes=copy_bytes
    )
    head = {"schema": SCHEMA, "kind": "host", "run_id": run_id, "ts": utc_now(), "host": host}
    records = [read_node(args.proc_root, args.sys_root), *inv.records]  # the node itself, always
    with RecordWriter(out / HOST_FILE) as w:
        for rec in records:
            w.write({**head, **rec})
    counts: dict[str, int] = {}
    for rec in records:
        counts[rec["component"]] = counts.get(rec["component"], 0) + 1
    what = ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "nothing"
    print(f"inventory {host}: {what} -> {out / HOST_FILE}")
    if inv.skipped:
        print(f"inventory {host}: skipped: " + "; ".join(inv.skipped))
    return 0
