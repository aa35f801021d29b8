"""What the verdict's lookback keeps: each device's last ``QUIET_KEEP`` quiet awaits (900 a
device at 60 devices are 54,000), in 16 bytes each; as a tuple of objects each they were
~116 bytes, 6.3 MB of the TUI's memory. The window is the last ``keep`` whatever is cut."""

from __future__ import annotations

import gc
import tracemalloc

from iotop_plus.why.lookback import QUIET_KEEP, LookbackFeed, quiet_await
from tests.unit.test_verdict_line import rates
from tests.unit.test_verdict_weighs import frame

DEVICES = 60


def test_the_quiet_awaits_take_16_bytes_each_and_stay_bounded() -> None:
    quiet = [rates(reads=100 + i, await_ms=1.0 + i / 100, busy_ms=300) for i in range(DEVICES)]
    frames = [
        frame({f"sd{i}": quiet[(i + seq) % DEVICES] for i in range(DEVICES)}, seq=seq)
        for seq in range(1, 3 * QUIET_KEEP + 1)
    ]
    feed = LookbackFeed()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        peak = 0
        for one in frames:
            feed.add(one)
            if one.seq % 100 == 0:
                peak = max(peak, tracemalloc.get_traced_memory()[0] - before)
    finally:
        tracemalloc.stop()
    # At most a quarter more than the window is held (the older ones are cut in one go):
    # ~20 bytes an entry with the arrays' spare room, ~1.1 MB for 54,000; ~90 as objects.
    assert peak < 40 * DEVICES * QUIET_KEEP, f"{peak / DEVICES / QUIET_KEEP:.1f} B an entry"
    got = feed.quiet_before(len(frames) + 1)("sd0")
    window = range(len(frames) - QUIET_KEEP + 1, len(frames) + 1)
    assert got == [quiet_await(quiet[seq % DEVICES]) for seq in window]
    # Before an earlier frame: the window's ones before it.
    assert len(feed.quiet_before(len(frames) - 99)("sd0")) == QUIET_KEEP - 100
