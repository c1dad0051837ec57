"""`stoker import FILE... --out DIR`: results people already have -> stoker records.

nccl-tests stdout logs (any version, launcher prefixes and NCCL noise allowed) and `-J`
JSON become `DIR/net.jsonl` records with backend "nccl-tests"; fio JSON becomes
`DIR/io.jsonl` records with backend "fio". Importing a file a second time adds nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reports.errors import UsageError
from reports.records import IO_FILE, MANIFEST_FILE, NET_FILE, OPS, RecordWriter, read_records, write_all

HELP = "turn nccl-tests logs/JSON, fio JSON and mamf-finder outputs into stoker records"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="nccl-tests logs or -J JSON, fio JSON")
    parser.add_argument("--out", required=True, metavar="DIR", help="results directory to append records to")
    parser.add_argument(
        "--op",
        choices=OPS,
        default=None,
        help="the collective, when neither the log nor the file name says (e.g. a bare table)",
    )


def main(args: argparse.Namespace) -> int:
    from reports.ingest.importers import import_file  # keeps `stoker --help` light

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a results directory")
    from reports.ingest.mamf import import_files as import_mamf  # issue 27: mamf-finder -> compute.jsonl

    files = import_mamf(args.files, out)  # issue 27: the rest are nccl-tests / fio, below
    # Read everything first: one bad file imports nothing, rather than half of the list.
    loaded = [(Path(f), import_file(f, op=args.op)) for f in files]
    existing = read_records(out) if out.is_dir() else None
    known = {r.run_id for r in [*existing.net, *existing.io]} if existing else set()  # net may be a NetTable
    for path, got in loaded:
        for note in got.notes:
            sys.stderr.write(f"stoker import: {note}\n")
        run_ids = {r.run_id for r in (*got.net, *got.io)}
        if run_ids and run_ids <= known:
            print(f"{path}: already imported into {out}; nothing added")
            continue
        n_net = write_all(out / NET_FILE, got.net) if got.net else 0
        n_io = write_all(out / IO_FILE, got.io) if got.io else 0
        if got.manifests:
            with RecordWriter(out / MANIFEST_FILE) as w:
                for m in got.manifests:
                    w.write(m)
        known |= run_ids
        print(f"{path}: {n_net} net and {n_io} io records -> {out}")
    return 0
