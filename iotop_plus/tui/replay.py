"""``iotop-plus replay``, the TUI side: the same app on a :class:`Timeline` instead of a sampler.

No sampler thread runs: every frame comes from the timeline (a recording, or a ring of canned
frames in tests). The app opens at ``at`` (or the first frame) in REPLAY mode; ``[ ] { } g``
scrub, ``l`` goes to the newest frame, ``space`` plays at the recorded pace. Tuning, probes
and experiments are refused with one line: these frames are not this host now.

A timeline may offer, besides the :class:`Timeline` protocol:

* ``host_info() -> HostInfo``: the recorded host, for the header;
* ``zone``: the recorded host's ``datetime.tzinfo`` (times are typed and shown in it);
* ``interval``: the recorded seconds between frames.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import tzinfo

from iotop_plus.config import Config, load_config
from iotop_plus.devices.tuner import Tuner
from iotop_plus.roots import Roots
from iotop_plus.sampling.clock import clamp_interval
from iotop_plus.sampling.disks.sampler import HostInfo
from iotop_plus.sampling.frame.model import Frame
from iotop_plus.sampling.store.timeline import Timeline
from iotop_plus.tui import engine
from iotop_plus.tui.app import IotopPlusApp

RECORDED_HOST = HostInfo("recording", "?", None, False)
"""Header facts when the timeline does not say which host it recorded."""


class TimelineSource:
    """A :class:`~iotop_plus.sampling.frame.model.FrameSource` that never samples (a replay)."""

    def __init__(self, roots: Roots, timeline: Timeline) -> None:
        self.roots = roots
        """The roots given (for nothing that reads the host: a replay reads no sysfs)."""
        self.timeline = timeline

    def next_frame(self, early: Callable[[Frame], object] | None = None) -> Frame:
        """Never called: the replay shows frames by time."""
        del early  # the FrameSource protocol's parameter
        raise RuntimeError("a replay has no live frames")

    def want(self, part: str, on: bool) -> None:
        """Recorded frames carry what was recorded; nothing to ask for."""

    def detail(self, pid: int | None, cgroup: str | None) -> None:
        """Recorded frames carry what was recorded; nothing to detail."""

    def host_info(self) -> HostInfo:
        """The recorded host (or a placeholder)."""
        info = getattr(self.timeline, "host_info", None)
        found = info() if callable(info) else None
        return found if isinstance(found, HostInfo) else RECORDED_HOST

    def close(self) -> None:
        """Nothing to release here (the timeline's owner closes it)."""


def _first_with_rates(timeline: Timeline) -> float | None:
    span = timeline.span()
    second = timeline.step(span[0], 1) if span is not None else None
    return second.wall_time if second is not None else None


def recorded_interval(timeline: Timeline) -> float:
    """Seconds between frames: the timeline's own figure, else the first two frames' gap."""
    own = getattr(timeline, "interval", None)
    if isinstance(own, (int, float)) and own > 0:
        return clamp_interval(float(own))
    # A recording's header says what the recorder was asked for (its first gaps vary).
    asked = getattr(timeline, "header", {}).get("interval_s")
    if isinstance(asked, (int, float)) and asked > 0:
        return clamp_interval(float(asked))
    span = timeline.span()
    if span is not None:
        first = timeline.frame_at(span[0])
        second = timeline.step(span[0], 1)
        if first is not None and second is not None and second.wall_time > first.wall_time:
            # Measured gaps are 0.498766 s: the header shows what was asked for, 0.5 s.
            return clamp_interval(round(second.wall_time - first.wall_time, 2))
    return 1.0


def make_replay_app(
    roots: Roots, timeline: Timeline, at: float | None, config: Config | None = None
) -> IotopPlusApp:
    """The app on ``timeline`` (tests run it with the Pilot)."""
    source = TimelineSource(roots, timeline)
    host = source.host_info()
    zone = getattr(timeline, "zone", None)
    return IotopPlusApp(
        source,
        config or Config(),
        host=host,
        interval=recorded_interval(timeline),
        tuner=Tuner(roots, None, is_root=False),
        replay=timeline,
        # The first frame of a recording has no rates (no frame before it): start on the
        # second, the first with figures.
        replay_at=at if at is not None else _first_with_rates(timeline),
        zone=zone if isinstance(zone, tzinfo) else None,
    )


def run_replay(
    _args: argparse.Namespace, roots: Roots, timeline: Timeline, at: float | None
) -> int:
    """Run the TUI on ``timeline`` from ``at`` (wall time; None: its start); the exit code."""
    if timeline.span() is None:
        print("iotop-plus: replay: the recording holds no frames", file=sys.stderr)
        return 1
    problems: list[str] = []
    config = load_config(problems=problems)
    for line in problems:
        print(f"iotop-plus: {line}", file=sys.stderr)
    app = make_replay_app(roots, timeline, at, config)
    engine.announce()  # (before the alternate screen: it stays readable)
    result = app.run()
    return int(result or 0) if app.return_code in (None, 0) else int(app.return_code or 1)
