"""Foreign fio output -> io records (pure): `stoker import` and `stoker report` of fio JSON or
text files people already have. The parsing and summing are reports/shared/fio_json.py's (shared
with iobench's own fio runs) and reports/shared/fio_text.py's."""

from __future__ import annotations

from collections.abc import Mapping

from reports.shared.errors import UsageError
from reports.shared.fio_classes import classify, job_of
from reports.shared.fio_json import (
    FioDoc,
    exceeds_physical_bound,
    group_parts,
    json_documents,
    parse_document,
    procs_of,
    rate,
)
from reports.shared.fio_text import parse_text
from reports.shared.records import IoRecord, utc_now
from reports.shared.units import parse_size


def option_size(options: Mapping[str, str], name: str) -> int:
    """A fio size option in bytes (fio's K/M/G are powers of 1024 by default); 0 if unreadable."""
    value = options.get(name, "")
    try:
        return parse_size(value.split(",")[0].split("-")[0]) if value else 0
    except UsageError:
        return 0


def records_from_fio_output(
    text: str, *, run_id: str, source_name: str, notes: list[str] | None = None
) -> list[IoRecord]:
    """Records of a foreign fio output file (its JSON, else its normal text output: told apart
    by content), one per job name and direction with I/O, each classified by
    reports/shared/fio_classes.py (the class's workload, fio's job name in `job`).
    The window is the longest runtime among its parts (fio starts clones and, in client
    mode, servers together), so bw = total bytes / that window. Entries of a host whose
    name is not one plain node name are left out, each reason added to `notes`."""
    docs = json_documents(text)
    fmt = "json" if docs else "text"
    if not docs and '"fio version"' in text:
        raise UsageError("no complete fio JSON document in it")
    doc: FioDoc = parse_document(docs[-1]) if docs else parse_text(text)
    if notes is not None:
        notes += [f"{source_name}: skipped the entries of {why}" for why in doc.refused]
    out = []
    for s in group_parts(doc.parts):
        per_host = {h: round(rate(b, s.per_host_runtime_ms[h]) / 1e9, 6) for h, b in s.per_host_bytes.items()}
        direct = s.options.get("direct")
        block = option_size(s.options, "bs")
        job_class = classify(job_of(s.job, s.direction, s.options, block, complete=fmt == "json"))
        out.append(
            IoRecord(
                run_id=run_id,
                ts=utc_now(),
                hosts=s.hosts,
                nodes=len(s.hosts),
                workload=job_class.workload or s.job,
                direction=s.direction,
                path=s.options.get("directory") or s.options.get("filename") or source_name,
                scope="local",
                procs=procs_of(s),
                bytes=s.bytes,
                bw_GBps=round(rate(s.bytes, s.runtime_ms) / 1e9, 6),
                per_host_bw_GBps=per_host,
                iops=round(rate(s.ios, s.runtime_ms), 3),
                lat_ms={k: round(v, 6) for k, v in (("p50", s.p50_ms), ("p99", s.p99_ms)) if v is not None},
                runtime_s=s.runtime_ms / 1000.0,
                backend="fio",
                block_size=block,
                direct=None if direct is None else direct == "1",
                cache_suspect=exceeds_physical_bound(per_host),
                failed=s.problem or (f"fio error {doc.error}" if doc.error else ""),
                extra={
                    "fio_version": doc.version,
                    "source": source_name,
                    "job": s.job,
                    "fio_format": fmt,
                    "io_class": job_class.name,
                    "judged_by": job_class.judged_by,
                    **({"rw": s.options["rw"]} if "rw" in s.options else {}),
                    **(
                        {"iodepth": int(s.options["iodepth"])}
                        if s.options.get("iodepth", "").isdigit()
                        else {}
                    ),
                },
            )
        )
    return out
