"""The acceptance job's plan (launchers/plan.py): its phases, commands, limits and expected
times, made once from the options. Every expected value below is worked out by hand from the
profile and the duration model's stated figures (launchers/duration.py: the CPU bed's 13 s
start-up and 1 GB/s, 30 s per storage path), not read back from the code."""

from __future__ import annotations

from launchers.plan import JobOptions, job_plan
from launchers.profiles import get_profile

QUICK = get_profile("quick")  # net 180 s, io 180 s, report 120 s; 64K..4M x4, 5 + 2 iters; 64M, 3 s runs


def test_two_node_quick_cpu_phases_by_hand() -> None:
    plan = job_plan(JobOptions(profile=QUICK, nodes=2))
    got = [(p.name, p.tasks, p.across, p.limit_s, p.expected_s) for p in plan.phases]
    # two nodes are the profiles' own size: each limit is the profile's, or 1.5 x the expected time
    assert got == [
        ("preflight", "node", False, 120, 28),  # 13 s start-up + 15 s of stoker check
        ("inventory", "node", False, 120, 13),  # the start-up
        ("compute", "node", False, 200, 33),  # 20 s budget + 120 + 60 = 200; 200 - 60 - 120 + 13 = 33
        # 13 + 3 ops x 7 iters x 2 x (64K + 256K + 1M + 4M = 5,570,560 B) at 1 GB/s = 13.23 s
        ("intra-node", "rank", False, 180, 14),
        ("inter-node", "rank", True, 180, 14),  # 13 + (1 world + 2 rails) x 0.234 s = 13.70 s
        ("pairs", "rank", True, 180, 16),  # 13 + 1 round x (2 s + 7 x 4 MiB at 1 GB/s) = 15.03 s
        # 8 writers (no GPUs), 64 MiB each; per path 30 + 2 x (1 + 3) = 38 s; a node moves
        # fio's 2 x 8 x 64 MiB and the saves' 2 kinds x 3 repeats x 1.5 x (1 + 8) x 64 MiB =
        # 1,073,741,824 + 5,435,817,984 = 6,509,559,808 B; local 38 + 6.51 s at 1 GB/s = 44.51 s,
        # shared 38 + 2 nodes x 6.51 = 51.02 s; 95.53 s
        ("storage", "node", False, 180, 96),
        ("report", "node", False, 120, 10),
    ]
    assert [p.scopes for p in plan.net] == [("intra-node",), ("world", "inter-node"), ("pairs",)]
    # (120 + 120) x 2 + (200 + 120) + 4 x (180 + 120) + 120 report + 300 margin = 2420 s
    assert plan.job_limit_s == 2420
    assert plan.soak is None and plan.run_phases() == plan.phases


def test_each_command_carries_its_phases_one_limit() -> None:
    plan = job_plan(
        JobOptions(profile=QUICK, nodes=2, spec="/s.yaml", more_local=("/l2",), more_shared=("/s2",))
    )
    pairs = list(plan.phase("pairs").argv)
    assert pairs[pairs.index("--timeout") + 1] == "180" and pairs[pairs.index("--scopes") + 1] == "pairs"
    storage = plan.phase("storage")
    io = list(storage.argv)
    paths = [io[i + 1] for i, t in enumerate(io) if t == "--path"]
    assert paths == ["$LOCAL_IO", "$SHARED_IO", "/l2", "/s2"] and storage.dirs == tuple(paths)
    assert io[io.index("--timeout") + 1] == str(storage.limit_s)
    assert io[io.index("--ckpt-bytes") + 1] == "64M"  # 2 x 8 x 64 MiB: far under the 1 TiB cap
    assert list(plan.phase("preflight").argv) == ["stoker", "preflight", *paths, "--spec", "/s.yaml"]
    assert plan.phase("report").argv == ("stoker", "report", "$OUT", "--spec", "/s.yaml", "--fail-unjudged")


def test_the_spec_s_further_paths_lengthen_storage_but_not_the_job_limit() -> None:
    plan = job_plan(JobOptions(profile=QUICK, nodes=2, more_shared=("/s2",)))
    # 44.51 + 2 x 51.02 = 146.55 s expected; 1.5 x that = 219.8 s, over the profile's 180
    assert (plan.limit_of("storage"), plan.phase("storage").expected_s) == (220, 147)
    # the job's limit counts one local and one shared path, as the cloud jobs and scripts test
    assert plan.job_limit_s == 2420


def test_a_soak_runs_in_place_of_the_sweeps() -> None:
    plan = job_plan(JobOptions(profile=QUICK, nodes=4, soak_s=600))
    assert plan.soak is not None
    assert [p.name for p in plan.run_phases()] == [
        "preflight",
        "inventory",
        "compute",
        "soak",
        "storage",
        "report",
    ]
    # the last pass may start just before the end: the soak and one net phase's limit
    assert plan.soak.limit_s == 600 + 180 and plan.soak.tasks == "rank"
    soak = list(plan.soak.argv)
    assert soak[soak.index("--scopes") + 1] == "intra-node,world,inter-node,pairs"
    assert soak[-2:] == ["--soak", "600"]
    assert plan.job_limit_s == job_plan(JobOptions(profile=QUICK, nodes=4)).job_limit_s + 600


def test_one_node_has_no_phase_between_nodes() -> None:
    plan = job_plan(JobOptions(profile=QUICK, nodes=1))
    assert [p.name for p in plan.net] == ["intra-node"]
    assert not any(p.across for p in plan.phases)


def test_the_shared_cap_shrinks_the_shard_at_scale() -> None:
    plan = job_plan(JobOptions(profile=get_profile("standard"), nodes=256, gpus_per_node=8))
    # 256 nodes x 8 writers (one per GPU) x 4 GiB = 8 TiB; 1 TiB / 2048 writers = 512 MiB
    assert (plan.sizes.writers, plan.sizes.shard_bytes, plan.ckpt_bytes) == (8, 512 << 20, "512M")
    io = list(plan.phase("storage").argv)
    assert io[io.index("--ckpt-bytes") + 1] == "512M" and io[io.index("--writers") + 1] == "8"
    assert [p.name for p in plan.net] == ["intra-node", "inter-node", "groups"]  # above 64 nodes
    # at 256 nodes every net phase's limit has grown past the standard profile's 600 s
    assert all(p.limit_s > 600 for p in plan.net)
