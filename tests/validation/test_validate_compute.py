"""The model's compute time from `stoker compute` records (issue 27) against the bed's real DDP
step (tests/validation/ddp_worker.py, 2 gloo ranks on loopback, one thread each): the workload has
no compute_s, so the model takes the measured appetite. The bound is ±30%: with
matmul_efficiency 1.0 (an MLP is Linear layers only) the prediction runs ~20% short, the step's
ReLU, bias, loss and SGD work beside its GEMMs (docs/model.md, the compute rows of the table). Both sides on CPU clocks
(the sweep's process, the step's training thread): the 2 cores are shared with other jobs, whose
share of the wall clock is no property of the step. Needs no root: no network is shaped."""

from __future__ import annotations

from pathlib import Path

from tests.validation import compute_bed


def test_compute_time_from_stoker_compute_within_30_percent(tmp_path: Path) -> None:
    recs = compute_bed.stoker_compute(tmp_path / "compute", ranks=2, budget_s=8.0)
    t = compute_bed.train_local(29790, batch=4000, ranks=2, steps=4)
    predicted, how = compute_bed.predict_compute(recs, params=t.params, ranks=2, batch=4000)
    err = (predicted - t.compute_cpu_s) / t.compute_cpu_s
    print(
        f"compute: real {t.compute_cpu_s:.3f} s CPU ({t.compute_s:.3f} s wall), predicted {predicted:.3f} s ({err:+.0%}); {how}"
    )
    assert abs(err) <= 0.30, (t, predicted, how)
