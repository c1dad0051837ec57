"""nccl-tests' `-J` JSON (2.17+, nccl-tests src/util.cu writeJsonResults) -> records (pure).
The text log's reader is reports/ingest/nccl_tests.py; the record and manifest builders are
shared with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reports.ingest import nccl_per_iter
from reports.ingest.nccl_fast import Context as _Context
from reports.ingest.nccl_records import (
    Parsed,
    hosts_of,
    import_manifest,
    nccl_version,
    op_from_name,
    row_record,
)
from reports.ingest.nccl_rows import number, skipped_note
from reports.shared.json_shapes import list_at, mapping_at
from reports.shared.records import NetRecord, hosts_why


def looks_like_json(obj: Any) -> bool:
    return isinstance(obj, Mapping) and isinstance(obj.get("results"), list) and "config" in obj


def _int(value: Any, default: int = 0) -> int:
    v = number(str(value))
    return int(v) if v is not None and abs(v) < 2**62 else default


def parse_json(
    obj: Mapping[str, Any], *, run_id: str, ts: str, source_name: str, op: str | None = None
) -> Parsed:
    """The `-J` file of nccl-tests >= 2.17: {config: {devices: [...]}, results: [...], ...}.
    Its `env` list (the whole environment of rank 0) is never copied anywhere. A result
    with a figure missing or not a number gives no record and is named in the notes."""
    config = mapping_at(obj, "config")
    args = list_at(obj, "args")
    program = str(args[0]) if args else ""
    results = list_at(obj, "results")
    first = results[0] if results and isinstance(results[0], Mapping) else {}
    name = (
        op
        or op_from_name(program)
        or op_from_name(str(first.get("experiment_name", "")))
        or op_from_name(source_name)
    )
    devices = list_at(config, "devices")
    ranks = {
        _int(d.get("rank", i), i): (str(d.get("hostname", "unknown")), str(d.get("device_info", "")))
        for i, d in enumerate(devices)
        if isinstance(d, Mapping)
    }
    if name is None:
        return Parsed(
            records=[], manifest={}, notes=[f"{source_name}: cannot tell which test wrote it; pass --op"]
        )
    hosts, device = hosts_of(ranks)
    if why := hosts_why(hosts):  # never judged, never acted on (reports/shared/hostnames.py)
        return Parsed(records=[], manifest={}, notes=[f"{source_name}: skipped: config.devices {why}"])
    ctx = _Context(
        op=name,
        run_id=run_id,
        ts=ts,
        hosts=hosts,
        ranks=len(ranks),
        device=device,
        warmup=_int(config.get("warmup_iters")),
        iters=_int(config.get("iterations")),
        source=source_name,
        graph=bool(config["graph"]) if "graph" in config else None,
        process_hosts=tuple(nccl_per_iter.process_hosts([d for d in devices if isinstance(d, Mapping)])),
    )
    records: list[NetRecord] = []
    skipped: list[tuple[str, str]] = []
    for n, res in enumerate(results):
        if not isinstance(res, Mapping):
            skipped.append((f"results[{n}]", "not an object"))
            continue
        lead = {k: res.get(k) for k in ("size", "count", "type", "redop", "root")}
        got: list[NetRecord | str | None] = []
        for key, in_place in (("out_of_place", False), ("in_place", True)):
            t = res.get(key)
            if not isinstance(t, Mapping):
                continue  # a test without that mode
            timing = {
                "time": t.get("time", t.get("cpu_time")),
                "algbw": t.get("alg_bw"),
                "busbw": t.get("bus_bw"),
                "wrong": t.get("nwrong"),
                "per_iter": res.get(f"{key}_per_iter"),
            }
            missing = [
                f
                for f, v in (
                    ("time", timing["time"]),
                    ("alg_bw", timing["algbw"]),
                    ("bus_bw", timing["busbw"]),
                )
                if v is None
            ]
            got.append(
                f"{key} has no {', '.join(missing)}" if missing else row_record(ctx, lead, timing, in_place)
            )
        if problems := [g for g in got if isinstance(g, str)]:
            skipped.append((f"results[{n}]", problems[0]))
            continue
        if not any(isinstance(g, NetRecord) for g in got):
            skipped.append((f"results[{n}]", "no out_of_place or in_place figures"))
        records += [g for g in got if isinstance(g, NetRecord)]
    avg = number(str(mapping_at(obj, "average_bus_bandwidth").get("bandwidth")))
    avgs = [avg] if avg is not None else []
    versions = {"nccl": nccl_version(obj["nccl_version"])} if "nccl_version" in obj else {}
    settings = {
        k: config[k] for k in ("warmup_iters", "iterations", "minimum_bytes", "maximum_bytes") if k in config
    }
    notes = (
        [skipped_note(source_name, skipped, len(results)).replace(" rows: ", " results: ")] if skipped else []
    )
    return Parsed(
        records=records,
        manifest=import_manifest(run_id, source_name, versions, ranks, settings),
        avg_busbw_GBps=avgs,
        notes=notes,
    )
