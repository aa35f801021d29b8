"""Frames: one frozen instant from a source; the live source reads the costly parts only when
asked, and the headless loop keeps a fixed schedule."""

from __future__ import annotations

import itertools
import shutil
import threading
import time
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import SamplerThread, frames_on_schedule
from iotop_plus.sampling.disks.sampler import HostInfo, Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import PROCESSES, Frame
from tests.support.wait import holds_within

FIXTURES = Path(__file__).parent.parent / "fixtures"


@pytest.fixture
def tree(tmp_path: Path) -> Roots:
    """A copy of the kernel-5.4 tree whose diskstats the test can change."""
    base = tmp_path / "host"
    shutil.copytree(FIXTURES / "kernel-5.4", base, symlinks=True)
    return Roots(proc=base / "proc", sys=base / "sys")


def test_the_first_frame_is_a_baseline_and_the_next_has_rates(tree: Roots) -> None:
    source = LiveSource(tree)
    first = source.next_frame()
    assert first.seq == 1 and first.elapsed_s is None and first.inventory_changed
    assert set(first.rates) == set(first.sample.counters)
    assert all(r is None for r in first.rates.values())
    (tree.proc / "diskstats.t1").replace(tree.proc / "diskstats")
    second = source.next_frame()
    assert second.seq == 2 and second.elapsed_s is not None and second.elapsed_s > 0
    assert not second.inventory_changed and second.inventory is first.inventory
    sda = second.rates["sda"]
    assert sda is not None and sda.r_s > 0
    assert second.processes is None  # nobody asked for them


def test_a_vanished_device_is_an_event_and_a_new_inventory(tree: Roots) -> None:
    source = LiveSource(tree)
    first = source.next_frame()
    lines = (tree.proc / "diskstats").read_text().splitlines(keepends=True)
    (tree.proc / "diskstats").write_text("".join(ln for ln in lines if " sr0 " not in ln))
    frame = source.next_frame()
    assert frame.inventory_changed and frame.inventory is not first.inventory
    assert [(e.kind, e.device) for e in frame.events] == [("device-removed", "sr0")]


def test_processes_are_read_only_while_wanted_and_then_released() -> None:
    source = LiveSource(Roots())
    source.next_frame()
    source.want(PROCESSES, True)
    first = source.next_frame()
    assert first.processes is not None and first.processes.sample.tasks
    assert not first.processes.rates  # a process baseline: rates from the next frame
    second = source.next_frame()
    assert second.processes is not None and second.processes.rates
    source.want(PROCESSES, False)
    third = source.next_frame()
    assert third.processes is None and source._procs is None  # its /proc files are closed
    with pytest.raises(ValueError):
        source.want("cgroups-not-yet", True)


def test_an_unreadable_proc_costs_the_processes_not_the_devices(tree: Roots) -> None:
    source = LiveSource(Roots(proc=tree.proc / "missing", sys=tree.sys))
    source.want(PROCESSES, True)
    frame = source.next_frame()
    assert frame.processes is None
    assert frame.process_error is not None and "No such file" in frame.process_error


class StepSource:
    """A source whose clock is a counter: frames at t = 0, 1, 2 ... unless told otherwise."""

    def __init__(self) -> None:
        self.roots = Roots()
        self.reads: list[float] = []
        self.closed = False

    def next_frame(self, early: object = None) -> Frame:
        from types import MappingProxyType

        from iotop_plus.sampling.disks.sampler import Sample
        from iotop_plus.sampling.topology.inventory import Inventory

        now = time.monotonic()
        self.reads.append(now)
        sample = Sample(now, time.time(), MappingProxyType({}))
        return Frame(sample, {}, Inventory({}), False, {}, None, frozenset(), len(self.reads))

    def want(self, part: str, on: bool) -> None:
        pass

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        pass

    def host_info(self) -> HostInfo:
        return HostInfo("h", "k", None, True)

    def close(self) -> None:
        self.closed = True


def test_frames_on_schedule_gives_count_pairs_without_drift() -> None:
    class NoSleep:
        """The real time plus every wait asked for, which is only noted (none happens)."""

        def __init__(self) -> None:
            self.waited = 0.0

        def now(self) -> float:
            return time.monotonic() + self.waited

        def wait(self, event: threading.Event | None, seconds: float) -> bool:
            slept.append(seconds)
            self.waited += seconds
            return False

    source = StepSource()
    slept: list[float] = []
    pairs = list(frames_on_schedule(source, 0.05, 3, clock=NoSleep()))
    assert len(pairs) == 3 and len(source.reads) == 4
    assert all(cur.seq == prev.seq + 1 for prev, cur in pairs)
    # A fixed schedule from the baseline: the k-th frame is due k intervals after it, so each
    # wait is what is left of an interval, and the time a read takes never adds up as drift.
    assert slept == pytest.approx([0.05, 0.05, 0.05], abs=0.02)


def test_the_clock_takes_the_second_frame_soon_and_marks_it_short() -> None:
    source = StepSource()
    frames: list[Frame] = []
    got = threading.Event()

    def deliver(frame: Frame) -> None:
        frames.append(frame)
        if len(frames) >= 3:
            got.set()

    clock = SamplerThread(source, deliver, lambda text: None, interval=1.5, first_interval=0.1)
    clock.start()
    try:
        assert got.wait(15)
    finally:
        clock.stop()
    gaps = [b - a for a, b in itertools.pairwise(source.reads)]
    # Figures at once (0.1 s), then the real interval (1.5 s): a busy host may wake the
    # thread late, so the first gap is told from the interval by a 1 s margin.
    assert 0.09 <= gaps[0] < 0.6, gaps
    assert gaps[1] >= 1.45, gaps
    assert [f.short_interval for f in frames[:3]] == [False, True, False]
    assert source.closed and not clock.is_alive()


def test_a_new_interval_reaches_the_clock_at_once() -> None:
    source = StepSource()
    clock = SamplerThread(source, lambda f: None, lambda t: None, interval=10, first_interval=10)
    clock.start()
    try:
        deadline = time.monotonic() + 2
        while not source.reads and time.monotonic() < deadline:
            time.sleep(0.01)
        clock.interval = 0.25  # re-planned from the same start: due now, not in 10 s
        deadline = time.monotonic() + 2
        while len(source.reads) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(source.reads) >= 2
        assert clock.interval == 0.25
        clock.interval = 0.01
        assert clock.interval == 0.25  # clamped
    finally:
        clock.stop()


def test_a_failing_frame_is_reported_and_the_clock_goes_on() -> None:
    class Flaky(StepSource):
        def next_frame(self, early: object = None) -> Frame:
            if len(self.reads) == 1:
                self.reads.append(time.monotonic())
                raise OSError(5, "Input/output error")
            return super().next_frame(early)

    source = Flaky()
    problems: list[str] = []
    frames: list[Frame] = []
    clock = SamplerThread(
        source, frames.append, problems.append, interval=0.25, first_interval=0.05
    )
    clock.start()
    try:
        deadline = time.monotonic() + 5
        while len(frames) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        clock.stop()
    assert len(frames) >= 3
    assert problems and "Input/output error" in problems[0]


def test_a_primed_source_reads_its_first_frame_while_the_caller_loads(tree: Roots) -> None:
    source = LiveSource(tree)
    before = time.monotonic()
    source.prime()
    time.sleep(0.2)  # "importing Textual"
    first = source.next_frame()
    assert first.seq == 1 and first.elapsed_s is None
    assert before <= first.monotonic < before + 0.2  # read in the background, not now
    second = source.next_frame()
    assert second.seq == 2 and second.elapsed_s is not None
    # its interval runs from the background read to now, so it spans the caller's load; the
    # background read may start a little after `before`, so the span is not held to 0.2 itself
    assert second.elapsed_s == pytest.approx(second.monotonic - first.monotonic)
    assert second.monotonic >= before + 0.2


def _priming() -> bool:
    """Whether a source's background read (``prime``) is still running."""
    return any(t.name == "iotop-plus-prime" and t.is_alive() for t in threading.enumerate())


def test_a_source_that_read_a_frame_primes_the_next_one_with_rates(tree: Roots) -> None:
    # Devices named on the command line are checked against a first frame; the frame after
    # it is read while Textual loads, a short interval later, so the first screen has rates.
    source = LiveSource(tree)
    first = source.next_frame()
    source.prime(not_before=first.monotonic + 0.1)
    # "Importing Textual" until the background read is done.
    assert holds_within(lambda: not _priming(), 5)
    asked = time.monotonic()
    primed = source.next_frame()
    assert primed.seq == 2 and primed.elapsed_s is not None
    assert primed.monotonic < asked  # read in the background, not now
    # Not at once (rates over milliseconds are noise), and not a whole interval (1 s) later:
    # the background read waits for ``not_before`` only, however late a busy host wakes it.
    assert 0.1 <= primed.elapsed_s < 0.9
    third = source.next_frame()
    assert third.seq == 3 and third.elapsed_s == pytest.approx(third.monotonic - primed.monotonic)


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_a_primed_big_host_hands_over_its_early_frame(tmp_path: Path) -> None:
    from tests.support.synthetic import SyntheticTree

    class SlowInventory(Sampler):
        def inventory(self, names=None, refresh=False):
            time.sleep(0.5)  # thousands of devices' sysfs
            return super().inventory(names, refresh)

    synthetic = SyntheticTree(tmp_path / "big", 300)
    source = LiveSource(sampler=SlowInventory(synthetic.roots))
    source.prime()
    early: list[Frame] = []
    first = source.next_frame(early=early.append)
    assert first.inventory.devices  # the full frame
    assert len(early) == 1  # the names-only frame came first, while the inventory was read
    assert not early[0].inventory.devices and len(early[0].sample.counters) == 300


def test_a_processes_only_source_reads_no_devices(tree: Roots) -> None:
    class Counting(Sampler):
        reads = 0

        def sample(self):
            Counting.reads += 1
            return super().sample()

    source = LiveSource(sampler=Counting(Roots(proc=Path("/proc"), sys=tree.sys)), devices=False)
    source.want(PROCESSES, True)
    first, second = source.next_frame(), source.next_frame()
    assert Counting.reads == 0  # `top` pays for processes, not for diskstats or the inventory
    assert not first.sample.counters and not second.inventory.devices
    assert second.processes is not None and second.processes.rates
