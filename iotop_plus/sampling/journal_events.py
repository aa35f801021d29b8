"""The frame's journal part: setting changes and probe results as frame events.

Other runs (the TUI, ``set``, ``probe``, ``sweep``, ``ab``, ``restore``) append to the state
directory's ``changes.jsonl`` and ``probes.jsonl``. :class:`JournalPart` tails both with the one
:class:`~iotop_plus.state.JsonlTail` each (:class:`JournalReader`, the reader of the frame part
:class:`JournalPart`), and every new line becomes a
:class:`~iotop_plus.sampling.frame.model.FrameEvent` of kind ``setting`` or ``probe`` carrying the
line
unchanged, its wall time and the matching monotonic time. The recorder, ``serve`` and the TUI's
chart marks take them from the frame; none of them reads the journals itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.frame.model import FrameEvent
from iotop_plus.sampling.frame.part import FramePart, ReadContext
from iotop_plus.state import CHANGES, PROBES, JsonlTail, StateDir, chosen_state_dir

if TYPE_CHECKING:
    from iotop_plus.roots import Roots

SETTING = "setting"
"""Event kind of a line of the settings journal."""
PROBE = "probe"
"""Event kind of a line of the probe journal."""

SOURCES = {CHANGES: ("changes", SETTING), PROBES: ("probes", PROBE)}
"""File in the state directory -> (the recorded ``source`` name, the event kind)."""
KIND_OF_SOURCE = {source: kind for source, kind in SOURCES.values()}
"""The recorded ``source`` name of a journal event -> its kind."""
DEVICE_SOURCE = "device"
"""The recorded ``source`` of a device event (added, removed)."""

CHANGE_RECORD = "change"
"""The ``record`` of an applied write in the settings journal."""
PROBE_RESULT_RECORD = "probe-result"
"""The ``record`` of a probe result line."""
EXPERIMENT_RECORD = "experiment"
"""The ``record`` of a sweep's or A/B's result line."""


def record_wall_time(doc: Mapping[str, Any]) -> float | None:
    """The ``time`` of a journal line (an ISO string or seconds since the epoch), or None."""
    value = doc.get("time")
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def record_device(doc: Mapping[str, Any]) -> str | None:
    """The device a journal or probe line concerns, if it names one."""
    for value in (doc.get("device"), doc.get("queue_device")):
        if isinstance(value, str) and value:
            return value
    result = doc.get("result")
    target = result.get("target") if isinstance(result, dict) else None
    if isinstance(target, dict) and isinstance(target.get("device"), str):
        return str(target["device"])
    if isinstance(result, dict) and isinstance(result.get("device"), str):
        return str(result["device"])
    return None


def record_text(kind: str, doc: Mapping[str, Any]) -> str:
    """One line for people about a journal (``kind`` setting) or probe line."""
    record = doc.get("record")
    if kind == SETTING:
        setting = doc.get("setting")
        if record == CHANGE_RECORD and setting is not None:
            text = f"{setting} {doc.get('old')}→{doc.get('effective', doc.get('new'))}"
            action = doc.get("action")
            return text if action in (None, "set") else f"{text} ({action})"
        if setting is not None:
            return f"{record}: {setting} {doc.get('old')} -> {doc.get('new')}"
        return str(record or "journal line")
    result = doc.get("result")
    if record == PROBE_RESULT_RECORD and isinstance(result, dict):
        return f"probe done: {result.get('preset')}"
    if record == EXPERIMENT_RECORD:
        return f"{doc.get('kind') or 'experiment'} done"
    return str(record or "probe line")


def journal_event(
    source: str, doc: Mapping[str, Any], frame_wall: float, frame_mono: float
) -> FrameEvent:
    """The frame event of a journal line read with the frame at (``frame_wall``,
    ``frame_mono``): at the line's own time when it has one (never after the frame), else at
    the frame's."""
    kind = KIND_OF_SOURCE.get(source, PROBE)
    wall = record_wall_time(doc)
    mono = frame_mono
    if wall is not None:
        mono = min(frame_mono, frame_mono - (frame_wall - wall))
    return FrameEvent(
        kind,
        record_text(kind, doc),
        record_device(doc),
        doc,
        source,
        wall if wall is not None else frame_wall,
        mono,
    )


def recorded_events(
    events: Iterable[Any], frame_wall: float, frame_mono: float
) -> tuple[FrameEvent, ...]:
    """A recorded sample's events as frame events (kind and text derived from the recorded
    line, as recordings up to version 3 store no more); a device event is at its frame's time.
    Entries of the wrong shape, from a corrupt file, are left out."""
    out = []
    for event in events or ():
        if not isinstance(event, Mapping):
            continue
        source = event.get("source")
        if source == DEVICE_SOURCE:
            device = event.get("device")
            out.append(
                FrameEvent(
                    str(event.get("kind")),
                    str(event.get("text")),
                    device if isinstance(device, str) else None,
                    None,
                    None,
                    frame_wall,
                    frame_mono,
                )
            )
            continue
        doc = event.get("record")
        if isinstance(source, str) and source in KIND_OF_SOURCE and isinstance(doc, Mapping):
            out.append(journal_event(source, doc, frame_wall, frame_mono))
    return tuple(out)


@dataclass(frozen=True)
class JournalLine:
    """One new line of a journal, as the journal part read it."""

    source: str
    """``changes`` or ``probes`` (the name recordings store)."""
    kind: str
    """``setting`` or ``probe``."""
    record: Mapping[str, Any]
    """The line, unchanged."""


class JournalReader:
    """The tails of the settings and probe journals of one state directory.

    Args:
        state: The state directory.
        history: Also the lines already in the files (``serve`` counts them all); otherwise
            only what is written from now on (the recorder, the TUI).
    """

    def __init__(self, state: StateDir, *, history: bool = False) -> None:
        self.state = state
        self._tails = {name: JsonlTail(state, name, from_end=not history) for name in SOURCES}

    def read(self) -> tuple[list[JournalLine], frozenset[str], tuple[str, ...]]:
        """(new lines, the sources whose file was replaced or cut shorter, problems)."""
        lines: list[JournalLine] = []
        restarted: set[str] = set()
        problems: list[str] = []
        for name, tail in self._tails.items():
            source, kind = SOURCES[name]
            again, docs = tail.read()
            if again:
                restarted.add(source)
            if tail.problem:
                problems.append(tail.problem)
            lines += [JournalLine(source, kind, doc) for doc in docs]
        return lines, frozenset(restarted), tuple(problems)

    def close(self) -> None:
        """The tails hold no descriptor between reads; the state directory is its owner's."""


@dataclass(frozen=True)
class JournalState:
    """What a frame says about the journals besides their new lines (which are its events)."""

    restarted: frozenset[str] = frozenset()
    """Journals (``changes``, ``probes``) replaced or cut shorter since the previous frame:
    what was counted from them must be dropped."""
    problems: tuple[str, ...] = ()
    """Why a journal could not be read for this frame (one line each)."""


QUIET = JournalState()
"""The state of a frame whose journals were read whole (the one value most frames share)."""


class JournalEvents:
    """The journal part's reader: each new line an event at its own wall time and the
    monotonic time that matches it (never after the frame)."""

    def __init__(self, journal: JournalReader) -> None:
        self.journal = journal

    def read(self, ctx: ReadContext) -> tuple[JournalState, tuple[FrameEvent, ...]]:
        """This frame's new lines as events, and the journals' state."""
        lines, restarted, problems = self.journal.read()
        wall, mono = ctx.sample.wall_time, ctx.sample.monotonic
        events = tuple(journal_event(line.source, line.record, wall, mono) for line in lines)
        return (JournalState(restarted, problems) if restarted or problems else QUIET), events

    def close(self) -> None:
        """As :meth:`JournalReader.close`."""
        self.journal.close()


class JournalPart(FramePart[JournalState]):
    """Setting changes and probe results of every run, as ``setting`` and ``probe`` events.

    Its lines are recorded with the other events (``E``), so it has no letter of its own. The
    caller that wants it gives the reader (:func:`journal_reader`, its state directory);
    wanted without one, it tails the default state directory from now on.
    """

    key = "journal"

    def reader(self, roots: Roots) -> JournalEvents:  # noqa: ARG002
        """The default state directory's journals, from now on."""
        return JournalEvents(JournalReader(StateDir(chosen_state_dir(None))))

    def to_json(self, value: JournalState) -> Any:
        """``{"restarted": [...], "problems": [...]}``."""
        return {"restarted": sorted(value.restarted), "problems": list(value.problems)}

    def from_json(self, doc: Any) -> JournalState | None:
        """The state a document describes; None for anything else."""
        if not isinstance(doc, Mapping):
            return None
        restarted, problems = doc.get("restarted"), doc.get("problems")
        if not isinstance(restarted, list) or not isinstance(problems, list):
            return None
        return JournalState(
            frozenset(s for s in restarted[:2] if isinstance(s, str)),
            tuple(p for p in problems[:2] if isinstance(p, str)),
        )


def journal_reader(state: StateDir, *, history: bool = False) -> JournalEvents:
    """The journal part's reader for ``state`` (``history``: also the lines already there)."""
    return JournalEvents(JournalReader(state, history=history))
