"""The recording a subcommand reads (``--from PATH``), opened with the CLI's one-line errors."""

from __future__ import annotations

import sys

from iotop_plus.record.format import FormatError
from iotop_plus.record.timeline import RecordingTimeline, open_timeline
from iotop_plus.text import printable


def warn(line: str) -> None:
    """One warning line of the reader's on stderr (a damaged chunk, a file skipped)."""
    print(f"iotop-plus: warning: {printable(line)}", file=sys.stderr)


def open_recording(path: str) -> tuple[RecordingTimeline, tuple[float, float]] | None:
    """The timeline of the recording directory, file or bundle at ``path`` and the wall times
    of its first and last sample; the caller closes the timeline.

    None, after one error line on stderr, where ``path`` is not a readable recording or holds
    no samples.
    """
    try:
        timeline = open_timeline(path, warn=warn)
    except (FormatError, OSError) as exc:
        text = str(exc) if isinstance(exc, FormatError) else f"{path}: {exc.strerror}"
        print(f"iotop-plus: error: {printable(text)}", file=sys.stderr)
        return None
    span = timeline.span()
    if span is None:
        timeline.close()
        print(f"iotop-plus: error: {printable(path)}: no samples", file=sys.stderr)
        return None
    return timeline, span
