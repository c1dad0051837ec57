"""The field corpus (tests/data/field/): every real output read, and the labelled ones judged
as their sources concluded (every file read, >= 90% agreement). The judgement of
each case is tests/unit/field_cases.py's: the file alone in a results dir, a spec that says
only what its source states. `benchmarks/field_accuracy.py` prints the same case by case."""

from __future__ import annotations

import re

import pytest

from reports.ingest.importers import import_file
from reports.shared.errors import UsageError
from tests.unit.field_cases import FIELD, cases, judge_case, labelled

CASES = cases()


def test_the_corpus_is_what_its_manifest_says() -> None:
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) >= 40
    on_disk = {p.name for p in FIELD.iterdir()} - {"manifest.yaml", "README.md"}
    assert on_disk == {c["file"] for c in CASES}
    for c in CASES:
        assert c["source"].startswith("https://") and c["expected"] in ("healthy", "sick", "unlabelled")
    tools = {c["tool"] for c in CASES}
    assert {"nccl-tests", "rccl-tests", "fio"} <= tools


READABLE = [c for c in CASES if c.get("readable", True)]


@pytest.mark.parametrize("case", READABLE, ids=[c["id"] for c in READABLE])
def test_every_file_is_read(case: dict) -> None:
    assert judge_case(case).read, case["file"]


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("readable", True)], ids=lambda c: c["id"])
def test_a_file_no_reader_can_tell_is_refused_in_one_line_naming_it(case: dict) -> None:
    with pytest.raises(UsageError) as err:
        import_file(FIELD / case["file"])
    said = str(err.value)
    assert "\n" not in said and re.search(rf"(^|/){re.escape(case['file'])}: ", said), said
    if case["tool"] != "fio" or case["file"].endswith(".json"):  # a table or a document: where it stops
        assert re.search(r"\bline \d+", said), said


def test_labelled_cases_agree_with_their_sources() -> None:
    outcomes = [judge_case(c) for c in CASES if labelled(c)]
    wrong = [f"{o.case}: {o.why}" for o in outcomes if not o.agrees]
    agree = len(outcomes) - len(wrong)
    assert agree >= 0.9 * len(outcomes), f"{agree}/{len(outcomes)} agree; disagree: {wrong}"
