"""fio's normal (human) text output → the parts reports/shared/fio_json.py makes from its JSON (pure).

What people paste is fio's default output, not its JSON. Both generations are read:

- fio 3.x: `  write: IOPS=3012, BW=2945MiB/s (3088MB/s)(8177MiB/2001msec)`; IOPS may carry a
  `k`/`M` suffix; sizes in KiB/MiB/GiB/TiB (powers of 1024) or kB/MB/GB/TB (powers of 1000)
  exactly as printed; `issued rwts: total=R,W,T,X` gives the exact I/O counts.
- fio 2.x: `  write: io=1024.0MB, bw=8904.1KB/s, iops=2226, runt=117752msec`; its K/M/G/T
  (`KB`, `MB`) are powers of 1024 (fio 2.x printed KiB as `KB`); `issued : total=r=0/w=N/d=0`.
- the job header `NAME: (g=0): rw=write, bs=(R) 1024KiB-1024KiB, ..., ioengine=psync,
  iodepth=1` (2.x: `bs=4K-4K/4K-4K/4K-4K`), the version line (`fio-3.28`, `2.0.8`),
  per job `NAME: (groupid=0, jobs=2): err= 0: ...` (jobs > 1: group_reporting), `clat
  percentiles (usec|nsec|msec)` for p50/p99, and, when no job block was printed at all,
  the `Run status group N (all jobs):` lines (`READ: bw=..., io=..., run=A-Bmsec` in 3.x,
  `READ: io=..., aggrb=..., mint=..., maxt=...` in 2.x), one part per group.

Text fio did not print (a line that starts like a result line but does not read) raises
FioTextError naming the line; lines of other programs around fio's output are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from reports.shared.errors import UsageError
from reports.shared.fio_json import FioDoc, FioPart

# fio 3.x prints binary sizes with "i" (KiB) and decimal ones without (kB, MB); fio 2.x
# printed binary sizes as KB/MB/GB (no "i"): _bytes picks the table.
_BINARY = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
_DECIMAL = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_COUNT = {"": 1, "k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6}
_LAT_MS = {"nsec": 1e-6, "usec": 1e-3, "msec": 1.0}

_SIZE = r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[kKMGTP]?)(?P<i>i?)B"
_VERSION = re.compile(r"^(?:fio-(\d+\.\d+[-\w.]*)|(\d+\.\d+\.\d+))\s*$")  # fio-3.28, 2.0.8
_HEADER = re.compile(r"^(?P<job>\S.*?): \(g=(?P<g>\d+)\): rw=(?P<rw>\w+), (?P<rest>.*)$")
_JOB = re.compile(
    r"^(?P<job>\S.*?): \(groupid=(?P<g>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>-?\d+)(?:: pid=(?P<pid>\d+))?"
)
_DIR_START = re.compile(r"^\s+(?P<dir>read|write|trim)\s*:\s")
_DIR3 = re.compile(
    r"^\s+(?P<dir>read|write|trim)\s*: IOPS=(?P<iops>\d+(?:\.\d+)?)(?P<iops_unit>[kKmM]?), "
    r"BW=[^(]*\([^)]*\)\(" + _SIZE + r"/(?P<ms>\d+)msec\)"
)
_DIR2 = re.compile(
    r"^\s+(?P<dir>read|write|trim)\s*: io=" + _SIZE + r", bw=[^,]*, iops=(?P<iops>\d+(?:\.\d+)?)"
    r"\s*, runt=\s*(?P<ms>\d+)msec"
)
_ISSUED3 = re.compile(r"^\s+issued rwts?: total=(?P<r>\d+),(?P<w>\d+)(?:,(?P<t>\d+))?")
_ISSUED2 = re.compile(r"^\s+issued\s*: total=r=(?P<r>\d+)/w=(?P<w>\d+)(?:/d=(?P<t>\d+))?")
_SHORT = re.compile(r"short=(?:r=)?\d*[1-9]|short=[^ ]*[,/](?:w=)?\d*[1-9]")
_PCT_HEAD = re.compile(r"^\s+clat percentiles \((?P<unit>[num]sec)\):")
_PCT = re.compile(r"(?P<p>\d+\.\d+)th=\[\s*(?P<v>\d+)\]")
_GROUP = re.compile(r"^Run status group (?P<g>\d+) \(all jobs\):")
_GROUP3 = re.compile(
    r"^\s+(?P<dir>READ|WRITE|TRIM): bw=.*?, io=" + _SIZE + r"(?: \([^)]*\))?, run=\d+-(?P<ms>\d+)msec"
)
_GROUP2 = re.compile(r"^\s+(?P<dir>READ|WRITE|TRIM): io=" + _SIZE + r", aggrb=.*maxt=\s*(?P<ms>\d+)msec")
_GROUP_START = re.compile(r"^\s+(READ|WRITE|TRIM): ")
_BS = re.compile(r"bs=(?:\(R\) )?(?P<num>\d+(?:\.\d+)?)(?P<unit>[kKMGT]?)(?P<i>i?)(?P<b>B?)")
_OPT = re.compile(r"(?P<k>ioengine|iodepth)=(?P<v>[^,\s]+)")
_MARKS = (_JOB, _HEADER, _GROUP)


class FioTextError(UsageError):
    """fio text output that starts like fio's but a line of it does not read."""


@dataclass(kw_only=True, slots=True)
class _Block:
    job: str
    line: int
    jobs: int
    error: int
    options: dict[str, str]
    pid: str = ""
    dirs: dict[str, tuple[int, int, int, float]] = field(default_factory=dict)  # bytes, ios, ms, ±bytes
    issued: dict[str, int] = field(default_factory=dict)
    short: bool = False  # fio counted short I/Os: issued x bs is not the bytes moved
    exact_bs: int = 0
    pct: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)


def looks_like_fio_text(text: str) -> bool:
    """Whether `text` holds fio's normal output (a job header, a job result or a group line)."""
    head = text[:200_000]
    return any(m.search(line) for line in head.splitlines() for m in _MARKS)


def _bytes(num: str, unit: str, i: str, binary_bare: bool) -> int:
    """A printed size in bytes: `KiB` binary, `kB` decimal in 3.x; 2.x's `KB` binary."""
    table = _BINARY if (i or binary_bare) else _DECIMAL
    return round(float(num) * table[unit.upper()])


_PREFIXED_DIR = re.compile(r"^(?P<pre>.*?\S)?(?P<indent>\s+)(?:read|write|trim)\s*: (?:IOPS=|io=)")
_INDENTED_JOB = re.compile(r"^(?P<indent>\s+)\S.*?: \((?:groupid=\d+, jobs|g)=\d+\)")


def _prefix(lines: list[str]) -> re.Pattern[str] | None:
    """What a log or launcher put before each of fio's lines, as a pattern: a paste indented
    as a whole, or a prefix such as `12:10:43 DEBUG| [stdout]` or srun's `0: ` (digits may
    differ from line to line). Taken from the first direction line; None when fio's lines
    stand alone."""
    for line in lines:
        if m := _INDENTED_JOB.match(line):
            return re.compile(re.escape(m["indent"]))
        if (m := _PREFIXED_DIR.match(line)) and m["pre"]:
            shape = re.sub(r"\d+", r"\\d+", re.escape(m["pre"]))
            return re.compile(shape + " ?")
        if _DIR_START.match(line):
            return None
    return None


def _half_step(num: str, unit: str, i: str, binary_bare: bool) -> float:
    """Half the last printed digit of a size, in bytes: how far fio may have rounded it."""
    decimals = len(num.partition(".")[2])
    return 0.5 * 10**-decimals * (_BINARY if (i or binary_bare) else _DECIMAL)[unit.upper()] + 1e-6


def _lines(text: str) -> Iterator[tuple[int, str]]:
    lines = [line.rstrip("\r") for line in text.splitlines()]
    prefix = _prefix(lines)
    for n, line in enumerate(lines, start=1):
        yield n, (prefix.sub("", line, count=1) if prefix and prefix.match(line) else line)


_SIZE_TOKEN = re.compile(r"(\d+(?:\.\d+)?)([kKMGT]?)(i?)(B?)")


def _exact_bs(rest: str) -> int:
    """The block size in bytes when the header names one size for every direction and prints
    it exactly (binary units or plain bytes; a decimal `4194kB` is rounded), else 0."""
    sizes = set(_SIZE_TOKEN.findall(rest.split("bs=", 1)[-1].split("ioengine=")[0]))
    if len(sizes) != 1:
        return 0
    ((num, unit, i, b),) = sizes
    return _bytes(num, unit, i, binary_bare=not b) if (i or not b or not unit) else 0


def _header_options(rest: str) -> dict[str, str]:
    opts = {m["k"]: m["v"] for m in _OPT.finditer(rest)}
    bs = _BS.search(rest)
    if bs:  # 3.x: 1024KiB (binary), 4194kB (decimal, kb_base=1000), 4096B; 2.x: 4K (binary)
        opts["bs"] = str(_bytes(bs["num"], bs["unit"], bs["i"], binary_bare=not bs["b"]))
    return opts


def parse_text(text: str, host: str = "unknown") -> FioDoc:
    """The parts of fio's text output, as fio_json.parse_document makes them from JSON (host
    `host`: fio's text output names none). FioTextError names a result line that does not
    read; UsageError when there is no fio result in it at all."""
    version = "unknown"
    headers: dict[str, dict[str, str]] = {}
    exact_bs: dict[str, int] = {}
    blocks: list[_Block] = []
    groups: list[tuple[int, str, int, int]] = []  # group, direction, bytes, ms
    current: _Block | None = None
    pct_unit = ""
    last_dir = "read"
    group_no = -1
    n_last = 0
    earlier = 0  # runs of fio before the last one in the text
    for n, line in _lines(text):
        n_last = n
        if v := _VERSION.match(line):
            # a version line after results starts another run of fio: the last run counts, as
            # the last document of a JSON file does
            version = "fio-" + (v.group(1) or v.group(2))
            if blocks or groups:
                blocks, groups, current, group_no, earlier = [], [], None, -1, earlier + 1
            continue
        if h := _HEADER.match(line):
            headers[h["job"]] = {"rw": h["rw"], **_header_options(h["rest"])}  # this run's
            exact_bs[h["job"]] = _exact_bs(h["rest"])
            continue
        if j := _JOB.match(line):
            # --status-interval prints every job again, its figures so far: the last one counts
            blocks = [b for b in blocks if not (j["pid"] and (b.job, b.pid) == (j["job"], j["pid"]))]
            current = _Block(
                job=j["job"],
                pid=j["pid"] or "",
                line=n,
                jobs=int(j["jobs"]),
                error=int(j["err"]),
                options=dict(headers.get(j["job"], {})),
                exact_bs=exact_bs.get(j["job"], 0),
            )
            blocks.append(current)
            pct_unit = ""
            continue
        if g := _GROUP.match(line):
            current, group_no = None, int(g["g"])
            continue
        if current is not None and _DIR_START.match(line):
            m = _DIR2.match(line) or _DIR3.match(line)
            if not m:
                raise FioTextError(
                    f"line {n}: fio's {line.split(':')[0].strip()} line does not read: {line.strip()[:80]!r}"
                )
            v2 = m.re is _DIR2
            nbytes = _bytes(m["num"], m["unit"], m["i"], binary_bare=v2)
            iops = float(m["iops"]) * (1 if v2 else _COUNT[m["iops_unit"]])
            ms = int(m["ms"])
            current.dirs[m["dir"]] = (
                nbytes,
                round(iops * ms / 1000),
                ms,
                _half_step(m["num"], m["unit"], m["i"], v2),
            )
            pct_unit = ""
            last_dir = m["dir"]
            continue
        if current is not None and (p := _PCT_HEAD.match(line)):
            pct_unit = p["unit"]
            current.pct[last_dir] = (None, None)
            continue
        if current is not None and pct_unit and line.lstrip().startswith("|"):
            p50, p99 = current.pct.get(last_dir, (None, None))
            for pm in _PCT.finditer(line):
                value = int(pm["v"]) * _LAT_MS[pct_unit]
                if abs(float(pm["p"]) - 50.0) < 1e-9:
                    p50 = value
                elif abs(float(pm["p"]) - 99.0) < 1e-9:
                    p99 = value
            current.pct[last_dir] = (p50, p99)
            continue
        pct_unit = "" if not line.lstrip().startswith("|") else pct_unit
        if current is not None and (iss := _ISSUED3.match(line) or _ISSUED2.match(line)):
            current.issued = {"read": int(iss["r"]), "write": int(iss["w"]), "trim": int(iss["t"] or 0)}
            current.short = bool(_SHORT.search(line))
            continue
        if group_no >= 0 and _GROUP_START.match(line):
            gm = _GROUP2.match(line) or _GROUP3.match(line)
            if not gm:
                raise FioTextError(f"line {n}: fio's run status line does not read: {line.strip()[:80]!r}")
            nbytes = _bytes(gm["num"], gm["unit"], gm["i"], binary_bare=gm.re is _GROUP2)
            groups.append((group_no, gm["dir"].lower(), nbytes, int(gm["ms"])))
    if not blocks and not groups:
        raise FioTextError(
            f"fio's text output ends at line {n_last} before any job's result or run status group (cut short?)"
        )
    return FioDoc(
        version=version,
        timestamp_ms=0,
        error=next((b.error for b in blocks if b.error), 0),
        parts=tuple(_parts(blocks, groups, host)),
        global_options={},
        refused=(f"the {earlier} run(s) of fio before its last one (the last run counts)",)
        if earlier
        else (),
    )


def _parts(blocks: list[_Block], groups: list[tuple[int, str, int, int]], host: str) -> Iterator[FioPart]:
    for b in blocks:
        options: Mapping[str, str] = {
            **b.options,
            "numjobs": str(b.jobs),
            "group_reporting": "1" if b.jobs > 1 else "",
        }
        for direction, (nbytes, ios, ms, half_step) in b.dirs.items():
            if direction not in ("read", "write"):
                continue
            p50, p99 = b.pct.get(direction, (None, None))
            ios = b.issued.get(direction, ios)
            if b.exact_bs and direction in b.issued and not b.short:
                # the printed amount has 3-4 digits; I/Os x one fixed block size is exact when it
                # rounds to what fio printed (an I/O in flight at a --status-interval print: not)
                exact = ios * b.exact_bs
                nbytes = exact if abs(exact - nbytes) <= half_step else nbytes
            problem = "fio printed a runtime of 0 ms for a job that did I/O" if ms <= 0 and nbytes > 0 else ""
            yield FioPart(
                job=b.job,
                host=host,
                direction=direction,
                bytes=nbytes,
                ios=ios,
                runtime_ms=ms,
                p50_ms=p50,
                p99_ms=p99,
                options=options,
                problem=problem,
            )
    if blocks:
        return
    for g, direction, nbytes, ms in groups:
        if direction in ("read", "write"):
            yield FioPart(
                job=f"group {g}", host=host, direction=direction, bytes=nbytes, ios=0, runtime_ms=ms,
                p50_ms=None, p99_ms=None,
            )  # fmt: skip
