"""The graph path against nccl-tests -G on a scripted backend: the first launch (which uploads
the graph) is timed, as nccl-tests 2.19.6's BenchTime does (src/common.cu: `tim.reset()` right
before the `cudaGraphLaunch` loop, the elapsed time divided by iters x launches); a capture that
fails inside NCCL ends the run instead of an eager fallback on a communicator in error; the
torch version guard and the GPU identity of a UUID-less device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from netbench.harness import GRAPH_REPLAYS
from reports.shared.errors import MeasurementAborted
from tests.unit.test_graph_timing import GRAPH_OP_S, MARK_S, GraphBackend, measure_graph

UPLOAD_S = 50e-6  # what the scripted first launch adds: the graph's upload


class UploadingBackend(GraphBackend):
    def capture(self, op: Callable[[], object], iters: int) -> Callable[[], object] | None:
        inner = super().capture(op, iters)
        assert inner is not None

        def replay() -> None:
            if self.replays == 0:
                self.clock[0] += UPLOAD_S
            inner()

        return replay


def test_the_first_graph_launch_is_timed_as_nccl_tests_does() -> None:
    b = UploadingBackend()
    r = measure_graph(b, iters=10)
    assert b.replays == GRAPH_REPLAYS == 3
    # launches of 10 ops x 1 us plus a 2 us mark; the first also 50 us of upload:
    # per op (10+2+50)/10 = 6.2 us, then 1.2 us twice -> mean 8.6/3 us
    assert r.time_s == pytest.approx((6.2e-6 + 1.2e-6 + 1.2e-6) / 3)
    assert r.stats.min == pytest.approx((10 * GRAPH_OP_S + MARK_S) / 10)


class BrokenCommunicator(GraphBackend):
    def capture(self, op: Callable[[], object], iters: int) -> Any:
        raise MeasurementAborted("CUDA graph capture failed inside NCCL (...): rerun with --no-graph")


def test_a_capture_that_breaks_the_communicator_ends_the_run_not_an_eager_fallback() -> None:
    b = BrokenCommunicator()
    with pytest.raises(MeasurementAborted, match="--no-graph"):
        measure_graph(b)
    assert b.replays == 0 and b.eager_calls == 2  # the warm-up, and nothing timed after the failure


torch_dist = pytest.importorskip("netbench.backends.torch_dist")


@pytest.mark.parametrize(
    ("version", "refused"),
    [("2.5.1+cu124", True), ("2.4.0", True), ("2.6.0+cu126", False), ("2.13.0", False), ("2.10.1", False)],
)
def test_torch_older_than_2_6_is_refused_in_one_line_naming_the_torch_needed(
    version: str, refused: bool
) -> None:
    line = torch_dist.torch_refusal(version)
    assert bool(line) == refused
    if refused:
        assert "torch >= 2.6" in line and version in line and "\n" not in line


def test_sendrecv_is_not_captured_before_torch_2_7() -> None:
    assert "torch >= 2.7" in torch_dist.capture_refusal("2.6.0+cu126", "sendrecv")
    assert torch_dist.capture_refusal("2.7.0", "sendrecv") == ""
    assert torch_dist.capture_refusal("2.6.0", "all_reduce") == ""  # collectives capture on 2.6


def test_capture_abort_line_says_what_to_do() -> None:
    line = torch_dist.capture_abort(RuntimeError("NCCL error: unhandled cuda error\nmore"))
    assert line.startswith(
        "CUDA graph capture failed inside NCCL (RuntimeError: NCCL error: unhandled cuda error)"
    )
    assert line.endswith("rerun with --no-graph") and "\n" not in line


def test_a_device_without_a_uuid_is_named_by_its_pci_address() -> None:
    zero = "00000000-0000-0000-0000-000000000000"  # what a HIP device without one reports
    assert torch_dist.gpu_identity(zero, (0, 0xC1, 0)) == "0000:c1:00"
    assert torch_dist.gpu_identity(zero, (0, 0xC2, 0)) == "0000:c2:00"  # two GPUs stay two
    assert torch_dist.gpu_identity("", (1, 3, 0)) == "0001:03:00"
    assert torch_dist.gpu_identity("4f3c1a2b-0000-1111-2222-333344445555", (0, 1, 0)) == (
        "GPU-4f3c1a2b-0000-1111-2222-333344445555"
    )


class _Graph:
    def replay(self) -> None:
        pass


def _backend(monkeypatch: pytest.MonkeyPatch, bound: str, fail_inside: bool) -> Any:
    """A TorchBackend as __init__ leaves it on a GPU rank, without one: the CUDA calls capture()
    makes are replaced by a scripted graph that fails inside, as NCCL's error would."""
    torch = pytest.importorskip("torch")
    from contextlib import contextmanager

    @contextmanager
    def graph(g: Any, capture_error_mode: str = "") -> Any:
        yield g
        if fail_inside:
            raise RuntimeError("NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled cuda error\ndetail")

    monkeypatch.setattr(torch.cuda.nccl, "version", lambda: (2, 28, 9))
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _Graph)
    monkeypatch.setattr(torch.cuda, "graph", graph)
    b = object.__new__(torch_dist.TorchBackend)
    b._dev, b._bound = torch.device("cuda", 0), bound
    return b


def test_torch_capture_failing_inside_nccl_aborts_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    b = _backend(monkeypatch, "all_reduce", fail_inside=True)
    with pytest.raises(
        MeasurementAborted, match=r"^CUDA graph capture failed inside NCCL \(RuntimeError: NCCL error"
    ):
        b.capture(lambda: None, 4)


def test_torch_capture_of_sendrecv_before_2_7_is_ruled_out_beforehand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(torch_dist.torch, "__version__", "2.6.0+cu126")
    b = _backend(monkeypatch, "sendrecv", fail_inside=True)
    with pytest.raises(RuntimeError, match=r"needs torch >= 2.7") as err:
        b.capture(lambda: None, 4)
    assert not isinstance(err.value, MeasurementAborted)  # the harness times it eagerly
    assert _backend(monkeypatch, "all_reduce", fail_inside=False).capture(lambda: None, 4) is not None
