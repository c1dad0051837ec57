"""The fast path of an nccl-tests row (reports/ingest/nccl_fast.py) against the general one
(nccl_records.row_record, which names what is wrong): on every fixture log and on damaged variants
of them, the same records, written byte for byte the same, and the same notes. The general
path is forced by making the fast one decline every row."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reports.ingest import nccl_fast, nccl_tests
from reports.shared.records import to_dict
from tests.conftest import DATA

LOGS = sorted(
    p
    for d in ("nccl_tests", "import_cases")
    for p in (DATA / d).iterdir()
    if p.suffix in (".log", ".txt", ".out")
)
# tokens the fast path must never read otherwise than number() / is_na() do
TOKENS = [
    *(
        "x",
        "nan",
        "NaN",
        "-inf",
        "inf",
        "infinity",
        "1e999",
        "N/A",
        "NA",
        "n/a",
        "na",
        "٣",
        "１",
        "--",
        "0x10",
    ),
    *("1_000", "+5", "-0", "-0.0", "-1", "-2", "0", "1e3", "1.5", "2e-3", "1.0", ".5", "5.", "1E+02", "none"),
    *("99999999999999999999999", "4611686018427387904", "4611686018427387905", "sum", "float", "half", "ǹa"),
]


def _lines(text: str, source: str, *, fast: bool) -> tuple[list[str], list[str]]:
    """(the JSON lines of iter_log's records, of iter_log_lines) and the notes, as parse_log reads `text`."""
    with pytest.MonkeyPatch.context() as m:
        if not fast:
            m.setattr(nccl_fast, "row_values", lambda *a, **k: None)
        run_id, ts = "import-0123456789ab", "2026-01-01T00:00:00Z"
        state = nccl_tests.LogState()
        recs = [
            json.dumps(to_dict(r), separators=(",", ":"))
            for r in nccl_tests.iter_log(
                text.split("\n"), run_id=run_id, ts=ts, source_name=source, op=None, state=state
            )
        ]
        again = nccl_tests.LogState()
        lines = list(
            nccl_tests.iter_log_lines(
                text.split("\n"), run_id=run_id, ts=ts, source_name=source, op=None, state=again
            )
        )
    notes = state.parsed([], "r", source).notes
    assert lines == recs and again.parsed([], "r", source).notes == notes
    return lines, notes


def _same(text: str, source: str) -> int:
    fast = _lines(text, source, fast=True)
    assert fast == _lines(text, source, fast=False)
    return len(fast[0])


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_fixture_logs_give_the_same_lines_either_way(log: Path) -> None:
    assert _same(log.read_text(), log.name) > 0


def test_plain_rows_take_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    real = nccl_fast.row_values

    def counted(*args: object) -> object:
        got = real(*args)  # type: ignore[arg-type]
        calls.append(got is not None)
        return got

    monkeypatch.setattr(nccl_fast, "row_values", counted)
    for name in (
        "v2.13_mpirun_all_reduce.log",
        "v2.19_per_iter_all_reduce.log",
        "all_reduce_perf_v2.4_old.txt",
    ):
        _lines((DATA / "nccl_tests" / name).read_text(), name, fast=True)
    assert calls and all(calls)  # -I columns, N/A #wrong, old `error` columns: all fast


@st.composite
def damaged(draw: st.DrawFn) -> tuple[str, str]:
    log = draw(st.sampled_from(LOGS))
    lines = log.read_text().split("\n")
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(draw(st.integers(1, 6))):
        i = rng.randrange(len(lines))
        toks = lines[i].split(" ")
        j = rng.randrange(len(toks))
        kind = rng.randrange(6)
        if kind == 0:
            toks[j] = rng.choice(TOKENS)
        elif kind == 1:  # a digit changed: algbw no longer size / time
            toks[j] = "".join(
                str(rng.randrange(10)) if c.isdigit() and rng.random() < 0.3 else c for c in toks[j]
            )
        elif kind == 2:
            del toks[j]
        elif kind == 3:
            toks.append(rng.choice(["7", "2026-01-01 10:00:00", "N/A"]))
        elif kind == 4:
            toks[j] = "N/A"
            toks = [("N/A" if t and t[0].isdigit() and rng.random() < 0.5 else t) for t in toks]
        else:
            lines.insert(i, lines[i].replace("graph: 0", "graph: 1").lstrip("#"))
        lines[i] = " ".join(toks)
    return "\n".join(lines), log.name


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(case=damaged())
def test_damaged_logs_give_the_same_lines_and_notes_either_way(
    case: tuple[str, str],
) -> None:
    _same(*case)


# one row of each column set: #wrong; -I columns; `error`; N/A #wrong (-c 0), srun prefixes
ROWS = [
    ("nccl_tests/v2.13_mpirun_all_reduce.log", "67108864"),
    ("nccl_tests/v2.19_per_iter_all_reduce.log", "16777216"),
    ("nccl_tests/all_reduce_perf_v2.4_old.txt", "33554432"),
    ("nccl_tests/v2.17_srun_allgather_alltoall.log", "134217728"),
]


def _with_row(log: str, size: str, edit: Callable[[list[str]], list[str]]) -> str:
    """The log with its row of that size edited (token by token)."""
    text = (DATA / log).read_text().split("\n")
    i = next(n for n, line in enumerate(text) if f" {size} " in line)
    prefix, row = text[i].rsplit(":", 1) if ":" in text[i] else ("", text[i])
    text[i] = (prefix + ":" if prefix else "") + "  " + "  ".join(edit(row.split()))
    return "\n".join(text)


@pytest.mark.parametrize(("log", "size"), ROWS, ids=[r[0] for r in ROWS])
def test_each_token_in_each_column(log: str, size: str) -> None:
    line = next(line for line in (DATA / log).read_text().split("\n") if f" {size} " in line)
    columns = len(line.rsplit(":", 1)[-1].split())  # after the launcher's prefix, as _with_row
    for token in TOKENS:
        for c in range(columns):

            def put(toks: list[str], c: int = c, token: str = token) -> list[str]:
                return [*toks[:c], token, *toks[c + 1 :]]

            _same(_with_row(log, size, put), Path(log).name)


@pytest.mark.parametrize(("log", "size"), ROWS, ids=[r[0] for r in ROWS])
def test_algbw_around_the_tolerance(log: str, size: str) -> None:
    # algbw is size / time to 2% + 0.011 (nccl_rows.figures): both paths draw the line alike,
    # here from 4% under to 4% over, in steps of 0.1%
    col = 4 if "v2.4" in log else 5  # time's column; algbw follows it
    kept = set()
    for k in range(-40, 41):

        def off(toks: list[str], k: int = k) -> list[str]:
            want = int(toks[0]) / float(toks[col]) / 1e3
            return [*toks[: col + 1], f"{want * (1 + k / 1000):.2f}", *toks[col + 2 :]]

        kept.add(_same(_with_row(log, size, off), Path(log).name))
    assert len(kept) == 2  # the row kept near the line, and skipped past it


def test_a_json_line_is_json_dumps_of_to_dict() -> None:
    ctx = nccl_fast.Context(
        op="all_reduce",
        run_id="import-abc",
        ts="t",
        hosts=("h%1", "b\u00e9", "\x010.0\x01", "\x010.2\x01"),  # a host spelled as a marker
        ranks=0,
        device='"dev" %s',
        warmup=5,
        iters=20,
        source="a%d.log",
        graph=True,
    )
    lines = nccl_fast.Lines(ctx)
    for v in [
        (16, "float32", 8, 1e-5, 0.0, 0.0, 0, 2, "sum", -1, False, None, None, None, None, False),
        (
            16,
            "fl%sat",
            2**40,
            0.5,
            1e-300,
            2.5e16,
            3,
            0,
            "n\u00f6ne",
            0,
            True,
            1e-6,
            2e-6,
            0.031,
            1e-07,
            False,
        ),
        (0, "x", 1, 0.0, 0.0, 0.0, 0, 0, "none", -1, True, None, 5e-6, None, None, True),
    ]:
        assert lines.line(v) == json.dumps(to_dict(nccl_fast.record(ctx, v)), separators=(",", ":"))


def test_a_one_rank_table_with_a_busbw_is_skipped_either_way() -> None:
    """Device lines naming one rank make all_reduce's bus factor 2(n-1)/n = 0, so a row whose
    busbw is 29.65 contradicts them: both paths skip it (the fast path once checked busbw only
    where the factor was not 0, and took such rows; hypothesis found it)."""
    log = DATA / "nccl_tests" / "v2.19_per_iter_all_reduce.log"
    lines = [
        ln
        for ln in log.read_text().split("\n")
        if not ln.startswith(("#  Rank  1", "#  Rank  2", "#  Rank  3"))
    ]
    recs, notes = _lines("\n".join(lines), log.name, fast=True)
    assert recs == [] and (recs, notes) == _lines("\n".join(lines), log.name, fast=False)
    # by hand: 19.77 x 2 x (1 - 1) / 1 = 0
    assert notes[0].startswith(
        "v2.19_per_iter_all_reduce.log: skipped 3 of 3 rows: line 17: busbw 29.65 is not algbw 19.77 x 0 "
    )
