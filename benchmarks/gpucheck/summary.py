"""The one table a gpu_check command ends with, read from what the steps left under OUT (every
figure beside its reference: stoker graph vs nccl-tests -G 3 and -G 1 and eager vs plain at 8
bytes and the largest size, stoker compute vs the bare matmul loop, the inventory's host-link
copy vs the nvbandwidth-style one, torch.save and DCP). A figure that is missing says so; the
summary never fails the run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.gpucheck.plan import NET_OPS, STEPS


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _json(path: Path) -> dict[str, Any]:
    try:
        got = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def _nccl_tests(out: Path, op: str, mode: str) -> dict[tuple[int, bool], float]:
    """(bytes, in place) -> time in seconds of one nccl-tests log: both of its columns, so
    that each stoker figure meets the one measured the same way (torch's all_reduce and
    broadcast work in place, its all_gather and reduce_scatter out of place)."""
    from reports.ingest.nccl_tests import parse_text

    log = out / "nccl-tests" / f"{op}-{mode}.log"
    if not log.is_file():
        return {}
    parsed = parse_text(log.read_text(errors="replace"), run_id="nt", ts="", source_name=log.name, op=op)
    got: dict[tuple[int, bool], float] = {}
    for r in parsed.records if parsed else []:
        got.setdefault((r.bytes, r.in_place), r.time_s)
    return got


def _stoker_net(out: Path, name: str, op: str) -> dict[tuple[int, bool], float]:
    return {
        (int(r["bytes"]), bool(r.get("in_place"))): float(r["time_s"])
        for r in _jsonl(out / name / "net.jsonl")
        if r.get("op") == op
    }


def _ratio(a: float | None, b: float | None) -> str:
    return f"x{a / b:.2f}" if a and b else "n/a"


def _us(v: float | None) -> str:
    return f"{v * 1e6:.2f}" if v else "n/a"


def net_lines(out: Path) -> Iterator[str]:
    """Per op, at its smallest and largest size: stoker graph beside nccl-tests -G 3 (and
    -G 1), stoker eager beside plain nccl-tests, each in stoker's placement."""
    for op in NET_OPS:
        graph, eager = _stoker_net(out, "net-graph", op), _stoker_net(out, "net-eager", op)
        g3, g1, plain = (_nccl_tests(out, op, m) for m in ("G3", "G1", "plain"))
        keys = sorted(set(graph) | set(eager))
        if not keys:
            continue
        for key in dict.fromkeys((keys[0], keys[-1])):
            size, in_place = key
            g, e = graph.get(key), eager.get(key)
            yield (
                f"{op} {size} B {'in place' if in_place else 'out of place'}: "
                f"graph {_us(g)} us vs nccl-tests -G 3 {_us(g3.get(key))} ({_ratio(g, g3.get(key))}), "
                f"-G 1 {_us(g1.get(key))}; eager {_us(e)} vs plain {_us(plain.get(key))} ({_ratio(e, plain.get(key))})"
            )


def compute_lines(out: Path) -> Iterator[str]:
    bare = _json(out / "bare" / "matmul.json")
    mine = {r.get("dtype"): r for r in _jsonl(out / "compute" / "compute.jsonl") if r.get("gpu") in (0, None)}
    for dt in ("bf16", "fp16", "fp8"):
        s = (mine.get(dt) or {}).get("median_tflops")
        b = (bare.get(dt) or {}).get("median_tflops")
        why = (mine.get(dt) or {}).get("error") or (bare.get(dt) or {}).get("error") or ""
        # not one shape: stoker's figure is its best shape's median, the bare loop's is 8192^3
        shapes = f"{(mine.get(dt) or {}).get('best_shape', 'n/a')} vs {bare.get('shape', 'n/a')}"
        if s or b or why:
            yield (
                f"{dt}: stoker compute {s or 'n/a'} TFLOPS vs bare loop {b or 'n/a'} ({_ratio(s, b)}; "
                f"shapes {shapes}){' ' + why if why else ''}"
            )


def copy_lines(out: Path) -> Iterator[str]:
    bare = {g.get("gpu"): g for g in _json(out / "bare" / "copy.json").get("gpus", [])}
    links = [r for r in _jsonl(out / "inventory" / "host.jsonl") if r.get("h2d_pinned_GBps") is not None]
    for r in links:
        b = bare.get(r.get("gpu"), {})
        yield (
            f"GPU{r.get('gpu')} H2D pinned: stoker {r['h2d_pinned_GBps']} GB/s vs nvbandwidth-style "
            f"{b.get('h2d_GBps', 'n/a')} ({_ratio(r['h2d_pinned_GBps'], b.get('h2d_GBps'))})"
        )


def save_lines(out: Path) -> Iterator[str]:
    bare = _json(out / "bare" / "save.json")
    for name in ("torch.save", "dcp"):
        got = bare.get(name) or {}
        if got:
            yield f"{name} of {bare.get('bytes')} B of GPU tensors: {got.get('GBps', got.get('error'))} GB/s"


def io_lines(out: Path) -> Iterator[str]:
    for r in _jsonl(out / "io" / "io.jsonl"):
        if r.get("workload") in ("checkpoint_write", "checkpoint_read"):
            blocks = f", {r['block_size'] // 1048576} MiB blocks" if r.get("block_size") else ""
            yield f"{r.get('workload')} {r.get('backend')}: {r.get('bw_GBps')} GB/s ({r.get('bytes')} B{blocks})"


def soak_lines(out: Path) -> Iterator[str]:
    counters = _jsonl(out / "soak" / "counters.jsonl")
    passes = {r.get("soak_pass") for r in _jsonl(out / "soak" / "net.jsonl")}
    if counters or passes:
        yield f"{len(passes - {None})} passes, {len(counters)} counter lines"


FIGURES = {
    "net": net_lines,
    "compute": compute_lines,
    "copy": copy_lines,
    "save": save_lines,
    "io": io_lines,
    "soak": soak_lines,
}


def table(out: Path) -> list[str]:
    """The summary table: one row per step of the plan (status, seconds of its share, note),
    then its figures."""
    rows = ["| step | status | s / share | result |", "| --- | --- | --- | --- |"]
    for step in STEPS:
        if step.name == "summary":
            continue
        o = _json(out / "steps" / f"{step.name}.json")
        status = o.get("status", "not run")
        secs = f"{o.get('seconds', 0)} / {step.share_s}" if o else f"- / {step.share_s}"
        figures = list(FIGURES[step.name](out)) if step.name in FIGURES else []
        result = "; ".join(x for x in (o.get("note", ""), *figures) if x)
        rows.append(f"| {step.name} | {status} | {secs} | {result} |")
    return rows
