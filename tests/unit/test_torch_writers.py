"""How many processes save a checkpoint at once on a node (iobench.torch_ckpt.node_writers):
one per GPU the NVIDIA driver lists, else the run's --writers."""

from __future__ import annotations

from pathlib import Path

from iobench.torch_ckpt import node_writers


def test_one_saving_process_per_gpu(tmp_path: Path) -> None:
    gpus = tmp_path / "gpus"  # /proc/driver/nvidia/gpus holds one directory per GPU, named by PCI address
    gpus.mkdir()
    for i in range(8):
        (gpus / f"0000:{i:02x}:00.0").mkdir()
    assert node_writers(2, gpus) == 8


def test_without_gpus_the_writers_option_counts(tmp_path: Path) -> None:
    assert node_writers(2, tmp_path / "absent") == 2  # no NVIDIA driver: --writers (default 2..8 per core)
    empty = tmp_path / "gpus"
    empty.mkdir()
    assert node_writers(3, empty) == 3
    assert node_writers(0, empty) == 1


def test_repeated_saves_each_timed_at_two_sizes_and_one_shard_on_disk_at_a_time(tmp_path: Path) -> None:
    import pytest

    pytest.importorskip("torch")
    from iobench.torch_ckpt import save, save_many, sizes

    # a repeat saves half the shard (whole KiB), then the whole: 3 MiB -> 1.5 MiB, then 3 MiB
    assert sizes(3 << 20) == (1536 << 10, 3 << 20)
    assert sizes((1 << 20) + 1000) == (512 << 10, (1 << 20) + 1000)  # 524,788 B rounds down to 512 KiB
    one = save("torch.save", 3 << 20, tmp_path, "n1", repeats=3)
    assert [(s.bytes, b.bytes) for s, b in one] == [
        (1536 << 10, 3 << 20)
    ] * 3  # three repeats, two saves each
    flat = [r for pair in one for r in pair]
    assert all(r.end_s >= r.start_s for r in flat)
    assert all(a.end_s <= b.start_s for a, b in zip(flat, flat[1:]))  # one save after another
    assert [p.name for p in tmp_path.iterdir()] == ["torch_save.pt"]  # the last save's file only
    many = save_many("torch.dcp", 2 << 20, tmp_path / "m", "n1", writers=2, repeats=2)
    # 2 writers x (1 MiB, then 2 MiB), twice
    assert [((s.bytes, s.procs), (b.bytes, b.procs)) for s, b in many] == [((2 << 20, 2), (4 << 20, 2))] * 2


def test_each_save_starts_after_the_nodes_agree_and_a_failure_stops_them_all(tmp_path: Path) -> None:
    """The agreement (iobench.session: an all-gather of "still fine" over the nodes) is asked
    before every save, two per repeat; False from any node stops this one before its next
    save, and a node whose save failed says False at the next agreement, then raises its own
    error."""
    import pytest

    pytest.importorskip("torch")
    from iobench.torch_ckpt import save, save_many

    asked: list[bool] = []

    def agree(ok: bool) -> bool:
        asked.append(ok)
        return ok

    assert len(save("torch.save", 1 << 20, tmp_path, "n1", repeats=3, agree=agree)) == 3
    assert asked == [True] * 6  # 3 repeats of 2 saves
    # another node failed: the agreement before the third save (the second repeat's small one)
    # says so, this node stops with its one whole repeat
    answers = iter([True, True, False])
    got = save("torch.dcp", 1 << 20, tmp_path, "n1", repeats=3, agree=lambda ok: next(answers))
    assert len(got) == 1
    # ... and before the second save (the first repeat's large one): no whole repeat
    answers = iter([True, False])
    assert save("torch.dcp", 1 << 20, tmp_path, "n1", repeats=3, agree=lambda ok: next(answers)) == []
    # this node's writer cannot write (its directory is a file): False at the next agreement
    asked.clear()
    (tmp_path / "m").write_text("not a directory\n")
    with pytest.raises(OSError):
        save_many("torch.save", 1 << 20, tmp_path / "m", "n1", writers=2, repeats=3, agree=agree)
    assert asked == [True, False]  # the first save failed: said at the second agreement, no third
