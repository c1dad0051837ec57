"""The line reader of nccl-tests stdout logs (pure): each line stripped of its launcher prefix
(`[1,0]<stdout>:` from `mpirun --tag-output`, `0: ` from `srun -l`), NCCL INFO/WARN noise
skipped, and the rest gathered into one section per test: its program, ranks and hosts,
parameters, table header and rows (as tokens, checked later: reports/ingest/nccl_rows.py).
reports/ingest/nccl_tests.py turns sections into records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from reports.ingest.nccl_debug import TEST_FAILURE, DebugFacts
from reports.ingest.nccl_rows import assumed_header, header_columns, is_row, number

# What launchers put before a line, in any order and repeated (a cloud launcher's pod name before
# Open MPI's tag): Open MPI's `--tag-output` `[1,0]<stdout>:`, `srun -l`'s `0: `, torchrun's
# `[default0]:`, a bare `[0] ` / `[0]: ` rank, pdsh's and a pod's `host: `, and a timestamp
# (`kubectl logs --timestamps`, journald). NCCL's own `host:pid:tid [0] NCCL INFO` prefix has no
# space after its colon, so it is never taken for one.
PREFIX = re.compile(
    r"^(?:(?:\[\d+,\d+\]<std(?:out|err)>:\s?"
    r"|\s*\d+:\s"
    r"|\[(?:default)?\d+\]:?\s?"
    r"|[A-Za-z][A-Za-z0-9_.\-]*:\s+(?=[#\[\d\s]|[A-Za-z0-9_.\-]+:\d+:\d+ \[)"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s+"
    r"))+"
)
# a launcher's tag inside a line: ranks' output interleaved mid-row (the row is then named)
_INNER_TAG = re.compile(r"\[\d+(?:,\d+)?\](?:<std(?:out|err)>:)?")
# the device name runs to the end: it is matched against a stripped line with no "\n" (a lazy
# `(.*?)\s*$` gave the same name at twice the cost, and a log is half Rank lines)
_RANK = re.compile(
    r"^#?\s*Rank\s+(\d+)(?:\s+Group\s+(\d+))?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$"
)
_START = re.compile(r"^#?\s*Collective test starting:\s*(\S+)")
_PARAMS = re.compile(r"warmup iters:\s*(\d+)\s+iters:\s*(\d+)")
_GRAPH = re.compile(r"\bgraph:\s*(\d+)")  # -G N: N launches of a captured CUDA graph (absent before 2.9)
_TESTS_VERSION = re.compile(r"^#?\s*nccl-tests version\s+(\S+)")
_NCCL_VERSION = re.compile(r"NCCL version\s+(\S+)")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+)")
# the table header, with or without its '#' (log viewers strip comment markers)
_HEADER = re.compile(r"(?:^|[#\s])(?:size|bytes)\s+(?:(?:count|N)\s+type\b|.*\balgbw\s+busbw\b)", re.M)


def strip_prefix(line: str) -> str:
    return PREFIX.sub("", line, count=1).rstrip("\r\n")


# a row of nccl-tests' standard layout, launcher tag or not: size, count, type, redop
_BARE_ROW = re.compile(
    r"^\S*?\s*\d+\s+\d+\s+(?:half|float|double|bfloat16|u?int(?:8|32|64)|int|char|f8e\dm\d)\s+"
    r"(?:sum|prod|max|min|avg|none|premulsum|[0-9.]+\s+[0-9.]+\s+[0-9.]+\s)",
    re.M,
)
_NCCL_LINE = re.compile(r"NCCL (?:INFO|WARN) ")


def looks_like_log(text: str) -> bool:
    """The text holds an nccl-tests table header, wherever it is (NCCL_DEBUG=INFO noise or
    the device lines of thousands of ranks may fill the first megabytes of a log), rows of
    its standard layout pasted without the header, or NCCL's own INFO/WARN lines (what
    NCCL says of a run is read even where no table was kept)."""
    if "busbw" in text and "algbw" in text and _HEADER.search(text) is not None:
        return True
    return (
        _BARE_ROW.search(text) is not None
        or _NCCL_LINE.search(text) is not None
        or TEST_FAILURE.search(text) is not None
    )


def log_in_blocks(blocks: Iterable[str]) -> bool:
    """looks_like_log of the text these blocks make, read one block at a time (a file of any
    size in the memory of two blocks): the header is one line, so each block is searched
    with the unfinished last line of the block before it."""
    rest = ""
    for block in blocks:
        text = rest + block
        cut = text.rfind("\n")
        if looks_like_log(text):
            return True
        rest = text[cut + 1 :] if cut >= 0 else text[-4096:]
    return False


@dataclass(kw_only=True, slots=True)
class Section:
    """One test's worth of a log, gathered while reading."""

    program: str | None = None
    ranks: dict[int, tuple[str, str]] = field(default_factory=dict)  # rank -> (host, device name)
    # the Group column: several when NCCL_TESTS_SPLIT split the ranks into communicators
    groups: set[str] = field(default_factory=set)
    header: list[str] = field(default_factory=list)
    rows: list[tuple[int, list[str]]] = field(default_factory=list)  # (line number, tokens)
    warmup: int = 0
    iters: int = 0
    graph: bool | None = None
    # NCCL's lines read while this table was being read (its communicator's init comes
    # between the device lines and the header): the table's own nodes and ranks
    debug: DebugFacts = field(default_factory=DebugFacts)
    assumed: bool = False  # no header line: nccl-tests' standard columns (nccl_rows.assumed_header)


def _sections(lines: Iterable[str]) -> tuple[list[Section], dict[str, str], list[float]]:
    versions: dict[str, str] = {}
    avgs: list[float] = []
    return list(iter_sections(lines, versions, avgs)), versions, avgs


def iter_sections(
    lines: Iterable[str],
    versions: dict[str, str],
    avgs: list[float],
    *,
    first: int = 1,
    start: Section | None = None,
    end: list[Section] | None = None,
    debug: DebugFacts | None = None,
) -> Iterator[Section]:
    """Each test's table as soon as the next one starts (a 250 MB log is never held whole);
    `versions` and `avgs` are filled in as they are read. A part of a log (reports/ingest/
    stream_chunks.py) starts at line number `first`, within the table `start` was reading,
    and leaves in `end` the table it was reading at its last line."""
    # Every line passes here (~10^6 in a 250 MB log): each regex is tried only when a literal
    # it cannot match without is in the line, and a row is split once.
    cur = start or Section()
    prefix = PREFIX.match
    for n, raw in enumerate(lines, first):
        m = prefix(raw)  # strip_prefix: the pattern is anchored, so match == sub(count=1)
        body = (raw[m.end() :] if m else raw).strip()
        if not body:
            continue
        if m and "[" in body and "NCCL " not in body:  # a tagged line with tags inside: ranks'
            body = _INNER_TAG.sub(" ", body).strip()  # output interleaved, or a tag per write
        if "NCCL " in body:  # in each of the three below: one test for the lines without
            if "NCCL version" in body and (m := _NCCL_VERSION.search(body)):
                versions.setdefault("nccl", m.group(1))
            if "NCCL INFO" in body or "NCCL WARN" in body:
                cur.debug.add(n, body)  # NCCL's own account (reports/ingest/nccl_debug.py)
                if debug is not None:
                    debug.add(n, body)
                continue  # none of the checks below can match it
        if body[0] != "#" and not cur.header and body[0].isdigit() and (cols := assumed_header(body.split())):
            cur.header, cur.assumed = cols, True  # a table pasted without its header line
        if body[0] != "#" and cur.header:
            tokens = body.split()
            t0 = tokens[0]
            if (t0.isascii() and t0.isdigit()) or is_row(cur.header, tokens):
                cur.rows.append((n, tokens))
                continue
        # a comment line, with its '#' or without (stripped by a log viewer); other
        # lines (NCCL INFO noise, launcher chatter) match none of these
        if "nccl-tests version" in body and (m := _TESTS_VERSION.match(body)):
            versions.setdefault("nccl-tests", m.group(1))
        elif "Collective test starting:" in body and (m := _START.match(body)):
            if cur.rows or cur.program:
                if cur.rows:
                    yield cur
                cur = Section()
            cur.program = m.group(1)
        elif "warmup iters:" in body and (m := _PARAMS.search(body)):
            if cur.rows:  # a second test in the same file without a "starting" line
                yield cur
                cur = Section()
            cur.warmup, cur.iters = int(m.group(1)), int(m.group(2))
            if g := _GRAPH.search(body):
                cur.graph = int(g.group(1)) > 0
        elif "Rank" in body and (m := _RANK.match(body)):
            cur.ranks[int(m.group(1))] = (m.group(3), m.group(5))
            cur.groups.add(m.group(2) or "0")
        elif "failure" in body and TEST_FAILURE.search(body):
            cur.debug.add_failure(n, body)
            if debug is not None:
                debug.add_failure(n, body)
        elif "Out of bounds values" in body:
            cur.debug.add(n, body)
            if debug is not None:
                debug.add(n, body)
        elif "Avg bus bandwidth" in body and (m := _AVG.match(body)):
            if (avg := number(m.group(1))) is not None:
                avgs.append(avg)
        elif "algbw" in body.lower() and (cols := header_columns(body)) is not None:
            cur.header = cols
    if end is not None:
        end.append(cur)
    if cur.rows:
        yield cur


def cut_kind(body: str) -> str | None:
    """'start' / 'params' for a (prefix-stripped, stripped) line at which iter_sections
    starts a new section when the one before has a program or rows / has rows; None for any
    other line. The tests are iter_sections' own, in its order (its comment branch: a line
    never a row, not noise); reports/ingest/stream_chunks.py cuts a log there."""
    if not body.startswith("#") or "NCCL INFO" in body or "NCCL WARN" in body:
        return None
    if "nccl-tests version" in body and _TESTS_VERSION.match(body):
        return None
    if "Collective test starting:" in body and _START.match(body):
        return "start"
    if "warmup iters:" in body and _PARAMS.search(body):
        return "params"
    return None
