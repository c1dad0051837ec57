"""One identity per thing: a host, a path or a tool spelled differently is the same figure,
so a baseline judges it (a regression is found), and "not comparable" means a real difference
(pure; figures written by hand)."""

from __future__ import annotations

import pytest

from reports.judging.fleet.baseline import judge, make
from tests.unit.test_baseline_identity import intra, node_io


@pytest.mark.parametrize("later", ["GPU02", "gpu02.cluster.local", "Gpu02.Cluster"])
def test_a_host_spelled_otherwise_is_still_judged(later: str) -> None:
    base = make("acc", "t", [intra(360.0, host="gpu02")])
    (f,) = judge(base, [intra(180.0, host=later)])
    assert f.status == "regression", f.message
    assert f.hosts == (later,)  # shown and acted on as measured


@pytest.mark.parametrize("later", ["/scratch/", "//scratch", "/scratch/.", "/scratch//"])
def test_a_path_spelled_otherwise_is_the_same_disk(later: str) -> None:
    base = make("acc", "t", [node_io("checkpoint_write", 4.0, path="/scratch")])
    (f,) = judge(base, [node_io("checkpoint_write", 2.0, path=later)])
    assert f.status == "regression", f.message


@pytest.mark.parametrize(
    ("accepted", "later", "fig"),
    [
        ("nccl", "NCCL", intra),
        ("nccl", "nccl-tests", intra),  # nccl-tests drives NCCL: one busbw
        ("fio", "FIO", node_io),
    ],
)
def test_a_tool_spelled_otherwise_is_the_same_tool(accepted: str, later: str, fig: object) -> None:
    if fig is intra:
        base, now = intra(360.0, backend=accepted), intra(180.0, backend=later)
    else:
        base = node_io("checkpoint_write", 4.0, backend=accepted)
        now = node_io("checkpoint_write", 2.0, backend=later)
    (f,) = judge(make("acc", "t", [base]), [now])
    assert f.status == "regression", f.message


def test_a_real_difference_stays_not_comparable() -> None:
    (f,) = judge(make("acc", "t", [intra(360.0, backend="nccl")]), [intra(180.0, backend="gloo")])
    assert f.status == "no_reference"
    (g,) = judge(make("acc", "t", [intra(360.0, host="gpu02")]), [intra(180.0, host="gpu03")])
    assert g.status == "no_reference"


def test_the_one_spelling_of_each_thing() -> None:
    from reports.shared.hostnames import host_key
    from reports.shared.records import norm_path, tool_figure, tool_name

    assert {host_key(h) for h in ("GPU02", "gpu02.cluster.local", "gpu02")} == {"gpu02"}
    assert {norm_path(p) for p in ("/scratch/", "//scratch", "/scratch/.", "/scratch")} == {"/scratch"}
    assert [tool_name(t) for t in ("NCCL", "FIO", "nccl_tests", "Torch.Save")] == [
        "nccl",
        "fio",
        "nccl-tests",
        "torch.save",
    ]
    assert tool_figure("nccl-tests") == tool_figure("NCCL") == "nccl"


def test_a_node_the_baseline_judged_nothing_of_is_not_a_quiet_pass() -> None:
    """gpu01 is judged (ok); gpu02 was measured with gloo against an nccl baseline: nothing of
    it was judged. The verdict is unjudged, the headline names gpu02, `--fail-unjudged` fails."""
    from reports.shared.findings import EXIT_CODES, headline, verdict_of

    base = make("acc", "t", [intra(360.0, host="gpu01"), intra(360.0, host="gpu02")])
    found = judge(base, [intra(355.0, host="gpu01"), intra(180.0, host="gpu02", backend="gloo")])
    assert [f.status for f in found] == ["ok", "no_reference", "no_reference"]
    assert found[-1].extra.get("matched_none") and found[-1].hosts == ("gpu02",)
    v = verdict_of(found)
    assert v == "unjudged" and EXIT_CODES[v] == 0  # `--fail-unjudged` turns it into exit 1
    assert "gpu02" in headline(v, found) and "not comparable" in headline(v, found)
