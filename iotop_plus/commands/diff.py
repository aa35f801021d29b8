"""``iotop-plus diff --from PATH --a T1..T2 --b T3..T4``: what changed between two windows."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from iotop_plus import __version__
from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, UsageError
from iotop_plus.commands.recording_input import open_recording
from iotop_plus.record.diff_report import MAX_EVENTS, Report, compare, report_json, report_text
from iotop_plus.record.timeline import RecordingTimeline
from iotop_plus.record.window_stats import WindowStats, window_stats
from iotop_plus.roots import Roots
from iotop_plus.sampling.journal_events import record_wall_time
from iotop_plus.text import parse_time, printable, printable_doc

_EVENTS = frozenset({b"E"})

EFFECT_HELP = (
    "Per device, each figure (IOPS, MB/s, await, aqu-sz, %util from the recorded counters "
    "with iostat -x's formulas; p99 where the recording has latency histograms, record "
    "--latency) is compared as an effect size: (median of B - median of A) / spread, the "
    "spread being the windows' pooled robust standard deviation (1.4826 x MAD), at least 5 % "
    "of the pooled median and at least a floor (1 I/O/s, 0.01 MB/s, 0.1 ms, 0.1 queued, "
    "1 %util). A figure changed when |effect| >= 3 and it moved by at least 25 % of A's "
    "median. Windows of 10 minutes or more compare the per-minute means the recording keeps "
    "(no sample decoded), shorter ones every interval. A device's changed figures are one "
    "change, ranked by the largest. Issuers "
    "(record --issuers) and cgroups that appeared, vanished or changed share, settings and "
    "limits that changed (with when and who), devices that came or went and health events "
    "rank with their device's figure change, else last. Nothing over the bar: 'no "
    "significant change'."
)


def add_parser(sub: Any) -> None:
    """Register the subcommand."""
    p = sub.add_parser(
        "diff",
        help="what changed between two windows of a recording, ranked, with evidence",
        description="Compare two windows of a recording directory, file or bundle. " + EFFECT_HELP,
        epilog="Times: 14:05, 14:05:30, 10m ago, 2026-11-23T14:05:00, @EPOCH; a window is "
        "START..END (e.g. --a 13:00..13:10 --b 14:00..14:10, or --b '10m ago..now' alone: A "
        "is then as long, right before B).",
    )
    p.add_argument("--from", dest="from_path", required=True, metavar="PATH",
                   help="a recording directory, a recording file or a bundle")  # fmt: skip
    p.add_argument("--a", dest="window_a", metavar="T1..T2", help="window A")
    p.add_argument("--b", dest="window_b", metavar="T3..T4", help="window B")
    p.add_argument("-f", "--format", choices=("text", "json"), default="text",
                   help="output format (default text)")  # fmt: skip
    p.set_defaults(run=run)


def parse_window(text: str, now: float, tz: Any, name: str) -> tuple[float, float]:
    """``T1..T2`` as two wall times (seconds since the epoch).

    Raises:
        UsageError: one line naming the window.
    """
    start, sep, end = text.partition("..")
    if not sep or not start.strip() or not end.strip():
        raise UsageError(f"--{name} {text[:64]!r}: give a window as START..END (e.g. 13:00..13:10)")
    try:
        got = parse_time(start.strip(), now, tz), parse_time(end.strip(), now, tz)
    except ValueError as exc:
        raise UsageError(f"--{name}: {exc}") from None
    if got[1] <= got[0]:
        raise UsageError(f"--{name} {text[:64]!r}: the end is not after the start")
    return got


def windows(args: argparse.Namespace, now: float, tz: Any) -> tuple[tuple[float, float], ...]:
    """Windows A and B from the arguments (A right before B when only B is given)."""
    if args.window_b is None:
        raise UsageError("--b is required (--a alone compares nothing; --b alone takes A as "
                         "the same length right before B)")  # fmt: skip
    b = parse_window(args.window_b, now, tz, "b")
    if args.window_a is None:
        return (b[0] - (b[1] - b[0]), b[0]), b
    return parse_window(args.window_a, now, tz, "a"), b


ROLLUP_WINDOW_S = 600.0
"""Windows at least this long (both) compare per-minute means from the chunks' roll-ups."""


def summed_up(
    timeline: RecordingTimeline, window: tuple[float, float], minutes: bool
) -> WindowStats:
    """One window of a recording: its samples decoded, or (``minutes``) its per-minute
    roll-ups and the JSON records of its samples without decoding their counters."""
    if not minutes:
        return window_stats(timeline.samples(*window), *window)
    stats = WindowStats(*window)
    for doc in timeline.rollups(*window):
        stats.add_rollup(doc)
    for wall, docs in timeline.json_records(*window):
        stats.add_docs(wall, docs)
    return stats


def diff_timeline(
    timeline: RecordingTimeline, a: tuple[float, float], b: tuple[float, float]
) -> Report:
    """The report of windows ``a`` and ``b`` of a recording."""
    minutes = min(a[1] - a[0], b[1] - b[0]) >= ROLLUP_WINDOW_S
    stats_a, stats_b = summed_up(timeline, a, minutes), summed_up(timeline, b, minutes)
    first, second = sorted((a, b))
    gap = (
        [(w, e) for w, docs in timeline.json_records(first[1], second[0], _EVENTS)
         for e in docs.get("E") or () if isinstance(e, dict) and first[1] < w < second[0]]
        if second[0] > first[1] else []
    )  # fmt: skip
    events = [*stats_a.events, *gap[:MAX_EVENTS], *stats_b.events]
    lo, hi = first[0], second[1]
    seen = {json.dumps(e, sort_keys=True) for _, e in events}
    for doc in timeline.header.get("journal") or ():  # a bundle's journal
        if isinstance(doc, dict):
            wall = record_wall_time(doc)
            event = {"source": "changes", "record": doc}
            if (
                wall is not None
                and lo < wall <= hi
                and json.dumps(event, sort_keys=True) not in seen
            ):
                events.append((wall, event))
    queue_a = timeline.inventory_doc(a[1]).get("queue")
    queue_b = timeline.inventory_doc(b[1]).get("queue")
    return compare(
        stats_a,
        stats_b,
        events=events,
        queue_before=queue_a if isinstance(queue_a, dict) else None,
        queue_after=queue_b if isinstance(queue_b, dict) else None,
    )


def run(args: argparse.Namespace, _roots: Roots) -> int:
    """Print the ranked changes; returns the exit code."""
    if args.window_a is not None and args.window_b is None:
        raise UsageError("--a needs --b (or give --b alone: A is then as long, right before B)")

    opened = open_recording(args.from_path)
    if opened is None:
        return EXIT_FAILURE
    timeline, span = opened
    try:
        tz = timeline.zone
        a, b = windows(args, span[1], tz)
        report = diff_timeline(timeline, a, b)
    finally:
        timeline.close()
    for name, stats in (("A", report.a), ("B", report.b)):
        if stats.intervals == 0:
            print(f"iotop-plus: error: window {name} holds no recorded interval "
                  f"({printable(args.from_path)})", file=sys.stderr)  # fmt: skip
            return EXIT_FAILURE
    if args.format == "json":
        doc = report_json(report, str(args.from_path), __version__)
        print(json.dumps(printable_doc(doc), indent=2, ensure_ascii=False))
    else:
        print("\n".join(report_text(report, tz)))
    return EXIT_OK
