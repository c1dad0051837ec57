"""mamf-finder's output (stas00/ml-engineering, compute/accelerator/benchmarks/mamf-finder.py)
-> `kind: "compute"` records (parse_mamf is pure; import_files the IO). What is read, from its header and final summary only:

    ** Dtype: torch.bfloat16
    - Linux <host> ...                       (platform.uname(); "- " since later versions)
    - _CudaDeviceProperties(name='...', ..., uuid=..., ...)
    Tried 879 shapes => the best outcomes were:
    median: 22.3 TFLOPS @ 3072x3072x1024 (MxNxK)
    max:    22.9 TFLOPS @ 3072x3072x1024 (MxNxK)

`median` becomes `median_tflops` (its best shape `best_shape`) and `max` `max_tflops`, as stoker
compute reports them; `mean` is kept as `mean_tflops` (the figure of mamf-finder's own table). The
GPU index is the command line's `--cuda_device` when the header shows it, else unknown.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reports.shared.errors import UsageError
from reports.shared.records import COMPUTE_FILE, RecordWriter, hosts_why, iter_jsonl

_SUMMARY = re.compile(r"^Tried\s+(\d+) shapes => the best outcomes were:", re.M)
_BEST = re.compile(r"^(mean|median|max):\s+([\d.]+) TFLOPS @ (\d+x\d+x\d+)", re.M)
_DTYPE = re.compile(r"^\*\* Dtype: (?:torch\.)?(\w+)", re.M)
_PROPS = re.compile(r"Properties\(name='([^']*)'(.*)\)")
_UUID = re.compile(r"\buuid=([0-9a-fA-F-]+)")
_UNAME = re.compile(r"^(?:- )?(Linux|Darwin) (\S+) ", re.M)
_DEVICE_ARG = re.compile(r"--cuda_device[= ](\d+)")
DTYPES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float8_e4m3fn": "fp8",
    "float8_e4m3fnuz": "fp8",
}


def looks_like_mamf(text: str) -> bool:
    return bool(_SUMMARY.search(text)) and "TFLOPS @" in text


def parse_mamf(text: str, *, ts: str, source_name: str) -> dict[str, Any]:
    """One compute record from one mamf-finder output; ValueError naming what is missing."""
    summary = _SUMMARY.search(text)
    if summary is None:
        raise ValueError("no 'Tried N shapes => the best outcomes were:' summary (the run did not finish)")
    best = {m.group(1): (float(m.group(2)), m.group(3)) for m in _BEST.finditer(text, summary.end())}
    if "median" not in best or "max" not in best:
        raise ValueError("the summary has no 'median:' and 'max:' lines")
    dt = _DTYPE.search(text)
    dtype = DTYPES.get(dt.group(1), dt.group(1)) if dt else "bf16"  # mamf-finder's default dtype
    props = _PROPS.search(text)
    uuid = _UUID.search(props.group(2)) if props else None
    uname = _UNAME.search(text)
    if uname and (why := hosts_why([uname.group(2)])):  # never judged, never acted on
        raise ValueError(why)
    dev = _DEVICE_ARG.search(text)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return {
        "schema": 1,
        "kind": "compute",
        "run_id": f"mamf-finder-{digest}",
        "ts": ts,
        "host": uname.group(2) if uname else "unknown",
        "device": f"cuda:{dev.group(1)}" if dev else "cuda",
        "gpu": int(dev.group(1)) if dev else None,
        "proc": int(dev.group(1)) if dev else 0,
        "name": props.group(1) if props else "",
        "uuid": uuid.group(1) if uuid else None,
        "timer": "cuda-event",
        "dtype": dtype,
        "best_shape": best["median"][1],
        "median_tflops": best["median"][0],
        "max_tflops": best["max"][0],
        **({"mean_tflops": best["mean"][0]} if "mean" in best else {}),
        "shapes_tried": int(summary.group(1)),
        "backend": "mamf-finder",
        "source": source_name,
    }


# What looks_like_mamf cannot match without; ASCII, so in the decoded text exactly when in the
# bytes (a byte < 0x80 always decodes to itself, never into a replacement character)
_NEEDLES = (b"TFLOPS @", b" shapes => the best outcomes were:")


def _holds_all(path: Path, needles: Sequence[bytes]) -> bool:
    overlap = max(map(len, needles)) - 1
    found = [False] * len(needles)
    tail = b""
    with open(path, "rb") as fh:
        while block := fh.read(8 << 20):
            window = tail + block
            found = [f or n in window for f, n in zip(found, needles)]
            if all(found):
                return True
            tail = window[-overlap:]
    return False


def is_mamf_file(f: str) -> bool:
    """Whether the file at `f` is mamf-finder's output (read, never raising). A file without
    the summary's words is not read whole: `stoker import` of a 250 MB nccl-tests log held
    it twice over (bytes and text) here, for nothing."""
    path = Path(f)
    try:
        return (
            path.is_file()
            and _holds_all(path, _NEEDLES)
            and looks_like_mamf(path.read_text(encoding="utf-8", errors="replace"))
        )
    except OSError:
        return False


def import_files(files: Sequence[str], out: Path) -> list[str]:
    """Append a compute record for each mamf-finder output among `files` to DIR/compute.jsonl
    (once: a file imported before adds nothing); the files that are not mamf-finder's."""
    rest: list[str] = []
    known = (
        {o.get("run_id") for _, o, _ in iter_jsonl(out / COMPUTE_FILE) if o}
        if (out / COMPUTE_FILE).is_file()
        else set()
    )
    for f in files:
        path = Path(f)
        try:
            text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        except OSError:
            text = ""
        if not looks_like_mamf(text):
            rest.append(f)
            continue
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime))
        try:
            rec = parse_mamf(text, ts=ts, source_name=path.name)
        except ValueError as exc:
            raise UsageError(f"{path}: mamf-finder output not imported: {exc}") from None
        if rec["run_id"] in known:
            print(f"{path}: already imported into {out}; nothing added")
            continue
        with RecordWriter(out / COMPUTE_FILE) as w:
            w.write(rec)
        known.add(rec["run_id"])
        print(
            f"{path}: 1 compute record (mamf-finder, {rec['dtype']} {rec['median_tflops']:g} TFLOPS) -> {out}"
        )
    return rest
