"""Shared test helpers: the markers and the helper for tests that need the house's beds (root,
network namespaces, Slurm, fio, Open MPI, ...), and the CI settings.

Under CI=true (.ci/run sets it) a test whose bed is missing FAILS instead of skipping, so a
CI machine that lacks root, namespaces, Slurm or fio cannot go green on skips; and
hypothesis runs derandomized (the same examples every run). Optional extras (the SkyPilot and
dstack parsers, a GPU) stay skips everywhere: use pytest.skip/importorskip for those.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Generator
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import settings

from tests.harness import bed_order, bedlock, stop

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
# The interpreter running the tests; subprocesses use the same one (and its venv).
PYTHON = sys.executable
STOKER = [PYTHON, "-m", "launchers.cli"]

CI = os.environ.get("CI", "").lower() == "true"
_RESTORE_SIGNALS = pytest.StashKey[Callable[[], None]]()
_RUN_DIR = pytest.StashKey[Path]()
_OWN_RUN_DIR = pytest.StashKey[bool]()
IS_ROOT = os.geteuid() == 0

# the same examples on every CI run: a red CI is reproducible, a green one not luck
# (hypothesis loads a profile of its own when it sees a CI variable; this one does not
# depend on which variables it knows)
settings.register_profile("stoker-ci", derandomize=True, database=None, print_blob=True)
# under mutmut (benchmarks/mutation.py) too: a mapping run or a mutant's verdict must not hang
# on a random example (a mapping run stopped at one that a later fix made pass)
if CI or "MUTANT_UNDER_TEST" in os.environ:
    settings.load_profile("stoker-ci")


def _mutmut_children_run_the_originals() -> None:
    """Under mutmut's mapping run (MUTANT_UNDER_TEST=stats, benchmarks/mutation.py) a
    `stoker` child started with its working directory outside mutants/ (a dry run in
    tmp_path) reaches a mutated module, whose trampoline then looks for mutmut's
    configuration in that directory and fails. The mapping cannot see a child's calls
    anyway, so the mode stays with this process (mutmut's process-local copy) and children
    run the original code. A mutant's own run (MUTANT_UNDER_TEST=module.name) is left as it
    is: its children run the mutant, and need no configuration for it."""
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test("stats")
    del os.environ["MUTANT_UNDER_TEST"]


_mutmut_children_run_the_originals()


def ctrl_c_default() -> None:
    """A Popen preexec_fn for a child the test will Ctrl-C: SIGINT back to its default. A
    shell starts background jobs with SIGINT ignored, children inherit that, and Python then
    installs no KeyboardInterrupt handler: a suite run as `pytest ... &` would see the child
    run to its end instead of stopping (two tests failed so)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bed_missing(reason: str) -> NoReturn:
    """End a test whose bed is missing here: a skip on a developer's machine, a failure under
    CI=true (where install.sh provides every bed, so a missing one is a broken CI machine)."""
    if CI:
        pytest.fail(f"CI=true and this test's bed is missing: {reason}", pytrace=False)
    pytest.skip(reason)


def _needs(missing: bool, reason: str) -> pytest.MarkDecorator:
    return pytest.mark.needs_bed(missing=missing, reason=reason)


needs_root = _needs(not IS_ROOT, "needs root (namespaces, loop devices, SLURM daemons); runs in CI")


def needs_tool(name: str) -> pytest.MarkDecorator:
    return _needs(shutil.which(name) is None, f"{name} not installed (./install.sh installs it as root)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "needs_bed(missing, reason): the test needs root or a tool; skip (fail under CI=true)"
    )
    config.addinivalue_line(
        "markers",
        "alone: a bed test that runs while no other bed test runs (the bed tier's two xdist workers, "
        "tests/harness/bedlock.py)",
    )
    config.pluginmanager.register(BedProgress(config), "stoker-bed-progress")
    # `--dist loadfile` hands the files out in the order the items are in, the longest bed
    # first (pytest_collection_modifyitems), not xdist's own (the most tests first)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    # the run's directory of bed locks (tests/harness/bedlock.py): made by the controller (or a
    # plain pytest), inherited by the xdist workers through the environment
    if is_xdist_worker(config) and bedlock.RUN_DIR_ENV in os.environ:
        run_dir = Path(os.environ[bedlock.RUN_DIR_ENV])
        bedlock.busy_file(run_dir).touch()
        config.stash[_OWN_RUN_DIR] = False
    else:
        run_dir = Path(tempfile.mkdtemp(prefix="stoker-beds-"))
        os.environ[bedlock.RUN_DIR_ENV] = str(run_dir)
        config.stash[_OWN_RUN_DIR] = True
    config.stash[_RUN_DIR] = run_dir
    # SIGTERM and SIGINT stop every process the suite started, then tear the beds down
    # (tests/harness/stop.py); put back at the end. An xdist controller hands the signal to its
    # workers, which stop their own processes and tear their own beds down, and waits for them.
    config.stash[_RESTORE_SIGNALS] = stop.install(
        workers=lambda: bedlock.busy_workers(run_dir) if config.pluginmanager.hasplugin("dsession") else []
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    restore = config.stash.get(_RESTORE_SIGNALS, None)
    if restore is not None:
        restore()
    run_dir = config.stash.get(_RUN_DIR, None)
    if run_dir is not None:
        if config.stash.get(_OWN_RUN_DIR, False):
            shutil.rmtree(run_dir, ignore_errors=True)
        else:  # a worker: its session, and every bed of it, has ended
            bedlock.busy_file(run_dir).unlink(missing_ok=True)


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


# The tiers (docs/testing.md): a test is `bed` when it builds or needs a bed (it lives in one of
# these directories, which run real measurement processes, or it is marked needs_bed);
# `pytest -m "not bed"` runs the rest, the pure and light tests, in minutes.
BED_DIRS = ("integration", "validation")


def is_bed(item: pytest.Item) -> bool:
    path = Path(str(item.path)).resolve()
    tests = REPO / "tests"
    under = path.relative_to(tests).parts[0] if path.is_relative_to(tests) else ""
    return under in BED_DIRS or item.get_closest_marker("needs_bed") is not None


# tests/validation compares stoker's prediction with a real job on the same bed (training's
# compute on the CPU, a checkpoint's save): a second worker's load would skew one and not the other
ALONE_DIRS = ("validation",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not is_bed(item):
            continue
        if item.get_closest_marker("bed") is None:
            item.add_marker(pytest.mark.bed)
        under = Path(str(item.path)).resolve().relative_to(REPO / "tests").parts[0]
        if under in ALONE_DIRS and item.get_closest_marker("alone") is None:
            item.add_marker(pytest.mark.alone)
    # the bed files after the rest, those of `alone` tests first, then the longest first
    # (tests/harness/bed_order.py), each file's tests together and in their own order
    beds = {id(i) for i in items if i.get_closest_marker("bed") is not None}  # marked just above
    alone = {_file(i) for i in items if id(i) in beds and i.get_closest_marker("alone") is not None}
    files = bed_order.longest_first(list(dict.fromkeys(_file(i) for i in items if id(i) in beds)), alone)
    rank = {f: n for n, f in enumerate(files)}
    items[:] = sorted(items, key=lambda i: rank[_file(i)] if id(i) in beds else -1)


def _file(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """On an xdist worker, a bed test (its setup, call and teardown, so a module's bed brought
    up or torn down with it) holds the run's bed lock: shared, or alone (tests/harness/bedlock.py)."""
    run_dir = item.config.stash.get(_RUN_DIR, None)
    if run_dir is None or not is_xdist_worker(item.config) or item.get_closest_marker("bed") is None:
        return (yield)
    with bedlock.bed_turn(run_dir, alone=item.get_closest_marker("alone") is not None):
        return (yield)


class BedProgress:
    """A bed test runs for seconds to minutes: a quiet (-q) run prints its name as it starts
    (its outcome and the progress follow on that line, as -v shows them), so the run says what
    it is doing instead of printing dots for minutes; --durations gives the times. Under xdist
    (the bed tier's two workers) two tests run at once and the controller collects nothing:
    each bed test gets a line when it ends instead, with its worker, outcome and seconds."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.beds: set[str] = set()
        self.spent: dict[str, tuple[float, str]] = {}  # xdist: nodeid -> (seconds, outcome) so far

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.beds = {i.nodeid for i in session.items if i.get_closest_marker("bed") is not None}

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if nodeid in self.beds and tr is not None and self.config.get_verbosity() <= 0:  # -v names each
            tr.ensure_newline()
            tr.write(f"bed: {nodeid} ", flush=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        worker = getattr(report, "node", None)  # set on the controller's copy of a worker's report
        if worker is None or "bed" not in report.keywords or tr is None or self.config.get_verbosity() > 0:
            return
        seconds, outcome = self.spent.pop(report.nodeid, (0.0, "passed"))
        seconds += report.duration
        if report.outcome != "passed" and outcome == "passed":
            outcome = f"{report.outcome} at {report.when}" if report.when != "call" else report.outcome
        if report.when != "teardown":
            self.spent[report.nodeid] = (seconds, outcome)
            return
        tr.ensure_newline()
        name = getattr(worker, "gateway", None)
        tr.write_line(f"bed: {report.nodeid} {outcome} ({seconds:.1f} s, {getattr(name, 'id', '?')})")


@pytest.hookimpl(tryfirst=True)  # before any fixture builds a bed (a Slurm cluster, namespaces)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_bed"):
        if mark.kwargs["missing"]:
            bed_missing(mark.kwargs["reason"])


@pytest.fixture
def data_dir() -> Path:
    return DATA
