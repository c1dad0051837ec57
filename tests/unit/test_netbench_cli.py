"""Option parsing, the argv handed to --nproc ranks, and the table's text (pure)."""

from __future__ import annotations

import argparse

import pytest

from netbench import output
from netbench.cli import add_arguments, rank_argv, settings
from reports.shared.errors import UsageError
from reports.shared.records import NetRecord


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args(list(argv))


def test_defaults_and_nccl_tests_aliases() -> None:
    s = settings(_parse())
    assert s.ops == (
        "all_reduce",
        "all_gather",
        "reduce_scatter",
        "broadcast",
        "reduce",
        "alltoall",
        "sendrecv",
        "gather",
        "scatter",
        "alltoallv",
        "hypercube",  # every op of the table, as nccl-tests builds every *_perf binary
    )
    assert (s.sizes[0], s.sizes[-1], len(s.sizes)) == (8, 64 << 20, 24)  # 8 B .. 64 MiB, x2
    assert (s.iters, s.warmup, s.dtype, s.timeout_s, s.check, s.graph) == (
        20,
        1,
        "float32",
        300.0,
        True,
        True,
    )
    assert settings(_parse("--no-graph")).graph is False
    assert s.scopes == ("world", "intra-node", "inter-node") and s.pair_bytes == 64 << 20
    a = settings(
        _parse("-b", "1K", "-e", "4K", "-f", "4", "-n", "7", "-w", "0", "-d", "float16", "--no-check")
    )
    assert (a.sizes, a.iters, a.warmup, a.dtype, a.check) == ((1024, 4096), 7, 0, "float16", False)


def test_rank_argv_round_trips() -> None:
    args = _parse(
        "--ops",
        "all_reduce",
        "-b",
        "8",
        "-e",
        "1M",
        "--in-place",
        "--no-check",
        "--no-graph",
        "--nproc",
        "3",
        "--hosts-override",
        "a,b,c",
        "--pairs",
        "a:b",
        "--timeout",
        "9",
    )
    argv = rank_argv(args)
    assert "--nproc" not in argv
    again = _parse(*argv)
    assert settings(again) == settings(args)


@pytest.mark.parametrize(
    "argv", [["--ops", "nope"], ["-f", "x"], ["-n", "0"], ["--timeout", "0"], ["--pair-op", "x"]]
)
def test_bad_options(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        settings(_parse(*argv))


def _rec(**kw: object) -> NetRecord:
    base = dict(
        run_id="r",
        ts="t",
        hosts=("h",),
        nodes=1,
        op="all_reduce",
        scope="world",
        ranks=2,
        backend="gloo",
        dtype="float32",
        bytes=1048576,
        time_s=0.001,
        algbw_GBps=1.048576,
        busbw_GBps=1.048576,
        wrong=0,
        count=262144,
        redop="sum",
        root=-1,
    )
    base.update(kw)
    return NetRecord(**base)  # type: ignore[arg-type]


def test_row_like_nccl_tests() -> None:
    line = output.row(
        [_rec(), _rec(time_s=0.002, algbw_GBps=0.524288, busbw_GBps=0.524288, wrong=3, in_place=True)]
    )
    assert line.split() == [
        "1048576",
        "262144",
        "float32",
        "sum",
        "-1",
        "1000.0",
        "1.05",
        "1.05",
        "0",
        "2000.0",
        "0.52",
        "0.52",
        "3",
    ]
    assert output.row([_rec()], group=4).split()[-1] == "4"
    assert output.column_header([False, True], False)[0].split() == ["#", "out-of-place", "in-place"]
    assert output.column_header([True], True)[1].split()[-1] == "group"
    assert (
        output.scope_header("inter-node", 1, 2, ["a", "b"], "nccl", "bfloat16")
        == "# stoker net: scope inter-node, group 1, 2 ranks on 2 hosts a,b, backend nccl, dtype bfloat16"
    )
