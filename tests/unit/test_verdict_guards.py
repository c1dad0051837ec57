"""What stands between a record and the verdict, tested at its boundary: the plausibility
screen of the reader (reports/shared/plausible.py: a bandwidth ceiling, an aggregate far above its
hosts) and the report's writer (reports/shared/safe_write.py: a refusal leaves nothing half done).
Expected values are computed by hand here, from the catalog's YAML as written."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from reports.shared.errors import UsageError
from reports.shared.records import to_dict
from reports.shared.safe_write import write_outputs
from reports.table.read import read_records
from tests.conftest import REPO, STOKER
from tests.unit.recordgen import flat, io, net

CATALOG = REPO / "reports" / "judging" / "catalog"


def _ceiling() -> float:
    """By hand: 4 x the fastest link or storage figure the catalog's YAML advertises (today
    NVLink 5's 900 GB/s per GPU: 3600 GB/s); 4 leaves room for in-switch reduction and a page cache."""
    links = yaml.safe_load((CATALOG / "links.yaml").read_text())["links"]
    storage = yaml.safe_load((CATALOG / "storage.yaml").read_text())["storage"]
    rates = [float(v["GBps"]) for v in links.values()]
    rates += [float(v[k]) for v in storage.values() for k in ("read_GBps", "write_GBps")]
    return 4 * max(rates)


def _write(path: Path, objs: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))


def test_the_ceiling_is_four_times_the_fastest_catalog_figure() -> None:
    assert _ceiling() == 3600.0  # NVLink 5, 900 GB/s per GPU: if the catalog grows, this names it


@pytest.mark.parametrize(("over", "kept"), [(-1.0, 11), (1.0, 0)])
def test_a_net_record_is_read_up_to_the_ceiling_and_skipped_past_it(
    tmp_path: Path, over: float, kept: int
) -> None:
    bw = _ceiling() + over
    _write(tmp_path / "net.jsonl", [to_dict(r) for r in flat("intra-node", "all_reduce", bw)])
    rs = read_records(tmp_path)
    assert len(rs.net) == kept and len(rs.skipped) == 11 - kept
    if not kept:
        assert (
            rs.skipped[0].reason
            == f"beyond physical limits: busbw_GBps is {bw:.4g} GB/s, above {_ceiling():.4g} GB/s"
        )


def _aggregate_dir(tmp_path: Path, aggregate: float) -> Path:
    """A node whose intra-node sweep meets its spec (90 of 100 GB/s), and one storage record:
    two hosts writing 10 GB/s each and an aggregate of `aggregate`."""
    d = tmp_path / "r"
    d.mkdir()
    _write(d / "net.jsonl", [to_dict(r) for r in flat("intra-node", "all_reduce", 90.0)])
    _write(
        d / "io.jsonl",
        [to_dict(io("checkpoint_write", "write", "/data", aggregate, per_host={"n1": 10.0, "n2": 10.0}))],
    )
    (d / "spec.yaml").write_text("name: s\nnetwork:\n  intra_node: {GBps: 100}\n")
    return d


@pytest.mark.parametrize(("aggregate", "kept"), [(40.5, 1), (41.5, 0)])
def test_an_aggregate_far_above_its_hosts_is_skipped(tmp_path: Path, aggregate: float, kept: int) -> None:
    # by hand: the hosts wrote 10 + 10 = 20 GB/s; an aggregate above 2 x 20 + 1 = 41 GB/s is no measurement
    rs = read_records(_aggregate_dir(tmp_path, aggregate))
    assert len(rs.io) == kept
    assert [s.reason for s in rs.skipped] == (
        []
        if kept
        else [
            f"beyond physical limits: bw_GBps is {aggregate:.4g} GB/s, more than its hosts' 20 GB/s together"
        ]
    )


def test_an_impossible_aggregate_makes_the_report_incomplete_exit_3(tmp_path: Path) -> None:
    d = _aggregate_dir(tmp_path, 41.5)
    p = subprocess.run(
        [*STOKER, "report", str(d), "--scope", "node"], capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 3, p.stdout[-2000:] + p.stderr[-2000:]
    v = json.loads((d / "verdict.json").read_text())
    assert v["verdict"] == "incomplete" and "beyond physical limits" in v["headline"], v["headline"]


def test_one_rank_copies_in_its_own_memory_past_the_ceiling(tmp_path: Path) -> None:
    # nccl-tests on 1 GPU reports its local copy: no link, no ceiling
    one = [to_dict(net("intra-node", "all_reduce", 2**30, 2 * _ceiling(), ranks=1))]
    _write(tmp_path / "net.jsonl", one)
    assert len(read_records(tmp_path).net) == 1


# -- safe_write: every target is checked before the first is written --------------------------
def test_a_refusal_leaves_nothing_half_done(tmp_path: Path) -> None:
    # the last of three targets is a user's file: refused, and the first two are not written either
    (tmp_path / "verdict.json").write_text("the user's own\n")
    files = {"report.md": "# md\n", "report.html": "<html></html>\n", "verdict.json": "{}\n"}
    with pytest.raises(UsageError, match="verdict.json: exists and was not written by stoker"):
        write_outputs(tmp_path, files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["verdict.json"]
    assert (tmp_path / "verdict.json").read_text() == "the user's own\n"


def test_its_own_outputs_are_rewritten(tmp_path: Path) -> None:
    files = {"report.md": "# one\n", "verdict.json": "{}\n"}
    write_outputs(tmp_path, files)
    write_outputs(tmp_path, {**files, "report.md": "# two\n"})
    assert (tmp_path / "report.md").read_text() == "# two\n"
    (tmp_path / "report.md").write_text("# edited by a person\n")  # no longer what stoker wrote
    with pytest.raises(UsageError, match="report.md: exists and was not written by stoker"):
        write_outputs(tmp_path, {**files, "verdict.json": '{"v": 2}\n'})
    assert (tmp_path / "verdict.json").read_text() == "{}\n"


def test_a_target_that_is_no_file_is_named_so(tmp_path: Path) -> None:
    (tmp_path / "report.md").mkdir()
    with pytest.raises(UsageError, match=r"report.md: exists and is not a regular file; move it away"):
        write_outputs(tmp_path, {"report.md": "# md\n"})


def test_a_workload_field_of_the_wrong_type_is_named_by_its_path() -> None:
    from reports.judging.workload.workload import parse_workload

    with pytest.raises(UsageError, match=r"^w.yaml: checkpoint.path: expected a name, got 5$"):
        parse_workload({"name": "w", "params": 8e9, "gpus": 8, "checkpoint": {"path": 5}}, "w.yaml")


def test_an_idle_share_that_overflows_is_refused_never_judged_ok() -> None:
    # a finite demand (1 GB/s) whose stall overflowed (exposed inf s): the share inf / inf is
    # NaN, which no budget comparison catches (NaN > 0.05 is False: it would read "ok")
    from reports.judging.workload.model_rows import row

    with pytest.raises(
        UsageError, match=r"^c: idle share is nan: the workload's figures overflow; check them$"
    ):
        row("checkpoint", "shared storage", "c", 1.0, 1.0, "GB/s", math.inf, 1.0, 0.05, None)
