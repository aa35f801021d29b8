"""Write queue settings (and the one host setting) through the journal, with read-back.

:class:`JournaledWrites` is the writing half of :class:`~iotop_plus.devices.tuner.Tuner`:
every write goes through :func:`~iotop_plus.devices.settings.write_setting` (validated first,
read back after), its intent journaled before it is made (no journal, no change) and its
outcome after. Some writes move other settings too: switching the scheduler resets
``nr_requests``, writing ``max_sectors_kb`` resets ``read_ahead_kb``. So each change records
the other settings of the same queue that moved with it, and writing it back puts those back
as well. ``apply_many`` is all or nothing: a failed write rolls back the ones before it.

One host setting goes through here too: ``kernel.task_delayacct`` (the Processes tab's ``D``),
journaled with ``scope: "host"`` and the boot id (see :mod:`iotop_plus.devices.journal`).
The kept changes export as udev rules and a shell script
(:mod:`iotop_plus.devices.boot_export`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from iotop_plus.devices.boot_export import (
    export_files,
    net_settings,
    shell_script,
    udev_rules,
)
from iotop_plus.devices.changes import (
    HOST_SCOPE,
    Change,
    SideEffect,
    boot_id,
    device_identity,
    write_order,
)
from iotop_plus.devices.conflicts import (
    TuningError,
)
from iotop_plus.devices.delayacct import DelayAcctError, set_delayacct
from iotop_plus.devices.journal import Journal, JournalError
from iotop_plus.devices.settings import (
    SETTINGS,
    SettingError,
    SettingValue,
    check_device_name,
    effective_note,
    raise_not_writable,
    read_setting,
    read_settings,
    validate_value,
    write_setting,
)
from iotop_plus.devices.writers import Writer, not_live_reason
from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.delayacct import SYSCTL as DELAYACCT
from iotop_plus.sampling.processes.delayacct import DelayAcct, read_delayacct
from iotop_plus.sampling.topology.inventory import Inventory, read_inventory

#: ``kernel.task_delayacct``'s value for each state read (UNKNOWN: no sysctl to switch).
_DELAYACCT_VALUE = {DelayAcct.ON: "1", DelayAcct.OFF: "0"}


def boottime() -> float:
    """Seconds since boot on ``CLOCK_BOOTTIME``, the clock of tasks' start times."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


class JournaledWrites:
    """Changes queue settings with read-back and keeps this run's changes; thread-safe.

    Each write's intent is journaled before it is made (no journal, no change), its outcome
    after. Without an injected ``writer`` only the live /sys is written.

    Args:
        roots: Where sysfs is.
        journal: Where changes are recorded (default: in memory only).
        is_root: Override the root check (None: ask the OS).
        clock: Wall-clock source for journal times.
        writer: Writes one setting file (default: the live writer, ``O_NOFOLLOW``, /sys only;
            tests inject one to change settings in temporary trees).
    """

    def __init__(
        self,
        roots: Roots,
        journal: Journal | None = None,
        *,
        is_root: bool | None = None,
        clock: Callable[[], float] = time.time,
        writer: Writer | None = None,
    ) -> None:
        self.roots = roots
        """Where sysfs is."""
        self.journal = journal if journal is not None else Journal(None)
        """Every change made through this tuner."""
        self.is_root = os.geteuid() == 0 if is_root is None else is_root
        """Whether writes are possible at all."""
        self.writer = writer
        """The injected writer, or None for the live one."""
        self._clock = clock
        self._lock = threading.RLock()
        self._active: list[Change] = []
        self._sequence = 0
        self._switched_on: list[float | None] = []  # cached: [] until the journal was read

    # --- reading and validating ---------------------------------------------------------------

    def read(self, device: str) -> tuple[SettingValue, ...]:
        """Every setting of ``device`` as it is now."""
        return read_settings(self.roots, device, is_root=self.is_root)

    def read_one(self, device: str, setting: str) -> SettingValue:
        """One setting of ``device`` as it is now."""
        return read_setting(self.roots, device, setting, is_root=self.is_root)

    def read_host(self, setting: str) -> str | None:
        """A host setting's value now (``kernel.task_delayacct``: ``0``/``1``), None if unknown."""
        if setting != DELAYACCT:
            return None
        return _DELAYACCT_VALUE.get(read_delayacct(self.roots))

    def validate(self, device: str, setting: str, text: str) -> str:
        """The value that would be written for ``text``; raises SettingError when refused."""
        if setting not in SETTINGS:
            raise SettingError(
                device, setting, f"unknown setting (known: {', '.join(SETTINGS)})", "invalid"
            )
        check_device_name(self.roots, device)
        return validate_value(self.roots, self.read_one(device, setting), text)

    @property
    def change_refused(self) -> str | None:
        """Why this tuner may not change anything (a captured tree), or None."""
        return None if self.writer is not None else not_live_reason(self.roots)

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

    def switch_delayacct(self, enabled: bool) -> Change:
        """Switch ``kernel.task_delayacct`` on or off; journaled (scope ``host``) and undoable.

        Raises:
            SettingError: in plain words, with nothing changed.
        """
        with self._lock:
            change = self._write_host(DELAYACCT, "1" if enabled else "0", "set", None)
            self._active.append(change)
            return change

    def delayacct_switched_on(self) -> float | None:
        """``CLOCK_BOOTTIME`` seconds of the last off->on switch of delay accounting in this
        boot, as far as the journal knows; None when unknown. Tasks started before it have no
        delay record (the kernel gives one only to tasks forked while it is on)."""
        with self._lock:
            if not self._switched_on:
                try:
                    self._switched_on.append(self.journal.delayacct_switched_on(self.roots))
                except JournalError:
                    self._switched_on.append(None)
            return self._switched_on[0]

    # --- internals -----------------------------------------------------------------------------

    def _write_host(self, setting: str, value: str, action: str, undoes: int | None) -> Change:
        """Write a host setting (only ``kernel.task_delayacct``), journaled first."""
        where = HOST_SCOPE
        if setting != DELAYACCT:
            raise SettingError(where, setting, "not a host setting iotop-plus changes", "invalid")
        refused = self.change_refused
        if refused:
            raise SettingError(where, setting, refused, "failed")
        if not self.is_root:
            raise SettingError(where, setting, f"switching {DELAYACCT} needs root", "permission")
        old = _DELAYACCT_VALUE.get(read_delayacct(self.roots))
        if old is None:
            raise SettingError(
                where, setting, f"this kernel has no {DELAYACCT} sysctl (it predates 5.14)"
            )
        sequence = self._sequence + 1
        boot = boot_id(self.roots)
        record = {
            "sequence": sequence,
            "action": action,
            "scope": HOST_SCOPE,
            "device": None,
            "queue_device": None,
            "setting": setting,
            "old": old,
            "new": value,
            "boot_id": boot,
        }
        try:
            self.journal.intend(record)
        except JournalError as exc:
            raise SettingError(where, setting, str(exc), "failed") from None
        self._sequence = sequence
        try:
            state = set_delayacct(self.roots, value == "1", writer=self.writer)
        except DelayAcctError as exc:
            self.journal.failed(sequence, str(exc))
            raise SettingError(where, setting, str(exc), "failed") from None
        change = Change(
            sequence=sequence,
            time=self._clock(),
            action=action,
            device="",
            queue_device="",
            setting=setting,
            old=old,
            new=value,
            effective=_DELAYACCT_VALUE.get(state, value),
            undoes=undoes,
            run=self.journal.run_id,
            scope=HOST_SCOPE,
            boot_id=boot,
            boottime=boottime(),
        )
        self.journal.record(change)
        if change.effective == "0":
            self._switched_on[:] = [None]
        elif old == "0":
            self._switched_on[:] = [change.boottime]
        return change

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
        sequence = self._sequence + 1
        intended: list[bool] = []

        def intend(current: SettingValue, value: str) -> None:
            identity = device_identity(self.roots, current.queue_device)
            record = {
                "sequence": sequence,
                "action": action,
                "device": device,
                "queue_device": current.queue_device,
                "setting": setting,
                "old": current.value or "",
                "new": value,
                **identity,
            }
            try:
                self.journal.intend(record)
            except JournalError as exc:
                raise SettingError(device, setting, str(exc), "failed") from None
            self._sequence = sequence
            intended.append(True)

        try:
            result = write_setting(
                self.roots,
                device,
                setting,
                text,
                is_root=self.is_root,
                writer=self.writer,
                before_write=intend,
            )
        except SettingError as exc:
            if intended:
                self.journal.failed(sequence, exc.message)
            raise
        after = self._snapshot(device)
        effects = tuple(
            SideEffect(name, old or "", after.get(name) or "")
            for name, old in before.items()
            if name != setting and old is not None and after.get(name) != old
        )
        change = Change(
            sequence=sequence,
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
            run=self.journal.run_id,
        )
        self.journal.record(change)
        return change

    def _restore(self, change: Change, action: str) -> Change:
        try:
            if change.scope == HOST_SCOPE:
                undo = self._write_host(change.setting, change.old, action, change.sequence)
            else:
                before = self._snapshot(change.device)
                undo = self._write(
                    change.device, change.setting, change.old, action, change.sequence
                )
            if undo.effective != change.old:
                raise TuningError(
                    f"{change.where} {change.setting}: wrote {change.old} back "
                    f"but the {'kernel' if change.scope == HOST_SCOPE else 'device'} kept "
                    f"{undo.effective}"
                )
            if change.scope != HOST_SCOPE:
                self._side_effects_back(
                    change.device, change.side_effects, before, action, change.sequence
                )
        except SettingError as exc:
            raise TuningError(f"cannot restore {exc}") from None
        return undo

    def _side_effects_back(
        self,
        device: str,
        effects: Iterable[SideEffect],
        before: dict[str, str | None],
        action: str,
        undoes: int | None,
    ) -> None:
        """After a write back, put back the settings the first write moved: its original
        where the setting still held what that write left (``before``, read just before the
        write back), else the value someone set since, when the write back moved it."""
        for effect in effects:
            was = before.get(effect.setting)
            target = effect.old if was == effect.effective else was
            if target is not None and self.read_one(device, effect.setting).value != target:
                self._write(device, effect.setting, target, action, undoes)

    def keep(self, reason: str) -> tuple[Change, ...]:
        """Close this run's changes in effect as meant to last (``set``, ``quit``).

        They are no longer undoable here, and never leftovers. Returns the changes kept.
        """
        with self._lock:
            kept = tuple(self._active)
            self.journal.keep(kept, reason)
            self._active.clear()
            return kept

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
        """Per queue device, the final value of each setting this run changed and kept
        (see :func:`~iotop_plus.devices.boot_export.net_settings`)."""
        with self._lock:
            return net_settings(self._active)

    def udev_rules(self, inventory: Inventory | None = None) -> str:
        """The run's kept changes as a udev rules file (see :func:`udev_rules`)."""
        settings = self.net_settings()
        return udev_rules(settings, inventory or self._inventory(settings))

    def shell_script(self, inventory: Inventory | None = None) -> str:
        """The run's kept changes as a POSIX shell script (see :func:`shell_script`)."""
        settings = self.net_settings()
        return shell_script(settings, inventory or self._inventory(settings))

    def export(self, directory: Path, inventory: Inventory | None = None) -> tuple[Path, Path]:
        """Write the udev rules and the shell script as new files in ``directory`` (see
        :func:`~iotop_plus.devices.boot_export.export_files`).

        Raises:
            OSError: when the directory cannot be made or a file already exists.
        """
        settings = self.net_settings()
        inventory = inventory or self._inventory(settings)
        return export_files(directory, settings, inventory, self._clock())

    def _inventory(self, settings: dict[str, dict[str, str]]) -> Inventory:
        return read_inventory(self.roots) if settings else Inventory()


__all__ = [
    "JournaledWrites",
    "boottime",
]
