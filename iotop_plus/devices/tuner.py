"""Apply, undo and revert queue settings; journal every change; export udev rules and a script.

Every write goes through :func:`~iotop_plus.devices.settings.write_setting` (validated first,
read back after). Some writes move other settings too: switching the scheduler resets
``nr_requests``, writing ``max_sectors_kb`` resets ``read_ahead_kb``. So each change records
the other settings of the same queue that moved with it, and undo puts those back as well:
undo and revert-all restore the exact values read before.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from iotop_plus import __version__
from iotop_plus.devices.settings import (
    SETTINGS,
    SettingError,
    SettingValue,
    check_device_name,
    effective_note,
    queue_device,
    raise_not_writable,
    read_setting,
    read_settings,
    validate_value,
    write_setting,
)
from iotop_plus.roots import Roots
from iotop_plus.sampling.inventory import BlockDevice, Inventory, read_inventory

#: Actions in the journal: a user's change, its undo, a revert-all step, a failed set rolled back.
ACTIONS = ("set", "undo", "revert", "rollback")

#: Characters that make a udev match value unsafe to quote (globs, quotes, escapes).
_UDEV_UNSAFE = set('"\\*?[]|\n')


def _create(path: Path, text: str, mode: int) -> None:
    # O_EXCL: an export never overwrites a file, ours or anyone's.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def write_order(setting: str) -> int:
    """Sort key: settings whose write resets others go first.

    Switching the scheduler resets ``nr_requests`` (and bfq turns off write-back throttling);
    writing ``max_sectors_kb`` resets ``read_ahead_kb`` (seen on Linux 6.18).
    """
    return {"scheduler": 0, "max_sectors_kb": 1}.get(setting, 2)


class TuningError(Exception):
    """Undo or revert could not restore a value; the message is one line."""


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
    """``set``, ``undo``, ``revert`` or ``rollback`` (see :data:`ACTIONS`)."""
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
    monotonic: float = 0.0
    """``time.monotonic()`` of the write, to place a chart mark against the samples."""

    @property
    def mark_label(self) -> str:
        """Short text for a chart mark: ``read_ahead_kb 128→16`` (``undo`` appended)."""
        text = f"{self.setting} {self.old}→{self.effective}"
        return text if self.action == "set" else f"{text} ({self.action})"

    @property
    def summary(self) -> str:
        """One line for people: ``loop3 read-ahead: 128 -> 4 (asked 7: rounded ...)``."""
        label = SETTINGS[self.setting].label if self.setting in SETTINGS else self.setting
        text = f"{self.device} {label}: {self.old} -> {self.effective}"
        if self.effective != self.new:
            text += f" (asked {self.new}: {self.note or 'adjusted by the kernel'})"
        for effect in self.side_effects:
            text += f"; {effect.setting} {effect.old} -> {effect.effective}"
        if self.action != "set":
            text += f" [{self.action}]"
        return text

    def to_json(self) -> dict[str, object]:
        """The journal line for this change."""
        return {
            "time": datetime.fromtimestamp(self.time, timezone.utc).isoformat(),
            "sequence": self.sequence,
            "action": self.action,
            "device": self.device,
            "queue_device": self.queue_device,
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


def default_journal_path(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/iotop-plus/changes.jsonl``, else ``~/.local/state/iotop-plus/...``."""
    env = os.environ if environ is None else environ
    state = env.get("XDG_STATE_HOME") or ""
    # The XDG spec says a relative path is invalid and must be ignored.
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "iotop-plus" / "changes.jsonl"


class Journal:
    """Every change of this run in memory, each also appended as a JSON line to ``path``.

    A journal file that cannot be written never stops a change: the reason is kept in
    :attr:`problem` for the caller to show.
    """

    def __init__(self, path: Path | None) -> None:
        """Args: path: The JSON-lines file, or None to keep the journal in memory only."""
        self.path = path
        """Where lines are appended, or None."""
        self.problem: str | None = None
        """Why the last append failed, or None."""
        self._entries: list[Change] = []

    @property
    def entries(self) -> tuple[Change, ...]:
        """All changes recorded in this run, oldest first."""
        return tuple(self._entries)

    def record(self, change: Change) -> None:
        """Keep ``change`` and append it to the file."""
        self._entries.append(change)
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(change.to_json(), ensure_ascii=False) + "\n")
            self.problem = None
        except OSError as exc:
            self.problem = f"cannot append to the journal {self.path}: {exc.strerror or exc}"


class Tuner:
    """Changes queue settings with read-back, and can undo them; safe to share between threads.

    Args:
        roots: Where sysfs is.
        journal: Where changes are recorded (default: in memory only).
        is_root: Override the root check (None: ask the OS).
        clock: Wall-clock source for journal times.
    """

    def __init__(
        self,
        roots: Roots,
        journal: Journal | None = None,
        *,
        is_root: bool | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.roots = roots
        """Where sysfs is."""
        self.journal = journal if journal is not None else Journal(None)
        """Every change made through this tuner."""
        self.is_root = os.geteuid() == 0 if is_root is None else is_root
        """Whether writes are possible at all."""
        self._clock = clock
        self._lock = threading.RLock()
        self._active: list[Change] = []
        self._sequence = 0

    # --- reading and validating ---------------------------------------------------------------

    def read(self, device: str) -> tuple[SettingValue, ...]:
        """Every setting of ``device`` as it is now."""
        return read_settings(self.roots, device, is_root=self.is_root)

    def read_one(self, device: str, setting: str) -> SettingValue:
        """One setting of ``device`` as it is now."""
        return read_setting(self.roots, device, setting, is_root=self.is_root)

    def validate(self, device: str, setting: str, text: str) -> str:
        """The value that would be written for ``text``; raises SettingError when refused."""
        if setting not in SETTINGS:
            raise SettingError(
                device, setting, f"unknown setting (known: {', '.join(SETTINGS)})", "invalid"
            )
        check_device_name(self.roots, device)
        return validate_value(self.roots, self.read_one(device, setting), text)

    @property
    def active(self) -> tuple[Change, ...]:
        """The changes of this run that are still in effect (not undone), oldest first."""
        with self._lock:
            return tuple(self._active)

    # --- writing -------------------------------------------------------------------------------

    def apply(self, device: str, setting: str, text: str) -> Change:
        """Validate, write and read back one setting; the change is journaled and undoable.

        Raises:
            SettingError: in plain words, with nothing changed.
        """
        with self._lock:
            change = self._write(device, setting, text, "set", None)
            self._active.append(change)
            return change

    def apply_many(self, device: str, assignments: Sequence[tuple[str, str]]) -> tuple[Change, ...]:
        """Apply several settings of one device, all or nothing.

        Every value is validated before the first write. The scheduler goes first, since
        switching it resets ``nr_requests``, then ``max_sectors_kb``, since writing it resets
        ``read_ahead_kb``; the rest keep their order. If any write fails, the ones already
        made are rolled back and the error says so.

        Raises:
            SettingError: for the first refused value, after the rollback.
        """
        with self._lock:
            ordered = sorted(assignments, key=lambda a: write_order(a[0]))
            seen: set[str] = set()
            for setting, text in ordered:
                if setting in seen:
                    raise SettingError(device, setting, "given more than once", "invalid")
                seen.add(setting)
                current = self._checked(device, setting)
                validate_value(self.roots, current, text)
                if not current.writable:
                    raise_not_writable(current)
            done: list[Change] = []
            try:
                for setting, text in ordered:
                    done.append(self._write(device, setting, text, "set", None))
            except SettingError as exc:
                failures = self._put_back(done, "rollback")
                tail = (
                    "; nothing was changed"
                    if not failures
                    else "; ROLLBACK FAILED, still changed: " + "; ".join(failures)
                )
                raise SettingError(exc.device, exc.setting, exc.message + tail, exc.kind) from None
            self._active.extend(done)
            return tuple(done)

    def undo(self) -> Change:
        """Put back the last change still in effect; returns the journaled undo.

        Raises:
            TuningError: when nothing is left to undo or the old value cannot be restored.
        """
        with self._lock:
            if not self._active:
                raise TuningError("nothing to undo")
            change = self._active[-1]
            undo = self._restore(change, "undo")
            self._active.pop()
            return undo

    def revert_all(self) -> tuple[Change, ...]:
        """Undo every change of this run, newest first; returns the journaled reverts.

        Raises:
            TuningError: naming every value that could not be restored (the others are).
        """
        with self._lock:
            done: list[Change] = []
            failures: list[str] = []
            for change in reversed(self._active):
                try:
                    done.append(self._restore(change, "revert"))
                except TuningError as exc:
                    failures.append(str(exc))
            restored = {c.undoes for c in done}
            self._active = [c for c in self._active if c.sequence not in restored]
            if failures:
                raise TuningError("; ".join(failures))
            return tuple(done)

    # --- internals -----------------------------------------------------------------------------

    def _checked(self, device: str, setting: str) -> SettingValue:
        if setting not in SETTINGS:
            raise SettingError(
                device, setting, f"unknown setting (known: {', '.join(SETTINGS)})", "invalid"
            )
        check_device_name(self.roots, device)
        return self.read_one(device, setting)

    def _snapshot(self, device: str) -> dict[str, str | None]:
        return {v.setting.name: v.value for v in self.read(device)}

    def _write(
        self, device: str, setting: str, text: str, action: str, undoes: int | None
    ) -> Change:
        before = self._snapshot(device)
        result = write_setting(self.roots, device, setting, text, is_root=self.is_root)
        after = self._snapshot(device)
        effects = tuple(
            SideEffect(name, old or "", after.get(name) or "")
            for name, old in before.items()
            if name != setting and old is not None and after.get(name) != old
        )
        self._sequence += 1
        change = Change(
            sequence=self._sequence,
            time=self._clock(),
            action=action,
            device=device,
            queue_device=result.after.queue_device,
            setting=setting,
            old=result.old,
            new=result.requested,
            effective=result.effective,
            note=effective_note(self.roots, result),
            side_effects=effects,
            undoes=undoes,
            monotonic=time.monotonic(),
        )
        self.journal.record(change)
        return change

    def _restore(self, change: Change, action: str) -> Change:
        try:
            undo = self._write(change.device, change.setting, change.old, action, change.sequence)
            if undo.effective != change.old:
                raise TuningError(
                    f"{change.device} {change.setting}: wrote {change.old} back "
                    f"but the device kept {undo.effective}"
                )
            for effect in change.side_effects:
                now = self.read_one(change.device, effect.setting).value
                if now != effect.old:
                    self._write(change.device, effect.setting, effect.old, action, change.sequence)
        except SettingError as exc:
            raise TuningError(f"cannot restore {exc}") from None
        return undo

    def _put_back(self, changes: Iterable[Change], action: str) -> list[str]:
        failures = []
        for change in reversed(list(changes)):
            try:
                self._restore(change, action)
            except TuningError as exc:
                failures.append(str(exc))
        return failures

    # --- persistence ---------------------------------------------------------------------------

    def net_settings(self) -> dict[str, dict[str, str]]:
        """Per queue device, the final value of each setting this run changed and kept.

        Settings that ended where they started are left out. Each device's mapping is in
        :func:`write_order`.
        """
        with self._lock:
            first_old: dict[tuple[str, str], str] = {}
            last: dict[tuple[str, str], str] = {}
            for change in self._active:
                key = (change.queue_device, change.setting)
                first_old.setdefault(key, change.old)
                last[key] = change.effective
        result: dict[str, dict[str, str]] = {}
        for (qdev, setting), value in sorted(last.items(), key=lambda kv: write_order(kv[0][1])):
            if first_old[(qdev, setting)] != value:
                result.setdefault(qdev, {})[setting] = value
        return result

    def udev_rules(self, inventory: Inventory | None = None) -> str:
        """The run's kept changes as a udev rules file (see :func:`udev_rules`)."""
        settings = self.net_settings()
        if inventory is None and settings:
            inventory = read_inventory(self.roots)
        return udev_rules(settings, inventory or Inventory())

    def export(self, directory: Path, inventory: Inventory | None = None) -> tuple[Path, Path]:
        """Write the udev rules and the shell script as new files in ``directory``.

        The names carry the time (``iotop-plus-20260102-030405.rules`` and ``.sh``).

        Raises:
            OSError: when the directory cannot be made or a file already exists.
        """
        if inventory is None and self.net_settings():
            inventory = read_inventory(self.roots)
        stamp = datetime.fromtimestamp(self._clock()).strftime("%Y%m%d-%H%M%S")
        directory.mkdir(parents=True, exist_ok=True)
        rules = directory / f"iotop-plus-{stamp}.rules"
        script = directory / f"iotop-plus-{stamp}.sh"
        _create(rules, self.udev_rules(inventory), 0o644)
        _create(script, self.shell_script(inventory), 0o755)
        return rules, script

    def shell_script(self, inventory: Inventory | None = None) -> str:
        """The run's kept changes as a POSIX shell script (see :func:`shell_script`)."""
        settings = self.net_settings()
        if inventory is None and settings:
            inventory = read_inventory(self.roots)
        return shell_script(settings, inventory or Inventory())


def _header(kind: str) -> list[str]:
    stamp = datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")
    return [
        f"# {kind} written by iotop-plus {__version__} on {socket.gethostname()} at {stamp}:",
        "# the queue settings changed and kept in that run.",
    ]


def _safe(value: str | None) -> str | None:
    if not value or any(c in _UDEV_UNSAFE for c in value):
        return None
    return value


def udev_match(device: BlockDevice | None, name: str) -> tuple[str, str]:
    """The udev match keys for a disk and a comment saying what they match on.

    A WWN or serial is stable across reboots and re-cabling, the kernel name is not. From the
    udev database the identity is in ``ENV{ID_WWN}``/``ENV{ID_SERIAL_SHORT}`` (set by
    60-persistent-storage.rules, hence a rules file numbered after 60); from sysfs it is an
    attribute of the disk or one of its parents, so ``ATTRS{}``. Only one ``ATTRS`` key is
    used, since udev requires all ``ATTRS`` keys to match on the same parent.
    """
    kernel = f'KERNEL=="{name}"'
    if device is not None:
        wwid, serial = _safe(device.wwid), _safe(device.serial)
        udev = device.identity_source == "udev"
        if wwid:
            key = f'ENV{{ID_WWN}}=="{wwid}"' if udev else f'ATTRS{{wwid}}=="{wwid}"'
            return key, f"# {name}: matched by its WWN ({device.identity_source})"
        if serial:
            key = f'ENV{{ID_SERIAL_SHORT}}=="{serial}"' if udev else f'ATTRS{{serial}}=="{serial}"'
            return key, f"# {name}: matched by its serial number ({device.identity_source})"
        if device.dm_name and _safe(device.dm_name):
            return (
                f'ENV{{DM_NAME}}=="{device.dm_name}"',
                f"# {name}: matched by its device-mapper name",
            )
    return kernel, (
        f"# {name}: no serial or WWN is known, so this matches the kernel name, "
        "which can change between boots"
    )


def udev_rules(settings: Mapping[str, Mapping[str, str]], inventory: Inventory) -> str:
    """A udev rules file that sets ``settings`` (queue device -> setting -> value) at boot."""
    lines = [
        *_header("udev rules"),
        "# Install as /etc/udev/rules.d/61-iotop-plus.rules, then run:",
        "#   udevadm control --reload && udevadm trigger --action=change --subsystem-match=block",
    ]
    if not settings:
        lines.append("# (no settings were changed and kept)")
    for name, values in settings.items():
        match, comment = udev_match(inventory.get(name), name)
        assigns = ", ".join(f'ATTR{{queue/{s}}}="{v}"' for s, v in values.items())
        lines += [
            comment,
            f'ACTION=="add|change", SUBSYSTEM=="block", ENV{{DEVTYPE}}=="disk", {match}, {assigns}',
        ]
    return "\n".join(lines) + "\n"


def _identity_guard(device: BlockDevice | None, name: str) -> list[str]:
    if device is None or device.identity_source != "sysfs":
        return []
    for attr, value in (("wwid", device.wwid), ("serial", device.serial)):
        if value:
            files = [f"/sys/block/{name}/{attr}", f"/sys/block/{name}/device/{attr}"]
            quoted = " ".join(shlex.quote(f) for f in files)
            return [f"same_disk {name} {shlex.quote(value)} {quoted}"]
    return []


def shell_script(settings: Mapping[str, Mapping[str, str]], inventory: Inventory) -> str:
    """A POSIX shell script equivalent to :func:`udev_rules`, for a one-off re-apply.

    It refuses to touch a kernel name that now belongs to another disk (checked by WWN or
    serial when those are known), and exits 1 if any write failed.
    """
    lines = [
        "#!/bin/sh",
        *_header("Shell script"),
        "# Run as root. Kernel names can change between boots: check them first.",
        "set -u",
        "status=0",
        "same_disk() {  # same_disk DEV EXPECTED FILE...: is DEV still the disk we tuned?",
        "    dev=$1; want=$2; shift 2",
        '    for f in "$@"; do',
        '        if [ -r "$f" ]; then',
        '            [ "$(cat "$f")" = "$want" ] && return 0',
        '            echo "$dev is not the disk that was tuned ($f is not $want); skipped" >&2',
        "            status=1; return 1",
        "        fi",
        "    done",
        "    return 0",
        "}",
        "set_queue() {  # set_queue DEV SETTING VALUE",
        "    f=/sys/block/$1/queue/$2",
        '    if [ ! -e "$f" ]; then echo "$f: no such setting" >&2; status=1; return; fi',
        '    if printf "%s" "$3" > "$f"; then',
        '        echo "$1 $2: $(cat "$f")"',
        "    else",
        '        echo "$1 $2: the device refused $3" >&2; status=1',
        "    fi",
        "}",
    ]
    if not settings:
        lines.append("# (no settings were changed and kept)")
    for name, values in settings.items():
        guard = _identity_guard(inventory.get(name), name)
        sets = [f"set_queue {shlex.quote(name)} {s} {shlex.quote(v)}" for s, v in values.items()]
        if guard:
            lines.append(f"if {guard[0]}; then")
            lines += ["    " + s for s in sets]
            lines.append("fi")
        else:
            lines.append(f"# {name}: no serial or WWN known; the kernel name is trusted")
            lines += sets
    lines.append('exit "$status"')
    return "\n".join(lines) + "\n"


__all__ = [
    "ACTIONS",
    "Change",
    "Journal",
    "SideEffect",
    "Tuner",
    "TuningError",
    "default_journal_path",
    "queue_device",
    "shell_script",
    "udev_match",
    "udev_rules",
    "write_order",
]
