"""One schedule for every loop that takes frames (REFERENCE.md, "One schedule"): the next
frame is due one interval after the previous one was due (no drift, however long each frame
takes); a late frame is taken at once and the next is due one interval after it (no burst).

The schedule reads a fake clock that the tests step by hand, so nothing here sleeps; each
consumer (the TUI's thread, snapshot/top, serve, serve --textfile, record) is run on it.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from pathlib import Path
from types import MappingProxyType

import pytest

from iotop_plus.cli import main
from iotop_plus.roots import Roots
from iotop_plus.sampling import clock as clock_module
from iotop_plus.sampling.clock import SamplerThread, Schedule, frames_on_schedule
from iotop_plus.sampling.disks.sampler import HostInfo, Sample
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.topology.inventory import Inventory

FIXTURES = Path(__file__).parents[1] / "fixtures"


class FakeClock:
    """A monotonic clock that moves only when waited on or told to (``advance``)."""

    def __init__(self, start: float = 1000.0, stop_after: int | None = None) -> None:
        self.t = start
        self.waits: list[float] = []
        self.stop_after = stop_after
        """After this many waits, set the waiter's event (ends a loop that runs until told)."""

    def now(self) -> float:
        return self.t

    def wait(self, event: threading.Event | None, seconds: float) -> bool:
        self.waits.append(seconds)
        if event is not None and event.is_set():
            return True
        if event is not None and self.stop_after is not None and len(self.waits) >= self.stop_after:
            event.set()
            return True
        self.t += seconds
        return False

    def advance(self, seconds: float) -> None:
        self.t += seconds


class SlowSource:
    """Frames stamped with the fake clock; reading one takes ``cost(n)`` seconds of it."""

    def __init__(self, clock: FakeClock, cost: dict[int, float] | None = None) -> None:
        self.clock = clock
        self.cost = cost or {}
        self.reads: list[float] = []
        self.roots = Roots()
        self.closed = False
        self.after_read: list[object] = []

    def next_frame(self, early: object = None) -> Frame:
        self.reads.append(self.clock.now())
        self.clock.advance(self.cost.get(len(self.reads), 0.01))
        now = self.clock.now()
        sample = Sample(now, now, MappingProxyType({}))
        return Frame(sample, {}, Inventory({}), False, {}, None, frozenset(), len(self.reads))

    def want(self, part: str, on: bool) -> None:
        pass

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        pass

    def host_info(self) -> HostInfo:
        return HostInfo("h", "k", None, True)

    def close(self) -> None:
        self.closed = True


def test_frames_do_not_drift_over_many_frames_whatever_each_takes() -> None:
    clock = FakeClock()
    schedule = Schedule(1.0, clock=clock)
    schedule.start()
    rng = random.Random(23)
    taken = []
    for _ in range(5000):
        clock.advance(rng.uniform(0.0, 0.95))  # reading and handing out a frame
        assert schedule.wait()
        taken.append(clock.now())
    assert taken == pytest.approx([1000.0 + k for k in range(1, 5001)], abs=1e-6)
    assert schedule.late == 0


def test_a_late_frame_is_taken_at_once_and_the_next_is_due_one_interval_after_it() -> None:
    clock = FakeClock()
    schedule = Schedule(1.0, clock=clock)
    schedule.start()
    assert schedule.wait() and clock.now() == 1001.0
    clock.advance(3.5)  # a stalled disk: the frame due at 1002 is late, so are 1003 and 1004
    waits_before = len(clock.waits)
    assert schedule.wait()
    assert clock.now() == 1004.5 and len(clock.waits) == waits_before  # at once
    assert schedule.late == 1
    taken = []
    for _ in range(3):
        clock.advance(0.2)
        assert schedule.wait()
        taken.append(clock.now())
    assert taken == pytest.approx([1005.5, 1006.5, 1007.5])  # no burst of catch-up frames


def test_the_first_interval_is_short_so_figures_appear_at_once() -> None:
    clock = FakeClock()
    schedule = Schedule(2.0, first_interval=0.1, clock=clock)
    schedule.start()
    assert schedule.short
    assert schedule.wait() and clock.now() == pytest.approx(1000.1)
    assert not schedule.short
    assert schedule.wait() and clock.now() == pytest.approx(1002.1)


def test_a_new_interval_is_planned_from_when_the_previous_frame_was_due() -> None:
    clock = FakeClock()
    schedule = Schedule(10.0, clock=clock)
    schedule.start()
    clock.advance(3.0)
    schedule.interval = 5.0
    assert schedule.wait() and clock.now() == 1005.0
    clock.advance(7.0)
    schedule.interval = 1.0  # due at 1006, which has passed: taken at once
    assert schedule.wait() and clock.now() == 1012.0
    assert schedule.wait() and clock.now() == 1013.0


def test_a_set_event_ends_the_wait_without_taking_a_frame() -> None:
    clock = FakeClock()
    schedule = Schedule(1.0, clock=clock)
    schedule.start()
    stop = threading.Event()
    stop.set()
    assert not schedule.wait(stop)
    assert clock.now() == 1000.0


def test_snapshot_and_top_frames_follow_the_schedule() -> None:
    clock = FakeClock()
    source = SlowSource(clock, cost={3: 2.5})  # the third read stalls past two frames' time
    pairs = list(frames_on_schedule(source, 1.0, 5, clock=clock))
    assert len(pairs) == 5
    start = source.reads[0] + 0.01  # the baseline frame's time
    assert source.reads[1:] == pytest.approx(
        [start + 1, start + 2, start + 2 + 2.5, start + 3 + 2.5, start + 4 + 2.5]
    )


def _thread_frames(source: SlowSource, clock: FakeClock, count: int) -> list[Frame]:
    """The first ``count`` frames of a TUI sampler thread at 1 s (its first short interval
    0.1 s), run in this thread: the fake clock never sleeps."""
    frames: list[Frame] = []
    sampler: SamplerThread

    def deliver(frame: Frame) -> None:
        frames.append(frame)
        if len(frames) == count:
            sampler.stop()

    sampler = SamplerThread(
        source, deliver, lambda t: None, interval=1.0, first_interval=0.1, clock=clock
    )
    sampler.run()
    return frames


def test_the_tui_sampler_thread_runs_on_the_schedule() -> None:
    clock = FakeClock()
    source = SlowSource(clock, cost={4: 3.2})
    frames = _thread_frames(source, clock, 7)
    t0 = source.reads[0]
    assert source.reads == pytest.approx(
        [t0, t0 + 0.1, t0 + 1.1, t0 + 2.1, t0 + 2.1 + 3.2, t0 + 3.1 + 3.2, t0 + 4.1 + 3.2]
    )
    assert [f.short_interval for f in frames[:3]] == [False, True, False]
    assert source.closed


def test_a_first_frame_with_rates_needs_no_short_second_one() -> None:
    # Devices named on the command line: the frame the sampler thread gets first was primed
    # a short interval after the names were checked, so it has rates already. A second frame
    # at once would only be read while the screen mounts, slowing its first paint (#25).
    clock = FakeClock()

    class PrimedSource(SlowSource):
        def next_frame(self, early: object = None) -> Frame:
            return dataclasses.replace(super().next_frame(early), elapsed_s=0.1)

    source = PrimedSource(clock)
    frames = _thread_frames(source, clock, 3)
    t0 = source.reads[0]
    assert source.reads == pytest.approx([t0, t0 + 1, t0 + 2])
    assert not any(f.short_interval for f in frames)


def test_the_tui_sampler_thread_takes_a_frame_now_and_continues_from_it() -> None:
    clock = FakeClock()
    source = SlowSource(clock)
    sampler: SamplerThread

    def deliver(frame: Frame) -> None:
        if len(source.reads) == 2:
            clock.advance(0.4)
            sampler.sample_now()  # a view wants fresh figures
        if len(source.reads) == 4:
            sampler.stop()

    sampler = SamplerThread(source, deliver, lambda t: None, interval=1.0, clock=clock)
    sampler.run()
    t0 = source.reads[0]
    assert source.reads == pytest.approx([t0, t0 + 0.1, t0 + 0.51, t0 + 1.51])


def test_serve_takes_frames_on_the_schedule() -> None:
    from iotop_plus.export.view import ExportSampler

    clock = FakeClock(stop_after=6)
    source = SlowSource(clock, cost={3: 4.5})
    sampler = ExportSampler(source, 2.0, show_all=True, clock=clock)
    sampler.start()
    assert sampler._thread is not None
    sampler._thread.join(10)
    sampler.stop()
    t0 = source.reads[0]
    late = t0 + 4 + 4.5  # the third frame stalled: the fourth is taken at once ...
    assert source.reads == pytest.approx([t0, t0 + 2, t0 + 4, late, late + 2, late + 4, late + 6])
    assert source.closed


def _fixture_roots_args() -> list[str]:
    nvme = FIXTURES / "nvme"
    return ["--proc-root", str(nvme / "proc"), "--sys-root", str(nvme / "sys")]


def test_serve_textfile_writes_on_the_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(start=0.0, stop_after=4)
    monkeypatch.setattr(clock_module, "MONOTONIC", clock)
    target = tmp_path / "iotop.prom"
    code = main(
        [
            *_fixture_roots_args(),
            "--state-dir",
            str(tmp_path / "state"),
            "serve",
            "--textfile",
            str(target),
            "--interval",
            "15",
        ]
    )
    assert code == 0 and target.exists()
    assert clock.waits == pytest.approx([15.0, 15.0, 15.0, 15.0])  # the last one was stopped
    assert clock.now() == pytest.approx(45.0)  # written at 0, 15, 30, 45: no drift


def test_record_takes_samples_on_the_schedule(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    clock = FakeClock(start=time.monotonic())
    start = clock.now()
    monkeypatch.setattr(clock_module, "MONOTONIC", clock)
    recordings = tmp_path / "rec"
    code = main(
        [
            *_fixture_roots_args(),
            "--state-dir",
            str(tmp_path / "state"),
            "record",
            "--dir",
            str(recordings),
            "--count",
            "4",
            "-i",
            "30",
        ]
    )
    assert code == 0 and any(recordings.iterdir())
    # Four samples: three waits of the fake clock, each up to the next due time (30 s apart
    # from the first frame, read a moment after the clock's start).
    assert len(clock.waits) == 3
    assert 90.0 <= clock.now() - start < 90.5
