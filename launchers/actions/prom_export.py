"""`stoker check --prometheus FILE`: the check's figures and statuses in node_exporter's
textfile-collector format, written with the Prometheus Python client (prometheus_client).

The file is written through stoker's one writer (reports/shared/safe_write.py): a temp file beside
FILE renamed over it, so node_exporter never reads half a file; never over a file stoker did
not write; mode 0644 whatever the umask, so node_exporter (another user) can read it. One gauge per measured figure (`stoker_figure_gbps`) and per check
status (`stoker_check_failing`, 1 failing, 0 passing), each labelled by host, device, scope and
op; plus the time of the run and how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest

LABELS = ("host", "device", "scope", "op", "what")


@dataclass(frozen=True, kw_only=True, slots=True)
class Metric:
    host: str
    device: str
    scope: str
    op: str
    what: str
    value: float


def registry(
    host: str,
    figures: Iterable[Metric],
    statuses: Iterable[Metric],
    duration_s: float,
    now: float | None = None,
) -> CollectorRegistry:
    reg = CollectorRegistry()
    fig = Gauge("stoker_figure_gbps", "a figure stoker check measured (GB/s)", LABELS, registry=reg)
    st = Gauge(
        "stoker_check_failing",
        "1 when this check of stoker failed on the node, 0 when it passed",
        LABELS,
        registry=reg,
    )
    for m in figures:
        fig.labels(m.host, m.device, m.scope, m.op, m.what).set(m.value)
    for m in statuses:
        st.labels(m.host, m.device, m.scope, m.op, m.what).set(m.value)
    Gauge(
        "stoker_check_last_run_timestamp_seconds", "when stoker check last ran", ["host"], registry=reg
    ).labels(host).set(time.time() if now is None else now)
    Gauge("stoker_check_duration_seconds", "how long stoker check took", ["host"], registry=reg).labels(
        host
    ).set(duration_s)
    return reg


MODE = 0o644


def write(path: str, reg: CollectorRegistry) -> None:
    from reports.shared.safe_write import write_outputs

    p = Path(path).resolve()
    text = generate_latest(reg).decode("utf-8")
    write_outputs(p.parent, {p.name: text}, "give another --prometheus file", mode=MODE)
