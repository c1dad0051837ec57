"""Property: `stoker import` of any truncated, shuffled or garbled variant of any fixture
(tests/data/nccl_tests, fio, import_cases) never ends in a traceback, exits 0 or 2 (2 with
one line), and writes no record with a number the intact file does not hold; a row whose
figure was garbled is skipped and named by its line, never imported."""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launchers import cli
from reports.ingest import nccl_log
from reports.ingest import nccl_rows as nr
from reports.ingest.importers import import_text
from reports.shared.fio_json import json_documents, parse_document, rate
from reports.shared.fio_text import looks_like_fio_text, parse_text
from reports.shared.records import IoRecord, NetRecord
from reports.table.read import read_records
from tests.conftest import DATA

FIXTURES = sorted(
    p
    for d in ("nccl_tests", "fio", "import_cases")
    for p in (DATA / d).iterdir()
    if p.is_file() and p.suffix != ".md"
)
# garbage that is no number: words, JSON punctuation, non-finite and non-ASCII spellings
GARBAGE = st.one_of(
    st.sampled_from(
        ["x", "nan", "NaN", "-inf", "1e999", "N/A?", "{", "}", "[", '"', "٣", "１", "--", "0x10", "fast"]
    ),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Nd"), blacklist_characters=",\n\r"),
        min_size=1,
        max_size=6,
    ),
)


def _net_key(r: NetRecord) -> tuple:
    return (r.bytes, r.in_place, round(r.time_s, 12), r.algbw_GBps, r.busbw_GBps)


def _io_key(r: IoRecord) -> tuple:
    return (r.direction, r.bytes, r.bw_GBps, r.runtime_s)  # the figures; a lost job name is no wrong number


def _truth(path: Path) -> tuple[set[tuple], set[tuple]]:
    """Every figure the intact file holds (for fio, in any of its complete documents: a cut
    --status-interval file falls back to an earlier one)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    # every timing group of every row (or -J result) whose three figures are numbers, kept
    # or not by the intact import: a variant may lose a row's bad half and keep the good one
    net: set[tuple] = set()
    if '"fio version"' not in text:
        try:
            results = json.loads(text).get("results", [])
        except ValueError:
            results = []
        for r in results:
            for mode, in_place in (("out_of_place", False), ("in_place", True)):
                t = r.get(mode) or {}
                if all(isinstance(t.get(k), (int, float)) for k in ("time", "alg_bw", "bus_bw")):
                    net.add((r["size"], in_place, round(t["time"] * 1e-6, 12), t["alg_bw"], t["bus_bw"]))
        sections, _, _ = nccl_log._sections(text.splitlines())  # the list form of iter_sections
        for sec in sections:
            for _, row in sec.rows:
                tokens = nr.aligned(sec.header, row)
                lead, groups = nr.row_fields(sec.header, tokens if isinstance(tokens, list) else row)
                for i, g in enumerate(groups[:2]):
                    f = [
                        nr.number(str(x))
                        for x in (lead.get("size"), g.get("time"), g.get("algbw"), g.get("busbw"))
                    ]
                    if None not in f:
                        net.add((int(f[0]), i == 1, round(f[1] * 1e-6, 12), f[2], f[3]))
    io: set[tuple] = set()
    docs = [parse_document(doc).parts for doc in json_documents(text)]
    if not docs and looks_like_fio_text(text):
        # fio's text output: its jobs' figures, and its run status groups' (read when a
        # variant lost every job line)
        no_jobs = "\n".join(line for line in text.splitlines() if "(groupid=" not in line)
        # and the printed amounts alone (a variant that lost its issued counts or its header's
        # block size falls back to them)
        no_issued = "\n".join(line for line in text.splitlines() if "issued" not in line)
        docs = [parse_text(text).parts + parse_text(no_issued).parts]  # one part may lose its count
        # a cut --status-interval text falls back to an earlier print of its jobs
        lines = text.splitlines(keepends=True)
        cuts = [k for k, line in enumerate(lines) if line.startswith("Run status group")]
        docs += [parse_text("".join(lines[:k])).parts for k in cuts[:-1] if "(groupid=" in "".join(lines[:k])]
        if "Run status group" in no_jobs:
            docs.append(parse_text(no_jobs).parts)
    for parts in docs:
        # a job name garbled on one clone or host splits its sum: any subset of a direction's
        # parts (bytes added up over the longest runtime) is a figure of the file
        for direction in ("read", "write"):
            mine = [(p.bytes, p.runtime_ms) for p in parts if p.direction == direction][:10]
            for k in range(1, len(mine) + 1):
                for subset in itertools.combinations(mine, k):
                    nbytes, ms = sum(b for b, _ in subset), max(m for _, m in subset)
                    io.add((direction, nbytes, round(rate(nbytes, ms) / 1e9, 6), ms / 1000.0))
    return net, io


TRUTH = {p.name: _truth(p) for p in FIXTURES}


def _is_float(tok: str) -> bool:
    try:
        float(tok)
        return tok.isascii()
    except ValueError:
        return False


@st.composite
def variants(draw: st.DrawFn) -> tuple[Path, bytes, int | None]:
    """(fixture, damaged content, line number whose figure was garbled or None)."""
    path = draw(st.sampled_from(FIXTURES))
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    kind = draw(st.sampled_from(["truncate", "shuffle", "drop", "garble", "insert", "bytes"]))
    if kind == "truncate":
        return path, text[: draw(st.integers(0, len(text)))].encode(), None
    if kind == "shuffle":
        return path, "".join(draw(st.permutations(lines))).encode(), None
    if kind == "drop":
        i = draw(st.integers(0, len(lines) - 1))
        return path, "".join(lines[:i] + lines[i + 1 :]).encode(), None
    if kind == "insert":  # a junk line (no digits: a made-up row of numbers would be a real row)
        i = draw(st.integers(0, len(lines)))
        junk = draw(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Nd")), max_size=40)) + "\n"
        return path, "".join(lines[:i] + [junk] + lines[i:]).encode(), None
    if kind == "bytes":  # raw bytes spliced in
        i = draw(st.integers(0, len(text)))
        return path, text[:i].encode() + draw(st.binary(min_size=1, max_size=64)) + text[i:].encode(), None
    i = draw(st.integers(0, len(lines) - 1))
    tokens = lines[i].split()
    if not tokens:
        return path, text.encode(), None
    j = draw(st.integers(0, len(tokens) - 1))
    figure = _is_float(tokens[j])
    tokens[j] = draw(GARBAGE)
    lines[i] = "  ".join(tokens) + "\n"
    return path, "".join(lines).encode(), i + 1 if figure else None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variants())
def test_damaged_imports_never_crash_nor_lie(case: tuple[Path, bytes, int | None]) -> None:
    path, content, garbled_line = case
    truth_net, truth_io = TRUTH[path.name]
    with tempfile.TemporaryDirectory(prefix="badinput-prop-") as tmp:
        f = Path(tmp) / path.name
        f.write_bytes(content)
        out = Path(tmp) / "out"
        with _captured() as err:
            rc = cli.main(["import", str(f), "--out", str(out)])
        stderr = err.getvalue()
        assert rc in (0, 2), stderr
        assert "Traceback" not in stderr
        if rc == 2:
            assert stderr.count("\n") == 1 and path.name in stderr, stderr
            return
        recs = read_records(out)
        assert not recs.skipped
        for r in recs.net.records():
            assert _net_key(r) in truth_net, (r, stderr)
        for r in recs.io:
            assert r.failed or _io_key(r) in truth_io, (r, stderr)
        # a garbled figure in a row the intact file imported: skipped, and named by its line
        if garbled_line is not None and path.suffix != ".json" and _was_row(path, garbled_line):
            assert f"line {garbled_line}" in stderr, stderr


def _was_row(path: Path, n: int) -> bool:
    """Line n of the intact log gave records: a row (digits first, not a comment) that the
    intact file's import did not skip."""
    intact = import_text(path.read_text(encoding="utf-8"), source_name=path.name, ts="t")
    if intact is None or any(f"line {n}:" in note for note in intact.notes):
        return False
    line = path.read_text(encoding="utf-8").splitlines()[n - 1]
    body = line.split(":", 1)[1] if ": " in line and line.split(":", 1)[0].strip().isdigit() else line
    return bool(body.split()) and body.split()[0].isdigit() and "#" not in body


class _captured:
    """stderr of an in-process `stoker import` (capsys is function-scoped; hypothesis reruns)."""

    def __enter__(self):  # type: ignore[no-untyped-def]
        import io
        import sys

        self._old, self.buf = sys.stderr, io.StringIO()
        sys.stderr = self.buf
        return self.buf

    def __exit__(self, *exc: object) -> None:
        import sys

        sys.stderr = self._old


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_every_fixture_imports_or_says_why(path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="badinput-prop-") as tmp, _captured() as err:
        rc = cli.main(["import", str(path), "--out", tmp])
    assert rc in (0, 2) and "Traceback" not in err.getvalue()
