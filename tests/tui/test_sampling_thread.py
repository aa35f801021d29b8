"""The sampler thread: ticks never stack, the inventory is read only on hotplug, and a failing
tick is reported in the header without stopping the app."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

import pytest

import iotop_plus.tui.widgets.header as header_module
from iotop_plus.config import Config
from iotop_plus.sampling.disks.sampler import Sample
from iotop_plus.sampling.topology.inventory import Inventory
from iotop_plus.tui.app import make_app
from iotop_plus.tui.widgets.header import HostHeader
from tests.support.frames import stepped
from tests.tui.canned import HOST_ROOTS, CannedSampler
from tests.tui.helpers import started, step, wait_for


class SlowSampler(CannedSampler):
    """Takes longer than the interval to read, and records how many reads overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.most_active = 0
        self.inventory_reads = 0
        self._lock = threading.Lock()

    def sample(self) -> Sample:
        with self._lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(0.3)  # longer than the 0.25 s interval
            return super().sample()
        finally:
            with self._lock:
                self.active -= 1

    def inventory(self, names: Iterable[str] | None = None, refresh: bool = False) -> Inventory:
        self.inventory_reads += 1
        return super().inventory(names, refresh)


class FailingSampler(CannedSampler):
    """The third read fails as a vanished file would."""

    def sample(self) -> Sample:
        if self.calls == 2:
            self.calls += 1
            raise OSError(5, "Input/output error")
        return super().sample()


@pytest.mark.slow  # seconds on the wall clock (slow ticks are what it tests)
@pytest.mark.real_clock("reads slower than the interval on the wall clock must not stack")
async def test_slow_ticks_never_stack_and_inventory_is_read_once() -> None:
    sampler = SlowSampler()
    app = make_app(HOST_ROOTS, Config(interval=0.25), sampler=sampler, host=sampler.host_info())
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.frames_received >= 5)
        assert sampler.most_active == 1
        # The device set never changed, so the inventory was read on the first tick only.
        assert sampler.inventory_reads == 1


async def test_a_failing_tick_is_reported_and_sampling_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shown_s = 1.0  # the header's PROBLEM_SHOWN_S (5 s), shortened: the rule, not the length
    monkeypatch.setattr(header_module, "PROBLEM_SHOWN_S", shown_s)
    sampler = FailingSampler()
    app = make_app(HOST_ROOTS, Config(interval=0.25), sampler=sampler, host=sampler.host_info())
    async with app.run_test(size=(120, 36)) as pilot:
        header = app.main_screen.query_one(HostHeader)
        await started(pilot, app)  # the first two reads
        clock = stepped(app.sampler_thread)
        assert clock is not None
        await wait_for(pilot, clock.release_waiter, "the thread waiting for its third read")
        await wait_for(pilot, lambda: "sampling failed" in header.text)
        shown_at = time.monotonic()
        assert "Input/output error" in header.text
        ticks = app.frames_received
        await step(pilot, app, 2)  # sampling goes on
        assert app.frames_received == ticks + 2
        # The note stays PROBLEM_SHOWN_S of the screen's wall time, then a good frame clears it.
        await wait_for(pilot, lambda: time.monotonic() - shown_at >= shown_s, "the note's time")
        await step(pilot, app)
        assert "sampling failed" not in header.text
