"""`stoker report DIR [--spec FILE] [--workload FILE]`: judge the records in DIR.

Reads net.jsonl, io.jsonl and manifest.jsonl, imports foreign results placed in DIR
(nccl-tests logs or -J JSON, fio JSON), judges them against the spec and the workload,
and writes DIR/report.md, DIR/report.html and DIR/verdict.json. Exit: the verdict's
(findings.EXIT_CODES: 0 pass or unjudged, 1 fail, 3 incomplete; 1 for unjudged with
--fail-unjudged), 2 on bad input (missing or empty DIR, malformed spec).

Without --spec / --workload, a `spec.yaml` / `workload.yaml` kept in DIR is used, so a
results directory carries what it should be judged against (`stoker compare` relies on it).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import sys
from pathlib import Path

from reports.pipeline import build
from reports.shared.findings import REPORT_SCOPES

HELP = "judge the records in DIR: report.md, report.html, verdict.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir", metavar="DIR", help="results directory (net.jsonl, io.jsonl, nccl-tests/fio files)"
    )
    parser.add_argument(
        "--spec", metavar="FILE", help="cluster spec YAML: what the hardware is advertised to do"
    )
    parser.add_argument(
        "--workload", metavar="FILE", help="workload YAML or preset: what the accelerators will need"
    )
    parser.add_argument(
        "--runs",
        metavar="ID,...",
        help="judge only these runs' records (needed when DIR holds records of more than one run)",
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="baseline YAML from `stoker baseline`: a figure under its accepted value is a regression",
    )
    parser.add_argument(
        "--fail-unjudged",
        action="store_true",
        help="exit 1 when nothing could be judged (the acceptance job: no reference is no acceptance)",
    )
    parser.add_argument(
        "--scope",
        choices=REPORT_SCOPES,
        default="cluster",
        help="what was under test (default cluster: every promise of the spec must be measured; node: "
        "only the node's own, and the report names the inter-node link and shared storage as not covered)",
    )


def main(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    # The interpreter's exit collects every object it still holds, pandas' and pyarrow's
    # modules among them (~0.2 s); frozen, they are skipped (~0.03 s). At exit only: a caller
    # that goes on (the tests) keeps its collector as it was. unregister: registered once.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    from reports.render.figure_process import FigureProcess
    from reports.table.read import forget_prefetched, prefetch

    # forked first, while this process is small and has no thread: it imports matplotlib's base
    # now (one core is idle until the parse starts) and pyplot when pyarrow is done with
    # net.jsonl (the parse thread tells it), so the two never fight for the cores
    figures = FigureProcess()
    try:
        prefetch(directory, then=figures.warm)  # pyarrow parses net.jsonl while the modules are imported
        out = build(
            directory,
            args.spec,
            args.workload,
            getattr(args, "scope", "cluster"),
            getattr(args, "runs", None),
            getattr(args, "baseline", None),
            figures,
        )
    finally:
        figures.close()
        forget_prefetched(directory)  # a command stopped before reading it leaves no parse behind
    from reports.shared.safe_write import write_outputs  # never over or through a file not ours

    outputs = {
        "report.md": out.markdown,
        "report.html": out.html,
        "verdict.json": json.dumps(out.verdict, indent=2) + "\n",
    }
    write_outputs(directory, outputs, "copy the results into a new directory and report on that")
    from reports.shared.findings import EXIT_CODES

    v = out.verdict["verdict"]
    print(
        f"verdict: {v} — {out.verdict['headline'].partition(' — ')[2]} -> "
        f"{directory / 'report.md'}, report.html, verdict.json"
    )
    if v == "unjudged" and getattr(args, "fail_unjudged", False):
        print(
            "stoker: an acceptance needs a reference: give --spec (or pass --allow-unjudged to stoker submit)",
            file=sys.stderr,
        )
        return 1
    return EXIT_CODES.get(v, 1)
