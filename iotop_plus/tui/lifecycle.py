"""What happens to this run's queue-setting changes at start, on quit and on a signal.

* At start: offer to restore (or keep) what a run that died left changed.
* On quit with changes in effect: ask keep or revert (or revert at once with
  ``--revert-on-exit``), journaling ``keep`` for kept changes. A setting changed since this
  run set it (another run, by hand) is asked about before it is reverted (put the original
  back, or leave it); ``--revert-on-exit`` and a signal cannot ask, so they leave it, say so
  on stderr, and it stays a leftover for ``restore --force``.
* On SIGTERM, SIGHUP or SIGINT: nobody can be asked. Probes are stopped, ``--revert-on-exit``
  is applied, and the app leaves through its normal exit (so the terminal is restored), with
  a watchdog in case that hangs. A hangup leaves the changes in force but does *not* keep
  them: nobody chose to, so they are leftovers of a dead run, offered at the next start and
  by ``iotop-plus restore`` (``restore --keep`` keeps them); stderr says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable

from textual.app import App

from iotop_plus.devices.conflicts import (
    ASK,
    FORCE,
    LEAVE,
    PUT_BACK,
    REFUSE,
    Conflict,
    ConflictError,
    TuningError,
)
from iotop_plus.devices.journal import JournalError
from iotop_plus.devices.leftovers import Leftover
from iotop_plus.devices.tuner import Tuner

EXIT_WATCHDOG_S = 3.0
"""After a signal, the process ends this long after exit began even if Textual's shutdown
hangs (seen when the terminal is already gone: the driver's writer queue never drains)."""


class SettingsLifecycle:
    """The start, quit and signal handling of one app run's setting changes."""

    def __init__(self, app: App[int], tuner: Callable[[], Tuner], revert_on_exit: bool) -> None:
        self.app = app
        """The app to exit and to ask questions in."""
        self._tuner = tuner
        self.revert_on_exit = revert_on_exit
        """Revert this run's setting changes on quit without asking."""
        self.farewell: list[str] = []
        """Lines for stderr once the app has left the alternate screen (:meth:`say_farewell`)."""

    @property
    def tuner(self) -> Tuner:
        """This run's changes, with undo and the journal."""
        return self._tuner()

    def offer_restore(self) -> None:
        """At start: offer to put back (or keep) what a run that died left changed."""
        tuner, app = self.tuner, self.app
        if tuner.change_refused or not tuner.is_root:
            return
        try:
            leftovers = [x for x in tuner.journal.leftovers(tuner.roots) if x.known]
        except JournalError as exc:
            app.notify(str(exc), severity="warning", markup=False)
            return
        if not leftovers:
            return
        if getattr(getattr(app, "config", None), "read_only", False):
            n = len(leftovers)
            app.notify(
                f"read-only: {n} setting change(s) left by a run that died are not restored "
                f"here ({tuner.journal.restore_command()} does it)",
                severity="warning",
                markup=False,
            )
            return

        def answered(choice: str | None) -> None:
            if choice == "keep":
                for left in leftovers:
                    tuner.journal.close_leftover(left, "kept")
                if tuner.journal.problem:
                    app.notify(tuner.journal.problem, severity="error", markup=False)
                    return
                n = len(leftovers)
                app.notify(f"kept {n} setting{'s' if n != 1 else ''} as they are", markup=False)
                return
            if choice == "restore":
                self._restore_leftovers(list(leftovers))

        from iotop_plus.tui.screens.settings_modals import RestoreLeftoversScreen

        restore = tuner.journal.restore_command()
        app.push_screen(RestoreLeftoversScreen(leftovers, restore), answered)

    def _restore_leftovers(self, leftovers: list[Leftover]) -> None:
        """Restore each leftover in turn; one changed since the run left it is asked about."""
        tuner, app = self.tuner, self.app
        while leftovers:
            left = leftovers.pop(0)
            try:
                change = tuner.restore_leftover(left, on_conflict=ASK)
            except ConflictError as exc:

                def answered(
                    choice: str | None, left: Leftover = left, c: Conflict = exc.conflicts[0]
                ) -> None:
                    self._settle_leftover(left, c, choice)
                    self._restore_leftovers(leftovers)

                from iotop_plus.tui.screens.settings_modals import ConflictScreen

                app.push_screen(ConflictScreen(exc.conflicts[0]), answered)
                return
            except TuningError as exc:
                app.notify(str(exc), severity="error", markup=False)
                continue
            app.notify(f"restored {change.summary}", markup=False)

    def _settle_leftover(self, left: Leftover, conflict: Conflict, choice: str | None) -> None:
        """Carry out the answer about a leftover changed since: put back, leave, or later."""
        tuner, app = self.tuner, self.app
        if choice == LEAVE:
            tuner.leave(conflict)
            app.notify(f"left {conflict.where} {conflict.setting} at {conflict.now}", markup=False)
        elif choice == PUT_BACK:
            try:
                change = tuner.restore_leftover(left, on_conflict=FORCE)
            except TuningError as exc:
                app.notify(str(exc), severity="error", markup=False)
                return
            app.notify(f"restored {change.summary}", markup=False)

    def exit_on_signal(self, sig: int) -> None:
        """A signal cannot be asked questions: settle the changes now, then exit 128 + sig."""
        runner = sys.modules.get("iotop_plus.probe.runner")
        if runner is not None:  # never imported: no probe was ever started
            runner.stop_all_probes()  # kills fio and removes its file
        if self.revert_on_exit and self.tuner.active:
            try:
                self.tuner.revert_all()
            except ConflictError as exc:  # nobody to ask: changed since, so left as it is
                with contextlib.suppress(OSError):
                    os.write(2, f"iotop-plus: {exc}\n".encode())
            except TuningError:
                pass
        if sig == signal.SIGHUP and self.tuner.active:
            # The session is gone and nobody answered the quit dialog: the changes stay in
            # force but are not kept. No keep record, so once this run's lock is gone they are
            # leftovers, offered at the next start and by `iotop-plus restore`.
            count = len(self.tuner.active)
            plural = "s" if count != 1 else ""
            self.farewell.append(
                f"iotop-plus: hangup: {count} setting change{plural} left in force, not kept; "
                f"{self.tuner.journal.restore_hint}"
            )
        watchdog = threading.Timer(EXIT_WATCHDOG_S, self._last_resort, args=(128 + sig,))
        watchdog.daemon = True
        watchdog.start()
        self.app.exit(return_code=128 + sig)  # as the headless commands: 143 TERM, 129 HUP

    def say_farewell(self) -> None:
        """Write :attr:`farewell` to stderr, once: call it after the app has left the
        alternate screen (inside it the lines would be wiped with the screen)."""
        lines, self.farewell = self.farewell, []
        for line in lines:
            with contextlib.suppress(OSError):
                os.write(2, f"{line}\n".encode())

    def _last_resort(self, code: int) -> None:
        """The exit watchdog: Textual's shutdown hung, so the screen is not coming back."""
        self.say_farewell()
        os._exit(code)

    def quit(self) -> None:
        """Quit; when settings were changed in this run, ask whether to keep them."""
        if not self.tuner.active:
            self.app.exit()
            return
        if self.revert_on_exit:
            self._revert_then_exit()
            return

        def answered(choice: str | None) -> None:
            if choice == "revert":
                self._revert_then_exit(ask=True)
            elif choice == "keep":
                self.tuner.keep("quit")
                self.app.exit()

        # Imported here: the first screen never shows a modal.
        from iotop_plus.tui.screens.settings_modals import KeepOrRevertScreen

        if not isinstance(self.app.screen, KeepOrRevertScreen):
            self.app.push_screen(KeepOrRevertScreen(self.tuner.active), answered)

    def _revert_then_exit(self, ask: bool = False) -> None:
        """Revert every change, then exit. With ``ask``, a setting changed since is asked
        about first (escape stays in the app); without, it is left and the exit says so."""
        try:
            self.tuner.revert_all(on_conflict=ASK if ask else REFUSE)
        except ConflictError as exc:
            if ask:
                self._ask_then_revert(exc.conflicts[0])
                return
            self.app.exit(1, message=f"iotop-plus: could not revert every setting: {exc}")
            return
        except TuningError as exc:
            self.app.exit(1, message=f"iotop-plus: could not revert every setting: {exc}")
            return
        self.app.exit()

    def _ask_then_revert(self, conflict: Conflict) -> None:
        from iotop_plus.tui.screens.settings_modals import ConflictScreen

        def answered(choice: str | None) -> None:
            if choice not in (PUT_BACK, LEAVE):
                return  # later: stay in the app, nothing written
            try:
                self.tuner.resolve(conflict, choice == PUT_BACK)
            except TuningError as exc:
                self.app.notify(str(exc), severity="error", markup=False)
                return
            self._revert_then_exit(ask=True)

        self.app.push_screen(ConflictScreen(conflict), answered)
