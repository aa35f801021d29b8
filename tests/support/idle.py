"""Real processes that do nothing until the test lets them go.

A test about processes (their command lines, their cgroups) needs some that live while it
looks. These read their standard input until the test closes it: no timer decides how long
they live, however slow the machine.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

IDLE = "import sys; sys.stdin.read()"
"""What each process runs: it ends when its standard input is closed."""


@contextmanager
def idle_processes(*args: Sequence[str]) -> Iterator[list[subprocess.Popen[bytes]]]:
    """One ``python -c IDLE ARGS...`` process per argument list (same comm, own command line);
    all of them ended and reaped when the block ends."""
    procs = [
        subprocess.Popen([sys.executable, "-c", IDLE, *extra], stdin=subprocess.PIPE)
        for extra in args
    ]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.stdin is not None:
                proc.stdin.close()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
