"""The settings journal (``DIR/changes.jsonl``) and the leftovers of runs that died.

Each change is journaled twice: its *intent* (run id, device, major:minor, ``diskseq``,
setting, old, new) before the sysfs write, then its outcome (the value read back, or the
failure). A change is closed by an undo (``undo``, ``revert``, ``rollback`` naming it), by a
``keep`` record (a headless ``set``, the quit dialog, a hangup), or by a ``closed`` record
(``restore`` put it back, or found its device replaced). A **leftover** is a ``set`` that is
not closed and whose run no longer holds its lock (see :mod:`iotop_plus.state`).

Lines (one JSON object each, ``record`` says which):

* ``intent``: ``run``, ``sequence``, ``time``, ``action``, ``device``, ``queue_device``,
  ``setting``, ``old``, ``new``, ``dev`` (``MAJ:MIN``), ``diskseq``, ``backing_file``,
  ``serial``, ``wwid`` (each None where unknown);
* ``change``: :meth:`Change.to_json` plus ``run``;
* ``failed``: ``run``, ``sequence``, ``error`` (nothing was changed);
* ``keep``: ``run``, ``sequence``, ``reason`` (``set``, ``quit``...);
* ``closed``: ``run``, ``sequence``, ``reason`` (``restored``, ``kept`` or ``stale``), ``by``
  (the run that closed it).

A hangup (SIGHUP: the SSH link dropped) writes no ``keep``: nobody chose to keep the changes,
so they stay in force as leftovers of a dead run, for ``restore`` (or ``restore --keep``).

**Host settings** (``kernel.task_delayacct``, the ``D`` key) are journaled the same way with
``scope: "host"``, ``device`` and ``queue_device`` null, and the boot id
(``/proc/sys/kernel/random/boot_id``) as their identity: a leftover from another boot is
stale (the kernel reset it at boot). Their ``change`` lines add ``boottime_s``, the
``CLOCK_BOOTTIME`` of the write, which the Processes tab compares with tasks' start times.
Host leftovers never refuse a device command.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iotop_plus.devices.settings import SETTINGS, queue_device, read_setting
from iotop_plus.roots import Roots, open_regular
from iotop_plus.sampling.delayacct import SYSCTL as DELAYACCT
from iotop_plus.sampling.diskstats import printable
from iotop_plus.state import CHANGES, StateDir, StateError, default_state_dir, new_run_id

#: Actions in the journal: a user's change, its undo, a revert-all step, a failed set rolled
#: back, and a leftover of a dead run put back.
ACTIONS = ("set", "undo", "revert", "rollback", "restore")
#: Actions that put back the change named by ``undoes``: they close it.
UNDO_ACTIONS = ("undo", "revert", "rollback")
#: Identity fields of a device (and, for host settings, of the boot), journaled with intents.
IDENTITY = ("dev", "diskseq", "backing_file", "serial", "wwid", "boot_id")
#: The ``scope`` of a change to one device's queue, and of a change to the whole host.
DEVICE_SCOPE, HOST_SCOPE = "device", "host"
#: Host-wide settings that are journaled, undone and restored like queue settings.
HOST_SETTINGS = (DELAYACCT,)
#: What a refusal or a hangup says to do about leftovers.
RESTORE_HINT = (
    "`iotop-plus restore` (puts the originals back) or `iotop-plus restore --keep` (keeps "
    "the values)"
)


def restore_hint(state_dir: Path | None) -> str:
    """:data:`RESTORE_HINT` for a run on ``state_dir``: with its ``--state-dir`` unless that is
    the default one (``restore`` elsewhere would find nothing)."""
    if state_dir is None or state_dir == default_state_dir():
        return RESTORE_HINT
    import shlex

    command = f"iotop-plus --state-dir {shlex.quote(printable(str(state_dir)))} restore"
    return f"`{command}` (puts the originals back) or `{command} --keep` (keeps the values)"


class JournalError(Exception):
    """The journal cannot be written safely, so nothing may change; one line."""


@dataclass(frozen=True)
class SideEffect:
    """Another setting of the same queue that the kernel changed along with a write."""

    setting: str
    """The setting's sysfs name, e.g. ``nr_requests``."""
    old: str
    """Its value before the write."""
    effective: str
    """Its value after the write."""


@dataclass(frozen=True)
class Change:
    """One write to one setting, as the journal records it."""

    sequence: int
    """Order within this run, from 1."""
    time: float
    """Wall-clock time of the write (seconds since the epoch)."""
    action: str
    """``set``, ``undo``, ``revert``, ``rollback`` or ``restore`` (see :data:`ACTIONS`)."""
    device: str
    """The device the user named (may be a partition)."""
    queue_device: str
    """The device whose ``queue/`` was written."""
    setting: str
    """The setting's sysfs name."""
    old: str
    """The value read before the write."""
    new: str
    """The value written (validated and normalised)."""
    effective: str
    """The value read back after the write: what the kernel kept."""
    note: str | None = None
    """Why ``effective`` differs from ``new`` (rounded, clamped...), else None."""
    side_effects: tuple[SideEffect, ...] = ()
    """Other settings of the queue that moved with this write."""
    undoes: int | None = None
    """For undo, revert and rollback: the sequence number of the change put back."""
    run: str = ""
    """The run that made it (sequence numbers restart in every run)."""
    scope: str = DEVICE_SCOPE
    """``device`` (a queue setting) or ``host`` (a sysctl; ``device`` is then empty)."""
    boot_id: str | None = None
    """Host settings: the boot it was made in (the kernel resets sysctls at boot)."""
    boottime: float | None = None
    """Host settings: ``CLOCK_BOOTTIME`` of the write, in seconds (tasks' start times use it)."""

    @property
    def where(self) -> str:
        """``host`` for a host setting, else the device named."""
        return HOST_SCOPE if self.scope == HOST_SCOPE else self.device

    @property
    def summary(self) -> str:
        """One line for people: ``loop3 read-ahead: 128 -> 4 (asked 7: rounded ...)``."""
        label = SETTINGS[self.setting].label if self.setting in SETTINGS else self.setting
        text = f"{self.where} {label}: {self.old} -> {self.effective}"
        if self.effective != self.new:
            text += f" (asked {self.new}: {self.note or 'adjusted by the kernel'})"
        for effect in self.side_effects:
            text += f"; {effect.setting} {effect.old} -> {effect.effective}"
        if self.action != "set":
            text += f" [{self.action}]"
        return text

    def to_json(self) -> dict[str, object]:
        """The journal line for this change."""
        host = self.scope == HOST_SCOPE
        doc: dict[str, object] = {
            "time": datetime.fromtimestamp(self.time, timezone.utc).isoformat(),
            "run": self.run,
            "sequence": self.sequence,
            "action": self.action,
            "scope": self.scope,
            "device": None if host else self.device,
            "queue_device": None if host else self.queue_device,
            "setting": self.setting,
            "old": self.old,
            "new": self.new,
            "effective": self.effective,
            "note": self.note,
            "side_effects": [
                {"setting": e.setting, "old": e.old, "effective": e.effective}
                for e in self.side_effects
            ],
            "undoes": self.undoes,
        }
        if host:
            doc["boot_id"] = self.boot_id
            doc["boottime_s"] = self.boottime
        return doc


def default_journal_path(environ: Mapping[str, str] | None = None) -> Path:
    """``changes.jsonl`` in the default state directory (see :func:`default_state_dir`)."""
    return default_state_dir(environ) / CHANGES


def _read(path: Path) -> str | None:
    # A captured tree may hold a FIFO where sysfs has a file: never wait on it.
    try:
        fd = open_regular(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            return fh.read(4096).decode("utf-8", "replace").strip() or None
        except OSError:
            return None


def boot_id(roots: Roots) -> str | None:
    """This boot's id (``/proc/sys/kernel/random/boot_id``), or None where unreadable."""
    return _read(roots.proc / "sys" / "kernel" / "random" / "boot_id")


def same_boot(recorded: Mapping[str, Any], now: str | None) -> str:
    """``same``, ``stale`` (set in another boot: the kernel reset it) or ``unknown``."""
    was = recorded.get("boot_id")
    if not was or not now:
        return "unknown: the boot id is not known, so whether the kernel reset it is not either"
    if was != now:
        return "stale: set in an earlier boot (the kernel reset it at boot)"
    return "same"


def device_identity(roots: Roots, queue_device: str) -> dict[str, str | None]:
    """What tells this disk from the next one given its name: major:minor, ``diskseq``
    (Linux >= 5.15, grows with every attach), the loop backing file, serial and WWN."""
    base = roots.sys_block / queue_device
    return {
        "dev": _read(base / "dev"),
        "diskseq": _read(base / "diskseq"),
        "backing_file": _read(base / "loop" / "backing_file"),
        "serial": _read(base / "device" / "serial"),
        "wwid": _read(base / "wwid") or _read(base / "device" / "wwid"),
    }


def same_device(recorded: Mapping[str, Any], now: Mapping[str, str | None]) -> str:
    """``same``, ``stale`` (another device has the name now) or ``unknown``, with why."""
    if not now.get("dev"):
        return "stale: the device is gone"
    if recorded.get("dev") and recorded["dev"] != now["dev"]:
        return f"stale: it is {now['dev']} now, was {recorded['dev']}"
    for key, what in (
        ("diskseq", "diskseq"),
        ("backing_file", "backing file"),
        ("wwid", "WWN"),
        ("serial", "serial"),
    ):
        if recorded.get(key):
            if recorded[key] == now.get(key):
                return "same"
            return f"stale: another device ({what} {now.get(key)}, was {recorded[key]})"
    return "unknown: nothing identifies the device (no diskseq, backing file, serial or WWN)"


@dataclass(frozen=True)
class Leftover:
    """A setting that a run which died left changed, on one device."""

    device: str | None
    """The device named in the change (None for a host setting)."""
    queue_device: str | None
    """The device whose ``queue/`` was written (None for a host setting)."""
    setting: str
    """The setting's sysfs name, or the sysctl's name for a host setting."""
    original: str
    """The value before the first of these changes: what restore writes back."""
    left: str
    """The value the run left (read back, or asked when the outcome was never written)."""
    changes: tuple[tuple[str, int], ...]
    """(run, sequence) of each open change it stands for."""
    identity: str
    """``same``, or ``stale: ...``/``unknown: ...`` with the reason."""
    side_effects: tuple[SideEffect, ...] = ()
    """Other settings the first change moved, to put back as well."""
    scope: str = DEVICE_SCOPE
    """``device`` or ``host`` (a sysctl such as ``kernel.task_delayacct``)."""

    @property
    def where(self) -> str:
        """``host`` for a host setting, else the device named."""
        return HOST_SCOPE if self.scope == HOST_SCOPE else str(self.device)

    @property
    def stale(self) -> bool:
        """The name now belongs to another device: never restore onto it."""
        return self.identity.startswith("stale")

    @property
    def known(self) -> bool:
        """The device is known to be the one changed."""
        return self.identity == "same"

    def refusal(self, current: str | None) -> str:
        """One line naming the setting, its value and the original."""
        now = current if current is not None else self.left
        return (
            f"{self.where} {self.setting} is {now}, left by a run that ended without undoing "
            f"or keeping it (original {self.original})"
        )


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

    def restore_hint(self) -> str:
        """How to restore (or keep) this journal's leftovers: :func:`restore_hint`."""
        return restore_hint(self.path.parent if self.path is not None else None)

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
        return "; ".join(parts) + f"; first run {self.restore_hint()}"

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


def find_leftovers(
    records: Iterable[Mapping[str, Any]],
    roots: Roots,
    run_alive: Any,
    this_run: str = "",
) -> list[Leftover]:
    """Group the open ``set`` changes of dead runs by device, setting and device identity.

    Args:
        records: The journal's lines, oldest first.
        roots: Where to read the devices' identity now.
        run_alive: ``run_alive(run_id) -> bool``.
        this_run: The caller's run id (alive by definition).
    """
    intents: dict[tuple[str, int], Mapping[str, Any]] = {}
    outcomes: dict[tuple[str, int], Mapping[str, Any]] = {}
    closed: set[tuple[str, int]] = set()
    for rec in records:
        run, seq = rec.get("run"), rec.get("sequence")
        if not isinstance(run, str) or not isinstance(seq, int):
            continue
        kind = rec.get("record")
        if kind == "intent" and rec.get("action") == "set":
            intents[(run, seq)] = rec
        elif kind == "change":
            outcomes[(run, seq)] = rec
            undoes = rec.get("undoes")
            if rec.get("action") in UNDO_ACTIONS and isinstance(undoes, int):
                closed.add((run, undoes))
        elif kind in ("failed", "keep", "closed"):
            closed.add((run, seq))
    alive: dict[str, bool] = {}
    groups: dict[tuple[str, str, str], list[tuple[str, int]]] = {}
    for key, intent in intents.items():
        run = key[0]
        if key in closed or run == this_run:
            continue
        if run not in alive:
            alive[run] = run_alive(run)
        if alive[run]:
            continue
        ident = json.dumps({k: intent.get(k) for k in IDENTITY}, sort_keys=True)
        group = (str(intent.get("queue_device")), str(intent.get("setting")), ident)
        groups.setdefault(group, []).append(key)
    result = []
    boot: list[str | None] = []  # read once, and only when a host leftover needs it
    for (qdev, setting, _), keys in groups.items():
        first, last = intents[keys[0]], intents[keys[-1]]
        outcome = outcomes.get(keys[-1])
        left = str(outcome.get("effective") if outcome else last.get("new"))
        if first.get("scope") == HOST_SCOPE:
            if not boot:
                boot.append(boot_id(roots))
            identity = (
                same_boot(first, boot[0])
                if setting in HOST_SETTINGS
                else "stale: not a known host setting"
            )
            result.append(
                Leftover(
                    device=None,
                    queue_device=None,
                    setting=setting,
                    original=str(first.get("old")),
                    left=left,
                    changes=tuple(keys),
                    identity=identity,
                    scope=HOST_SCOPE,
                )
            )
            continue
        first_out = outcomes.get(keys[0])
        effects = tuple(
            SideEffect(str(e.get("setting")), str(e.get("old")), str(e.get("effective")))
            for e in (first_out.get("side_effects") or [] if first_out else [])
            if isinstance(e, dict) and e.get("setting") in SETTINGS
        )
        valid = setting in SETTINGS and _plain_name(qdev)
        now = device_identity(roots, qdev) if valid else {}
        result.append(
            Leftover(
                device=str(first.get("device")),
                queue_device=qdev,
                setting=setting,
                original=str(first.get("old")),
                left=left,
                changes=tuple(keys),
                identity=same_device(first, now) if valid else "stale: not a device setting",
                side_effects=effects,
            )
        )
    return result


def _plain_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and name.isprintable()


__all__ = [
    "ACTIONS",
    "DEVICE_SCOPE",
    "HOST_SCOPE",
    "HOST_SETTINGS",
    "IDENTITY",
    "RESTORE_HINT",
    "UNDO_ACTIONS",
    "Change",
    "Journal",
    "JournalError",
    "Leftover",
    "SideEffect",
    "boot_id",
    "default_journal_path",
    "device_identity",
    "find_leftovers",
    "last_switch_on",
    "same_boot",
    "same_device",
]
