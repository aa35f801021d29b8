"""A long-running command (``serve``, ``record``) whose worker thread dies ends with exit 1.

The sampler, the health reader, the tracer's readers and the HTTP server each run on a
thread; one that dies leaves the process up but unable to do its job (``serve`` kept its
port and answered every scrape with an error, and exited 0 on SIGTERM). :class:`WorkerWatch`
takes ``threading.excepthook`` for the command's run: the first thread that dies prints one
line and stops the command, which then exits 1, so that systemd's ``Restart=on-failure``
starts it again.
"""

from __future__ import annotations

import sys
import threading
from types import TracebackType

from iotop_plus.text import printable

THREAD_JOBS = {
    "iotop-plus-serve": "the sampler",
    "iotop-plus-http": "the HTTP server",
    "iotop-plus-health": "the health reader",
    "iotop-plus-latency": "the latency tracer's reader",
    "iotop-plus-latency-err": "the latency tracer's error reader",
}
"""What each named worker thread does, for the line that says it died."""


class WorkerWatch:
    """While entered, a worker thread that dies sets ``stop`` and says so on stderr, once.

    Args:
        stop: The command's stop event (what SIGTERM sets).
        prefix: The command's stderr prefix, e.g. ``iotop-plus``.
    """

    def __init__(self, stop: threading.Event, prefix: str = "iotop-plus") -> None:
        self.stop = stop
        self.prefix = prefix
        self.failure: str | None = None
        """The first death, one line; None while every worker lives."""
        self._lock = threading.Lock()
        self._saved = threading.excepthook

    def __enter__(self) -> WorkerWatch:
        self._saved = threading.excepthook
        threading.excepthook = self._died
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        threading.excepthook = self._saved

    def exit_code(self, ok: int, failed: int) -> int:
        """``failed`` when a worker died, else ``ok``."""
        return failed if self.failure is not None else ok

    def _died(self, args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:
            return
        name = args.thread.name if args.thread is not None else "a worker"
        job = THREAD_JOBS.get(name, f"thread {name}")
        what = args.exc_type.__name__
        detail = str(args.exc_value).strip().splitlines() if args.exc_value is not None else []
        if detail:
            what += f": {detail[0][:200]}"
        line = f"{job} failed ({what}); stopping (exit 1) so that it can be restarted"
        with self._lock:
            if self.failure is not None:
                return
            self.failure = line
        print(f"{self.prefix}: error: {printable(line)}", file=sys.stderr, flush=True)
        self.stop.set()
