"""`stoker compare DIR DIR... [--out DIR] [--workload FILE]`: several clusters side by side.

Each DIR is a results directory as `stoker report` reads it. Its cluster is named by the
`name` of the spec kept in it (`DIR/spec.yaml`, which also gives the price per GPU-hour),
else by the directory name; directories whose specs share a name are runs of one cluster
(their spread is the comparison's noise). `--workload` models the same job on every
cluster (else each DIR's own `workload.yaml`, which must then name the same workload in
all). Writes compare.md, compare.html and compare.json into --out (default: .). Exit 2 when a
workload was given and no cluster could be ranked on it (the files still say why); exit 1 when
clusters were ranked and none of them passed its acceptance (a ranking of failing clusters is
not an answer to sign), unless `--allow-failing` asks for that ranking anyway (exit 0).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from reports.shared.errors import UsageError

HELP = "side-by-side comparison of several clusters' results, ranked on the cost of work"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="results directories, one per cluster or run")
    parser.add_argument(
        "--out", default=".", metavar="DIR", help="where compare.md, .html and .json go (default: .)"
    )
    parser.add_argument(
        "--workload", metavar="FILE", help="workload YAML or preset modelled on every cluster"
    )
    parser.add_argument(
        "--by",
        choices=("name", "dir"),
        default="name",
        help="group runs into clusters by their spec's name (default; runs of one name must agree on "
        "accelerator, GPUs per node and price), or keep each directory apart (dir)",
    )
    parser.add_argument(
        "--allow-failing",
        action="store_true",
        help="rank the clusters and exit 0 even when none of the ranked ones passed (default: exit 1)",
    )


def record_schemas(directory: Path) -> set[object]:
    """Schema versions of the records kept in DIR (a line without one is schema 1)."""
    from reports.shared.records import IO_FILE, NET_FILE, SCHEMA, iter_jsonl

    out: set[object] = set()
    for name in (NET_FILE, IO_FILE):
        if (directory / name).is_file():
            out |= {
                obj.get("schema", SCHEMA) for _, obj, _ in iter_jsonl(directory / name) if obj is not None
            }
    return out


def check_inputs(dirs: list[str], workload_arg: str | None) -> list[Path]:
    """One-line refusals (exit 2) for input no comparison can be made of."""
    from reports.pipeline import load_optional
    from reports.shared.records import SCHEMA

    if len(dirs) < 2:
        raise UsageError("give at least two results directories to compare")
    paths = [Path(d) for d in dirs]
    seen: dict[Path, str] = {}
    for d, p in zip(dirs, paths):
        if not p.is_dir():
            raise UsageError(f"{d}: no such results directory")
        if p.resolve() in seen:
            raise UsageError(
                f"{d} is given twice (also as {seen[p.resolve()]}): give each results directory once"
            )
        seen[p.resolve()] = d
        other = sorted(str(s) for s in record_schemas(p) - {SCHEMA})
        if other:
            raise UsageError(
                f"{d}: records of schema {', '.join(other)}; this stoker reads schema {SCHEMA}: "
                "compare results written by the same stoker version"
            )
    if workload_arg is None:
        names = {d: getattr(load_optional("workload", None, p)[0], "name", None) for d, p in zip(dirs, paths)}
        if len(set(names.values())) > 1:
            which = ", ".join(f"{d}: {n or 'none'}" for d, n in names.items())
            raise UsageError(
                f"the directories were judged against different workloads ({which}): give --workload "
                "to model the same job on every cluster"
            )
    return paths


def refuse_results_dir(out: Path) -> None:
    """--out never writes into a run's results directory: its report and records are that run's."""
    from reports.shared.records import IO_FILE, NET_FILE

    marks = (".stoker-run", NET_FILE, IO_FILE, "verdict.json")
    found = [m for m in marks if (out / m).exists()]
    if found:
        raise UsageError(
            f"--out {out} is a run's results directory (it holds {found[0]}): give a directory of its own, "
            "e.g. --out compare-results"
        )


def main(args: argparse.Namespace) -> int:
    from reports.fleet.assumptions import assumptions
    from reports.fleet.clusters import summarise
    from reports.fleet.facts import run_facts
    from reports.fleet.ranking import compare, to_json
    from reports.fleet.render import render_html, render_md
    from reports.fleet.runs import RunIdentity, by_dir, check_alike, distinct
    from reports.pipeline import collect
    from reports.shared.runs import MixedRuns
    from reports.shared.safe_write import write_outputs

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out} is a file; give a directory")
    paths = check_inputs(list(args.dirs), args.workload)
    refuse_results_dir(out)
    summaries = []
    workload = None
    specs: dict[str, Any] = {}
    identities = []
    facts = []
    for d, p in zip(args.dirs, paths):
        try:
            c = collect(p, None, args.workload)
        except MixedRuns as exc:  # compare has no --runs; it takes one run per directory
            raise UsageError(
                f"{d} holds records of {len(exc.runs)} runs ({', '.join(exc.runs[:4])}): compare takes "
                "one run per directory; put each run in its own directory"
            ) from None
        s = summarise(c.report.title, d, c.report.evidence, c.report.judgement, c.spec, c.workload)
        summaries.append(s)
        workload = workload or c.workload
        specs.setdefault(s.name, c.spec)
        facts.append(run_facts(d, c.report.evidence, c.report.judgement, c.spec, c.workload))
        identities.append(
            RunIdentity(
                name=s.name,
                run=d,
                accelerator=s.accelerator,
                gpus_per_node=getattr(c.spec, "gpus_per_node", None),
                price_per_gpu_hour=s.price_per_gpu_hour,
            )
        )
    if getattr(args, "by", "name") == "dir":
        summaries = by_dir(summaries)
    else:
        check_alike(identities)  # one line, exit 2: runs under one name bought something else
        summaries, copies = distinct(summaries)  # a copied directory is the same run, counted once
        for line in copies:
            print(f"stoker compare: {line}", file=sys.stderr)
    wname = summaries[0].workload
    cmp = compare(summaries, wname, facts)
    if workload is not None:
        cmp = dataclasses.replace(
            cmp,
            assumptions=assumptions(workload, specs, {s.name: s.appetite for s in summaries}),
        )
    # never over or through a file stoker did not write (reports/shared/safe_write.py)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out {out}: {exc.strerror}; give a writable directory") from None
    outputs = {
        "compare.md": render_md(cmp),
        "compare.html": render_html(cmp),
        "compare.json": json.dumps(to_json(cmp), indent=2, allow_nan=False) + "\n",
    }
    write_outputs(out, outputs, "give --out a new directory")
    n, runs = len(cmp.clusters), len(summaries)
    print(
        f"compared {n} cluster{'s' if n != 1 else ''} ({runs} run{'s' if runs != 1 else ''}) -> "
        f"{out / 'compare.md'}, compare.html, compare.json"
    )
    for line in cmp.headline:
        print(line)
    if wname and not cmp.ranking:
        print(
            "stoker compare: no cluster could be ranked (see the lines above): give each a spec with "
            "price_per_gpu_hour and every measurement the workload needs",
            file=sys.stderr,
        )
        return 2
    if cmp.ranking and not any(cmp.passed(r.name) for r in cmp.ranking):
        if getattr(args, "allow_failing", False):
            print(
                "stoker compare: warning: no ranked cluster passed; ranked anyway (--allow-failing)",
                file=sys.stderr,
            )
            return 0
        print(
            "stoker compare: no ranked cluster passed its acceptance (the verdict column says why): fix or "
            "re-measure the failing promises, or give --allow-failing to rank them anyway",
            file=sys.stderr,
        )
        return 1
    return 0
