"""Like for like: a baseline figure's identity (tool, ranks, nodes, writers/workers per node,
block size, path), the spread of its own repeats, and matching a later figure only with one
measured the same way (pure logic; every expected value is worked out by hand here)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from launchers.actions import check_plan as cp
from reports import evidence
from reports.judging.fleet.baseline import (
    MAX_TOLERANCE,
    STORAGE_TOLERANCE,
    Figure,
    differences,
    judge,
    make,
    tolerance_for,
)
from reports.judging.fleet.baseline_figures import figures
from reports.judging.fleet.baseline_file import load, to_yaml
from reports.shared.errors import UsageError
from reports.table.read import RecordSet
from tests.unit.recordgen import io, net


def node_io(workload: str, bw: float, *, path: str = "/var/tmp", host: str = "n1", procs: int = 8,
            block: int = 1 << 20, backend: str = "fio") -> Figure:  # fmt: skip
    """One node's storage figure as `stoker io` on one node gives it."""
    return Figure(
        kind="node-storage", component="node", what=f"{workload} on {path}", value=bw, scope="local",
        path=path, workload=workload, direction="read" if "read" in workload else "write", host=host,
        hosts=(host,), backend=backend, procs=procs, block=block, low=bw, high=bw,
    )  # fmt: skip


def intra(
    bw: float, *, host: str = "n1", ranks: int = 8, size: int = 1 << 28, backend: str = "nccl"
) -> Figure:
    return Figure(
        kind="node-intra", component="node", what="intra-node all_reduce busbw", value=bw, op="all_reduce",
        host=host, hosts=(host,), bytes=size, backend=backend, ranks=ranks, low=bw, high=bw,
    )  # fmt: skip


# -- the spread is a figure's own repeats ----------------------------------------------------
def test_storage_spread_keeps_fio_and_torch_apart() -> None:
    """fio at 8 writers, three repeats 2.8, 2.9, 3.0 GB/s; torch.dcp at 0.21 on the same path.
    One figure per tool: fio's spread is [2.8, 3.0], so its tolerance is
    max(0.25, 2 x (3.0 - 2.8) / 3.0 = 0.133) = 0.25 (one figure over both: [0.21, 3.0], 0.5)."""
    rs = RecordSet(
        io=[
            *(io("checkpoint_write", "write", "/nvme", v, scope="local", per_host={"n1": v}) for v in (2.8, 2.9, 3.0)),
            io("checkpoint_write", "write", "/nvme", 0.21, scope="local", per_host={"n1": 0.21}, backend="torch.dcp"),
        ]
    )  # fmt: skip
    figs = {f.backend: f for f in figures(evidence.build(rs))}
    assert set(figs) == {"fio", "torch.dcp"}
    fio = figs["fio"]
    assert (fio.value, fio.low, fio.high, fio.procs) == (3.0, 2.8, 3.0, 8)  # recordgen: 8 procs per host
    assert tolerance_for(fio) == STORAGE_TOLERANCE
    assert (figs["torch.dcp"].value, figs["torch.dcp"].low) == (0.21, 0.21)


def test_sweep_spread_keeps_one_node_nvlink_apart_from_two_node_ib() -> None:
    """An 8-GPU intra-node sweep on n1 and n2 (380 and 381 GB/s) and a 2-node inter-node one
    (45.8 and 46.0 GB/s from two repeats) at the same size. Intra-node plateau: the median
    380.5, spread [380, 381]: tolerance max(0.15, 2 x 0.5 / 380.5) = 0.15 (the old spread
    reached down to 45.8: 2 x (380.5 - 45.8) / 380.5 > 0.5, the ceiling)."""
    size = 1 << 30
    rs = RecordSet()
    rs.net.extend(
        [
            net("intra-node", "all_reduce", size, 380.0, ("n1",), group=0),
            net("intra-node", "all_reduce", size, 381.0, ("n2",), group=1),
            net("inter-node", "all_reduce", size, 45.8, ("n1", "n2"), ranks=16),
            net("inter-node", "all_reduce", size, 46.0, ("n1", "n2"), ranks=16),
        ]
    )
    sweeps = {f.scope: f for f in figures(evidence.build(rs)) if f.kind == "sweep"}
    nv, ib = sweeps["intra-node"], sweeps["inter-node"]
    assert (nv.value, nv.low, nv.high, nv.nodes) == (380.5, 380.0, 381.0, 1)
    assert tolerance_for(nv) == 0.15
    assert (ib.low, ib.high, ib.ranks, ib.nodes) == (45.8, 46.0, 16, 2)


# -- matching ----------------------------------------------------------------------------------
def test_one_writer_against_eight_is_not_comparable_never_a_regression() -> None:
    """The accepted dataloader figure was 1.38 GB/s with 8 workers; a 1-worker check gives
    0.414 (70% lower): another measurement, so no regression; the reason names both counts."""
    base = make("acc", "t", [node_io("dataloader_read", 1.38), intra(100.0)])
    found = judge(base, [node_io("dataloader_read", 0.414, procs=1), intra(99.0)])
    assert [(f.status, f.extra.get("comparable")) for f in found] == [("ok", None), ("no_reference", False)]
    assert "workers per node 1 here, 8 accepted" in found[1].message
    assert found[1].message.startswith("not comparable:")


def test_the_same_settings_are_compared_and_a_slow_node_is_a_regression() -> None:
    """accepted 1.38 GB/s, tolerance 0.25 (storage): the floor is 1.38 x 0.75 = 1.035."""
    base = make("acc", "t", [node_io("dataloader_read", 1.38)])
    (ok,) = judge(base, [node_io("dataloader_read", 1.04)])
    (bad,) = judge(base, [node_io("dataloader_read", 1.03)])
    assert (ok.status, bad.status, bad.hosts, bad.expected) == ("ok", "regression", ("n1",), 1.38)


@pytest.mark.parametrize(
    ("later", "says"),
    [
        (node_io("checkpoint_write", 3.0, block=4 << 20), "block size 4M here, 1M accepted"),
        (node_io("checkpoint_write", 3.0, backend="torch.save"), "tool torch.save here, fio accepted"),
        (node_io("checkpoint_write", 3.0, procs=2), "writers per node 2 here, 8 accepted"),
    ],
)
def test_each_identity_field_keeps_figures_apart(later: Figure, says: str) -> None:
    assert differences(node_io("checkpoint_write", 3.0), later) == [says]


def test_another_path_never_matches_and_both_paths_are_named() -> None:
    base = make("acc", "t", [node_io("checkpoint_write", 3.0, path="/local/scratch")])
    later = node_io("checkpoint_write", 0.5, path="/var/tmp")
    assert base.find(later) is None
    (f,) = judge(base, [later])
    assert f.status == "no_reference" and f.extra["matched_none"] is True
    assert "measured on /var/tmp, accepted on /local/scratch" in f.message


@pytest.mark.parametrize("accepted_host", ["n7", ""])  # another node; an entry with `host: null`
def test_a_baseline_of_another_host_matches_nothing(accepted_host: str) -> None:
    base = make("acc", "t", [node_io("checkpoint_write", 3.0, host=accepted_host)])
    (f,) = judge(base, [node_io("checkpoint_write", 0.5, host="n1")])
    assert (f.status, f.extra["matched_none"], f.hosts) == ("no_reference", True, ("n1",))
    assert f"host n1 is not in the baseline (its figure is of {accepted_host or '(no host)'})" in f.message
    o = cp.outcome([f], [])
    assert (o.verdict, cp.EXIT[o.verdict], len(o.problems)) == ("incomplete", 3, 1)
    assert o.problems[0].startswith("n1 node no_reference: not comparable: the baseline")


def test_an_older_file_without_identity_is_matched_only_where_unambiguous(tmp_path: Path) -> None:
    """A file from before the identity fields: its storage entry cannot say how many writers
    measured it (not comparable); its intra-node entry names its message size (compared)."""
    old = tmp_path / "old.yaml"
    old.write_text(
        "stoker_baseline: 1\nrun_id: acc-0\ncreated: '2026-11-01T00:00:00Z'\nfigures:\n"
        "- {kind: node-storage, component: node, what: checkpoint_write write on /var/tmp, scope: local,\n"
        "   host: n1, path: /var/tmp, workload: checkpoint_write, direction: write, accepted: 3.0,\n"
        "   spread: [0.21, 3.0], unit: GB/s, tolerance: 0.5}\n"
        "- {kind: node-intra, component: node, what: intra-node all_reduce busbw, op: all_reduce, host: n1,\n"
        "   accepted: 100.0, spread: [100.0, 100.0], unit: GB/s, tolerance: 0.15, bytes: 268435456}\n"
    )  # hand-written in the format stoker baseline wrote before identity fields
    base = load(old)
    found = judge(base, [node_io("checkpoint_write", 0.9, path="/var/tmp", procs=1), intra(50.0)])
    by = {f.extra["figure"]: f for f in found}
    assert by["node-intra"].status == "regression"  # 50 < 100 x 0.85
    assert by["node-storage"].status == "no_reference"
    assert "the accepted entry does not record its writers per node" in by["node-storage"].message
    o = cp.outcome(found, [])
    assert o.verdict == "fail" and len(o.problems) == 2  # the regression, and the line not comparable


def test_partly_comparable_check_passes_with_a_line_for_the_rest() -> None:
    base = make("acc", "t", [intra(100.0), node_io("checkpoint_write", 3.0, path="/local")])
    found = judge(base, [intra(98.0), node_io("checkpoint_write", 3.0, path="/var/tmp")])
    o = cp.outcome(found, [])
    assert o.verdict == "pass" and len(o.problems) == 1 and "accepted on /local" in o.problems[0]


# -- the check measures as the accepted run did ------------------------------------------------
def accepted_io(path: str = "/var/tmp") -> list[Figure]:
    return [
        node_io("checkpoint_write", 3.0, path=path, procs=8, block=2 << 20),
        node_io("checkpoint_read", 3.1, path=path, procs=8, block=2 << 20),
        node_io("dataloader_read", 1.4, path=path, procs=6, block=64 << 10),
        node_io("checkpoint_write", 0.2, path=path, procs=1, block=0, backend="torch.save"),
        intra(12.0, ranks=4, size=4 << 20, backend="gloo"),
    ]


def argv_of(how: cp.Measure) -> dict[str, str]:
    plan = cp.steps(
        which=["net", "io"], stoker=("s",), out="/o", io_path="/var/tmp", how=how, net_timeout_s=9
    )
    out: dict[str, str] = {}
    for step in plan:
        a = step.argv
        out.update({k: a[i + 1] for i, k in enumerate(a) if k.startswith("-") and i + 1 < len(a)})
    return out


def test_check_takes_writers_workers_blocks_and_ranks_from_the_baseline() -> None:
    base = make("acc", "t", accepted_io())
    how = cp.measure_like(base, "n1", "/var/tmp/", gpus=0)  # a trailing slash is the same path
    assert how == cp.Measure(
        nproc=4, backend="gloo", size=4 << 20, writers=8, workers=6, ckpt_block=2 << 20, sample_bytes=64 << 10
    )
    a = argv_of(how)
    assert (a["--writers"], a["--workers"], a["--ckpt-block"], a["--sample-bytes"]) == (
        "8", "6", str(2 << 20), str(64 << 10),
    )  # fmt: skip
    assert (a["--nproc"], a["--backend"], a["-b"]) == ("4", "gloo", str(4 << 20))


def test_check_measures_only_the_families_its_baseline_judges() -> None:
    # a baseline of checkpoint writes alone: no dataloader data set to write (256 MiB a worker)
    only_ckpt = [f for f in accepted_io() if f.workload == "checkpoint_write"]
    how = cp.measure_like(make("acc", "t", only_ckpt), "n1", "/var/tmp", gpus=0)
    assert how.families == ("checkpoint",) and argv_of(how)["--workloads"] == "checkpoint"
    for b in (make("acc", "t", accepted_io()), make("acc", "t", accepted_io(path="/other")), None):
        how = cp.measure_like(b, "n1", "/var/tmp", gpus=0)  # both held, none here, no baseline: all
        assert argv_of(how)["--workloads"] == "checkpoint,dataloader"


def test_check_reads_the_data_set_its_baseline_read(tmp_path: Path) -> None:
    # accepted with 4 files of 1 MiB a worker: the check reads 4 MiB a worker too (one file of
    # 4 MiB: files of at most IO_FILE_BYTES); no data set recorded: stoker io's default, 64 x 4 MiB
    dl = replace(node_io("dataloader_read", 1.4, procs=8, block=64 << 10), data=4 << 20)
    b = make("acc", "t", [dl])
    back = load(write(tmp_path, [dl]))  # the file keeps it (data_set_bytes)
    assert [a.figure.data for a in back.figures] == [4 << 20]
    a = argv_of(cp.measure_like(b, "n1", "/var/tmp", gpus=0))
    assert (a["--files-per-worker"], a["--file-bytes"], a["--workers"]) == ("1", str(4 << 20), "8")
    a = argv_of(cp.measure_like(make("acc", "t", accepted_io()), "n1", "/var/tmp", gpus=0))
    assert (a["--files-per-worker"], a["--file-bytes"]) == ("64", str(4 << 20))


def test_check_elsewhere_or_without_a_baseline_measures_one_writer() -> None:
    base = make("acc", "t", accepted_io(path="/local/scratch"))
    for b in (base, None):
        how = cp.measure_like(b, "n1", "/var/tmp", gpus=8)
        assert (how.writers, how.workers, how.nproc, how.backend) == (1, 1, 8, "nccl")


# -- the file ----------------------------------------------------------------------------------
def write(tmp_path: Path, figs: list[Figure], edit: tuple[str, str] = ("", "")) -> Path:
    path = tmp_path / "b.yaml"
    text = to_yaml(make("acc", "t", figs))
    path.write_text(text.replace(*edit, 1) if edit[0] else text)
    return path


def test_identity_survives_the_file(tmp_path: Path) -> None:
    figs = accepted_io()
    back = load(write(tmp_path, figs))
    assert [a.figure.identity for a in back.figures] == [f.identity for f in figs]
    assert "procs_per_node: 8" in write(tmp_path, figs).read_text()


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (("  unit: GB/s", "  unit: GB/s\n  unit: MB/s"), "line 22: unit: the key is written twice"),
        (("  unit: GB/s", "  unit: MB/s"), "unit: expected one of GB/s, got 'MB/s'"),
        (("tolerance: 0.25", "tolerance: 0.6"), "tolerance: expected a number >= 0 no larger than 0.5"),
    ],
)
def test_bad_edits_are_refused_in_one_line(tmp_path: Path, edit: tuple[str, str], says: str) -> None:
    with pytest.raises(UsageError) as e:
        load(write(tmp_path, [node_io("checkpoint_write", 3.0)], edit))
    assert str(e.value).startswith(str(tmp_path / "b.yaml")) and says in str(e.value)
    assert "\n" not in str(e.value)


def test_the_same_figure_twice_is_refused(tmp_path: Path) -> None:
    # the same entry twice with another value: the last would win and hide a regression
    path = write(tmp_path, [node_io("checkpoint_write", 3.0), node_io("checkpoint_write", 9.0)])
    with pytest.raises(UsageError, match=r"figures\[1\]: the same figure as figures\[0\]"):
        load(path)
    # the documented ceiling itself is allowed
    (a,) = load(
        write(tmp_path, [node_io("checkpoint_write", 3.0)], ("tolerance: 0.25", "tolerance: 0.5"))
    ).figures
    assert a.tolerance == MAX_TOLERANCE == 0.5


def test_a_sweep_plateau_at_another_of_its_top_sizes_is_still_the_same_figure() -> None:
    """A sweep's plateau is the best of its 3 largest sizes: 1 GiB at acceptance, 512 MiB later
    is the same sweep (compared: 90 against 100 is within 15%); a node-intra figure is taken at
    one size, and another size is another figure."""
    sweep = Figure(
        kind="sweep", component="inter-node network", what="inter-node all_reduce busbw", value=100.0,
        scope="inter-node", op="all_reduce", bytes=1 << 30, backend="nccl", ranks=16, nodes=2,
    )  # fmt: skip
    base = make("acc", "t", [sweep, intra(100.0, size=1 << 28)])
    later = [replace(sweep, value=90.0, bytes=1 << 29), intra(100.0, size=1 << 22)]
    judged = judge(base, later)
    found = {f.extra["figure"]: f for f in judged if "figure" in f.extra}
    # n1's one figure met no entry: the node itself is named not comparable
    assert [f.hosts for f in judged if f.extra.get("matched_none")] == [("n1",)]
    assert found["sweep"].status == "ok"
    assert found["node-intra"].status == "no_reference"
    assert "message size 4M here, 256M accepted" in found["node-intra"].message


def test_the_check_takes_its_path_from_the_baseline_when_none_is_given() -> None:
    """`stoker check --baseline FILE` without --path: the one local path the baseline accepted
    this node's fio figures on; /var/tmp when it has none; several: refused (ValueError)."""
    base = make("acc", "t", [node_io("checkpoint_write", 3.0, path="/local/scratch")])
    base = replace(base, file="b.yaml")
    assert cp.accepted_path(base, "n1") == cp.IoTarget(
        path="/local/scratch",
        said="--path /local/scratch: the local path the baseline b.yaml accepted for n1",
    )
    # a fleet's baseline taken on one node: every node's local disk is on the same path
    assert cp.accepted_path(base, "n7").path == "/local/scratch"
    assert cp.accepted_path(None, "n1") == cp.IoTarget(path="/var/tmp")
    shared = replace(node_io("checkpoint_write", 3.0, path="/lustre"), scope="shared")
    torch = node_io("checkpoint_write", 3.0, path="/dcp", backend="torch.dcp")
    for figs in ([shared], [torch], [intra(100.0)]):  # no local fio figure: the default, and why
        t = cp.accepted_path(make("acc", "t", figs), "n1")
        assert (t.path, t.said) == (
            "/var/tmp",
            "--path /var/tmp: the baseline run acc has no local disk figure of n1",
        )
    two = make(
        "acc", "t", [node_io("checkpoint_write", 3.0, path="/a"), node_io("dataloader_read", 1.0, path="/b")]
    )
    with pytest.raises(ValueError, match=r"accepted local storage of n1 on 2 paths \(/a, /b\): give --path"):
        cp.accepted_path(two, "n1")


# -- a run's own scratch dir: kept by its role ---------------------------------------------------
def test_a_runs_scratch_dir_is_kept_by_its_role_and_meets_the_checks_own_scratch() -> None:
    """`stoker run` measured storage in R/.io-scratch-ab12 (gone after the run); the check
    measures in /var/tmp/.io-scratch-zz99. Both are the run's own scratch on a local disk: the
    figure meets its entry (3.0 accepted, 2.7 now: 10% lower, within 25%: ok). Measured on a
    named path (/var/tmp) instead, it is another disk: not comparable."""
    rs = RecordSet(
        io=[
            io("checkpoint_write", "write", "/r/R/.io-scratch-ab12", 3.0, scope="local", per_host={"n1": 3.0})
        ]
    )
    (fig,) = figures(evidence.build(rs))
    assert (fig.role, fig.what) == ("scratch", "checkpoint_write write on local scratch")
    base = load_back(make("acc", "t", [fig]))
    assert base.figures[0].figure.role == "scratch"
    later = replace(fig, path="/var/tmp/.io-scratch-zz99", value=2.7)
    (f,) = judge(base, [later])
    assert (f.status, f.expected, f.measured) == ("ok", 3.0, 2.7)
    (f,) = [g for g in judge(base, [replace(fig, path="/var/tmp", role="", value=2.7)]) if not g.extra.get("matched_none")] or judge(base, [replace(fig, path="/var/tmp", role="", value=2.7)])  # fmt: skip
    assert f.status == "no_reference"
    assert "measured on /var/tmp, accepted on the run's own scratch dir (local) (another disk)" in f.message


def load_back(b: object, tmp: Path | None = None) -> object:
    """The baseline written and read back, as the check reads it."""
    import tempfile

    d = Path(tempfile.mkdtemp())
    (d / "b.yaml").write_text(to_yaml(b), encoding="utf-8")  # type: ignore[arg-type]
    return load(d / "b.yaml")


def test_an_older_file_with_a_scratch_path_reads_it_as_the_scratch_role(tmp_path: Path) -> None:
    """A baseline written before roles kept the deleted scratch dir as its path: read as the role."""
    text = to_yaml(make("acc", "t", [node_io("checkpoint_write", 3.0, path="/r/R/.io-scratch-ab12")]))
    assert "role:" not in text
    (tmp_path / "b.yaml").write_text(text, encoding="utf-8")
    assert load(tmp_path / "b.yaml").figures[0].figure.role == "scratch"


def test_the_check_measures_in_its_own_scratch_when_the_baseline_accepted_a_runs_scratch() -> None:
    """No --path: a scratch dir of the check's own in /var/tmp; --path /data: one in /data; a
    baseline with the named path /data too: --path /data is measured as it is."""
    scratch = replace(node_io("checkpoint_write", 3.0, path="/r/R/.io-scratch-ab12"), role="scratch")
    base = replace(make("acc", "t", [scratch]), file="b.yaml")
    t = cp.accepted_path(base, "n1")
    assert (t.path, t.scratch) == ("/var/tmp", True)
    assert "in a scratch dir of its own there" in t.said
    assert (cp.accepted_path(base, "n1", "/data").path, cp.accepted_path(base, "n1", "/data").scratch) == (
        "/data",
        True,
    )
    both = make("acc", "t", [scratch, node_io("dataloader_read", 1.0, path="/data")])
    assert cp.accepted_path(both, "n1", "/data") == cp.IoTarget(path="/data")
    assert cp.accepted_path(both, "n1").path == "/data"  # the one named path first
    # the check's settings come from the scratch figure: 8 writers accepted, 8 now
    assert cp.measure_like(base, "n1", "/var/tmp/.io-scratch-zz99", 0).writers == 8
    assert cp.measure_like(base, "n1", "/var/tmp", 0).writers == 1


# -- the tolerance follows the noise a record's own iterations showed ----------------------------
def test_a_figure_swept_once_takes_its_spread_from_its_iterations() -> None:
    """One gloo record at 4 MiB: 1.2 GB/s, its iterations' time CV 0.35: one standard deviation
    slower is 1.2 / 1.35 = 0.8889 GB/s, a spread of 0.35 / 1.35 = 25.9%: tolerance 2 x 0.259 =
    0.519, at most 0.5. A quiet record (CV 0.05): 1.2 / 1.05 = 1.1429, spread 4.8%, twice 9.5%:
    the 15% floor. No CV recorded: no spread, the floor."""

    def rec(cv: float | None) -> object:
        r = net("world", "all_reduce", 4 << 20, 1.2, ("n1",), ranks=2, backend="gloo")
        return replace(r, time_cv=cv)

    for cv, low, tol in ((0.35, 0.8889, 0.5), (0.05, 1.1429, 0.15), (None, 1.2, 0.15)):
        rs = RecordSet()
        rs.net.extend([rec(cv)])  # type: ignore[list-item]
        (f,) = [f for f in figures(evidence.build(rs)) if f.kind == "node-intra"]
        assert (f.value, round(f.low or 0, 4), tolerance_for(f)) == (1.2, low, tol)


def test_an_unjudged_runs_baseline_says_so_in_the_file(tmp_path: Path) -> None:
    from reports.judging.fleet.baseline import unjudged_warning

    b = make("acc", "t", [intra(100.0)], warning=unjudged_warning("acc"))
    text = to_yaml(b)
    assert "# WARNING: run acc was never judged" in text
    (tmp_path / "b.yaml").write_text(text, encoding="utf-8")
    assert load(tmp_path / "b.yaml").warning.startswith("run acc was never judged")
