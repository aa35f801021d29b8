"""What every subcommand shares: exit codes, the usage error and argparse value types."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

if TYPE_CHECKING:
    import asyncio

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A usage problem found after parsing (e.g. an unknown device): one line, exit 2."""


class OutputError(Exception):
    """Standard output cannot be written (a full disk, ``/dev/full``, an I/O error)."""

    def __init__(self, cause: OSError) -> None:
        super().__init__(cause.strerror or str(cause))
        self.cause = cause


class CheckedOutput:
    """Standard output for a subcommand: a failed write or flush raises :class:`OutputError`.

    A command writes through ``print``, ``json.dump`` and ``csv.writer``; a failure of any
    of them would otherwise be an OSError indistinguishable from a failed sysfs read.
    BrokenPipeError passes unchanged: ``| head`` leaving early is not an error.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        """The real stdout."""

    def write(self, text: str) -> int:
        """Write ``text`` (buffered, as the stream does)."""
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def flush(self) -> None:
        """Flush the stream."""
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def positive_float(text: str) -> float:
    """argparse type: a number of seconds greater than zero (fractions allowed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError(f"must be more than 0 and at most 86400: {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


T = TypeVar("T")

#: Signals that stop a long headless run (a probe, a sweep, an A/B) cleanly.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


async def run_cancellable(coro: Coroutine[Any, Any, T]) -> tuple[T | None, int]:
    """Await ``coro``; SIGINT/SIGTERM/SIGHUP cancel it: then (None, signal number).

    Cancelling lets the coroutine's ``finally`` blocks run (kill fio, remove probe files,
    restore settings) before the command exits with 128 + N.
    """
    import asyncio  # here: snapshot, top and --version never load asyncio

    loop = asyncio.get_running_loop()
    task: asyncio.Task[T] = asyncio.ensure_future(coro)
    received: list[int] = []

    def cancel(signum: int) -> None:
        received.append(signum)
        task.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, cancel, signum)
    try:
        return await task, 0
    except asyncio.CancelledError:
        if received:
            return None, received[0]
        raise
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


def add_interval_count(parser: argparse.ArgumentParser) -> None:
    """The ``--interval S`` / ``--count N`` pair every sampling command takes."""
    parser.add_argument(
        "--interval",
        "-i",
        type=positive_float,
        default=1.0,
        metavar="S",
        help="seconds per interval, fractions allowed (default 1)",
    )
    parser.add_argument(
        "--count",
        "-c",
        type=positive_int,
        default=1,
        metavar="N",
        help="number of intervals to report (default 1)",
    )


def add_trace_option(parser: argparse.ArgumentParser) -> None:
    """``--trace``: the block tracer times the device side while fio runs (off by default:
    it costs the probe IOPS); ``--no-trace`` (the default) stays for scripts."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--trace",
        dest="trace",
        action="store_true",
        default=False,
        help="also time the device side with the block tracer (bpftrace, as root): "
        "device-side percentiles next to fio's, and who else did I/O on the device. It "
        "costs what it measures: each request runs three tracepoints in the kernel (about "
        "1.3 us per request here, though only one request in 16 is timed), so a ~150k IOPS "
        "device probed traced reports about 0.8-0.9x the IOPS of an untraced run; off by "
        "default",
    )
    group.add_argument(
        "--no-trace",
        dest="trace",
        action="store_false",
        help="run fio untraced (the default)",
    )
