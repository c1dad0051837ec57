"""`stoker io`: fio-driven checkpoint, dataloader and metadata tests on one or more paths.

    stoker io --path /scratch --path /shared/team      # all workloads, both paths
    stoker io --path /tmp/x --workloads checkpoint --ckpt-bytes 4G
    stoker io --path /data --dry-run                   # print the fio jobs, run nothing
    srun --ntasks-per-node=1 -N 8 stoker io --path /lustre/proj   # all nodes at once
                                                       # (export MASTER_ADDR / MASTER_PORT)

Records go to OUT/io.jsonl (one line per workload, direction and path, all nodes together)
and one manifest line per host to OUT/manifest.jsonl. See docs/iobench.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from types import FrameType

from iobench.coordinator import host_name
from iobench.workloads import FAMILIES, MIN_RUNTIME_S, RAMP_S, IoSettings, default_procs, dry_run_text
from reports.shared.errors import UsageError
from reports.shared.records import new_run_id
from reports.shared.units import MAX_SECONDS, check_path_text, check_seconds, parse_size

HELP = "fio-driven checkpoint, dataloader and metadata tests on one or more paths"
DEFAULT_OUT = "stoker-results"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = IoSettings()
    parser.add_argument(
        "--path",
        action="append",
        default=[],
        metavar="DIR",
        help="directory to test in (repeatable); work files go under DIR/.stoker-<run_id>/",
    )
    parser.add_argument(
        "--workloads",
        default=",".join(FAMILIES),
        help="comma list of checkpoint,dataloader,metadata (default all)",
    )
    parser.add_argument(
        "--ckpt-bytes",
        default="256M",
        help="checkpoint shard per writer (K/M/G/T = 1024 powers; default 256M)",
    )
    parser.add_argument("--ckpt-block", default="4M", help="checkpoint block size, 1M-16M (default 4M)")
    parser.add_argument(
        "--writers", type=int, default=d.writers, help=f"checkpoint writers per node (default {d.writers})"
    )
    parser.add_argument(
        "--save-repeats",
        type=int,
        default=d.save_repeats,
        help=f"torch.save and DCP saves per figure, the median judged (default {d.save_repeats}; each repeat "
        "saves half of --ckpt-bytes, then all of it: the figure is the whole shard's, and the seconds per "
        "byte past the half give the rate a larger checkpoint is written at)",
    )
    parser.add_argument(
        "--runtime",
        type=int,
        default=d.runtime_s,
        help=f"seconds of each checkpoint and dataloader test, after {RAMP_S} s of ramp (default {d.runtime_s}, at least {MIN_RUNTIME_S})",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=d.dl_workers,
        help=f"dataloader workers per node (default {d.dl_workers})",
    )
    parser.add_argument(
        "--sample-bytes", default="128K", help="bytes per dataloader sample / random read (default 128K)"
    )
    parser.add_argument(
        "--files-per-worker",
        type=int,
        default=d.dl_files,
        help=f"dataloader files per worker (default {d.dl_files})",
    )
    parser.add_argument("--file-bytes", default="4M", help="size of each dataloader file (default 4M)")
    parser.add_argument(
        "--md-files",
        type=int,
        default=d.md_files,
        help=f"small files per metadata process (default {d.md_files})",
    )
    parser.add_argument(
        "--storm-procs",
        type=int,
        default=d.storm_procs,
        help=f"import-storm processes per node (default {d.storm_procs})",
    )
    parser.add_argument(
        "--storm-files",
        type=int,
        default=d.storm_files,
        help=f"files every import-storm process reads (default {d.storm_files})",
    )
    parser.add_argument(
        "--no-torch", action="store_true", help="skip the torch.save / DCP checkpoint beside fio"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds one fio job may take before the run aborts (default 1800)",
    )
    parser.add_argument(
        "--spec",
        default=None,
        help="cluster spec (YAML): a figure under its storage threshold is measured again at the end of "
        "its path's tests, the same test on the same nodes, before the report fails it",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the fio command lines and exit")
    parser.add_argument("--out", default=None, help=f"results directory (default ./{DEFAULT_OUT}/<run_id>)")


def _positive(value: int, what: str, low: int = 1, high: int | None = None) -> int:
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise UsageError(f"{what} must be {bound}, got {value}")
    return value


def settings_from_args(args: argparse.Namespace) -> IoSettings:
    """Validated settings; every mistake is one UsageError line."""
    check_seconds(args.timeout, "--timeout")
    for p in args.path or ():
        check_path_text(str(p), "--path")
    families = tuple(w.strip() for w in str(args.workloads).split(",") if w.strip())
    unknown = [w for w in families if w not in FAMILIES]
    if unknown or not families:
        raise UsageError(
            f"unknown workload(s) {', '.join(unknown) or '(none)'}: choose from {','.join(FAMILIES)}"
        )
    block = parse_size(args.ckpt_block, "--ckpt-block")
    if not (1 << 20) <= block <= (16 << 20):
        raise UsageError(
            f"--ckpt-block must be between 1M and 16M (a checkpoint writes large blocks), got {args.ckpt_block}"
        )
    ckpt = parse_size(args.ckpt_bytes, "--ckpt-bytes")
    if ckpt < block:
        raise UsageError(f"--ckpt-bytes ({args.ckpt_bytes}) must be at least one block ({args.ckpt_block})")
    sample = parse_size(args.sample_bytes, "--sample-bytes")
    file_bytes = parse_size(args.file_bytes, "--file-bytes")
    if sample < 512 or sample % 512:
        raise UsageError(
            f"--sample-bytes must be a multiple of 512 (O_DIRECT alignment), got {args.sample_bytes}"
        )
    if file_bytes < sample:
        raise UsageError(
            f"--file-bytes ({args.file_bytes}) must hold at least one sample ({args.sample_bytes})"
        )
    return IoSettings(
        families=families,
        ckpt_bytes=ckpt,
        ckpt_block=block,
        writers=_positive(args.writers, "--writers", high=256),
        save_repeats=_positive(args.save_repeats, "--save-repeats", high=100),
        runtime_s=_positive(args.runtime, "--runtime", low=MIN_RUNTIME_S, high=int(MAX_SECONDS)),
        dl_workers=_positive(args.workers, "--workers", high=256),
        dl_sample_bytes=sample,
        dl_files=_positive(args.files_per_worker, "--files-per-worker"),
        dl_file_bytes=file_bytes,
        md_files=_positive(args.md_files, "--md-files"),
        md_procs=min(2, default_procs()),
        storm_procs=_positive(args.storm_procs, "--storm-procs", high=256),
        storm_files=_positive(args.storm_files, "--storm-files"),
    )


def _sigterm(signum: int, frame: FrameType | None) -> None:
    # srun and schedulers stop jobs with SIGTERM: clean up as for Ctrl-C
    raise KeyboardInterrupt


def main(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    # without --path: the system's temp dir, a local scratch on nearly every machine
    paths = list(args.path) or [tempfile.gettempdir()]
    if args.dry_run:
        host = host_name()
        sys.stdout.write(dry_run_text(settings, [f"{p}/.stoker-<run_id>/{host}" for p in paths]))
        return 0
    from iobench.session import run  # the measuring part; kept out of --help and --dry-run

    previous = signal.signal(signal.SIGTERM, _sigterm)
    try:
        run_id = new_run_id()
        out = args.out or os.path.join(DEFAULT_OUT, run_id)
        return run(
            settings,
            paths,
            out=out,
            run_id=run_id,
            torch_ckpt=not args.no_torch,
            timeout_s=args.timeout,
            spec_file=args.spec,
        )
    finally:
        signal.signal(signal.SIGTERM, previous)
