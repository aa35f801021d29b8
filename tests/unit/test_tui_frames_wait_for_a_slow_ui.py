"""#25, TUI memory: frames do not pile up while the UI cannot keep up.

The sampler thread handed a frame to the UI every interval whatever the UI had taken: under
tracemalloc at 0.25 s (the UI slower than the pace) the queued frames grew by ~450 KB/s, and a
host loaded enough to slow the drawing does the same. At most ``MAX_PENDING`` frames now wait;
then the sampler waits, and its next frame covers the longer interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.tui.frame_feed import MAX_PENDING, FrameFeed
from tests.support.synthetic import SyntheticTree
from tests.support.wait import holds_within


class _Screen:
    """The main screen's side of the feed, counting what it is given."""

    def __init__(self) -> None:
        self.shown: list[Frame] = []

    def frame_arrived(self, frame: Frame) -> None:
        self.shown.append(frame)

    def show_problem(self, text: str) -> None:
        pass

    def notify(self, message: str, **kwargs: Any) -> None:
        pass

    def post_message(self, message: object) -> bool:
        return True

    def call_later(self, callback: Callable[..., object], *args: Any) -> bool:
        return True


@pytest.fixture
def feed(mem_path: Path) -> Iterator[FrameFeed]:
    tree = SyntheticTree(mem_path, 4)
    feed = FrameFeed(LiveSource(tree.roots), _Screen(), FrameStore(1, 0.25))
    try:
        yield feed
    finally:
        feed.stop()


@pytest.mark.slow  # seconds on the wall clock (no frame comes for 2 s)
def test_the_sampler_waits_while_the_ui_has_frames_to_take(feed: FrameFeed) -> None:
    posted: list[Frame] = []

    def soon(callback: Callable[..., object], *args: Any) -> None:
        # The event loop's queue; the UI is stuck: nothing taken.
        if callback == feed.take:
            posted.append(args[0])

    feed.start(0.25, soon)
    assert holds_within(lambda: len(posted) >= MAX_PENDING, 10)
    # Before: one more frame every 0.25 s, for as long as the UI stayed behind.
    assert not holds_within(lambda: len(posted) > MAX_PENDING, 2.0)
    feed.release()  # (the screen is up)
    feed.take(posted[0])  # the UI takes one: the sampler goes on
    assert holds_within(lambda: len(posted) == MAX_PENDING + 1, 10)
    assert feed.thread is not None
    feed.stop()
    assert holds_within(lambda: feed.thread is not None and not feed.thread.is_alive(), 10)
