"""Undo and restore put back only what they changed: the conflict when a setting moved since.

Before an undo, a revert or ``restore`` writes an original value back, the tuner compares
the setting's value now with what the change left. When they differ, someone else changed it
since (another run on the same state directory, a person writing sysfs by hand, another
tool), and writing the original back would throw their value away: a :class:`Conflict`.

What happens then is the caller's choice (:data:`ASK`, :data:`REFUSE`, :data:`FORCE`): the
TUI asks ("loop3 read_ahead_kb is 2048 now; this run set 64, the original was 128: put back
128, or leave 2048"); headless callers refuse with one line (``restore --force`` overrides).
The journal records the outcome as a ``conflict`` line whose ``choice`` is one of
:data:`CHOICES`: ``put_back`` (the original is written back), ``leave`` (the value now stays;
the change is closed, never a leftover) or ``refused`` (nothing written; the change stays
open, so once its run has ended ``restore`` offers it again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: On a conflict: raise :class:`ConflictError` and journal nothing (the TUI then asks).
ASK = "ask"
#: On a conflict: journal ``refused`` and raise :class:`ConflictError` (headless).
REFUSE = "refuse"
#: On a conflict: journal ``put_back`` and write the original back all the same (``--force``).
FORCE = "force"
#: The journaled outcome of a conflict.
PUT_BACK, LEAVE, REFUSED = "put_back", "leave", "refused"
CHOICES = (PUT_BACK, LEAVE, REFUSED)


@dataclass(frozen=True)
class Conflict:
    """A setting that no longer holds what a change left: someone changed it since."""

    where: str
    """The device named in the change, or ``host`` for a host setting."""
    queue_device: str | None
    """The device whose ``queue/`` holds the setting (None for a host setting)."""
    setting: str
    """The setting's sysfs name (or the sysctl's name)."""
    now: str
    """The value read now."""
    wrote: str
    """The value the change left (read back after its write)."""
    original: str
    """The value before the change: what an undo or restore would write back."""
    changes: tuple[tuple[str, int], ...]
    """(run, sequence) of each change it stands for."""
    changed_by: str | None = None
    """The run whose journaled write left ``now``, when the journal knows one."""
    this_run: bool = True
    """Whether the change is the asking run's own (else a run that died left it)."""

    @property
    def who(self) -> str:
        """Who changed it, as far as the journal knows."""
        if self.changed_by:
            return f"set by run {self.changed_by}"
        return "no journaled run set it: changed by hand or by another tool"

    def question(self) -> str:
        """``loop3 read_ahead_kb is 2048 now (who); this run set 64, the original was 128``."""
        whose = "this run" if self.this_run else "a run that died"
        return (
            f"{self.where} {self.setting} is {self.now} now ({self.who}); {whose} set "
            f"{self.wrote}, the original was {self.original}"
        )

    def refusal(self, force: str) -> str:
        """One line for a headless refusal; ``force`` names what puts the original back."""
        return f"{self.question()}: left at {self.now}; {force} puts {self.original} back"

    def to_json(self) -> dict[str, object]:
        """The fields of a ``conflict`` journal line (without run, sequence and choice)."""
        return {
            "device": None if self.queue_device is None else self.where,
            "queue_device": self.queue_device,
            "setting": self.setting,
            "now": self.now,
            "wrote": self.wrote,
            "original": self.original,
            "changed_by": self.changed_by,
        }


class TuningError(Exception):
    """Undo, revert or restore could not put a value back; the message is one line."""


class ConflictError(TuningError):
    """Undo, revert or restore found settings changed since and wrote none of them back.

    Args:
        conflicts: Each setting left as it is, in the order found.
        message: One line for people.
    """

    def __init__(self, conflicts: tuple[Conflict, ...], message: str) -> None:
        super().__init__(message)
        self.conflicts = conflicts
        """Each setting left as it is."""


def last_writer(
    records: Iterable[Mapping[str, Any]], queue_device: str | None, setting: str, value: str
) -> str | None:
    """The run whose journaled write was the last to ``setting`` of ``queue_device`` (None:
    a host setting), when that write left ``value``; else None (nobody in the journal did)."""
    writer: str | None = None
    for rec in records:
        if (
            rec.get("record") != "change"
            or rec.get("setting") != setting
            or rec.get("queue_device") != queue_device
        ):
            continue
        run = rec.get("run")
        writer = run if isinstance(run, str) and rec.get("effective") == value else None
    return writer


__all__ = [
    "ASK",
    "CHOICES",
    "FORCE",
    "LEAVE",
    "PUT_BACK",
    "REFUSE",
    "REFUSED",
    "Conflict",
    "ConflictError",
    "TuningError",
    "last_writer",
]
