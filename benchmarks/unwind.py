"""SIGTERM and SIGHUP end a benchmark the way Ctrl-C does: by unwinding it.

Their default action ends the process at once, so the ``finally`` blocks and context managers
that unmount, detach the loop devices, stop fio and remove the temp files would never run: a
benchmark killed by a timeout, or by a closed terminal, would leave its loop devices and mounts.
With :func:`unwind_on_signals` called first in ``main``, either signal raises
:class:`SystemExit` (status 128 + the signal's number, as a shell reports a killed process)
where the main thread is, and everything set up so far is taken down on the way out. A second
SIGTERM or SIGHUP during that cleanup is ignored: it must not cut it short.
"""

from __future__ import annotations

import signal
from types import FrameType

UNWOUND = (signal.SIGTERM, signal.SIGHUP)
"""The signals that unwind the benchmark."""


def _unwind(signum: int, _frame: FrameType | None) -> None:
    for each in UNWOUND:
        signal.signal(each, signal.SIG_IGN)  # the cleanup that follows runs to its end
    raise SystemExit(128 + signum)


def unwind_on_signals() -> None:
    """SIGTERM and SIGHUP raise :class:`SystemExit` in the main thread; SIGINT raises
    :class:`KeyboardInterrupt` even in a job started with ``&`` from a script (which
    inherits SIGINT ignored). Call from the main thread, before setting anything up."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for each in UNWOUND:
        signal.signal(each, _unwind)
