"""The console script as a user runs it: ``run_cli`` for one command, ``serve`` for the
exporter while a test talks to it. Both run ``python -m iotop_plus`` from this checkout."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from tests.support.wait import holds_within

REPO = Path(__file__).resolve().parents[2]


def cli_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment with the checkout importable and no root overrides, plus ``extra``."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("IOTOP_PLUS_PROC", None)
    env.pop("IOTOP_PLUS_SYS", None)
    env.update(extra or {})
    return env


def cli_argv(*args: str, state: Path | None = None) -> list[str]:
    """``python -m iotop_plus [--state-dir STATE] ARGS``."""
    argv = [sys.executable, "-m", "iotop_plus"]
    if state is not None:
        argv += ["--state-dir", str(state)]
    return [*argv, *args]


def run_cli(
    *args: str,
    state: Path | None = None,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    cwd: Path | str = "/",
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one command to its end; its output as text. ``env`` adds to :func:`cli_env`.

    A command still running after ``timeout`` is stopped with SIGABRT, and the failure shows
    where each of its threads was (``faulthandler``): a hang says where it hung.
    """
    with subprocess.Popen(
        cli_argv(*args, state=state),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env({"PYTHONFAULTHANDLER": "1", **(env or {})}),
        cwd=cwd,
    ) as proc:
        try:
            out, err = proc.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            out, err = proc.communicate()
            raise AssertionError(
                f"{' '.join(args)} still ran after {timeout} s; its threads then:\n{err[-6000:]}"
            ) from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def accepts(port: int) -> bool:
    """Whether something accepts a connection on 127.0.0.1:``port``."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


@contextlib.contextmanager
def serve(
    *args: str,
    state: Path,
    roots: tuple[str, ...] = (),
    interval: str = "1",
    timeout: float = 10.0,
) -> Iterator[int]:
    """``iotop-plus serve`` on a free port until the block ends; yields the port once it
    accepts connections, and checks that it then stops cleanly (exit 0) on SIGTERM."""
    port = free_port()
    argv = cli_argv(*roots, state=state)
    argv += ["serve", "--listen", f"127.0.0.1:{port}", "--interval", interval, *args]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=cli_env())
    try:
        up = holds_within(lambda: proc.poll() is not None or accepts(port), timeout)
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")  # type: ignore[union-attr]
        assert up, f"serve did not listen on {port} within {timeout} s"
        yield port
    finally:
        proc.terminate()
        code = proc.wait(10)
    assert code == 0, proc.stderr.read() if proc.stderr else code
