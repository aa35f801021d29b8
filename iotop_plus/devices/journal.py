"""The settings journal (``DIR/changes.jsonl``) and the leftovers of runs that died.

Each change is journaled twice: its *intent* (run id, device, major:minor, ``diskseq``,
setting, old, new) before the sysfs write, then its outcome (the value read back, or the
failure). A change is closed by an undo (``undo``, ``revert``, ``rollback`` naming it), by a
``keep`` record (a headless ``set``, the quit dialog, a hangup), or by a ``closed`` record
(``restore`` put it back, or found its device replaced), or by a ``conflict`` line whose
choice is ``leave``. A **leftover** is a ``set`` that is not closed and whose run no longer
holds its lock (see :mod:`iotop_plus.state`).

Lines (one JSON object each, ``record`` says which):

* ``intent``: ``run``, ``sequence``, ``time``, ``action``, ``device``, ``queue_device``,
  ``setting``, ``old``, ``new``, ``dev`` (``MAJ:MIN``), ``diskseq``, ``backing_file``,
  ``serial``, ``wwid`` (each None where unknown);
* ``change``: :meth:`Change.to_json` plus ``run``;
* ``failed``: ``run``, ``sequence``, ``error`` (nothing was changed);
* ``keep``: ``run``, ``sequence``, ``reason`` (``set``, ``quit``...);
* ``closed``: ``run``, ``sequence``, ``reason`` (``restored``, ``kept`` or ``stale``), ``by``
  (the run that closed it);
* ``conflict``: ``run``, ``sequence``, ``device``, ``queue_device``, ``setting``, ``now``,
  ``wrote``, ``original``, ``changed_by`` (the run that set ``now``, when known), ``choice``
  (``put_back``, ``leave`` or ``refused``) and ``by``: an undo, revert or restore found the
  setting changed since (see :mod:`iotop_plus.devices.conflicts`). ``leave`` closes the change.

A hangup (SIGHUP: the SSH link dropped) writes no ``keep``: nobody chose to keep the changes,
so they stay in force as leftovers of a dead run, for ``restore`` (or ``restore --keep``).
Every hint naming ``restore`` carries ``--state-dir`` when the journal is not in the default
state directory (:meth:`Journal.restore_command`).

What a change is lives in :mod:`iotop_plus.devices.changes`; how the leftovers are found, in
:mod:`iotop_plus.devices.leftovers`.

**Host settings** (``kernel.task_delayacct``, the ``D`` key) are journaled the same way with
``scope: "host"``, ``device`` and ``queue_device`` null, and the boot id
(``/proc/sys/kernel/random/boot_id``) as their identity: a leftover from another boot is
stale (the kernel reset it at boot). Their ``change`` lines add ``boottime_s``, the
``CLOCK_BOOTTIME`` of the write, which the Processes tab compares with tasks' start times.
Host leftovers never refuse a device command.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iotop_plus.devices.changes import DEVICE_SCOPE, HOST_SCOPE, Change, boot_id
from iotop_plus.devices.conflicts import CHOICES, Conflict, last_writer
from iotop_plus.devices.leftovers import Leftover, find_leftovers
from iotop_plus.devices.settings import queue_device, read_setting
from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.delayacct import SYSCTL as DELAYACCT
from iotop_plus.state import CHANGES, StateDir, StateError, default_state_dir, new_run_id
from iotop_plus.text import printable


class JournalError(Exception):
    """The journal cannot be written safely, so nothing may change; one line."""


def default_journal_path(environ: Mapping[str, str] | None = None) -> Path:
    """``changes.jsonl`` in the default state directory (see :func:`default_state_dir`)."""
    return default_state_dir(environ) / CHANGES


class Journal:
    """Every change of this run in memory, each also journaled in ``path`` (when given).

    Args:
        path: ``DIR/changes.jsonl`` in a state directory, or None to keep the journal in
            memory only (tests; ``set --no-journal``).
        run_id: This run's id (default: a new one).
    """

    def __init__(self, path: Path | None, *, run_id: str | None = None) -> None:
        self.path = path
        """The JSON-lines file, or None."""
        self.state = StateDir(path.parent) if path is not None else None
        """The state directory holding it, or None."""
        self.run_id = run_id or new_run_id()
        """This run's id, in every record."""
        self.problem: str | None = None
        """Why the last record written after a change failed, or None."""
        self._entries: list[Change] = []
        self._lock_fd: int | None = None

    @classmethod
    def in_dir(cls, directory: Path, run_id: str | None = None) -> Journal:
        """The journal of the state directory ``directory``."""
        return cls(directory / CHANGES, run_id=run_id)

    @property
    def entries(self) -> tuple[Change, ...]:
        """All changes recorded in this run, oldest first."""
        return tuple(self._entries)

    def _append(self, record: dict[str, Any]) -> None:
        if self.state is None:
            return
        if self._lock_fd is None:
            self._lock_fd = self.state.lock_run(self.run_id)
        self.state.append(CHANGES, {"record": record.pop("record"), **record})

    def intend(self, record: dict[str, Any]) -> None:
        """Journal the intent of a write, before it is made.

        Raises:
            JournalError: naming the journal and the reason; the write must not happen.
        """
        try:
            self._append({"record": "intent", "run": self.run_id, "time": _now(), **record})
        except StateError as exc:
            raise JournalError(f"no change made: the journal is unsafe: {exc}") from None

    def record(self, change: Change) -> None:
        """Keep ``change`` and journal its outcome (a failure is kept in :attr:`problem`)."""
        self._entries.append(change)
        self._after({"record": "change", **change.to_json()})

    def failed(self, sequence: int, error: str) -> None:
        """Journal that the write of ``sequence`` failed and changed nothing."""
        self._after({"record": "failed", "run": self.run_id, "sequence": sequence, "error": error})

    def keep(self, changes: Iterable[Change], reason: str) -> None:
        """Close ``changes``: they are meant to last (``set``, ``quit``; never a hangup)."""
        for change in changes:
            self._after(
                {"record": "keep", "run": change.run or self.run_id, "sequence": change.sequence}
                | {"time": _now(), "reason": reason}
            )

    def close_leftover(self, leftover: Leftover, reason: str) -> None:
        """Close a leftover's changes: ``restored``, ``kept`` (left in force on purpose), or
        ``stale`` (another device now, or another boot)."""
        for run, sequence in leftover.changes:
            self._after(
                {"record": "closed", "run": run, "sequence": sequence, "time": _now()}
                | {"reason": reason, "by": self.run_id}
            )

    def conflict(self, conflict: Conflict, choice: str) -> None:
        """Journal what became of ``conflict``: ``put_back``, ``leave`` (closes its changes)
        or ``refused`` (they stay open); one ``conflict`` line per change it stands for."""
        if choice not in CHOICES:
            raise ValueError(f"unknown choice {choice!r}")
        for run, sequence in conflict.changes:
            self._after(
                {"record": "conflict", "run": run, "sequence": sequence, "time": _now()}
                | conflict.to_json()
                | {"choice": choice, "by": self.run_id}
            )

    def last_writer(self, queue_device: str | None, setting: str, value: str) -> str | None:
        """The run whose journaled write left ``value`` in ``setting``, if the journal's last
        write to it did; None when unknown (or the journal cannot be read)."""
        if self.state is None:
            records: Iterable[Mapping[str, Any]] = [
                {"record": "change", **c.to_json()} for c in self._entries
            ]
        else:
            try:
                records = list(self.state.records(CHANGES))
            except StateError:
                return None
        return last_writer(records, queue_device, setting, value)

    def restore_command(self, *options: str) -> str:
        """``iotop-plus restore OPTIONS`` as a user would type it, with ``--state-dir DIR``
        when this journal is not in the default state directory."""
        words = ["iotop-plus"]
        if self.state is not None and self.state.path != default_state_dir():
            words += ["--state-dir", shlex.quote(printable(str(self.state.path)))]
        return " ".join([*words, "restore", *options])

    @property
    def restore_hint(self) -> str:
        """What a refusal or a hangup says to do about leftovers."""
        return (
            f"`{self.restore_command()}` (puts the originals back) or "
            f"`{self.restore_command('--keep')}` (keeps the values)"
        )

    def _after(self, record: dict[str, Any]) -> None:
        try:
            self._append(record)
            self.problem = None
        except StateError as exc:
            self.problem = f"cannot append to the journal {self.path}: {exc}"

    def close(self) -> None:
        """End this run cleanly: drop its lock (call after every change is closed)."""
        if self.state is not None and self._lock_fd is not None:
            self.state.unlock_run(self.run_id, self._lock_fd)
            self._lock_fd = None

    def leftovers(self, roots: Roots) -> list[Leftover]:
        """The changes of runs that died without undoing or keeping them, per device setting.

        Raises:
            JournalError: the journal cannot be read safely.
        """
        if self.state is None:
            return []
        try:
            records = list(self.state.records(CHANGES))
        except StateError as exc:
            raise JournalError(f"cannot read the journal: {exc}") from None
        return find_leftovers(records, roots, self.state.run_alive, self.run_id)

    def leftovers_on(self, roots: Roots, queue_device: str) -> list[Leftover]:
        """The leftovers that still apply to ``queue_device`` (stale and host ones left out:
        a host setting never refuses a device command)."""
        return [
            left
            for left in self.leftovers(roots)
            if left.scope == DEVICE_SCOPE and left.queue_device == queue_device and not left.stale
        ]

    def leftover_refusal(self, roots: Roots, device: str) -> str | None:
        """One line naming each leftover on ``device``'s queue (value now, original), or None.

        Raises:
            JournalError: the journal cannot be read safely.
        """
        lefts = self.leftovers_on(roots, queue_device(roots, device))
        if not lefts:
            return None
        parts = [
            left.refusal(read_setting(roots, str(left.queue_device), left.setting).value)
            for left in lefts
        ]
        return "; ".join(parts) + f"; first run {self.restore_hint}"

    def delayacct_switched_on(self, roots: Roots) -> float | None:
        """``CLOCK_BOOTTIME`` seconds of the last off->on switch of delay accounting in this
        boot known to the journal; None when unknown (or the journal says it is off since).

        Raises:
            JournalError: the journal cannot be read safely.
        """
        if self.state is None:
            records: Iterable[Mapping[str, Any]] = [
                {"record": "change", **c.to_json()} for c in self._entries
            ]
        else:
            try:
                records = list(self.state.records(CHANGES))
            except StateError as exc:
                raise JournalError(f"cannot read the journal: {exc}") from None
        return last_switch_on(records, boot_id(roots))


def _now() -> str:
    return datetime.fromtimestamp(time.time(), timezone.utc).isoformat()


def last_switch_on(records: Iterable[Mapping[str, Any]], boot: str | None) -> float | None:
    """When delay accounting was last switched from off to on in boot ``boot``, as
    ``CLOCK_BOOTTIME`` seconds, from the journal's ``change`` lines; None when no such switch
    is known, or a later line switched it off again (then the last switch on is unknown)."""
    since: float | None = None
    if not boot:
        return None
    for rec in records:
        if (
            rec.get("record") != "change"
            or rec.get("scope") != HOST_SCOPE
            or rec.get("setting") != DELAYACCT
            or rec.get("boot_id") != boot
        ):
            continue
        effective, when = rec.get("effective"), rec.get("boottime_s")
        if effective == "0":
            since = None
        elif effective == "1" and rec.get("old") == "0":
            since = float(when) if isinstance(when, (int, float)) else None
    return since


__all__ = [
    "Journal",
    "JournalError",
    "default_journal_path",
    "last_switch_on",
]
