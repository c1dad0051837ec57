"""`stoker compare` on results directories as a buyer has them: three trials, one of which
never ran all_reduce inside a node and one priced differently; and every bad input."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from launchers.cli import main as stoker
from reports.pipeline import collect
from tests.conftest import DATA, STOKER, needs_tool


def edit_records(d: Path, name: str, change: Callable[[dict[str, Any]], dict[str, Any] | None]) -> None:
    out = []
    for line in (d / name).read_text().splitlines():
        try:
            o = json.loads(line)
        except json.JSONDecodeError:
            out.append(line)  # the fixture's deliberately truncated line stays as it is
            continue
        new = change(o)
        if new is not None:
            out.append(json.dumps(new))
    (d / name).write_text("\n".join(out) + "\n")


def make_trial(
    root: Path, name: str, price: float | str, *, drop_intra: bool = False, workload: str | None = None
) -> Path:
    d = root / name
    shutil.copytree(DATA / "reports" / "basic", d)
    (d / "spec.yaml").write_text(
        (d / "spec.yaml").read_text().replace("golden-h100", name).replace("2.49", str(price))
    )
    (d / "all_reduce_perf.log").unlink()
    if drop_intra:
        edit_records(d, "net.jsonl", lambda o: None if o["scope"] == "intra-node" else o)
    if workload is not None:
        (d / "workload.yaml").write_text(f"preset: {workload}\n")
    return d


def test_three_trials_incomplete_one_not_ranked(tmp_path: Path) -> None:
    dirs = [
        make_trial(tmp_path, "neo-a", 2.49),
        make_trial(tmp_path, "neo-b", 1.99),
        make_trial(tmp_path, "neo-c", 1.49, drop_intra=True),
    ]
    out = tmp_path / "cmp"
    p = subprocess.run(
        [
            *STOKER,
            "compare",
            *map(str, dirs),
            "--out",
            str(out),
            "--workload",
            "llama-70b",
            "--allow-failing",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    md = (out / "compare.md").read_text()
    # the cheapest list price (neo-c) lacks the tensor-parallel measurement: not ranked, and told how to take it
    assert (
        "- neo-c is not ranked: lacks an intra-node all_reduce sweep (tensor parallel): run "
        "`stoker net --scopes intra-node --ops all_reduce`."
    ) in md
    # a and b measured the same thing, so their cost differs by price alone:
    # $ per billion tokens = price x 512 GPUs x compute / (1 - idle) / 3600 x 1e9 / 4e6 tokens
    j = collect(dirs[0], None, "llama-70b").report.judgement
    c, idle = j.model_summary["compute_s"], j.model_summary["idle_share"]
    cost = {n: pr * 512 * c / (1 - idle) / 3600 * 1e9 / 4e6 for n, pr in (("neo-a", 2.49), ("neo-b", 1.99))}
    got = json.loads((out / "compare.json").read_text())
    assert [(r["rank"], r["name"]) for r in got["ranking"]] == [(1, "neo-b"), (2, "neo-a")]
    for r in got["ranking"]:
        assert (
            r["value"] == pytest.approx(cost[r["name"]], rel=1e-5) and r["metric"] == "$ per billion tokens"
        )
    # by hand, not through the code under test: a and b hold the same records, so their costs differ by price alone
    assert got["ranking"][1]["value"] / got["ranking"][0]["value"] == pytest.approx(2.49 / 1.99, rel=1e-5)
    assert (
        f"neo-b at ${cost['neo-b']:,.2f}" in md and "neo-a: $" in md and "25% more" in md
    )  # 2.49 / 1.99 = 1.251
    neo_c = next(x for x in got["clusters"] if x["name"] == "neo-c")
    assert not neo_c["ranked"] and neo_c["idle_by_component"]["tensor parallel"] is None
    # the split only where whole: with tensor parallel unmeasured, no other part is shown
    assert neo_c["idle_by_component"] == {"tensor parallel": None}
    why = next(line for line in md.splitlines() if line.startswith("| neo-c | fail"))
    assert "| unmeasured |" in why  # tensor parallel: never 0% idle
    intra = next(r for r in got["rows"] if r["figure"].startswith("intra-node all_reduce"))
    assert intra["values"]["neo-c"]["value"] is None and "neo-c did not measure it" in intra["reasons"]
    page = (out / "compare.html").read_text()
    # cost stacked by component, busbw per op for each scope (intra, inter) with advertised lines, storage
    assert page.count("data:image/png;base64,") == 4 and "http" not in page.replace("http-equiv", "")


def test_different_size_ranges_compared_at_the_common_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = make_trial(tmp_path, "short", 2.49), make_trial(tmp_path, "long", 2.49)
    edit_records(
        a, "net.jsonl", lambda o: o if o["scope"] != "intra-node" or o["bytes"] <= 16 << 20 else None
    )
    assert stoker(["compare", str(a), str(b), "--out", str(tmp_path / "o"), "--allow-failing"]) == 0
    got = json.loads((tmp_path / "o" / "compare.json").read_text())
    row = next(r for r in got["rows"] if r["figure"].startswith("intra-node all_reduce"))
    assert row["figure"] == "intra-node all_reduce busbw at 16M"
    assert any(
        re.match(r"long swept to 1G \(\d+\.\d\d GB/s there\), not used: compared at 16M", x)
        for x in row["reasons"]
    )
    assert row["values"]["short"]["value"] == row["values"]["long"]["value"]  # the same records at 16M


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str], words: str) -> None:
    assert stoker(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err


def test_bad_input_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = make_trial(tmp_path, "a", 2.49), make_trial(tmp_path, "b", 1.99)
    out = ["--out", str(tmp_path / "o")]
    _refused(["compare", str(a), *out], capsys, "at least two")
    _refused(["compare", str(a), str(tmp_path / "a" / ".." / "a"), *out], capsys, "is given twice")
    _refused(["compare", str(a), str(tmp_path / "nope"), *out], capsys, "no such results directory")
    c = make_trial(tmp_path, "c", 2.0)
    edit_records(c, "io.jsonl", lambda o: {**o, "schema": 2})
    _refused(["compare", str(a), str(c), *out], capsys, "records of schema 2; this stoker reads schema 1")
    (a / "workload.yaml").write_text("preset: llama-70b\n")  # b keeps llama-8b
    _refused(["compare", str(a), str(b), *out], capsys, "judged against different workloads (")
    for bad in ("-1", ".inf", ".nan", "1e308"):  # 1e308: beyond any cluster (reports/shared/plausible.py)
        d = make_trial(tmp_path, f"p{bad}", bad)
        _refused(["compare", str(b), str(d), "--workload", "llama-70b", *out], capsys, "price_per_gpu_hour")
    assert not (tmp_path / "o").exists()  # nothing written on refusal


@pytest.mark.parametrize(
    ("price", "why"),
    [
        ("0", "price_per_gpu_hour 0.0 is not a positive price"),
    ],
)
def test_bad_price_row_left_out_with_reason(tmp_path: Path, price: str, why: str) -> None:
    a, b = make_trial(tmp_path, "a", 2.49), make_trial(tmp_path, "b", price)
    assert (
        stoker(
            [
                "compare",
                str(a),
                str(b),
                "--workload",
                "llama-70b",
                "--out",
                str(tmp_path / "o"),
                "--allow-failing",
            ]
        )
        == 0
    )
    md = (tmp_path / "o" / "compare.md").read_text()
    assert f"- b is not ranked: {why}." in md and "Cheapest per billion tokens of llama-70b: a at" in md
    for f in ("compare.md", "compare.html", "compare.json"):
        text = (tmp_path / "o" / f).read_text()
        assert not re.search(r"\b(inf|nan|Infinity|NaN)\b", text), f


def test_no_spec_and_nan_record(tmp_path: Path) -> None:
    a, b, c = (
        make_trial(tmp_path, "a", 2.49),
        make_trial(tmp_path, "b", 1.99),
        make_trial(tmp_path, "c", 0.99),
    )
    (b / "spec.yaml").unlink()
    # c's intra-node busbw is NaN: it must not become a starving-free tensor-parallel component
    edit_records(c, "net.jsonl", lambda o: {**o, "busbw_GBps": math.nan} if o["scope"] == "intra-node" else o)
    assert (
        stoker(
            [
                "compare",
                str(a),
                str(b),
                str(c),
                "--workload",
                "llama-70b",
                "--out",
                str(tmp_path / "o"),
                "--allow-failing",
            ]
        )
        == 0
    )
    got = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert [r["name"] for r in got["ranking"]] == ["a"]
    reasons = {x["name"]: x["not_ranked_because"] for x in got["clusters"]}
    assert reasons["b"][0].startswith("no spec.yaml in its directory")
    assert any("intra-node all_reduce sweep (tensor parallel)" in x for x in reasons["c"]), reasons["c"]
    for f in ("compare.md", "compare.html", "compare.json"):
        assert not re.search(r"\b(inf|nan|Infinity|NaN)\b", (tmp_path / "o" / f).read_text()), f


@needs_tool("chromium")
def test_compare_html_in_chromium(tmp_path: Path) -> None:
    """compare.html in a real headless Chromium: every chart decodes, nothing fetched from outside."""
    from tests.integration.test_report_html import PROBE, chromium_path

    dirs = [make_trial(tmp_path, "neo-a", 2.49), make_trial(tmp_path, "neo-c", 1.49, drop_intra=True)]
    assert (
        stoker(
            [
                "compare",
                *map(str, dirs),
                "--workload",
                "llama-70b",
                "--out",
                str(tmp_path / "o"),
                "--allow-failing",
            ]
        )
        == 0
    )
    page = (tmp_path / "o" / "compare.html").read_text()
    assert not re.search(r'(src|href)="(https?:)?//', page)
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    p = chromium_path("--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    m = re.search(r"IMGS:([01]*):END", p.stdout)
    assert m, p.stderr[-2000:]
    assert m.group(1) == "1111"  # cost stacked by component, inter- and intra-node busbw, storage


def test_real_gloo_sweeps_of_different_ranges(tmp_path: Path) -> None:
    """Two real 2-rank gloo sweeps of this machine, to 1M and to 4M: compared at 1M only, each
    cluster's figure its own records' median there, the noise their iteration CV."""
    for name, top in (("short", "1M"), ("long", "4M")):
        p = subprocess.run(
            [
                *STOKER,
                "net",
                "--nproc",
                "2",
                "--ops",
                "all_reduce",
                "--min-bytes",
                "256K",
                "--max-bytes",
                top,
                "--iters",
                "5",
                "--out",
                str(tmp_path / name),
            ],
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert p.returncode == 0, p.stderr
    assert (
        stoker(["compare", str(tmp_path / "short"), str(tmp_path / "long"), "--out", str(tmp_path / "o")])
        == 0
    )
    got = json.loads((tmp_path / "o" / "compare.json").read_text())
    row = next(r for r in got["rows"] if r["figure"].startswith("intra-node all_reduce"))
    assert row["figure"] == "intra-node all_reduce busbw at 1M"
    assert re.fullmatch(
        r"long swept to 4M \(\d+\.\d\d GB/s there\), not used: compared at 1M, the largest size all "
        r"measured",
        row["reasons"][0],
    )
    for name in ("short", "long"):
        recs = [json.loads(x) for x in (tmp_path / name / "net.jsonl").read_text().splitlines()]
        at = sorted(r["busbw_GBps"] for r in recs if r["bytes"] == 1 << 20)
        cv = [r["time_cv"] for r in recs if r["bytes"] == 1 << 20]
        mid = len(at) // 2
        assert row["values"][name]["value"] == pytest.approx(
            at[mid] if len(at) % 2 else (at[mid - 1] + at[mid]) / 2, abs=1e-6
        )
        assert row["values"][name]["noise"] == pytest.approx(sum(cv) / len(cv), abs=1e-4)


def test_nothing_ranked_is_exit_2_and_the_files_say_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = make_trial(tmp_path, "a", 0), make_trial(tmp_path, "b", 0)
    out = tmp_path / "o"
    assert stoker(["compare", str(a), str(b), "--workload", "llama-70b", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no cluster could be ranked" in err, err
    md = (out / "compare.md").read_text()
    assert "- a is not ranked: price_per_gpu_hour 0.0 is not a positive price." in md
    assert "No cluster could be ranked" in md


def test_the_basic_trials_say_they_failed_and_what_they_cost_waiting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture run fails (a slow link, an inter-node plateau at 72%): the headline says so in
    its first sentence; every row has $ lost per day and GPUs fed; the deciding cell is whole."""
    dirs = [make_trial(tmp_path, "neo-a", 2.49), make_trial(tmp_path, "neo-b", 1.99)]
    out = tmp_path / "o"
    # no ranked cluster passed: not an answer to sign, exit 1 (the files are still written) ...
    assert stoker(["compare", *map(str, dirs), "--workload", "llama-70b", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "no ranked cluster passed its acceptance" in err and "--allow-failing" in err
    )
    assert (out / "compare.json").is_file()
    # ... unless asked to rank them anyway
    out = tmp_path / "o2"
    assert (
        stoker(["compare", *map(str, dirs), "--workload", "llama-70b", "--out", str(out), "--allow-failing"])
        == 0
    )
    got = json.loads((out / "compare.json").read_text())
    assert "; but neo-b failed (" in got["headline"][0] and got["headline"][0].endswith(
        "no ranked cluster passed."
    )
    j = collect(dirs[1], None, "llama-70b").report.judgement
    idle = j.model_summary["idle_share"]
    for c in got["clusters"]:
        price = 2.49 if c["name"] == "neo-a" else 1.99
        assert c["usd_lost_per_day"] == pytest.approx(price * 512 * 24 * idle, abs=0.01)
        assert c["gpus_fed"]["value"] > 0 and c["gpus_fed"]["floor"]  # 4 nodes measured of 64
        assert "inter-node network measured on 4 of the job's 64 nodes" in c["extrapolated"]
    md = (out / "compare.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith("| neo-b | fail"))
    assert "under the 80% threshold: check NIC link rates (ibstat)" in row  # past the first colon


def test_nccl_tests_logs_get_nccl_tests_advice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Clusters known only from an nccl-tests log of 2 nodes (the fixture's all_reduce_perf.log):
    the tensor-parallel sweep inside a node is missing, and the advice is nccl-tests' own command
    (-g 8: one process drives the node's 8 GPUs) beside stoker's; nothing ranked: exit 2."""
    dirs = []
    for name, price in (("x", 2.49), ("y", 1.99)):
        d = tmp_path / name
        shutil.copytree(DATA / "reports" / "basic", d)
        (d / "net.jsonl").unlink()
        (d / "spec.yaml").write_text(
            (d / "spec.yaml").read_text().replace("golden-h100", name).replace("2.49", str(price))
        )
        dirs.append(d)
    out = tmp_path / "o"
    assert stoker(["compare", *map(str, dirs), "--workload", "llama-70b", "--out", str(out)]) == 2
    md = (out / "compare.md").read_text()
    assert (
        "- x is not ranked: lacks an intra-node all_reduce sweep (tensor parallel): run `stoker net --scopes "
        "intra-node --ops all_reduce`; with nccl-tests, as this run's files were: `all_reduce_perf -b 8 -e 8G -f 2 "
        "-g 8` on one node."
    ) in md


def test_a_copied_directory_is_one_run(tmp_path: Path) -> None:
    """Two directories holding the same run (a copy) are one run of that cluster, not two with a
    noise of 0.0; the copy is named on stderr."""
    a = make_trial(tmp_path, "neo-a", 2.49)
    b = tmp_path / "neo-a-copy"
    shutil.copytree(a, b)
    out = tmp_path / "cmp"
    p = subprocess.run(
        [*STOKER, "compare", str(a), str(b), "--out", str(out)], capture_output=True, text=True
    )
    assert p.returncode in (0, 1, 3), p.stderr
    assert "holds the same run as" in p.stderr and "counted once" in p.stderr
    clusters = json.loads((out / "compare.json").read_text())["clusters"]
    assert len(clusters) == 1 and len(clusters[0]["runs"]) == 1, clusters
