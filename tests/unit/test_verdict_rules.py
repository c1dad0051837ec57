"""Each rule that decides the verdict, tested at the verdict: records -> reports.judging.judge.judge()
-> `verdict` (and the finding that decides it), never the rule's own function. The documented
thresholds are pinned at their boundaries (just inside passes, just outside fails): the 80% share
of the spec, the 15% baseline tolerance, the 65% soak dip, the -25% soak drift. Every expected
value is computed by hand here (docs/testing.md lists the mutation each test kills)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from reports.judging.fleet import baseline as bl
from reports.judging.fleet.baseline_figures import figures as baseline_figures
from reports.judging.judge import judge
from reports.judging.workload.workload import Workload, parse_workload
from reports.shared.findings import Judgement
from reports.shared.group_search import Group, group_search
from reports.shared.records import IoRecord, NetRecord
from reports.shared.spec import parse_spec
from tests.unit.recordgen import evidence, flat, io

H100 = "NVIDIA H100 80GB HBM3"  # the name nvidia-smi gives an H100 SXM


def failing(j: Judgement) -> list[tuple[str, str]]:
    return [(f.check, f.status) for f in j.findings if f.status not in ("ok", "no_reference")]


# -- coverage: the GPUs the hosts showed against the spec's promise ------------------------
def _manifest(host: str, gpus: int) -> dict[str, Any]:
    """What detection wrote for one host (hand-written: the keys netbench/inventory/hardware.py writes)."""
    hw = {"gpu_model": H100, "gpu_count": gpus}
    return {"schema": 1, "kind": "manifest", "tool": "net", "run_id": "r1", "host": host, "hardware": hw}


GPU_SPEC = {
    "name": "s",
    "accelerator": "H100-SXM",
    "gpus_per_node": 8,
    "network": {"intra_node": {"GBps": 100}},
}


def _gpus_judged(counts: Sequence[int]) -> Judgement:
    """A node whose intra-node sweep meets its 100 GB/s (90 >= 80), hosts showing `counts` GPUs."""
    ev = evidence(
        flat("intra-node", "all_reduce", 90.0),
        manifests=[_manifest(f"n{i}", n) for i, n in enumerate(counts)],
    )
    return judge(ev, parse_spec(GPU_SPEC, "spec.yaml"), scope="node")


def test_eight_gpus_promised_and_shown_pass() -> None:
    j = _gpus_judged([8])
    assert j.verdict == "pass", j.headline
    assert {"what": "GPUs per node: 8 x h100-sxm", "status": "measured", "why": "", "how": ""} in j.coverage[
        "coverage"
    ]


def test_eight_gpus_promised_four_shown_fails() -> None:
    j = _gpus_judged([4])
    assert j.verdict == "fail", j.headline
    assert [(f.check, f.measured, f.expected) for f in j.findings if f.component == "gpu"] == [
        ("GPU count", 4.0, 8.0)
    ]


def test_hosts_disagreeing_on_the_gpu_count_is_not_met() -> None:
    # two hosts show 8, one shows 4: the most common count (8) meets the promise, the odd host does not
    j = _gpus_judged([8, 8, 4])
    lines = {c["what"]: c for c in j.coverage["coverage"]}
    assert lines["GPUs per node: 8 x h100-sxm"]["status"] == "not_met"
    assert "differs between hosts" in lines["GPUs per node: 8 x h100-sxm"]["why"]
    assert j.verdict == "fail" and ("GPU count", "below_spec") in failing(j), j.headline


# -- the spec: 80% of the advertised figure passes ------------------------------------------
@pytest.mark.parametrize(("busbw", "verdict"), [(80.5, "pass"), (79.5, "fail")])
def test_the_spec_threshold_is_80_percent(busbw: float, verdict: str) -> None:
    # 100 GB/s promised x 0.80 = 80 GB/s: 80.5 is inside, 79.5 outside
    spec = parse_spec({"name": "s", "network": {"intra_node": {"GBps": 100}}}, "spec.yaml")
    j = judge(evidence(flat("intra-node", "all_reduce", busbw)), spec, scope="node")
    assert j.verdict == verdict, j.headline
    assert [(f.measured, f.expected) for f in j.findings] == [(busbw, 100.0)]


@pytest.mark.parametrize("figure", [{"write_GBps": 10}, {}], ids=["with-a-figure", "a-path-alone"])
def test_a_measured_storage_promise_is_a_line_of_coverage(figure: dict[str, float]) -> None:
    spec = parse_spec({"name": "s", "storage": [{"path": "/data", "kind": "shared", **figure}]}, "s.yaml")
    j = judge(evidence(io=[io("checkpoint_write", "write", "/data", 9.0)]), spec)
    assert j.coverage["coverage"] == [
        {"what": "shared storage /data", "status": "measured", "why": "", "how": ""}
    ]
    if figure:
        assert j.verdict == "pass", j.headline  # 9 of 10 GB/s: above 80%


@pytest.mark.parametrize(
    ("bw", "cached", "status", "why"),
    [
        (10.4, False, "ok", ""),  # 10.4 <= 1.05 x 10: a disk a little faster than its sheet
        (10.6, False, "suspect", "(more than advertised)"),  # past 105% of the advertised figure
        (9.0, True, "suspect", "(the page cache answered (direct IO off or files too small))"),
    ],
)
def test_storage_above_its_sheet_or_from_the_cache_is_suspect(
    bw: float, cached: bool, status: str, why: str
) -> None:
    spec = parse_spec(
        {"name": "s", "storage": [{"path": "/data", "kind": "shared", "write_GBps": 10}]}, "s.yaml"
    )
    j = judge(evidence(io=[io("checkpoint_write", "write", "/data", bw, cache_suspect=cached)]), spec)
    (f,) = [f for f in j.findings if f.component == "shared storage"]
    assert f.status == status and why in f.message, f.message
    assert j.verdict == ("pass" if status == "ok" else "unjudged"), j.headline


# -- the baseline: 15% under the accepted figure is a regression ----------------------------
TWO = ("n1", "n2")


def _accepted(recs: Sequence[NetRecord], io_recs: Sequence[IoRecord] = ()) -> bl.Baseline:
    ev = evidence(recs, io_recs)
    return bl.make("r0", "2026-11-01T00:00:00Z", baseline_figures(ev))


@pytest.mark.parametrize(("busbw", "status"), [(85.5, "ok"), (84.5, "regression")])
def test_the_baseline_tolerance_is_15_percent(busbw: float, status: str) -> None:
    # accepted at 100 GB/s with no spread: 100 x (1 - 0.15) = 85 is the floor
    b = _accepted(flat("world", "all_reduce", 100.0, TWO))
    j = judge(evidence(flat("world", "all_reduce", busbw, TWO)), None, baseline=b)
    got = [(f.status, f.measured, f.expected) for f in j.findings if f.check.startswith("baseline:")]
    assert got == [(status, busbw, 100.0)]
    (msg,) = [f.message for f in j.findings if f.check.startswith("baseline:")]
    # a figure of no one host: its sentence starts with the figure, no host name before it
    assert msg.startswith(f"inter-node all_reduce busbw: {busbw:.3g} GB/s against 100 accepted (run r0), "), (
        msg
    )
    assert j.verdict == ("fail" if status == "regression" else "pass"), j.headline


def test_a_page_cache_storage_figure_is_never_accepted() -> None:
    # accepted run: /data "wrote" 50 GB/s from the page cache; this run writes 10 GB/s for real.
    # The cached 50 is no figure of the storage: nothing to judge against, no regression (the
    # baseline says it matches no figure of this run, which fails nothing).
    b = _accepted([], [io("checkpoint_write", "write", "/data", 50.0, cache_suspect=True)])
    j = judge(evidence(io=[io("checkpoint_write", "write", "/data", 10.0)]), None, baseline=b)
    assert [f.status for f in j.findings if f.check.startswith("baseline:")] == ["no_reference"]
    assert j.verdict != "fail", j.headline
    # the same figure measured without the cache is accepted, and 10 against 50 is a regression
    b = _accepted([], [io("checkpoint_write", "write", "/data", 50.0)])
    j = judge(evidence(io=[io("checkpoint_write", "write", "/data", 10.0)]), None, baseline=b)
    assert j.verdict == "fail" and ("baseline: checkpoint_write write on /data", "regression") in failing(j)


def test_a_scratch_dir_is_never_judged_against_another_path() -> None:
    # a check writes in its own scratch dir: another disk's accepted figure is not its figure,
    # whether the baseline accepted one path (/fast at 50) or two (/fast, /slow at 10)
    scratch = io("checkpoint_write", "write", "/tmp/.io-scratch-x", 9.0)
    for accepted in (
        [io("checkpoint_write", "write", "/fast", 50.0)],
        [io("checkpoint_write", "write", "/fast", 50.0), io("checkpoint_write", "write", "/slow", 10.0)],
    ):
        j = judge(evidence(io=[scratch]), None, baseline=_accepted([], accepted))
        assert [f.status for f in j.findings if f.check.startswith("baseline:")] == ["no_reference"]
        assert j.verdict != "fail", failing(j)


# -- a soak: the dip and the drift ----------------------------------------------------------
def _pass(k: int, bw: float) -> NetRecord:
    """One soak pass of a two-node world all_reduce (one op and size: its ratio to its own median
    is the series' value)."""
    return NetRecord(
        run_id="r",
        ts=f"2026-11-24T00:{k:02d}:00Z",
        hosts=TWO,
        nodes=2,
        op="all_reduce",
        scope="world",
        ranks=2,
        backend="gloo",
        dtype="float32",
        bytes=4 << 20,
        time_s=0.1,
        algbw_GBps=bw,
        busbw_GBps=bw,
        wrong=0,
        extra={"soak_pass": k},
    )


def _soak(values: Sequence[float], counters: Sequence[dict[str, Any]] = ()) -> Judgement:
    return judge(evidence([_pass(k, v) for k, v in enumerate(values, 1)], counters=list(counters)))


@pytest.mark.parametrize(("low", "verdict"), [(0.655, "unjudged"), (0.645, "fail")])
def test_a_dip_is_two_passes_under_65_percent_of_the_median(low: float, verdict: str) -> None:
    # 8 passes at 1.0, passes 5-6 at `low`: the median is 1.0, the line at 0.65
    j = _soak([1.0] * 4 + [low, low] + [1.0] * 4)
    assert j.verdict == verdict, j.headline
    if verdict == "fail":
        assert failing(j) == [("stability", "unstable")]
        assert "passes 5-6" in [f.message for f in j.findings if f.status == "unstable"][0]


@pytest.mark.parametrize(("fall", "verdict"), [(0.245, "unjudged"), (0.255, "fail")])
def test_a_drift_is_a_fall_of_25_percent_over_the_soak(fall: float, verdict: str) -> None:
    # 10 passes on a straight line from 1.0 down to 1 - fall: the least-squares line is the line
    # itself, so the drift is -fall (no pass is under 65% of the median: no dip)
    j = _soak([1.0 - fall * k / 9 for k in range(10)])
    assert j.verdict == verdict, j.headline
    if verdict == "fail":
        assert failing(j) == [("stability", "unstable")]
        assert [f.message for f in j.findings if f.status == "unstable"][0].startswith(
            "world busbw drifted -"
        )


def _crc(k: int) -> dict[str, Any]:
    return {
        "kind": "counter",
        "soak_pass": k,
        "host": "n1",
        "device": "eth0",
        "counter": "rx_crc_errors",
        "value": 5,
        "delta": 5,
        "severity": "error",
    }


@pytest.mark.parametrize(("k", "tied"), [(7, True), (8, False)])
def test_a_counter_read_one_pass_after_a_dip_is_tied_to_it(k: int, tied: bool) -> None:
    # the dip is passes 5-6; a counter is read after the pass it rose in, so pass 7 is the dip's
    # (one finding: the port, with the dip), pass 8 is not (two findings: the dip, the port)
    j = _soak([1.0] * 4 + [0.5, 0.5] + [1.0] * 4, [_crc(k)])
    unstable = [f for f in j.findings if f.status == "unstable"]
    assert j.verdict == "fail"
    (port,) = [f for f in unstable if f.component == "network port"]
    # the port's finding carries the counter records it read: the one +5 on n1's eth0
    assert (port.hosts, port.measured, port.extra["device"]) == (("n1",), 5.0, "eth0")
    assert port.extra["counters"] == [_crc(k)]
    if tied:
        assert [f.component for f in unstable] == ["network port"]
        assert "world busbw fell to 50% of its median then" in unstable[0].message
    else:
        assert sorted(f.component for f in unstable) == ["inter-node network", "network port"]


def test_a_gpu_counter_rising_in_a_soak_is_a_gpu_finding() -> None:
    # a steady soak (no dip) and n1's gpu0 counting 3 ECC errors in pass 4: one unstable
    # finding, its component the GPU (the device's name says it), not a network port
    ecc = {**_crc(4), "device": "gpu0", "counter": "ecc_uncorrected", "value": 3, "delta": 3}
    j = _soak([1.0] * 10, [ecc])
    assert [(f.component, f.hosts, f.measured) for f in j.findings if f.status == "unstable"] == [
        ("gpu", ("n1",), 3.0)
    ]
    assert j.verdict == "fail", j.headline


# -- compute: the slowest GPU sets the pace, a slow GPU is compared with its own node ---------
def _gpu(host: str, gpu: int, tflops: float) -> dict[str, Any]:
    """A compute record as stoker compute writes it (hand-written; the fields judging reads)."""
    return {
        "schema": 1,
        "kind": "compute",
        "run_id": "r",
        "ts": "2026-11-24T00:00:00Z",
        "host": host,
        "gpu": gpu,
        "proc": gpu,
        "name": H100,
        "dtype": "bf16",
        "median_tflops": tflops,
        "mean_tflops": tflops,
    }


def test_the_model_takes_the_slowest_gpu() -> None:
    # 7 GPUs at 800 TFLOPS and one at 760: data-parallel training waits for the slowest, so by
    # hand the step's compute is 6 x 8e9 params x 1e6 tokens / (8 GPUs x 760e12 x 0.5 MFU)
    recs = [_gpu("a", g, 800.0) for g in range(7)] + [_gpu("a", 7, 760.0)]
    w = Workload(name="w", params=8e9, gpus=8, global_batch_tokens=1e6, dtype="bf16", data="ddp")
    j = judge(evidence(compute=recs), None, w)
    assert j.model_summary["compute_s"] == pytest.approx(6 * 8e9 * 1e6 / (8 * 760e12 * 0.5))
    assert j.model_summary["compute_s"] == pytest.approx(15.789, abs=1e-3)


def test_a_slow_gpu_is_compared_with_its_own_node() -> None:
    # node a: 8 GPUs at 1000; node b: 7 at 700 and GPU 7 at 600. Against the fleet (median 850,
    # wide spread) nothing stands out; against b's own 700, GPU 7 is 14% slower: past the 10% gap
    recs = (
        [_gpu("a", g, 1000.0) for g in range(8)]
        + [_gpu("b", g, 700.0) for g in range(7)]
        + [_gpu("b", 7, 600.0)]
    )
    j = judge(evidence(compute=recs))
    slow = [
        (f.hosts, f.measured, f.expected, f.extra["basis"]) for f in j.findings if f.status == "below_spec"
    ]
    assert slow == [(("b",), 600.0, 700.0, "node")]
    assert j.verdict == "fail", j.headline


@pytest.mark.parametrize(("per_host", "per_node"), [({"n1": 5.0}, 5.0), ({"n1": 2.5, "n2": 2.5}, 2.5)])
def test_the_dataloader_is_judged_on_each_nodes_share(per_host: dict[str, float], per_node: float) -> None:
    # 5 GB/s read in all: by hand 5 / 1 node = 5 GB/s per node, 5 / 2 nodes = 2.5
    w = parse_workload({"preset": "llama-8b", "gpus": 8, "compute_s": 2.0}, "w.yaml")
    j = judge(evidence(io=[io("dataloader_read", "read", "/data", 5.0, per_host=per_host)]), None, w)
    assert [(r.achieved, r.unit) for r in j.model if r.part == "dataloader"] == [(per_node, "GB/s per node")]


# -- localisation: the groups search's culprit reaches the verdict -------------------------
def test_the_groups_search_culprit_fails_the_run() -> None:
    # 8 nodes at 10 GB/s, h5 at 2.5: a group runs at its slowest member (the search itself is
    # reports.evidence.groups; what it recorded is judged)
    rate = {f"h{i}": 10.0 for i in range(8)} | {"h5": 2.5}

    def measure(groups: list[Group]) -> list[float]:
        return [min(rate[h] for h in g) for g in groups]

    run = group_search(list(rate), measure)
    recs = [
        NetRecord(
            run_id="r",
            ts="2026-11-24T00:00:00Z",
            hosts=g,
            nodes=len(g),
            op="all_reduce",
            scope="groups",
            ranks=len(g),
            backend="gloo",
            dtype="float32",
            bytes=1 << 22,
            time_s=1.0,
            algbw_GBps=v,
            busbw_GBps=v,
            wrong=0,
            group=i,
            extra={"round": k},
        )
        for k, rnd in enumerate(run.history)
        for i, (g, v) in enumerate(rnd)
    ]
    j = judge(evidence(recs))
    assert j.verdict == "fail", j.headline
    assert [
        (f.component, f.hosts, f.measured, f.expected) for f in j.findings if f.status == "below_spec"
    ] == [("node", ("h5",), 2.5, 10.0)]


# -- the findings' fields and the model's inputs that mutmut's sample found unchecked ---------
def test_a_gpu_fleets_matmul_figure_is_set_against_its_peak_and_mamf() -> None:
    # 8 H100 SXM at 600 TFLOPS bf16: by hand 600 / 989 (the dense peak) = 0.6067, and 600 is
    # under 80% of the 794.5 a healthy one reaches (635.6): below spec
    j = judge(evidence(compute=[_gpu("a", g, 600.0) for g in range(8)]))
    (f,) = [f for f in j.findings if f.check == "matmul TFLOPS vs peak (bf16)"]
    assert (f.status, f.measured, f.expected, f.unit) == ("below_spec", 600.0, pytest.approx(635.6), "TFLOPS")
    assert f.extra == {"peak_tflops": 989, "mamf_tflops": 794.5, "share_of_peak": 0.6067}


def _port(device: str, *, rate: float = 400.0, pcie: dict[str, Any] | None = None) -> dict[str, Any]:
    """A network port as stoker inventory writes it (hand-written: the fields judging reads)."""
    return {
        "schema": 1,
        "kind": "host",
        "run_id": "r",
        "host": "n1",
        "component": "network port",
        "device": device,
        "port": 1,
        "state": "ACTIVE",
        "phys_state": "LinkUp",
        "rate_Gbps": rate,
        "link_layer": "InfiniBand",
        "pcie": pcie or {},
    }


def test_fewer_full_rate_ports_than_the_spec_advertises_and_a_narrow_pcie_link() -> None:
    # the spec: 8 x NDR (50 GB/s each) per node; n1 shows 4 NDR ports, one of them on a PCIe
    # link trained at Gen4 x8 where its slot does Gen5 x16
    narrow = {"bus_id": "0000:0c:00.0", "gen": 4, "max_gen": 5, "width": 8, "max_width": 16}
    ports = [_port(f"mlx5_{i}") for i in range(3)] + [_port("mlx5_3", pcie=narrow)]
    spec = parse_spec({"name": "s", "network": {"inter_node": {"link": "ib-ndr", "count": 8}}}, "spec.yaml")
    j = judge(evidence(host=ports), spec, scope="node")
    by_check = {f.check: f for f in j.findings if f.status == "below_spec"}
    fabric = by_check["ports vs advertised fabric"]
    assert (fabric.measured, fabric.expected, fabric.unit, fabric.hosts) == (4.0, 8.0, "ports", ("n1",))
    pcie = by_check["pcie link trained"]
    assert (pcie.measured, pcie.expected, pcie.unit) == (8.0, 16.0, "lanes")
    assert pcie.message == (
        "n1 mlx5_3 port 1: PCIe link trained at Gen4 x8, should be Gen5 x16; "
        "reseat the card or check its slot and riser, then reboot and re-read."
    )


def test_the_dataloader_waits_for_a_measured_host_link_slower_than_its_storage() -> None:
    # storage delivers 5 GB/s per node; each of the node's 8 GPUs copies at 0.5 GB/s pinned
    # host-to-device: by hand the samples reach the GPUs at 8 x 0.5 = 4 GB/s, the slower leg
    link = {
        "schema": 1,
        "kind": "host",
        "run_id": "r",
        "host": "n1",
        "component": "host link",
        "device": "GPU0",
        "gpu": 0,
        "h2d_pinned_GBps": 0.5,
        "d2h_pinned_GBps": 0.5,
    }
    w = parse_workload({"preset": "llama-8b", "gpus": 8, "compute_s": 2.0}, "w.yaml")
    ev = evidence(io=[io("dataloader_read", "read", "/data", 5.0, per_host={"n1": 5.0})], host=[link])
    (row,) = [r for r in judge(ev, None, w).model if r.part == "dataloader"]
    assert (row.achieved, row.unit) == (4.0, "GB/s per node")


def test_a_phase_left_out_on_purpose_is_named_in_the_coverage() -> None:
    spec = parse_spec(
        {
            "name": "s",
            "network": {"intra_node": {"GBps": 100}},
            "storage": [{"path": "/ckpt", "kind": "shared", "write_GBps": 5}],
        },
        "spec.yaml",
    )
    j = judge(evidence(flat("intra-node", "all_reduce", 90.0)), spec, skipped=["storage"])
    (line,) = [c for c in j.coverage["coverage"] if "/ckpt" in c["what"]]
    assert line["why"] == "the storage phase was left out (--skip storage)"


@pytest.mark.parametrize(("fmt", "blocking"), [("torch.save", True), ("dcp", True), ("async", False)])
def test_only_an_async_checkpoint_format_saves_in_the_background(fmt: str, blocking: bool) -> None:
    w = parse_workload(
        {"preset": "llama-8b", "gpus": 8, "compute_s": 2.0, "checkpoint": {"format": fmt}}, "w.yaml"
    )
    assert w.checkpoint is not None and w.checkpoint.async_ is (not blocking)


@pytest.mark.parametrize(("gpus", "accepted"), [(1024, True), (1025, False)])
def test_gpus_per_node_is_plausible_up_to_1024(gpus: int, accepted: bool) -> None:
    # reports/shared/plausible.py: at most 1024 GPUs per node; exactly 1024 is accepted
    from reports.shared.errors import UsageError

    raw = {"name": "s", "gpus_per_node": gpus, "network": {"intra_node": {"GBps": 100}}}
    if accepted:
        assert parse_spec(raw, "spec.yaml").gpus_per_node == gpus
    else:
        with pytest.raises(UsageError, match="at most 1024"):
            parse_spec(raw, "spec.yaml")


def test_a_workload_setting_of_the_wrong_kind_is_named_in_its_one_line_error() -> None:
    from reports.shared.errors import UsageError

    with pytest.raises(UsageError) as e:
        parse_workload({"preset": "llama-8b", "gpus": 8, "compute_s": 2.0, "accelerator": 42}, "w.yaml")
    assert str(e.value) == "w.yaml: accelerator: expected a name, got 42"
