"""fio's text output against its own JSON of the same run: the real fio binary writes both
(`--output-format=normal,json`), `stoker import` reads each half, and the records agree to the
byte (I/Os x a block size printed exactly), or to the digits fio prints (a decimal block size)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DATA, STOKER, needs_tool


def _stoker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*STOKER, *args], capture_output=True, text=True, timeout=120, cwd=DATA.parent.parent
    )


@needs_tool("fio")
@pytest.mark.parametrize(
    ("rw", "bs", "extra"),
    # the write syncs at its end (a checkpoint write by what it does, in the JSON and in the text,
    # which prints no sync option and is not held against it: docs/reports.md)
    [
        ("randrw", "16k", []),
        ("write", "1M", ["--group_reporting", "--end_fsync=1"]),
        ("read", "4M", ["--kb_base=1000"]),
    ],
)
def test_text_and_json_of_one_run_import_alike(tmp_path: Path, rw: str, bs: str, extra: list[str]) -> None:
    work = tmp_path / "work"
    work.mkdir()
    both = subprocess.run(
        ["fio", "--name=ckpt", f"--rw={rw}", f"--bs={bs}", "--size=16M", "--numjobs=2", "--time_based",
         "--runtime=1", f"--directory={work}", "--output-format=normal,json", *extra],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    # fio prints its job headers, then the JSON document, then the text results
    start, end = both.index("\n{\n") + 1, both.index("\n}\n") + 3
    (tmp_path / "run.json").write_text(both[start:end])
    (tmp_path / "run.txt").write_text(both[:start] + both[end:])
    got = {}
    for name in ("run.json", "run.txt"):
        out = tmp_path / f"out-{name}"
        p = _stoker("import", str(tmp_path / name), "--out", str(out))
        assert p.returncode == 0, p.stderr
        recs = [json.loads(line) for line in (out / "io.jsonl").read_text().splitlines()]
        got[name] = {(r["job"], r["direction"]): r for r in recs}
        assert {r["fio_format"] for r in recs} == {name.split(".")[1].replace("txt", "text")}
    assert got["run.json"].keys() == got["run.txt"].keys() and got["run.json"]
    for key, j in got["run.json"].items():
        t = got["run.txt"][key]
        assert (t["workload"], t["procs"], t["block_size"] > 0, t["runtime_s"]) == (
            j["workload"], j["procs"], True, j["runtime_s"]
        )  # fmt: skip
        if extra == ["--kb_base=1000"]:  # a decimal block size is printed rounded: the amount as printed
            assert t["bytes"] == pytest.approx(j["bytes"], rel=2e-3)  # 3 or 4 significant digits
            assert t["bw_GBps"] == pytest.approx(j["bw_GBps"], rel=2e-3)
        else:  # issued I/Os x the one block size: fio's own byte count
            assert (t["bytes"], t["bw_GBps"]) == (j["bytes"], j["bw_GBps"])
        assert t["iops"] == pytest.approx(j["iops"], rel=1e-9)  # both: the issued I/O count / runtime
