"""`stoker compare DIR DIR... [--out DIR] [--workload FILE]`: several clusters side by side.

Each DIR is a results directory as `stoker report` reads it. Its cluster is named by the
`name` of the spec kept in it (`DIR/spec.yaml`, which also gives the price per GPU-hour),
else by the directory name. `--workload` models the same job on every cluster (else each
DIR's own `workload.yaml` is used), which is what makes the cost per useful GPU-hour
comparable. Writes compare.md and compare.html into --out (default: the current directory).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from reports.errors import UsageError

HELP = "side-by-side comparison of several clusters' results"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="results directories, one per cluster")
    parser.add_argument("--out", default=".", metavar="DIR", help="where compare.md and compare.html go (default: .)")
    parser.add_argument("--workload", metavar="FILE", help="workload YAML or preset modelled on every cluster")


def main(args: argparse.Namespace) -> int:
    from reports.judging.clusters import summarise, unique_names
    from reports.render.html import render_compare as render_html
    from reports.render.markdown import render_compare as render_md
    from reports.report_cmd import collect

    if len(args.dirs) < 2:
        raise UsageError("give at least two results directories to compare")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a directory")
    collected = [collect(Path(d), None, args.workload) for d in args.dirs]
    names = unique_names([c.report.title for c in collected], [Path(d).resolve().name for d in args.dirs])
    clusters = [summarise(n, c.report.records, c.report.judgement, c.spec) for n, c in zip(names, collected)]
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.md").write_text(render_md(clusters), encoding="utf-8")
    (out / "compare.html").write_text(render_html(clusters), encoding="utf-8")
    print(f"compared {len(clusters)} clusters -> {out / 'compare.md'}, compare.html")
    return 0
