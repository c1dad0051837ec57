"""Property: any JSON value in any field of a record, a spec or a workload is
accepted or refused by name — a record line skipped and named, a spec/workload refused in
one UsageError line — and never crashes the reader, the judgement or the rendering (what
the CLI would end with exit 70)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reports import pipeline
from reports.judging.workload.workload import parse_workload
from reports.shared.errors import UsageError
from reports.shared.records import to_dict
from reports.shared.spec import parse_spec
from tests.unit.recordgen import io, net

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
NET = to_dict(net("intra-node", "all_reduce", 2**20, 100.0))
IO = to_dict(io("checkpoint", "write", "/data", 2.0))
SPEC = {
    "name": "h",
    "accelerator": "h100-sxm",
    "gpus_per_node": 8,
    "price_per_gpu_hour": 2.0,
    "network": {"intra_node": "nvlink4", "inter_node": {"link": "ib-ndr", "count": 8}},
    "storage": [{"path": "/data", "kind": "shared", "read_GBps": 10, "write_GBps": 5}],
}
WORKLOAD = {
    "name": "w",
    "params": 7e9,
    "gpus": 64,
    "global_batch_tokens": 4e6,
    "dataloader": {"bytes_per_sample": 1e6, "samples_per_s_per_gpu": 10},
}
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# a whole report per example: fewer of them, the field is drawn first so each is still covered
REPORTS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _report(lines: dict[str, list[str]]) -> dict:
    with tempfile.TemporaryDirectory() as d:
        good = [json.dumps(to_dict(net("intra-node", "all_reduce", 2**k, 100.0))) for k in range(20, 26)]
        Path(d, "net.jsonl").write_text("\n".join(good + lines.get("net", [])) + "\n")
        if "io" in lines:
            Path(d, "io.jsonl").write_text("\n".join(lines["io"]) + "\n")
        return pipeline.build(Path(d)).verdict


def _dumps(obj: dict) -> str:
    return json.dumps(obj)  # NaN and Infinity as Python writes them: a careless writer does


@REPORTS
@given(field=st.sampled_from(sorted(NET)), value=JSON)
def test_any_value_in_any_net_field(field: str, value: object) -> None:
    v = _report({"net": [_dumps({**NET, field: value})]})
    assert v["records"]["net"] + v["skipped_lines"] == 7


def test_a_count_past_any_int64_is_a_skipped_line() -> None:
    # hypothesis found it: `wrong` 2**64 passed the line check and broke the sweep's int64 column
    v = _report({"net": [_dumps({**NET, "wrong": 2**64})]})
    assert (v["records"]["net"], v["skipped_lines"]) == (6, 1)


@REPORTS
@given(field=st.sampled_from(sorted(IO)), value=JSON)
def test_any_value_in_any_io_field(field: str, value: object) -> None:
    try:
        v = _report({"io": [_dumps({**IO, field: value})]})
    except UsageError as exc:  # another valid run id beside the net records' run: refused in one line
        assert field == "run_id" and "\n" not in str(exc) and "--runs" in str(exc)
        return
    assert v["records"]["io"] + v["skipped_lines"] == 1


def _set(doc: dict, path: tuple[str, ...], value: object) -> dict:
    out = json.loads(json.dumps(doc))
    cur = out
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return out


SPEC_PATHS = [(k,) for k in SPEC] + [("network", "intra_node"), ("network", "inter_node"), ("storage",)]
WL_PATHS = [(k,) for k in WORKLOAD] + [
    ("dataloader", "bytes_per_sample"),
    ("dataloader", "samples_per_s_per_gpu"),
]


@SETTINGS
@given(path=st.sampled_from(SPEC_PATHS), value=JSON)
def test_any_value_in_any_spec_field(path: tuple[str, ...], value: object) -> None:
    try:
        parse_spec(_set(SPEC, path, value), "spec.yaml")
    except UsageError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("spec.yaml")


@SETTINGS
@given(path=st.sampled_from(WL_PATHS), value=JSON)
def test_any_value_in_any_workload_field(path: tuple[str, ...], value: object) -> None:
    try:
        parse_workload(_set(WORKLOAD, path, value), "workload.yaml")
    except UsageError as exc:
        assert "\n" not in str(exc)
