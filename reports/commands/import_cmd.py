"""`stoker import FILE... --out DIR`: results people already have -> stoker records.

nccl-tests stdout logs (any version, launcher prefixes and NCCL noise allowed) and `-J`
JSON become `DIR/net.jsonl` records with backend "nccl-tests"; fio JSON becomes
`DIR/io.jsonl` records with backend "fio". Importing a file a second time adds nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from reports.shared.errors import UsageError
from reports.shared.records import IO_FILE, MANIFEST_FILE, NET_FILE, OPS, write_all
from reports.table.read import read_records

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


def _own(out: Path) -> None:
    """--out is stoker's (its `.stoker-run` marker), or new or empty and then marked as an
    import's; a dir of someone's files is refused, whatever their names."""
    from reports.shared.outdir import MARKER, owner

    try:
        out.mkdir(parents=True, exist_ok=True)
        if owner(out) is None:
            if any(out.iterdir()):
                raise UsageError(
                    f"--out {out}: exists and was not made by stoker; give a new or empty directory"
                )
            fd = os.open(out / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write("import\n")
    except OSError as exc:
        raise UsageError(
            f"cannot write into --out {out}: {exc.strerror or exc}; give a writable directory"
        ) from None


def main(args: argparse.Namespace) -> int:
    from reports.ingest.importers import Imported, import_file  # keeps `stoker --help` light

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a results directory")
    from reports.ingest.mamf import import_files as import_mamf  # mamf-finder -> compute.jsonl
    from reports.ingest.mamf import is_mamf_file

    mamf = [f for f in args.files if is_mamf_file(f)]
    files = [f for f in args.files if f not in mamf]  # nccl-tests / fio, below
    # Read everything first: one bad file imports nothing, rather than half of the list.
    from reports.ingest.stream import Streamed, append_spool, stream_log, streamable

    # a log too large to hold is parsed into a spool as it is read (reports/ingest/stream.py)
    loaded: list[tuple[Path, Streamed | Imported]] = [
        (Path(f), stream_log(Path(f), args.op) if streamable(Path(f)) else import_file(f, op=args.op))
        for f in files
    ]
    _own(out)  # the dir is stoker's before anything is written into it
    import_mamf(mamf, out)
    existing = read_records(out) if out.is_dir() else None
    known = set(existing.run_ids()) if existing else set()
    for path, got in loaded:
        if isinstance(got, Streamed):
            for note in got.notes:
                sys.stderr.write(f"stoker import: {note}\n")
            if got.run_id in known:
                got.spool.close()
                print(f"{path}: already imported into {out}; nothing added")
                continue
            try:
                append_spool(got.spool, out / NET_FILE)
                write_all(out / MANIFEST_FILE, [got.manifest])
            except OSError as exc:
                raise UsageError(
                    f"cannot write into --out {out}: {exc.strerror or exc}; give a writable directory"
                ) from None
            known.add(got.run_id)
            print(f"{path}: {got.count} net and 0 io records -> {out}")
            continue
        for note in got.notes:
            sys.stderr.write(f"stoker import: {note}\n")
        run_ids = {r.run_id for r in got.net} | {r.run_id for r in got.io}
        if run_ids and run_ids <= known:
            print(f"{path}: already imported into {out}; nothing added")
            continue
        try:
            n_net = write_all(out / NET_FILE, got.net) if got.net else 0
            n_io = write_all(out / IO_FILE, got.io) if got.io else 0
            if got.manifests:
                write_all(out / MANIFEST_FILE, got.manifests)
        except OSError as exc:
            raise UsageError(
                f"cannot write into --out {out}: {exc.strerror or exc}; give a writable directory"
            ) from None
        known |= run_ids
        print(f"{path}: {n_net} net and {n_io} io records -> {out}")
    return 0
