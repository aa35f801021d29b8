"""The one constructor of live frame sources: the TUI, ``serve``, ``record`` and the headless
commands each say what they need, and get a :class:`~.live_source.LiveSource` reading it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from iotop_plus.sampling.disks.queue_settings import QUEUE_REFRESH_S, QUEUES, QueueReader
from iotop_plus.sampling.disks.sampler import Sampler
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import THROTTLES
from iotop_plus.sampling.journal_events import JournalPart, journal_reader

if TYPE_CHECKING:
    from pathlib import Path

    from iotop_plus.roots import Roots
    from iotop_plus.sampling.frame.part import PartReader
    from iotop_plus.state import StateDir


def live_source(
    roots: Roots | None = None,
    sampler: Sampler | None = None,
    *,
    devices: bool = True,
    journal: StateDir | None = None,
    journal_history: bool = False,
    throttles: bool = False,
    queue_refresh_s: float = QUEUE_REFRESH_S,
    want: tuple[str, ...] = (),
) -> LiveSource:
    """A live source of ``roots`` (default the live ones).

    Args:
        sampler: The disk sampler (tests pass a canned one); default reads ``roots``.
        devices: Read the block devices; False for a consumer of processes only (``top``).
        journal: The state directory whose journals' new lines the frames carry as
            ``setting`` and ``probe`` events; None: no journal events.
        journal_history: Also the lines already in the journals (``serve`` counts them all).
        throttles: Check throttling cheaply while the full cgroups are not read (the
            verdict's ``throttled`` cause; the TUI asks once its Device tab is up).
        queue_refresh_s: How often queue settings are re-read when nothing changed.
        want: Parts wanted from the first frame (built-in names or registered keys).
    """
    sampler = sampler if sampler is not None else Sampler(roots)
    readers: dict[str, PartReader[Any]] = {
        QUEUES: QueueReader(sampler.roots, refresh_s=queue_refresh_s)
    }
    if journal is not None:
        readers[JournalPart.key] = journal_reader(journal, history=journal_history)
    source = LiveSource(sampler=sampler, devices=devices, readers=readers)
    for key in (*want, *((THROTTLES,) if throttles else ())):
        source.want(key, True)
    return source


def tui_source(roots: Roots, state_dir: Path) -> LiveSource:
    """The TUI's frames: setting changes and probe results (this run's and others') come with
    them. The TUI asks for the throttle check itself once its Device tab is up."""
    from iotop_plus.state import StateDir

    return live_source(roots, journal=StateDir(state_dir))
