"""Apply, undo and revert queue settings; put back what a dead run left; export the rest.

:class:`Tuner` is what the TUI and the commands use. Its writing half
(:class:`~iotop_plus.devices.journaled.JournaledWrites`) applies settings through the
journal; this half puts them back. Undo and revert-all restore the exact values read before
(the side effects too), and ``restore`` puts back what a run that died left changed.

Each puts back only what it changed: before writing an original back, the setting's value now
is compared with what the change left. When they differ someone changed it since (another
run on the same state directory, a person, another tool), and the caller's ``on_conflict``
decides: the TUI asks, headless callers refuse with one line, ``--force`` writes the original
back; the journal records the choice (see :mod:`iotop_plus.devices.conflicts`).

The host setting ``kernel.task_delayacct`` is undone by ``u``/``U``, offered on quit and
restored by ``restore`` like a queue setting.
"""

from __future__ import annotations

from iotop_plus.devices.changes import (
    HOST_SCOPE,
    Change,
)
from iotop_plus.devices.conflicts import (
    ASK,
    FORCE,
    LEAVE,
    PUT_BACK,
    REFUSE,
    REFUSED,
    Conflict,
    ConflictError,
    TuningError,
)
from iotop_plus.devices.journaled import JournaledWrites
from iotop_plus.devices.leftovers import Leftover
from iotop_plus.devices.settings import (
    SettingError,
)


class Tuner(JournaledWrites):
    """Changes queue settings with read-back, and can undo them; safe to share between threads.

    Args: as :class:`~iotop_plus.devices.journaled.JournaledWrites`.
    """

    def undo(self, on_conflict: str = REFUSE) -> Change:
        """Put back the last change still in effect; returns the journaled undo.

        Only when the setting still holds what the change left: otherwise someone changed it
        since, and ``on_conflict`` (see :mod:`iotop_plus.devices.conflicts`) says whether to
        ask (raise, journal nothing), refuse (journal ``refused``, raise) or write the original
        back all the same (``force``: journal ``put_back``).

        Raises:
            ConflictError: the setting changed since; nothing was written.
            TuningError: when nothing is left to undo or the old value cannot be restored.
        """
        with self._lock:
            if not self._active:
                raise TuningError("nothing to undo")
            change = self._active[-1]
            self.settle(self.conflict(change), on_conflict)
            undo = self._restore(change, "undo")
            self._active.pop()
            return undo

    def revert_all(self, on_conflict: str = REFUSE) -> tuple[Change, ...]:
        """Undo every change of this run, newest first; returns the journaled reverts.

        A setting changed since is a conflict (see :meth:`undo`): it and this run's older
        changes of the same setting stay in effect, the others are reverted.

        Raises:
            ConflictError: naming every setting left as it is (and any that failed).
            TuningError: naming every value that could not be restored (the others are).
        """
        with self._lock:
            done: list[Change] = []
            failures: list[str] = []
            conflicts: list[Conflict] = []
            held: set[tuple[str, str, str]] = set()
            for change in reversed(self._active):
                key = (change.scope, change.queue_device, change.setting)
                if key in held:
                    continue  # an older change under a conflict: it waits for the answer
                try:
                    self.settle(self.conflict(change), on_conflict)
                    done.append(self._restore(change, "revert"))
                except ConflictError as exc:
                    conflicts.extend(exc.conflicts)
                    held.add(key)
                    failures.append(str(exc))
                except TuningError as exc:
                    failures.append(str(exc))
            restored = {c.undoes for c in done}
            self._active = [c for c in self._active if c.sequence not in restored]
            if conflicts:
                raise ConflictError(tuple(conflicts), "; ".join(failures))
            if failures:
                raise TuningError("; ".join(failures))
            return tuple(done)

    def conflict(self, change: Change) -> Conflict | None:
        """How ``change``'s setting moved since it was written, or None when it still holds
        what the change left (or cannot be read: the write back then says why)."""
        host = change.scope == HOST_SCOPE
        if host:
            now = self.read_host(change.setting)
        else:
            now = self.read_one(change.device, change.setting).value
        if now is None or now == change.effective:
            return None
        qdev = None if host else change.queue_device
        return Conflict(
            where=change.where,
            queue_device=qdev,
            setting=change.setting,
            now=now,
            wrote=change.effective,
            original=change.old,
            changes=((change.run or self.journal.run_id, change.sequence),),
            changed_by=self.journal.last_writer(qdev, change.setting, now),
        )

    def leftover_conflict(self, leftover: Leftover) -> Conflict | None:
        """How a dead run's leftover moved since that run left it, or None (see
        :meth:`conflict`)."""
        if leftover.scope == HOST_SCOPE:
            now = self.read_host(leftover.setting)
        else:
            now = self.read_one(str(leftover.device), leftover.setting).value
        if now is None or now == leftover.left:
            return None
        return Conflict(
            where=leftover.where,
            queue_device=leftover.queue_device,
            setting=leftover.setting,
            now=now,
            wrote=leftover.left,
            original=leftover.original,
            changes=leftover.changes,
            changed_by=self.journal.last_writer(leftover.queue_device, leftover.setting, now),
            this_run=False,
        )

    def resolve(self, conflict: Conflict, put_back: bool) -> Change | None:
        """Carry out a person's answer to a conflict of this run's change: put the original
        back (journaled ``put_back``; returns the undo) or leave the value as it is now
        (journaled ``leave``; the change is closed and leaves :attr:`active`).

        Raises:
            TuningError: the change is no longer in effect, or the value cannot be restored.
        """
        with self._lock:
            mine = {s for run, s in conflict.changes if run == self.journal.run_id}
            changes = [c for c in self._active if c.sequence in mine]
            if not changes:
                raise TuningError(f"{conflict.where} {conflict.setting}: already undone")
            if not put_back:
                self.journal.conflict(conflict, LEAVE)
                self._active = [c for c in self._active if c.sequence not in mine]
                return None
            change = changes[-1]
            self.settle(self.conflict(change), FORCE)
            undo = self._restore(change, "undo")
            self._active.remove(change)
            return undo

    def leave(self, conflict: Conflict) -> None:
        """Leave a dead run's leftover at the value someone set since (journaled ``leave``,
        which closes it)."""
        with self._lock:
            self.journal.conflict(conflict, LEAVE)

    def settle(self, conflict: Conflict | None, on_conflict: str) -> None:
        """Go on when there is no ``conflict`` or ``on_conflict`` forces (journaled
        ``put_back``); else raise :class:`ConflictError` (journaled ``refused`` unless asking).

        Raises:
            ConflictError: one line naming the value now, what was set and the original.
        """
        if conflict is None:
            return
        if on_conflict == FORCE:
            self.journal.conflict(conflict, PUT_BACK)
            return
        if on_conflict != ASK:
            self.journal.conflict(conflict, REFUSED)
        force = f"`{self.journal.restore_command('--force')}` (once this run has ended)"
        if not conflict.this_run:
            force = "--force"
        raise ConflictError((conflict,), conflict.refusal(force))

    def restore_leftover(self, leftover: Leftover, on_conflict: str = REFUSE) -> Change:
        """Write a dead run's leftover back to its original value, then close it.

        Only when the setting still holds what that run left; otherwise ``on_conflict``
        decides, as for :meth:`undo`.

        Raises:
            ConflictError: the setting changed since the run left it; nothing was written.
            TuningError: when the device is not known to be the one changed, or the value
                cannot be restored.
        """
        if not leftover.known:
            raise TuningError(
                f"{leftover.where} {leftover.setting}: not restored ({leftover.identity})"
            )
        with self._lock:
            self.settle(self.leftover_conflict(leftover), on_conflict)
            try:
                if leftover.scope == HOST_SCOPE:
                    change = self._write_host(leftover.setting, leftover.original, "restore", None)
                else:
                    device = str(leftover.device)
                    before = self._snapshot(device)
                    change = self._write(
                        device, leftover.setting, leftover.original, "restore", None
                    )
                    self._side_effects_back(device, leftover.side_effects, before, "restore", None)
            except SettingError as exc:
                raise TuningError(f"cannot restore {exc}") from None
            if change.effective != leftover.original:
                raise TuningError(
                    f"{leftover.where} {leftover.setting}: wrote {leftover.original} back "
                    f"but it kept {change.effective}"
                )
            self.journal.close_leftover(leftover, "restored")
            return change
