"""How stoker reads what people post: every output of the field corpus (tests/data/field/,
real nccl-tests, rccl-tests and fio outputs copied from public threads, each with its source
and the conclusion its thread reached in manifest.yaml) judged alone as a user would, with a
spec that says only what the source states, case by case: read or not, the verdict, and
whether it agrees with the source. Ends with the read rate and the agreement on the labelled
cases (the bar: every file read, >= 90% agreement).

    .venv/bin/python benchmarks/field_accuracy.py [--only ID]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.field_cases import cases, judge_case  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", metavar="ID", help="one case")
    args = ap.parse_args()
    todo = [c for c in cases() if not args.only or c["id"] == args.only]
    read = labelled = agree = 0
    print(f"{'case':50s} {'read':5s} {'verdict':10s} {'source says':11s} agrees  why")
    for c in todo:
        o = judge_case(c)
        read += o.read
        if o.agrees is not None:
            labelled += 1
            agree += o.agrees
        mark = "-" if o.agrees is None else "yes" if o.agrees else "NO"
        print(
            f"{o.case[:50]:50s} {'yes' if o.read else 'NO':5s} {o.verdict:10s} {o.expected:11s} {mark:6s} {o.why[:110]}"
        )
    refused = sum(not c.get("readable", True) for c in todo)
    print(
        f"\nread: {read}/{len(todo)} ({read / max(1, len(todo)):.0%}); {refused} no reader can tell (manifest readable: false)"
    )
    apart = sum(c["expected"] in ("healthy", "sick") and not c.get("judgeable", True) for c in todo)
    print(
        f"agrees with its source: {agree}/{labelled} labelled cases ({agree / max(1, labelled):.0%}); "
        f"{apart} labelled case(s) whose excerpt shows nothing of it counted apart (judgeable: false)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
