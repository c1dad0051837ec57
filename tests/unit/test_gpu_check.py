"""benchmarks/gpu_check.py on a machine without a GPU (this one, CI): --plan, the refusal, and
a whole run with a fake GPU and a fake command runner: every file under --out, a step past its
share stopped, steps without their tarball skipped with a note, the output ending in the table."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.gpucheck import plan as pl  # noqa: E402
from benchmarks.gpucheck.execute import Outcome, run_step  # noqa: E402
from launchers.cli import build_parser  # noqa: E402

FAKE_GPU = {"gpus": 2, "name": "NVIDIA H100 80GB HBM3", "compute_capability": [9, 0], "torch": "2.13.0"}


@pytest.fixture
def gpu_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.chdir(tmp_path)  # anything written to the working directory would show here
    monkeypatch.delenv("OUT", raising=False)
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod


def test_plan_lists_every_step_with_its_share_within_nine_minutes(
    gpu_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gpu_check.main(["--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gpu_check plan: 12 steps, ") and lines[0].endswith("of a 540 s command")
    shares = {ln.split()[0]: int(ln.split()[1]) for ln in lines[1:]}
    assert list(shares) == list(pl.NAMES) == [
        "raw", "inventory", "copy", "build", "nccl-tests", "net", "compute", "matmul", "save", "io", "soak", "summary",
    ]  # fmt: skip
    assert sum(shares.values()) <= 9 * 60
    assert list(tmp_path.iterdir()) == []  # --plan writes nothing


def test_without_a_gpu_one_line_exit_2_and_nothing_written(
    gpu_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        gpu_check.main(["--out", str(tmp_path / "out")], gpu_probe=lambda: "torch 2.13.0+cpu sees none") == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "gpu_check: needs an NVIDIA GPU that CUDA torch can use (an H100 or newer for fp8); "
        "torch 2.13.0+cpu sees none: run it on a GPU machine"
    ]
    assert list(tmp_path.iterdir()) == []


def test_the_real_probe_on_this_machine(
    gpu_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible here: gpu_check would run for real")
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py")],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "OUT": str(tmp_path / "o")}, timeout=120,
    )  # fmt: skip
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1
    assert "needs an NVIDIA GPU" in p.stderr and "sees none" in p.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_steps_and_no_out_are_one_line_refusals(
    gpu_check: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gpu_check.main(["--steps", "net,warp"]) == 2
    assert gpu_check.main([], gpu_probe=lambda: FAKE_GPU) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("gpu_check: --steps 'net,warp': give a comma list of raw,inventory,")
    assert err[1] == "gpu_check: give --out DIR (or set OUT): every file it writes goes there"


def ctx(out: Path, carried: bool = True) -> pl.Ctx:
    tar = out.parent / "t.tar.gz"
    return pl.Ctx(
        out=out,
        python="/usr/bin/python3",
        gpus=8,
        cc=(9, 0),
        nccl_tests_tar=tar if carried else None,
        fio_tar=tar if carried else None,
    )


def test_every_path_a_step_writes_is_under_out(tmp_path: Path) -> None:
    c = ctx(tmp_path / "OUT")
    read_only = (c.python, str(c.nccl_tests_tar), "/usr/local/cuda")  # inputs, never written
    for step in pl.STEPS:
        for cmd in step.commands(c):
            for arg in cmd.argv:
                for part in arg.split("="):
                    if part.startswith("/") and part not in read_only:
                        assert Path(part).is_relative_to(c.out), (step.name, arg)
            for p in (cmd.stdout, cmd.cwd, cmd.path_prepend, cmd.ld_library_path):
                assert p is None or p.is_relative_to(c.out), (step.name, p)


def test_stoker_commands_parse_with_stokers_own_parser(tmp_path: Path) -> None:
    c = ctx(tmp_path / "OUT")
    parser = build_parser()
    seen = set()
    for step in pl.STEPS:
        for cmd in step.commands(c):
            if cmd.argv[1:3] == ("-m", "launchers.cli"):
                args = parser.parse_args(list(cmd.argv[3:]))
                seen.add(args.command)
    assert seen == {"inventory", "net", "compute", "io"}


def test_nccl_tests_run_with_their_defaults_and_stokers_graph_launches() -> None:
    from netbench.harness import GRAPH_REPLAYS

    c = ctx(Path("/x/OUT"))
    modes = {
        cmd.stdout.name.rsplit("-", 1)[1]: cmd.argv
        for cmd in pl.nccl_tests_cmds(c)
        if cmd.stdout and "all_reduce" in cmd.stdout.name
    }
    assert modes["G3.log"][-2:] == ("-G", str(GRAPH_REPLAYS))  # the launches stoker times
    assert modes["G1.log"][-2:] == ("-G", "1") and "-G" not in modes["plain.log"]
    a = modes["plain.log"]
    assert (a[a.index("-n") + 1], a[a.index("-w") + 1]) == ("20", "1")  # nccl-tests 2.19.6's defaults


def fake_run(script: dict[str, Any]) -> Any:
    """Writes what each command would (an empty file at each path it names under OUT), or raises
    the timeout the runner would, per the script keyed by argv[0]'s or argv[3]'s name."""

    def run(cmd: pl.Cmd, env: dict[str, str], timeout_s: float, log: Path) -> int:
        key = cmd.argv[3] if cmd.argv[1:3] == ("-m", "launchers.cli") else Path(cmd.argv[0]).name
        if script.get(key) == "hang":
            raise subprocess.TimeoutExpired(list(cmd.argv), timeout_s)
        target = cmd.stdout or log
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"{key} output\n")
        if "--out" in cmd.argv:
            d = Path(cmd.argv[cmd.argv.index("--out") + 1])
            (d if d.suffix != ".json" else d.parent).mkdir(parents=True, exist_ok=True)
            if d.suffix == ".json":
                d.write_text(json.dumps({"bf16": {"median_tflops": 701.2}}) if "matmul" in cmd.argv else "{}")
        return int(script.get(key, 0))

    return run


def test_a_whole_run_with_a_fake_gpu(
    gpu_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "OUT"
    # the sources not carried, whatever this checkout has beside it (../shared/vendor in CI)
    gpu_check.tarball = lambda given, name: None
    run = fake_run({"compute": "hang", "inventory": 1, "dmesg": 1})
    rc = gpu_check.main(["--out", str(out)], gpu_probe=lambda: FAKE_GPU, run=run)
    printed = capsys.readouterr().out.splitlines()
    assert rc == 1  # the inventory failed and compute ran past its share
    assert printed[-13:-11] == ["| step | status | s / share | result |", "| --- | --- | --- | --- |"]
    rows = {r.split(" | ")[0].strip("| "): r for r in printed[-11:]}
    assert rows["compute"].startswith("| compute | timeout |") and "past its 65 s share" in rows["compute"]
    assert rows["inventory"].startswith("| inventory | failed |")
    assert rows["nccl-tests"].startswith("| nccl-tests | skipped |") and "not carried" in rows["nccl-tests"]
    assert rows["matmul"].startswith("| matmul | ok |")
    assert rows["raw"].startswith("| raw | ok |") and "dmesg exited 1" in rows["raw"]  # refused: a finding
    assert "bf16: stoker compute n/a TFLOPS vs bare loop 701.2" in rows["compute"]
    assert (out / "summary.txt").read_text().splitlines() == printed[-13:]
    assert not (out / "work").exists()  # build and scratch space removed
    assert list(tmp_path.iterdir()) == [out]  # nothing beside OUT
    assert json.loads((out / "steps" / "raw.json").read_text())["status"] == "ok"
    assert sorted(p.name for p in (out / "raw").iterdir()) == sorted(pl.RAW)


def test_steps_resume_a_run_into_the_same_out(
    gpu_check: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "OUT"
    assert (
        gpu_check.main(["--out", str(out), "--steps", "raw"], gpu_probe=lambda: FAKE_GPU, run=fake_run({}))
        == 0
    )
    os.environ["OUT"] = str(out)
    try:
        assert gpu_check.main(["--steps", "net,summary"], gpu_probe=lambda: FAKE_GPU, run=fake_run({})) == 0
    finally:
        del os.environ["OUT"]
    rows = capsys.readouterr().out.splitlines()[-11:]
    status = {r.split(" | ")[0].strip("| "): r.split(" | ")[1] for r in rows}
    assert (status["raw"], status["net"], status["compute"]) == ("ok", "ok", "not run")


def test_a_step_stops_at_its_share(tmp_path: Path) -> None:
    clock = iter([0.0, 10.0, 31.0, 31.0])  # start, before cmd 1, before cmd 2 (past 30 s), end
    step = pl.Step(
        name="inventory", share_s=30, what="", commands=lambda c: [pl.Cmd(argv=("a",)), pl.Cmd(argv=("b",))]
    )
    ran: list[str] = []

    def run(cmd: pl.Cmd, env: dict[str, str], timeout_s: float, log: Path) -> int:
        ran.append(cmd.argv[0])
        return 0

    o = run_step(step, ctx(tmp_path / "OUT"), run, lambda: next(clock))
    assert isinstance(o, Outcome) and (o.status, ran) == ("timeout", ["a"])


def test_a_tool_the_machine_lacks_is_a_note_where_its_output_is_optional(tmp_path: Path) -> None:
    """The H200 machine had no journalctl: the raw step keeps what the others printed and says
    so (it failed the whole step once); a missing program the step needs still fails it."""
    missing = "stoker-no-such-tool"
    optional = pl.Step(
        name="raw",
        share_s=15,
        what="",
        commands=lambda c: [
            pl.Cmd(argv=(missing,), stdout=c.out / "raw" / "a.txt", may_fail=True),
            pl.Cmd(argv=("true",), stdout=c.out / "raw" / "b.txt", may_fail=True),
        ],
    )
    o = run_step(optional, ctx(tmp_path / "OUT"))
    assert (o.status, o.note) == ("ok", f"{missing}: No such file or directory")
    assert (tmp_path / "OUT" / "raw" / "b.txt").is_file()  # the command after it ran
    needed = pl.Step(name="copy", share_s=15, what="", commands=lambda c: [pl.Cmd(argv=(missing,))])
    assert run_step(needed, ctx(tmp_path / "OUT2")).status == "failed"


def test_summary_sets_each_stoker_figure_beside_nccl_tests_measured_the_same_way(tmp_path: Path) -> None:
    """On the real H200 run (tests/data/gpu/h200-gpu-check): torch's all_reduce works in place,
    so it meets nccl-tests' in-place column (0.07 us at 8 B with -G 3, not the out-of-place
    1.67); all_gather works out of place and meets that column."""
    import shutil

    from benchmarks.gpucheck.summary import net_lines, table

    out = tmp_path / "OUT"
    shutil.copytree(ROOT / "tests" / "data" / "gpu" / "h200-gpu-check", out)
    lines = list(net_lines(out))
    assert len(lines) == 8
    # by hand, from the records' time_s and the logs' rows:
    #   all_reduce 8 B: graph 6.736e-07 s = 0.67 us; -G 3 in place 0.07 -> 0.6736 / 0.07 = 9.62;
    #   -G 1 in place 0.08; eager 4.678e-05 s = 46.78 us; plain in place 0.23 -> 203.39
    assert lines[0] == (
        "all_reduce 8 B in place: graph 0.67 us vs nccl-tests -G 3 0.07 (x9.62), -G 1 0.08; "
        "eager 46.78 vs plain 0.23 (x203.39)"
    )
    #   all_gather 512 MiB: graph 397.20 vs -G 3 396.99 (x1.00), -G 1 398.04; eager 258.58 vs 258.55
    assert lines[3] == (
        "all_gather 536870912 B out of place: graph 397.20 us vs nccl-tests -G 3 396.99 (x1.00), "
        "-G 1 398.04; eager 258.58 vs plain 258.55 (x1.00)"
    )
    # the table gpu_check printed on the machine is the one this code makes from the same files
    assert table(out) == (out / "summary.txt").read_text().splitlines()
