"""Shared fixtures: fixture trees, real loop devices and a hand-stepped clock."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import SamplerThread
from tests.support.frames import StepClock, on_clock
from tests.support.loopdev import loop_device

FIXTURES = Path(__file__).parent / "fixtures"

SERIAL: dict[str, tuple[str, tuple[str, ...]]] = {
    "tests/e2e/test_latency_real.py": (
        "timings; every request counted; checks that no tracer runs on the host; removes a "
        "loop device node (another process's free number can vanish before it binds it)",
        (
            "test_device_that_vanishes_while_traced",
            "test_percentiles_agree_with_fio_randread_qd1",
            "test_percentiles_are_within_15_percent_of_a_per_request_capture",
            "test_snapshot_latency_counts_exactly_the_interval_printed",
            "test_probe_shows_device_side_percentiles_next_to_fios",
        ),
    ),
    "tests/e2e/test_latency_marker_real.py": ("times the tracer's frame marker", ()),
    "tests/e2e/test_tracer_parts_real.py": ("runs latency tracers (the set of tracers)", ()),
    "tests/e2e/test_experiments.py": (
        "IOPS that rise with depth; device I/Os counted while fio runs",
        (
            "test_a_device_limited_to_4_requests_has_its_knee_at_or_below_4",
            "test_a_sweep_from_the_cli_prints_a_monotone_table",
            "test_read_ahead_ab_shows_fewer_device_ios_with_more_read_ahead",
        ),
    ),
    "tests/e2e/test_processes_real.py": (
        "switches kernel.task_delayacct; fio's rate within 10 %",
        (
            "test_fio_writer_rate_is_seen_within_10_percent_and_io_wait_with_delayacct",
            "test_with_delayacct_off_top_explains_instead_of_zeros",
        ),
    ),
    "tests/e2e/test_probe_fio.py": (
        "switches kernel.io_uring_disabled for every fio",
        ("test_io_uring_falls_back_to_libaio_when_the_sysctl_disables_it",),
    ),
    "tests/e2e/test_why_real.py": ("raises vm.dirty_* and loads both cores", ()),
    "tests/e2e/test_who_issuers_real.py": (
        "the host's dirty pages: others' writes start the flusher on this test's data early; "
        "every request counted by a tracer that sees the whole host (under four workers it "
        "once counted half of fio's 2,500 IOPS: a restart or a late tick lost 1.5 s)",
        (
            "test_a_buffered_writers_data_is_written_back_by_the_kernel",
            "test_two_fio_jobs_in_two_cgroups_are_named_on_their_devices",
            # its snapshot's tracer switches to timing 1 request in 8 when other workers'
            # fio pass 20,000 IOPS host-wide: fio's kB/s came out 4.12 x its r/s, not 4, once
            "test_snapshot_issuers_names_fio_on_its_loop_device",
            # every fio request counted: the kernel skips a tracepoint's BPF program that
            # fires while another one runs on the same CPU (any tracer's, host-wide; the
            # program's recursion_misses), so other tests' tracers and I/O beside it made it
            # miss 5 % of fio's completions once
            "test_an_issuers_device_latency_agrees_with_fios_own",
        ),
    ),
    "tests/e2e/test_health_io_errors.py": (
        "counts failed requests, also from the kernel log, whose rate limit the host shares",
        (),
    ),
    "tests/e2e/test_iostat_parity.py": ("compares with iostat over the same interval", ()),
    "tests/e2e/test_filter_enter_tmux.py": ("attaches loop devices of chosen numbers", ()),
    "tests/e2e/test_busy_host_script.py": (
        "removes loop device nodes and loads both cores",
        ("test_a_timed_run_churns_and_leaves_nothing_behind",),
    ),
    "tests/tui/test_live.py": (
        "removes a loop device node (another process's free number can vanish before it binds it)",
        ("test_hotplugged_loop_devices_come_and_go_without_a_crash",),
    ),
    "tests/tui/test_one_clock.py": (
        "times the frames' pace on the wall clock: four workers beside it stretched a 0.25 s "
        "interval's frames past 10 s for six",
        ("test_plus_and_minus_set_the_pace_of_every_view",),
    ),
    "tests/tui/test_process_panel.py": (
        "switches kernel.task_delayacct",
        ("test_delayacct_off_is_explained_and_D_turns_it_on_as_root",),
    ),
}
"""Tests that use something the whole host shares (a sysctl, the set of running tracers, the
CPU a timing depends on), by file: the reason, and the tests (none named: all of the file's).
Marked ``serial``, they run alone after the others (Makefile)."""
SERIAL_FIXTURES = frozenset({"delayacct_off"})
"""Fixtures that switch host-wide state: a test taking one is ``serial`` too."""

settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")
"""The one profile every run starts from: no test fails for the time it took. Hypothesis'
``deadline`` (200 ms an example) and its ``too_slow`` health check time the examples on the
wall clock, which a busy host stretches tenfold; what a property test checks is the property.
``make test`` runs it as is: the full counts, random draws and the example database."""
settings.register_profile(
    "fast",
    parent=settings.get_profile("suite"),
    max_examples=20,
    derandomize=True,
    database=None,
)
"""``make test-fast``'s profile (``--hypothesis-profile fast``): :data:`suite`'s, with a fifth
of the examples (tests/support/budget.py scales the explicit counts the same way), drawn from
a fixed seed so the fast lane gives the same cases on every run."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests :data:`SERIAL` names and the :data:`SERIAL_FIXTURES` users ``serial``."""
    for item in items:
        path, _, rest = item.nodeid.partition("::")
        name = rest.split("[", 1)[0]
        _, tests = SERIAL.get(path, ("", None))
        uses = set(getattr(item, "fixturenames", ()))
        if (tests is not None and (not tests or name in tests)) or uses & SERIAL_FIXTURES:
            item.add_marker(pytest.mark.serial)


@pytest.fixture
def fixture_roots() -> Callable[[str], Roots]:
    """Roots of a captured tree under tests/fixtures/NAME (with proc/ and sys/)."""

    def make(name: str) -> Roots:
        base = FIXTURES / name
        return Roots(proc=base / "proc", sys=base / "sys")

    return make


@pytest.fixture
def mem_path(tmp_path: Path) -> Iterator[Path]:
    """A fresh directory in memory (under /dev/shm when it is there), removed after the test:
    for fixture trees of thousands of files, whose creation and (for files the product holds
    open) final close cost ~1 ms each on the disk's file system under load. Falls back to
    ``tmp_path``."""
    import tempfile

    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="iotop-plus-test-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_loop(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Factory for real loop devices, all detached at the end of the test."""
    with ExitStack() as stack:
        counter = iter(range(1000))

        def make(size_mb: int = 64, direct_io: bool = False, filled: bool = False) -> str:
            name = f"backing{next(counter)}.img"
            return stack.enter_context(loop_device(tmp_path, size_mb, name, direct_io, filled))

        yield make


@pytest.fixture
def fio_bin() -> str:
    """Path of fio; skips with the reason when it is not installed."""
    path = shutil.which("fio")
    if path is None:
        pytest.skip("fio is not installed (make test installs it when run as root)")
    return path


@pytest.fixture
def step_clock(monkeypatch: pytest.MonkeyPatch) -> StepClock:
    """Every sampler thread started in the test runs on one hand-stepped clock: frames come
    when the test steps it (``tests.tui.helpers.started``/``step``), never on the wall clock."""
    clock = StepClock()
    monkeypatch.setattr(SamplerThread, "__init__", on_clock(clock))
    return clock


@pytest.fixture(autouse=True)
def _host_state_dir_untouched(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test never writes the host's state directory (root's /var/lib/iotop-plus): it passes
    ``--state-dir`` or a StateDir of its own. The directory is checked after each test.

    The directory is the host's: beside other workers (or another run of the suite, or an
    engineer's ``iotop-plus`` as root) it can appear during any test, and every test running
    then would be blamed. So only a test that ran alone fails for it (the serial phase,
    ``WORKERS=0``); on a worker it is a warning naming the test, for a run alone to confirm.
    """
    import warnings

    from iotop_plus.state import ROOT_STATE_DIR

    existed = ROOT_STATE_DIR.exists()
    yield
    if existed or not ROOT_STATE_DIR.exists():
        return
    said = f"{ROOT_STATE_DIR} appeared during this test: give it a --state-dir of its own"
    if hasattr(request.config, "workerinput"):  # an xdist worker, beside others
        warnings.warn(f"{said} (or another process on the host made it)", stacklevel=1)
    else:
        pytest.fail(said)


@pytest.fixture
def delayacct_off() -> Iterator[Path]:
    """The live kernel.task_delayacct, off for the test and put back afterwards (root)."""
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root to switch kernel.task_delayacct")
    path = Path("/proc/sys/kernel/task_delayacct")
    if not path.exists():
        pytest.skip("no kernel.task_delayacct sysctl on this kernel")
    before = path.read_text()
    path.write_text("0\n")
    try:
        yield path
    finally:
        path.write_text(before)
