"""`stoker compare` joins only like with like, on results directories made from the
golden run (tests/data/reports/basic): runs under one name that bought something else are refused
or kept apart; the same directories in any order give the same compare.json; every figure of the
headline is recomputed here by hand from the figures printed beside it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from launchers.cli import main as stoker
from tests.integration.test_report_compare import edit_records, make_trial


def _h100(root: Path, dirname: str, name: str, price: float, intra_scale: float = 1.0) -> Path:
    d = make_trial(root, dirname, price)
    spec = (d / "spec.yaml").read_text().replace(f"name: {dirname}", f"name: {name}")
    (d / "spec.yaml").write_text(spec)
    if intra_scale != 1.0:  # a slower intra-node link: more tensor-parallel idle in this run
        edit_records(
            d,
            "net.jsonl",
            lambda o: (
                {
                    **o,
                    "busbw_GBps": o["busbw_GBps"] * intra_scale,
                    "algbw_GBps": o["algbw_GBps"] * intra_scale,
                }
                if o.get("scope") == "intra-node"
                else o
            ),
        )
    return d


def test_runs_of_another_accelerator_or_price_under_one_name_are_refused_or_kept_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the case: one neo-a dir on A100 at $1.29, two neo-a runs on H100 at $2.49
    a100 = _h100(tmp_path, "a100", "neo-a", 1.29)
    (a100 / "spec.yaml").write_text((a100 / "spec.yaml").read_text().replace("H100-SXM", "A100-SXM"))
    h1, h2 = _h100(tmp_path, "h1", "neo-a", 2.49), _h100(tmp_path, "h2", "neo-a", 2.49, 0.5)
    out = ["--workload", "llama-70b", "--out", str(tmp_path / "o")]
    assert stoker(["compare", str(h1), str(h2), str(a100), *out]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "differ in accelerator (a100-sxm vs h100-sxm)" in err, err
    assert f"{a100} and {h1} are both named 'neo-a'" in err and "--by dir" in err
    assert not (tmp_path / "o").exists()
    # the same GPUs at another price under one name: refused as well
    cheap = _h100(tmp_path, "cheap", "neo-a", 1.99)
    assert stoker(["compare", str(h1), str(cheap), *out]) == 2
    assert "differ in price_per_gpu_hour (1.99 vs 2.49)" in capsys.readouterr().err
    # kept apart on request: three clusters, none merged
    assert stoker(["compare", str(h1), str(h2), str(a100), *out, "--by", "dir", "--allow-failing"]) == 0
    got = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert sorted(c["name"] for c in got["clusters"]) == [
        f"neo-a ({d})" for d in sorted(map(str, (a100, h1, h2)))
    ]
    assert "compared 3 clusters (3 runs)" in capsys.readouterr().out


def test_same_dirs_any_order_same_json_and_the_headline_recomputes_by_hand(tmp_path: Path) -> None:
    h1 = _h100(tmp_path, "h1", "neo-a", 2.49)
    h2 = _h100(tmp_path, "h2", "neo-a", 2.49, 0.5)
    h3 = _h100(tmp_path, "h3", "neo-a", 2.49, 0.8)
    b = _h100(tmp_path, "b", "neo-b", 1.99, 0.9)
    outs = []
    for i, order in enumerate(([h1, h2, h3, b], [b, h3, h1, h2], [h2, b, h3, h1])):
        o = tmp_path / f"o{i}"
        assert (
            stoker(
                ["compare", *map(str, order), "--workload", "llama-70b", "--out", str(o), "--allow-failing"]
            )
            == 0
        )
        outs.append((o / "compare.json").read_text())
    assert outs[0] == outs[1] == outs[2]
    got = json.loads(outs[0])
    # every cost in the headline is the arithmetic of the figures printed beside it
    pat = re.compile(
        r"\$([\d,.]+) (?:per billion tokens )?= \$([\d.]+) per GPU-hour × (\d+) GPUs × ([\d.e+]+) s compute / "
        r"\(1 − GPU idle ([\d.]+)%\) / 3600 × 10\^9 / ([\d.e+]+) tokens per step"
    )
    seen = 0
    for line in got["headline"]:
        for m in pat.finditer(line):
            cost, price, gpus, compute, idle, tokens = (float(x.replace(",", "")) for x in m.groups())
            by_hand = price * gpus * compute / (1 - idle / 100) / 3600 * 1e9 / tokens
            assert cost == pytest.approx(by_hand, rel=2e-3), line
            seen += 1
    assert seen == 2, got["headline"]
    # the idle share in the headline is the cluster's, the median over its three runs
    a = next(c for c in got["clusters"] if c["name"] == "neo-a")
    assert a["statistic"] == "median over runs" and a["runs"] == sorted(map(str, (h1, h2, h3)))
    assert f"GPU idle {a['idle_share']:.2%}" in " ".join(got["headline"])
    row = next(r for r in got["rows"] if r["figure"] == "GPU idle share")
    assert row["values"]["neo-a"]["value"] == pytest.approx(a["idle_share"], abs=1e-6)
    cost = next(r for r in got["rows"] if r["kind"] == "cost")
    rank = {r["name"]: r["value"] for r in got["ranking"]}
    assert cost["values"]["neo-a"]["value"] == pytest.approx(rank["neo-a"])
    assert cost["values"]["neo-a"]["noise"] is not None and cost["values"]["neo-b"]["noise"] is None


def test_out_into_a_runs_results_dir_is_refused_and_one_cluster_is_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h1, h2 = _h100(tmp_path, "h1", "neo-a", 2.49), _h100(tmp_path, "h2", "neo-a", 2.49)
    before = sorted(p.name for p in h1.iterdir())
    assert stoker(["compare", str(h1), str(h2), "--out", str(h1)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {h1} is a run's results directory (it holds net.jsonl)" in err
    assert sorted(p.name for p in h1.iterdir()) == before  # nothing written into it
    assert stoker(["compare", str(h1), str(h2), "--out", str(tmp_path / "o"), "--allow-failing"]) == 0
    # h2 holds the same records as h1 (one run copied): one cluster of one run, the copy named
    got = capsys.readouterr()
    assert "compared 1 cluster (1 run)" in got.out
    assert f"{h2} holds the same run as {h1}" in got.err and "counted once" in got.err
