"""CPU time of one frame on the default screen, in-process, and where it goes.

The real app on the canned ``tui_host`` fixture at 120x36, 1 s interval, its sampler thread on
a hand-stepped clock: ``--warm`` frames are stepped first (the charts' history fills), then
``--frames`` frames are stepped one at a time. Each frame's cost is the thread CPU time of the
steps the real TUI pays for (Pilot's own waiting is left out): the sampler thread's
``LiveSource.next_frame``, the feed's ``take`` (the frame store's append and the shown
frame's ``publish`` to every view, also printed alone; the store encodes closed chunks on a
thread of its own, timed by ``bench_store.py``) and Textual's paint
(``Screen._compositor_refresh``).
Prints the median of each and of their sum, and of the Textual messages dispatched a frame
(each costs a dispatch and often a task's wake-up, outside the steps timed: the live TUI
pays for them); with ``--profile N``, the N functions with the
most own time in the main thread's steps under cProfile (slower: for where the time goes, not
for the figure). Never asserts.

In-process the frames come back to back, so each costs less than in the live TUI, where the
caches are cold after a second's sleep (the ratio is in docs/performance.md).

The real TUI's CPU beside btop's is ``bench_light.py``; this one moves with the code, not
with the host's load, so a before/after of one change reads here first.

``--devices N`` runs it on a synthetic tree of N busy disks instead (advanced one second before
each frame), for the 200- and 2,000-device rows.

Usage: ``.venv/bin/python benchmarks/bench_frame_cost.py [--warm 60] [--frames 60]
[--profile 25 [--sort cumulative]] [--devices N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events, messages
from textual.message import Message
from textual.message_pump import MessagePump
from textual.screen import Screen

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from iotop_plus.config import Config  # noqa: E402
from iotop_plus.sampling.clock import SamplerThread  # noqa: E402
from iotop_plus.sampling.frame.live import LiveSource  # noqa: E402
from iotop_plus.tui.app import make_app  # noqa: E402
from iotop_plus.tui.frame_feed import FrameFeed  # noqa: E402
from iotop_plus.tui.shown import ShownViews  # noqa: E402
from tests.support.frames import StepClock, on_clock  # noqa: E402
from tests.support.synthetic import SyntheticTree  # noqa: E402
from tests.tui.canned import canned_app  # noqa: E402
from tests.tui.helpers import started, step  # noqa: E402

STEPS = (
    ("read", LiveSource, "next_frame"),
    ("take", FrameFeed, "take"),
    ("show", ShownViews, "publish"),
    ("paint", Screen, "_compositor_refresh"),
)
"""The steps timed: ``take`` (the frame store, then the shown frame told to every view)
holds ``show``, which is printed apart and not added again in the sum."""


PILOTS = (events.Callback, messages.InvokeLater)
"""Messages Pilot's waits post to every widget on the screen (not counted)."""


class Timed:
    """Thread CPU time spent in each step while :attr:`on`, and a profile of it."""

    def __init__(self, profile: bool) -> None:
        self.on = False
        self.spent: dict[str, float] = defaultdict(float)
        self.profile = cProfile.Profile() if profile else None
        self.messages = 0
        """Textual messages dispatched while :attr:`on` (by any widget, screen or the app)."""
        for name, owner, method in STEPS:
            setattr(owner, method, self._wrap(name, getattr(owner, method)))
        dispatch = MessagePump._dispatch_message

        async def counted(pump: MessagePump, message: Message) -> None:
            if self.on and not isinstance(message, PILOTS):
                self.messages += 1
            await dispatch(pump, message)

        MessagePump._dispatch_message = counted  # type: ignore[method-assign]

    def _wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.on:
                return real(*args, **kwargs)
            t0 = time.thread_time()
            if self.profile is not None and threading_main():
                self.profile.enable()
            try:
                return real(*args, **kwargs)
            finally:
                if self.profile is not None and threading_main():
                    self.profile.disable()
                self.spent[name] += time.thread_time() - t0

        return timed


def threading_main() -> bool:
    """Whether this is the main thread (cProfile profiles one thread)."""
    return threading.current_thread() is threading.main_thread()


async def measure(
    warm: int, frames: int, profile: int, devices: int, sort: str = "tottime"
) -> None:
    SamplerThread.__init__ = on_clock(StepClock())  # type: ignore[method-assign]
    timed = Timed(bool(profile))
    tree: SyntheticTree | None = None
    if devices:
        tree = SyntheticTree(Path(tempfile.mkdtemp(prefix="frame-cost-")) / "tree", devices)
        app = make_app(tree.roots, Config(interval=1))
    else:
        app = canned_app(Config(interval=1), with_history=False)
    advance = tree.advance if tree is not None else (lambda: None)
    per: dict[str, list[float]] = defaultdict(list)
    messages: list[int] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await started(pilot, app)
        for _ in range(warm):
            advance()
            await step(pilot, app)
        await pilot.pause()
        for _ in range(frames):
            advance()
            timed.spent.clear()
            timed.messages = 0
            timed.on = True
            await step(pilot, app)
            await pilot.pause()
            timed.on = False
            for name, _, _ in STEPS:
                per[name].append(timed.spent[name])
            per["sum"].append(sum(timed.spent.values()) - timed.spent["show"])
            messages.append(timed.messages)
    if tree is not None:
        shutil.rmtree(tree.base.parent, ignore_errors=True)
    host = f"{devices} synthetic devices" if devices else "the canned host"
    print(f"{host}, {frames} frames after {warm}" + (" (under cProfile)" if profile else "") + ":")
    for name, costs in per.items():
        q = statistics.quantiles(costs, n=4)
        print(
            f"  {name:<10} median {statistics.median(costs) * 1e3:6.2f} ms"
            f"  (quartiles {q[0] * 1e3:.2f}-{q[2] * 1e3:.2f})"
        )
    print(
        f"  messages   median {statistics.median(messages):6.1f} a frame (Textual messages"
        " dispatched by the app, its screens and widgets)"
    )
    if timed.profile is not None:
        pstats.Stats(timed.profile).sort_stats(sort).print_stats(profile)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", type=int, default=60, help="frames stepped first (default 60)")
    parser.add_argument("--frames", type=int, default=60, help="frames measured (default 60)")
    parser.add_argument("--profile", type=int, default=0, help="print the N costliest functions")
    parser.add_argument(
        "--devices", type=int, default=0, help="a synthetic tree of N busy disks (default: canned)"
    )
    parser.add_argument(
        "--sort",
        default="tottime",
        choices=("tottime", "cumulative"),
        help="the profile's order: own time (default) or with what they call",
    )
    args = parser.parse_args()
    asyncio.run(measure(args.warm, args.frames, args.profile, args.devices, args.sort))


if __name__ == "__main__":
    main()
